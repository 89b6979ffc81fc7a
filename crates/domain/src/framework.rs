//! Frameworks: catalogs of requirements (SOC 2, ISO/IEC 27001, NIST SP 800-53, the organization's
//! own) that an organization adopts, and the framework manifests this service ships.
//!
//! A framework comes from one of three places: an OSCAL catalog ([`crate::oscal::catalog`]), our
//! own JSON shape ([`NewFramework`]), or one of the shipped [`templates`]. Each is first read into a
//! [`FrameworkDraft`], which [`FrameworkDraft::validate`] checks the same way whatever its source,
//! naming the JSON path of every bad value.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::validation::{FieldError, ValidationErrors, text};
use crate::{FrameworkId, OrganizationId, RequirementId, Timestamp, required_non_null};

crate::string_enum! {
    /// Where a framework's requirements came from.
    FrameworkSource { Oscal = "oscal", Custom = "custom", Template = "template" }
}

/// The longest name, in characters.
pub const NAME_MAX: usize = 255;
/// The longest version, in characters.
pub const VERSION_MAX: usize = 100;
/// The longest requirement identifier (`CC6.1`, `A.5.15`, `AC-2(1)`), in characters.
pub const IDENTIFIER_MAX: usize = 100;
/// The longest requirement title, in characters.
pub const TITLE_MAX: usize = 1_000;
/// The longest requirement description, in characters (NIST SP 800-53's longest statement is
/// a few thousand).
pub const DESCRIPTION_MAX: usize = 50_000;
/// The most requirements one framework holds (NIST SP 800-53 rev. 5 has about 1,200 controls and
/// enhancements).
pub const REQUIREMENTS_MAX: usize = 5_000;
/// The most errors one answer lists: a broken catalog can have thousands.
pub const ERRORS_MAX: usize = 20;

/// A framework an organization adopted: its catalog's name and version, without its requirements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framework {
    /// The framework's id.
    pub id: FrameworkId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// 1 to [`NAME_MAX`] characters (an OSCAL catalog's `metadata.title`).
    pub name: String,
    /// 1 to [`VERSION_MAX`] characters (an OSCAL catalog's `metadata.version`).
    pub version: String,
    /// Where its requirements came from.
    pub source: FrameworkSource,
    /// How many requirements it has (they never change after the framework is made).
    pub requirement_count: usize,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl Framework {
    /// The entity tag of the framework's record ([`ETag::of`](crate::etag::ETag::of) its id and
    /// `updatedAt`): its name, version and requirements, never its statuses, which are computed
    /// at each read.
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

/// One requirement of a framework.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The requirement's id.
    pub id: RequirementId,
    /// What the framework calls it (`CC6.1`, `A.5.15`, `AC-2(1)`); unique within the framework.
    pub identifier: String,
    /// Its title.
    pub title: String,
    /// What it asks, as plain text, if the catalog says.
    pub description: Option<String>,
    /// The requirement it refines (an OSCAL control enhancement's control), if any.
    pub parent_id: Option<RequirementId>,
    /// The id its catalog gives the control it came from (an OSCAL import's `ac-2.1`, a token);
    /// `None` for our own shape and the templates. An assessment-results export targets it.
    pub catalog_id: Option<String>,
}

#[cfg(test)]
impl Requirement {
    /// A requirement of its own, for tests: a fresh id, no description, parent or catalog id.
    pub(crate) fn named(identifier: &str, title: &str) -> Self {
        Self {
            id: RequirementId::generate(),
            identifier: identifier.into(),
            title: title.into(),
            description: None,
            parent_id: None,
            catalog_id: None,
        }
    }
}

/// A framework with its requirements, in catalog order (a parent before its children).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameworkWithRequirements {
    /// The framework.
    pub framework: Framework,
    /// Its requirements, in catalog order.
    pub requirements: Vec<Requirement>,
}

/// Where in the request a draft's values were read: JSON paths, for the errors that name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftPaths {
    /// The path of the identifier's value.
    pub identifier: String,
    /// The path of the title.
    pub title: String,
    /// The path of the description.
    pub description: String,
}

/// A requirement as read from a request, before it has an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementDraft {
    /// Its identifier, as read.
    pub identifier: String,
    /// Its title, as read.
    pub title: String,
    /// Its description, as read (empty: none).
    pub description: Option<String>,
    /// The index of its parent among the draft's requirements: always an earlier one.
    pub parent: Option<usize>,
    /// The catalog's id of the control it came from (OSCAL imports only; a token, checked).
    pub catalog_id: Option<String>,
    /// Where its values were read.
    pub paths: DraftPaths,
}

