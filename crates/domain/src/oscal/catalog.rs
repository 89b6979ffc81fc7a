//! The OSCAL 1.x catalog, as far as a framework needs it, and its mapping to requirements.
//!
//! Read: `catalog.uuid`, `catalog.metadata` (`title`, `version`, `oscal-version`,
//! `last-modified`), `groups` (nested), `controls` and their control enhancements (controls
//! nested in controls), `props` named `label`, and `parts` named `statement` with their nested
//! parts. Everything else OSCAL allows (params, links, back-matter, guidance parts, …) is
//! skipped without being kept. A value of the wrong type anywhere is an error naming its JSON
//! path (`catalog.groups[0].controls[3].id`), read by `serde_path_to_error`.
//!
//! The mapping: every control and enhancement is a requirement, in the model's order (the
//! catalog's own controls, then its groups; in a group, its groups then its controls); groups give
//! structure but are not requirements (they hold no statement to satisfy). A requirement's
//! `identifier` is the control's `label` prop (the first without a `class`, else the first), or
//! its `id`; `title` its title; `description` the text of its `statement` parts; an enhancement's
//! parent is the control it is nested in.

use serde::Deserialize;

use crate::framework::{DraftPaths, FrameworkDraft, FrameworkSource, REQUIREMENTS_MAX, RequirementDraft};
use crate::validation::{FieldError, ValidationErrors};

/// The longest an id or label may be before it is read (longer is refused by the framework's
/// own limits anyway; this bounds the work).
const TOKEN_MAX: usize = 1_000;

/// An OSCAL document holding a catalog.
#[derive(Debug, Deserialize)]
pub struct Document {
    /// The catalog.
    pub catalog: Catalog,
}

/// An OSCAL catalog.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Catalog {
    /// The document's UUID (version 4 or 5, as OSCAL requires).
    pub uuid: String,
    /// What the catalog is.
    pub metadata: Metadata,
    /// Groups of controls, nested.
    #[serde(default)]
    pub groups: Vec<Group>,
    /// Controls outside any group.
    #[serde(default)]
    pub controls: Vec<Control>,
}

/// A catalog's metadata.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Metadata {
    /// The catalog's title: the framework's name.
    pub title: String,
    /// The catalog's version: the framework's version.
    pub version: String,
    /// The OSCAL version the document follows; it must be 1.x.
    pub oscal_version: String,
    /// When the document last changed (required by OSCAL; not kept).
    pub last_modified: String,
}

/// A group of controls, perhaps of other groups.
#[derive(Debug, Deserialize)]
pub struct Group {
    /// Its id, if it has one.
    pub id: Option<String>,
    /// Its title.
    pub title: String,
    /// Groups within it.
    #[serde(default)]
    pub groups: Vec<Group>,
    /// Its controls.
    #[serde(default)]
    pub controls: Vec<Control>,
}

/// A control, or (nested in a control) a control enhancement.
#[derive(Debug, Deserialize)]
pub struct Control {
    /// Its id: an OSCAL token (`ac-2`, `ac-2.1`).
    pub id: String,
    /// Its title.
    pub title: String,
    /// Its properties (`label`).
    #[serde(default)]
    pub props: Vec<Property>,
    /// Its parts (`statement`, `guidance`, …).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Its enhancements.
    #[serde(default)]
    pub controls: Vec<Control>,
}

/// A name and value.
#[derive(Debug, Deserialize)]
pub struct Property {
    /// Its name (`label`).
    pub name: String,
    /// Its value (`AC-2`).
    pub value: String,
    /// Its class (`sp800-53a` marks NIST's second label).
    pub class: Option<String>,
}

/// A part of a control: its statement, guidance, items of the statement, …
#[derive(Debug, Deserialize)]
pub struct Part {
    /// What kind of part it is (`statement`, `item`, `guidance`).
    pub name: String,
    /// Its properties (an item's `label`, `a.`).
    #[serde(default)]
    pub props: Vec<Property>,
    /// Its text (markup-multiline, kept as written).
    pub prose: Option<String>,
    /// Its sub-parts.
    #[serde(default)]
    pub parts: Vec<Part>,
}

