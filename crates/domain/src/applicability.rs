//! The Statement of Applicability (ISO/IEC 27001 6.1.3 d): whether each requirement of a
//! framework applies to the organization, and why; and the statement as a document (JSON, CSV,
//! the HTML a PDF is printed from), each requirement with the controls implementing it and their
//! status at a moment.

use serde::Deserialize;

use crate::framework::Framework;
use crate::framework_status::{FrameworkStatus, RequirementStatus};
use crate::validation::{ValidationErrors, required, text};
use crate::{FrameworkId, OrganizationId, RequirementId, Timestamp, required_non_null};

/// The longest justification, in characters.
pub const JUSTIFICATION_MAX: usize = 2_000;

/// The body of `PUT /v1/frameworks/{id}/requirements/{requirementId}/applicability`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewApplicability {
    /// Required: whether the requirement applies to the organization.
    #[cfg_attr(feature = "openapi", schema(value_type = bool, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub applicable: Option<bool>,
    /// Required, 1 to 2,000 characters: why it is included or excluded (the standard asks the
    /// reason for both).
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::justification, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub justification: Option<String>,
}

/// Whether a requirement applies, as the organization stated it at `created_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applicability {
    /// The organization.
    pub organization_id: OrganizationId,
    /// The requirement's framework.
    pub framework_id: FrameworkId,
    /// The requirement.
    pub requirement_id: RequirementId,
    /// Whether it applies.
    pub applicable: bool,
    /// Why.
    pub justification: String,
    /// When it was stated.
    pub created_at: Timestamp,
    /// When a later statement replaced it (`None` while in force).
    pub removed_at: Option<Timestamp>,
}

impl Applicability {
    /// The statement `input` makes about a requirement of `framework` at `now`, validated.
    pub fn state(
        organization_id: OrganizationId,
        framework_id: FrameworkId,
        requirement_id: RequirementId,
        input: NewApplicability,
        now: Timestamp,
    ) -> Result<Self, ValidationErrors> {
        let applicable = required("applicable", input.applicable);
        let justification = required("justification", input.justification)
            .and_then(|j| text("justification", j.trim().to_owned(), 1, JUSTIFICATION_MAX));
        let (applicable, justification) = match (applicable, justification) {
            (Ok(a), Ok(j)) => (a, j),
            (a, j) => {
                let errors = [a.err(), j.err()].into_iter().flatten().collect::<Vec<_>>();
                return Err(ValidationErrors(errors));
            }
        };
        Ok(Self {
            organization_id,
            framework_id,
            requirement_id,
            applicable,
            justification,
            created_at: now,
            removed_at: None,
        })
    }
}

/// One requirement's line of the statement.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementLine<'a> {
    /// `A.5.15`.
    pub identifier: &'a str,
    /// The requirement's title.
    pub title: &'a str,
    /// Whether it applies (true without a statement).
    pub applicable: bool,
    /// Why, as stated; `None` where nothing was stated.
    pub justification: Option<&'a str>,
    /// How far it is implemented: its status from the mapped controls, or `not_applicable`.
    pub implementation: RequirementStatus,
    /// The controls implementing it: name and status.
    pub controls: Vec<(&'a str, &'a str)>,
}

/// The statement's lines, in catalog order, from the framework's status at a moment and the
/// statements in force then.
pub fn lines<'a>(status: &'a FrameworkStatus, statements: &'a [Applicability]) -> Vec<StatementLine<'a>> {
    status
        .requirements
        .iter()
        .map(|state| {
            let stated = statements.iter().find(|s| s.requirement_id == state.requirement.id);
            StatementLine {
                identifier: &state.requirement.identifier,
                title: &state.requirement.title,
                applicable: stated.is_none_or(|s| s.applicable),
                justification: stated.map(|s| s.justification.as_str()),
                implementation: state.status,
                controls: state.controls.iter().map(|c| (c.name.as_str(), c.status.as_str())).collect(),
            }
        })
        .collect()
}

/// The CSV columns of the statement.
pub const CSV_COLUMNS: [&str; 6] = ["identifier", "title", "applicable", "justification", "implementation", "controls"];

/// A line's CSV fields, in [`CSV_COLUMNS`]' order; the controls as `name (status)` joined by `; `.
pub fn csv_fields(line: &StatementLine<'_>) -> [String; 6] {
    let controls: Vec<String> = line.controls.iter().map(|(name, status)| format!("{name} ({status})")).collect();
    [
        line.identifier.to_owned(),
        line.title.to_owned(),
        line.applicable.to_string(),
        line.justification.unwrap_or_default().to_owned(),
        line.implementation.as_str().to_owned(),
        controls.join("; "),
    ]
}

/// The statement as a self-contained HTML document (no script, nothing fetched), for the printer.
pub fn html(framework: &Framework, organization: &str, as_of: Timestamp, lines: &[StatementLine<'_>]) -> String {
    use crate::policy_document::escape;
    let mut rows = String::new();
    for line in lines {
        let controls: Vec<String> =
            line.controls.iter().map(|(name, status)| format!("{} ({status})", escape(name))).collect();
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(line.identifier),
            escape(line.title),
            if line.applicable { "Yes" } else { "No" },
            escape(line.justification.unwrap_or_default()),
            line.implementation.as_str(),
            controls.join("<br>"),
        ));
    }
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Statement of Applicability</title>\
         <style>body{{font-family:sans-serif;font-size:9pt}}table{{border-collapse:collapse;width:100%}}\
         th,td{{border:1px solid #999;padding:3px;vertical-align:top;text-align:left}}</style></head><body>\
         <h1>Statement of Applicability</h1><p>{} — {} {} — as of {}</p>\
         <table><thead><tr><th>Requirement</th><th>Title</th><th>Applicable</th><th>Justification</th>\
         <th>Implementation</th><th>Controls</th></tr></thead><tbody>\n{rows}</tbody></table></body></html>",
        escape(organization),
        escape(&framework.name),
        escape(&framework.version),
        as_of,
    )
}

#[cfg(feature = "openapi")]
mod schemas {
    crate::openapi::text_fields! {
        justification = text(1, super::JUSTIFICATION_MAX);
    }
}