/// A framework as read from a request, before it has ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameworkDraft {
    /// Its name, as read.
    pub name: String,
    /// The path of the name (`name`, `catalog.metadata.title`).
    pub name_path: String,
    /// Its version, as read.
    pub version: String,
    /// The path of the version.
    pub version_path: String,
    /// Where it came from.
    pub source: FrameworkSource,
    /// Its requirements, in order.
    pub requirements: Vec<RequirementDraft>,
    /// The path of the requirements' list, for a count out of bounds.
    pub requirements_path: String,
}

/// Collects field errors up to [`ERRORS_MAX`].
#[derive(Default)]
struct Errors(Vec<FieldError>);

impl Errors {
    fn check<T>(&mut self, checked: Result<T, FieldError>) -> Option<T> {
        match checked {
            Ok(value) => Some(value),
            Err(error) => {
                if self.0.len() < ERRORS_MAX {
                    self.0.push(error);
                }
                None
            }
        }
    }
}

impl FrameworkDraft {
    /// Checks every value: name and version 1 to [`NAME_MAX`] / [`VERSION_MAX`] characters, 1 to
    /// [`REQUIREMENTS_MAX`] requirements, each with an identifier of 1 to [`IDENTIFIER_MAX`]
    /// characters (no white space at its ends, unique within the framework), a title of 1 to
    /// [`TITLE_MAX`] and a description of at most [`DESCRIPTION_MAX`]. Every error names its path
    /// (at most [`ERRORS_MAX`] of them); the values come back trimmed.
    pub fn validate(mut self) -> Result<Self, ValidationErrors> {
        let mut errors = Errors::default();
        let count = self.requirements.len();
        if !(1..=REQUIREMENTS_MAX).contains(&count) {
            errors.check::<()>(Err(FieldError::new(
                &self.requirements_path,
                format!("must hold 1 to {REQUIREMENTS_MAX} requirements, not {count}"),
            )));
        }
        if let Some(name) = errors.check(text(&self.name_path, self.name.trim().to_owned(), 1, NAME_MAX)) {
            self.name = name;
        }
        if let Some(version) = errors.check(text(&self.version_path, self.version.trim().to_owned(), 1, VERSION_MAX)) {
            self.version = version;
        }
        let mut seen: HashMap<String, String> = HashMap::with_capacity(count);
        for requirement in &mut self.requirements {
            let paths = &requirement.paths;
            let identifier = requirement.identifier.trim().to_owned();
            if let Some(identifier) = errors.check(text(&paths.identifier, identifier, 1, IDENTIFIER_MAX)) {
                if let Some(first) = seen.get(&identifier) {
                    errors.check::<()>(Err(FieldError::new(
                        &paths.identifier,
                        format!("duplicate identifier `{identifier}` (first at {first})"),
                    )));
                } else {
                    seen.insert(identifier.clone(), paths.identifier.clone());
                }
                requirement.identifier = identifier;
            }
            if let Some(title) = errors.check(text(&paths.title, requirement.title.trim().to_owned(), 1, TITLE_MAX)) {
                requirement.title = title;
            }
            let description = requirement.description.take().map(|d| d.trim().to_owned()).filter(|d| !d.is_empty());
            requirement.description = match description {
                Some(d) => errors.check(text(&paths.description, d, 0, DESCRIPTION_MAX)),
                None => None,
            };
        }
        ValidationErrors::into_result(errors.0)?;
        Ok(self)
    }
}

impl FrameworkWithRequirements {
    /// A new framework of the organization from a validated draft: fresh ids, parents linked.
    pub fn create(organization_id: OrganizationId, draft: FrameworkDraft, now: Timestamp) -> Self {
        let ids: Vec<RequirementId> = draft.requirements.iter().map(|_| RequirementId::generate()).collect();
        let requirements = draft
            .requirements
            .into_iter()
            .zip(&ids)
            .map(|(r, id)| Requirement {
                id: id.clone(),
                identifier: r.identifier,
                title: r.title,
                description: r.description,
                parent_id: r.parent.and_then(|index| ids.get(index).cloned()),
                catalog_id: r.catalog_id,
            })
            .collect::<Vec<_>>();
        let framework = Framework {
            id: FrameworkId::generate(),
            organization_id,
            name: draft.name,
            version: draft.version,
            source: draft.source,
            requirement_count: requirements.len(),
            created_at: now,
            updated_at: now,
        };
        Self { framework, requirements }
    }
}