/// Reads an OSCAL catalog document (JSON text) into a framework draft, not yet validated by
/// [`FrameworkDraft::validate`]. A value of the wrong type, a missing field, a UUID that is not
/// one, an OSCAL version other than 1.x or a control id that is not a token is an error naming
/// the JSON path.
pub fn read(json: &str) -> Result<FrameworkDraft, ValidationErrors> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let document: Document = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let message = without_position(&error.inner().to_string());
        ValidationErrors::field(field_of(&path, &message), message)
    })?;
    let catalog = document.catalog;
    let mut errors = Vec::new();
    if !is_uuid(&catalog.uuid) {
        errors.push(FieldError::new("catalog.uuid", "must be a UUID (version 4 or 5)"));
    }
    let version = catalog.metadata.oscal_version.trim();
    if !(version == "1" || version.starts_with("1.")) {
        errors.push(FieldError::new(
            "catalog.metadata.oscal-version",
            format!("must be an OSCAL 1.x version, not `{version}`"),
        ));
    }
    // Counted before any draft is made: a 15 MiB body of tiny controls would otherwise build
    // hundreds of thousands of drafts (each with its JSON paths) only to refuse them.
    let controls = catalog.controls.iter().map(count_controls).sum::<usize>()
        + catalog.groups.iter().map(count_group_controls).sum::<usize>();
    if controls > REQUIREMENTS_MAX {
        errors.push(FieldError::new(
            "catalog",
            format!("must hold at most {REQUIREMENTS_MAX} controls (each is a requirement), not {controls}"),
        ));
        return Err(ValidationErrors(errors));
    }
    // OSCAL's model order: the catalog's own controls, then its groups.
    let mut requirements = Vec::new();
    for (index, control) in catalog.controls.iter().enumerate() {
        walk_control(control, &format!("catalog.controls[{index}]"), None, &mut requirements, &mut errors);
    }
    for (index, group) in catalog.groups.iter().enumerate() {
        walk_group(group, &format!("catalog.groups[{index}]"), &mut requirements, &mut errors);
    }
    errors.truncate(crate::framework::ERRORS_MAX);
    ValidationErrors::into_result(errors)?;
    Ok(FrameworkDraft {
        name: catalog.metadata.title,
        name_path: "catalog.metadata.title".into(),
        version: catalog.metadata.version,
        version_path: "catalog.metadata.version".into(),
        source: FrameworkSource::Oscal,
        requirements,
        requirements_path: "catalog".into(),
    })
}

/// A control and its enhancements, at any depth.
fn count_controls(control: &Control) -> usize {
    1 + control.controls.iter().map(count_controls).sum::<usize>()
}

/// Every control of a group and of the groups in it.
fn count_group_controls(group: &Group) -> usize {
    group.controls.iter().map(count_controls).sum::<usize>()
        + group.groups.iter().map(count_group_controls).sum::<usize>()
}

fn walk_group(group: &Group, at: &str, requirements: &mut Vec<RequirementDraft>, errors: &mut Vec<FieldError>) {
    if let Some(id) = &group.id
        && !is_token(id)
    {
        errors.push(FieldError::new(
            format!("{at}.id"),
            "must be an OSCAL token (a letter or `_`, then letters, digits, `.`, `-`, `_`)",
        ));
    }
    for (index, inner) in group.groups.iter().enumerate() {
        walk_group(inner, &format!("{at}.groups[{index}]"), requirements, errors);
    }
    for (index, control) in group.controls.iter().enumerate() {
        walk_control(control, &format!("{at}.controls[{index}]"), None, requirements, errors);
    }
}

