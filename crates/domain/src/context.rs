//! Context entries: questions and answers that describe how the organization works.

use serde::Deserialize;

use crate::validation::{FieldError, ValidationErrors, map_present, required, set, text};
use crate::{ContextEntryId, OrganizationId, Timestamp, required_non_null};

/// The longest question, in characters.
pub const QUESTION_MAX: usize = 2_000;
/// The longest answer, in characters.
pub const ANSWER_MAX: usize = 20_000;
/// The most tags of one entry.
pub const TAGS_MAX: usize = 50;
/// The longest tag, in characters.
pub const TAG_MAX: usize = 64;

/// A question about the organization and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextEntry {
    /// The entry's id.
    pub id: ContextEntryId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// 1 to [`QUESTION_MAX`] characters.
    pub question: String,
    /// 1 to [`ANSWER_MAX`] characters.
    pub answer: String,
    /// Up to [`TAGS_MAX`] tags, each up to [`TAG_MAX`] characters.
    pub tags: Vec<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// The body of a create.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewContextEntry {
    /// Required: 1 to 2,000 characters.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::question, required = true))]
    pub question: Option<String>,
    /// Required: 1 to 20,000 characters.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::answer, required = true))]
    pub answer: Option<String>,
    /// Up to 50 tags of up to 64 characters; none when omitted.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::tags))]
    pub tags: Option<Vec<String>>,
}

/// The body of a PATCH: only present fields change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextEntryChanges {
    /// Absent: unchanged; `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::question))]
    pub question: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::answer))]
    pub answer: Option<String>,
    /// Replaces every tag. Absent: unchanged; `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::tags))]
    pub tags: Option<Vec<String>>,
}

/// Validated changes to a context entry.
#[derive(Debug, Clone)]
pub struct ContextEntryPatch(ContextEntryChanges);

fn tags(tags: Vec<String>) -> Result<Vec<String>, FieldError> {
    if tags.len() > TAGS_MAX {
        return Err(FieldError::new("tags", format!("must hold at most {TAGS_MAX} tags")));
    }
    let mut seen = std::collections::HashSet::new();
    for tag in &tags {
        text("tags", tag.clone(), 1, TAG_MAX)?;
        if !seen.insert(tag.as_str()) {
            return Err(FieldError::new("tags", format!("holds `{tag}` twice")));
        }
    }
    Ok(tags)
}

impl ContextEntryPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: ContextEntryChanges) -> Result<Self, ValidationErrors> {
        Ok(Self(ContextEntryChanges {
            question: map_present(changes.question, |q| text("question", q, 1, QUESTION_MAX))?,
            answer: map_present(changes.answer, |a| text("answer", a, 1, ANSWER_MAX))?,
            tags: map_present(changes.tags, tags)?,
        }))
    }

    /// The validated changes, field by field (`None`: unchanged).
    pub fn changes(&self) -> &ContextEntryChanges {
        &self.0
    }

    /// Whether no field is to change.
    pub fn is_empty(&self) -> bool {
        self.0 == ContextEntryChanges::default()
    }
}

impl ContextEntry {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

impl ContextEntry {
    /// A new entry of the organization, validated.
    pub fn create(
        organization_id: OrganizationId,
        input: NewContextEntry,
        now: Timestamp,
    ) -> Result<Self, ValidationErrors> {
        Ok(Self {
            id: ContextEntryId::generate(),
            organization_id,
            question: text("question", required("question", input.question)?, 1, QUESTION_MAX)?,
            answer: text("answer", required("answer", input.answer)?, 1, ANSWER_MAX)?,
            tags: tags(input.tags.unwrap_or_default())?,
            created_at: now,
            updated_at: now,
        })
    }

    /// Applies a validated patch; an empty patch changes nothing, not even `updated_at`.
    pub fn apply(&mut self, patch: &ContextEntryPatch, now: Timestamp) {
        if patch.is_empty() {
            return;
        }
        set(&mut self.question, &patch.0.question);
        set(&mut self.answer, &patch.0.answer);
        set(&mut self.tags, &patch.0.tags);
        self.updated_at = now;
    }
}

/// The schemas of this module's inputs, as the validation checks them.
#[cfg(feature = "openapi")]
mod schemas {
    use utoipa::openapi::schema::{Array, ArrayBuilder};

    crate::openapi::text_fields! {
        question = text(1, super::QUESTION_MAX);
        answer = text(1, super::ANSWER_MAX);
    }

    /// A context entry's tags: distinct, non-blank, bounded.
    pub fn tags() -> Array {
        ArrayBuilder::new()
            .items(crate::openapi::text(1, super::TAG_MAX))
            .max_items(Some(super::TAGS_MAX))
            .unique_items(true)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_or_blank_tags_are_refused() {
        assert!(tags(vec!["a".into(), "a".into()]).is_err());
        assert!(tags(vec![" ".into()]).is_err());
        assert_eq!(tags(vec!["soc2".into(), "hr".into()]).unwrap().len(), 2);
    }
}