/// The body of `POST /v1/frameworks`: a framework in our own shape. The shipped templates are
/// files of this shape too.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewFramework {
    /// Required: 1 to 255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = name_schema, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// Required: 1 to 100 characters (`2022`, `rev5`, `1.0`).
    #[cfg_attr(feature = "openapi", schema(schema_with = version_schema, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub version: Option<String>,
    /// Required: 1 to 5,000 requirements, in the order they are shown.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 5000, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub requirements: Option<Vec<NewRequirement>>,
}

/// One requirement of a [`NewFramework`].
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewRequirement {
    /// Required: 1 to 100 characters, unique within the framework (`CC6.1`).
    #[cfg_attr(feature = "openapi", schema(schema_with = identifier_schema, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub identifier: Option<String>,
    /// Required: 1 to 1,000 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = title_schema, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub title: Option<String>,
    /// Up to 50,000 characters; empty or absent: none.
    #[cfg_attr(feature = "openapi", schema(schema_with = description_schema))]
    pub description: Option<String>,
    /// The `identifier` of an earlier requirement of the list that this one refines.
    #[cfg_attr(feature = "openapi", schema(schema_with = parent_schema))]
    pub parent: Option<String>,
}

impl NewFramework {
    /// The draft of this body (`source` says whether it is a custom body or a template); a
    /// missing field, or a `parent` naming no earlier requirement, is an error naming its path.
    /// The values are checked by [`FrameworkDraft::validate`].
    pub fn into_draft(self, source: FrameworkSource) -> Result<FrameworkDraft, ValidationErrors> {
        let mut errors = Errors::default();
        let name = errors.check(self.name.ok_or_else(|| FieldError::new("name", "is required")));
        let version = errors.check(self.version.ok_or_else(|| FieldError::new("version", "is required")));
        let inputs = errors.check(self.requirements.ok_or_else(|| FieldError::new("requirements", "is required")));
        let mut requirements = Vec::with_capacity(inputs.as_ref().map_or(0, Vec::len));
        let mut earlier: HashMap<String, usize> = HashMap::new();
        for (index, input) in inputs.into_iter().flatten().enumerate() {
            let at = format!("requirements[{index}]");
            let identifier = errors
                .check(input.identifier.ok_or_else(|| FieldError::new(format!("{at}.identifier"), "is required")));
            let title = errors.check(input.title.ok_or_else(|| FieldError::new(format!("{at}.title"), "is required")));
            let parent = match input.parent {
                None => None,
                Some(parent) => errors.check(earlier.get(parent.trim()).copied().ok_or_else(|| {
                    FieldError::new(format!("{at}.parent"), "must be the identifier of an earlier requirement")
                })),
            };
            let (Some(identifier), Some(title)) = (identifier, title) else { continue };
            earlier.entry(identifier.trim().to_owned()).or_insert(index);
            requirements.push(RequirementDraft {
                identifier,
                title,
                description: input.description,
                parent,
                catalog_id: None,
                paths: DraftPaths {
                    identifier: format!("{at}.identifier"),
                    title: format!("{at}.title"),
                    description: format!("{at}.description"),
                },
            });
        }
        ValidationErrors::into_result(errors.0)?;
        Ok(FrameworkDraft {
            name: name.unwrap_or_default(),
            name_path: "name".into(),
            version: version.unwrap_or_default(),
            version_path: "version".into(),
            source,
            requirements,
            requirements_path: "requirements".into(),
        })
    }
}

/// A framework manifest this service ships (`frameworks/<key>.json`): identifiers and short titles
/// of our own words, never a standard's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The file's name without `.json` (`soc2-2017`).
    pub key: &'static str,
    /// The framework's name.
    pub name: String,
    /// The framework's version.
    pub version: String,
    /// Its requirements, validated.
    pub draft: FrameworkDraft,
}

/// The manifests of the repository's `frameworks/` directory, compiled in.
const TEMPLATE_FILES: [(&str, &str); 2] = [
    ("soc2-2017", include_str!("../../../frameworks/soc2-2017.json")),
    ("iso27001-2022", include_str!("../../../frameworks/iso27001-2022.json")),
];