fn walk_control(
    control: &Control,
    at: &str,
    parent: Option<usize>,
    requirements: &mut Vec<RequirementDraft>,
    errors: &mut Vec<FieldError>,
) {
    if !is_token(&control.id) {
        errors.push(FieldError::new(
            format!("{at}.id"),
            "must be an OSCAL token (a letter or `_`, then letters, digits, `.`, `-`, `_`)",
        ));
    }
    let (identifier, identifier_path) = match label(&control.props) {
        Some((index, value)) => (value.to_owned(), format!("{at}.props[{index}].value")),
        None => (control.id.clone(), format!("{at}.id")),
    };
    let statements: Vec<(usize, &Part)> =
        control.parts.iter().enumerate().filter(|(_, part)| part.name == "statement").collect();
    let mut lines = Vec::new();
    for (_, part) in &statements {
        statement_text(part, 0, &mut lines);
    }
    let description_path = match statements.first() {
        Some((index, _)) => format!("{at}.parts[{index}]"),
        None => format!("{at}.parts"),
    };
    let index = requirements.len();
    requirements.push(RequirementDraft {
        identifier,
        title: control.title.clone(),
        description: (!lines.is_empty()).then(|| lines.join("\n")),
        parent,
        catalog_id: Some(control.id.clone()),
        paths: DraftPaths { identifier: identifier_path, title: format!("{at}.title"), description: description_path },
    });
    for (inner, enhancement) in control.controls.iter().enumerate() {
        walk_control(enhancement, &format!("{at}.controls[{inner}]"), Some(index), requirements, errors);
    }
}

/// The `label` prop: the first without a class (NIST gives a second, `class: sp800-53a`), else
/// the first; with its index among the props.
fn label(props: &[Property]) -> Option<(usize, &str)> {
    let labels = || props.iter().enumerate().filter(|(_, p)| p.name == "label");
    labels().find(|(_, p)| p.class.is_none()).or_else(|| labels().next()).map(|(i, p)| (i, p.value.as_str()))
}

/// A statement as plain text: each part's label and prose on a line, nested parts indented by
/// two spaces a level.
fn statement_text(part: &Part, depth: usize, lines: &mut Vec<String>) {
    let prose = part.prose.as_deref().map(str::trim).unwrap_or_default();
    let label = label(&part.props).map(|(_, value)| value.trim()).unwrap_or_default();
    let line = [label, prose].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join(" ");
    let nested = usize::from(depth > 0 || !line.is_empty());
    if !line.is_empty() {
        lines.push(format!("{}{line}", "  ".repeat(depth)));
    }
    for inner in &part.parts {
        statement_text(inner, depth + nested, lines);
    }
}

/// The field an error names: the path, and for a missing field the field under it.
fn field_of(path: &str, message: &str) -> String {
    let missing = message.strip_prefix("missing field `").and_then(|rest| rest.split('`').next());
    match (path, missing) {
        (".", Some(field)) => field.to_owned(),
        (".", None) => "body".to_owned(),
        (path, Some(field)) => format!("{path}.{field}"),
        (path, None) => path.to_owned(),
    }
}

/// serde_json appends " at line L column C"; the path says more.
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// OSCAL's UUID: `^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[45][0-9A-Fa-f]{3}-[89ABab][0-9A-Fa-f]{3}-[0-9A-Fa-f]{12}$`.
pub(crate) fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            14 => matches!(b, b'4' | b'5'),
            19 => matches!(b, b'8' | b'9' | b'a' | b'b' | b'A' | b'B'),
            _ => b.is_ascii_hexdigit(),
        })
}