/// Every shipped template, read once. A manifest that does not validate is a build defect (a unit
/// test reads them all); it is left out rather than failing the service.
pub fn templates() -> &'static [Template] {
    static TEMPLATES: OnceLock<Vec<Template>> = OnceLock::new();
    TEMPLATES.get_or_init(|| TEMPLATE_FILES.iter().filter_map(|(key, json)| read_template(key, json).ok()).collect())
}

/// The shipped template `key`, if there is one.
pub fn template(key: &str) -> Option<&'static Template> {
    templates().iter().find(|template| template.key == key)
}

fn read_template(key: &'static str, json: &str) -> Result<Template, String> {
    let body: NewFramework = serde_json::from_str(json).map_err(|e| format!("{key}: {e}"))?;
    let draft = body
        .into_draft(FrameworkSource::Template)
        .and_then(FrameworkDraft::validate)
        .map_err(|e| format!("{key}: {e}"))?;
    Ok(Template { key, name: draft.name.clone(), version: draft.version.clone(), draft })
}

#[cfg(feature = "openapi")]
fn name_schema() -> utoipa::openapi::Object {
    crate::openapi::text(1, NAME_MAX).build()
}

#[cfg(feature = "openapi")]
fn version_schema() -> utoipa::openapi::Object {
    crate::openapi::text(1, VERSION_MAX).build()
}

#[cfg(feature = "openapi")]
fn identifier_schema() -> utoipa::openapi::Object {
    crate::openapi::text(1, IDENTIFIER_MAX).build()
}

#[cfg(feature = "openapi")]
fn title_schema() -> utoipa::openapi::Object {
    crate::openapi::text(1, TITLE_MAX).build()
}

#[cfg(feature = "openapi")]
fn description_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{SchemaType, Type};
    crate::openapi::text(0, DESCRIPTION_MAX).schema_type(SchemaType::from_iter([Type::String, Type::Null])).build()
}

#[cfg(feature = "openapi")]
fn parent_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{SchemaType, Type};
    crate::openapi::text(1, IDENTIFIER_MAX).schema_type(SchemaType::from_iter([Type::String, Type::Null])).build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(json: &str) -> Result<FrameworkDraft, ValidationErrors> {
        let body: NewFramework = serde_json::from_str(json).unwrap();
        body.into_draft(FrameworkSource::Custom).and_then(FrameworkDraft::validate)
    }

    #[test]
    fn every_shipped_template_validates() {
        for (key, json) in TEMPLATE_FILES {
            let template = read_template(key, json).unwrap();
            assert!(template.draft.requirements.len() > 30, "{key}");
        }
        assert_eq!(templates().len(), TEMPLATE_FILES.len());
        assert_eq!(template("iso27001-2022").unwrap().draft.requirements.len(), 93);
    }

    #[test]
    fn parents_are_earlier_requirements_and_duplicates_are_named() {
        let ok = draft(
            r#"{"name":"N","version":"1","requirements":[
                {"identifier":"A","title":"a"},{"identifier":"A.1","title":"b","parent":"A"}]}"#,
        )
        .unwrap();
        assert_eq!(ok.requirements[1].parent, Some(0));
        let later = draft(
            r#"{"name":"N","version":"1","requirements":[
                {"identifier":"A.1","title":"b","parent":"A"},{"identifier":"A","title":"a"}]}"#,
        )
        .unwrap_err();
        assert_eq!(later.0[0].field, "requirements[0].parent");
        let twice = draft(
            r#"{"name":"N","version":"1","requirements":[
                {"identifier":"A","title":"a"},{"identifier":" A ","title":"b"}]}"#,
        )
        .unwrap_err();
        assert_eq!(twice.0[0].field, "requirements[1].identifier");
        assert!(twice.0[0].message.contains("duplicate"), "{twice}");
    }

    #[test]
    fn created_requirements_link_their_parents_by_id() {
        let draft = draft(
            r#"{"name":"N","version":"1","requirements":[
                {"identifier":"A","title":"a"},{"identifier":"A.1","title":"b","parent":"A"}]}"#,
        )
        .unwrap();
        let made = FrameworkWithRequirements::create(OrganizationId::generate(), draft, Timestamp::now());
        assert_eq!(made.requirements[1].parent_id.as_ref(), Some(&made.requirements[0].id));
        assert_eq!(made.framework.requirement_count, 2);
    }
}