/// OSCAL's token: a letter or `_`, then letters, digits, `.`, `-` or `_`.
pub(crate) fn is_token(text: &str) -> bool {
    let mut chars = text.chars();
    text.len() <= TOKEN_MAX
        && chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "5f1b9a4e-3c2d-4e8f-9a6b-1c2d3e4f5a6b";

    fn catalog(groups: &str) -> String {
        format!(
            r#"{{"catalog":{{"uuid":"{UUID}","metadata":{{"title":"Mini","version":"1.0",
            "oscal-version":"1.1.2","last-modified":"2026-01-01T00:00:00Z"}},"groups":{groups}}}}}"#
        )
    }

    #[test]
    fn a_catalog_of_more_controls_than_requirements_may_be_is_refused_before_it_is_walked() {
        let control = r#"{"id":"c","title":"C","controls":[{"id":"c.1","title":"E"}]}"#;
        let controls = vec![control; REQUIREMENTS_MAX / 2].join(",");
        let at_most = catalog(&format!(r#"[{{"id":"g","title":"G","controls":[{controls}]}}]"#));
        assert!(read(&at_most).is_ok(), "exactly the maximum, enhancements included");
        let one_more =
            catalog(&format!(r#"[{{"id":"g","title":"G","controls":[{controls},{{"id":"x","title":"X"}}]}}]"#));
        let error = read(&one_more).unwrap_err();
        assert_eq!(error.0[0].field, "catalog", "{error:?}");
        assert!(error.0[0].message.contains(&format!("not {}", REQUIREMENTS_MAX + 1)), "{error:?}");
    }

    #[test]
    fn controls_and_enhancements_become_requirements_with_parents() {
        let json = catalog(
            r#"[{"id":"ac","title":"Access","controls":[
                {"id":"ac-1","title":"Policy","props":[{"name":"label","value":"AC-1"},
                    {"name":"label","class":"sp800-53a","value":"AC-01"}],
                 "parts":[{"id":"ac-1_smt","name":"statement","prose":"Do:","parts":[
                    {"name":"item","props":[{"name":"label","value":"a."}],"prose":"write it;","parts":[
                        {"name":"item","props":[{"name":"label","value":"1."}],"prose":"well."}]}]},
                    {"name":"guidance","prose":"Not a statement."}],
                 "controls":[{"id":"ac-1.1","title":"Review","params":[{"id":"p"}]}]}]}]"#,
        );
        let draft = read(&json).unwrap();
        assert_eq!(draft.name, "Mini");
        let ids: Vec<&str> = draft.requirements.iter().map(|r| r.identifier.as_str()).collect();
        assert_eq!(ids, ["AC-1", "ac-1.1"]);
        assert_eq!(draft.requirements[1].parent, Some(0));
        assert_eq!(draft.requirements[0].description.as_deref(), Some("Do:\n  a. write it;\n    1. well."));
        assert_eq!(draft.requirements[0].paths.identifier, "catalog.groups[0].controls[0].props[0].value");
    }

    #[test]
    fn errors_name_the_json_path() {
        let wrong_type = catalog(r#"[{"title":"G","controls":[{"id":"a","title":"A"},{"id":5,"title":"B"}]}]"#);
        assert_eq!(read(&wrong_type).unwrap_err().0[0].field, "catalog.groups[0].controls[1].id");
        let missing = catalog(r#"[{"title":"G","controls":[{"id":"a"}]}]"#);
        assert_eq!(read(&missing).unwrap_err().0[0].field, "catalog.groups[0].controls[0].title");
        assert_eq!(read("{}").unwrap_err().0[0].field, "catalog");
        let old = catalog("[]").replace("1.1.2", "0.9");
        assert_eq!(read(&old).unwrap_err().0[0].field, "catalog.metadata.oscal-version");
        let not_uuid = catalog("[]").replace(UUID, "not-a-uuid");
        assert_eq!(read(&not_uuid).unwrap_err().0[0].field, "catalog.uuid");
        let bad_token = catalog(r#"[{"title":"G","controls":[{"id":"1a","title":"A"}]}]"#);
        assert_eq!(read(&bad_token).unwrap_err().0[0].field, "catalog.groups[0].controls[0].id");
    }
}
