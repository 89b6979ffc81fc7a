//! Policies: rich-text documents the organization publishes, reviews and has people sign.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::validation::{FieldError, ValidationErrors, map_nullable, map_present, required, set, text};
use crate::{Department, MemberId, OrganizationId, PolicyId, Timestamp, UserId, nullable, required_non_null};

crate::string_enum! {
    /// Where the policy stands in its review, approval and publication.
    PolicyStatus {
        Draft = "draft",
        Published = "published",
        NeedsReview = "needs_review",
        PendingApproval = "pending_approval",
    }
}

crate::string_enum! {
    /// How often the policy is reviewed.
    PolicyFrequency { Monthly = "monthly", Quarterly = "quarterly", Yearly = "yearly" }
}

/// The longest name, in characters.
pub const NAME_MAX: usize = 255;
/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 10_000;
/// The longest template id, in characters.
pub const TEMPLATE_ID_MAX: usize = 255;
/// The longest a submission's change note or a rejection's reason may be.
pub const NOTE_MAX: usize = 2_000;
/// How deep rich-text nodes may nest (each level is two JSON levels; the parser allows 128).
pub const CONTENT_DEPTH_MAX: usize = 32;
/// The most bytes the serialised content may take.
pub const CONTENT_BYTES_MAX: usize = 1024 * 1024;
/// A policy is reviewed a year after it is created unless told otherwise.
const DEFAULT_REVIEW_AFTER: time::Duration = time::Duration::days(365);

/// A policy: its content, review cycle, approval and who signed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The policy's id.
    pub id: PolicyId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// 1 to [`NAME_MAX`] characters.
    pub name: String,
    /// Up to [`DESCRIPTION_MAX`] characters.
    pub description: String,
    /// `draft`, `needs_review`, `pending_approval` or `published`.
    pub status: PolicyStatus,
    /// The working copy of its rich text (validated JSON nodes).
    pub content: RichText,
    /// How often it is reviewed.
    pub frequency: PolicyFrequency,
    /// The department it concerns.
    pub department: Department,
    /// Whether members must sign its published version.
    pub is_required_to_sign: bool,
    /// The users who signed its current version.
    pub signed_by: Vec<UserId>,
    /// When it is next due for review.
    pub review_date: Timestamp,
    /// Whether it is archived.
    pub is_archived: bool,
    /// When it was last archived.
    pub last_archived_at: Option<Timestamp>,
    /// When a version was last published.
    pub last_published_at: Option<Timestamp>,
    /// The member responsible for it, if any.
    pub assignee_id: Option<MemberId>,
    /// The member who approves its submissions, if any.
    pub approver_id: Option<MemberId>,
    /// The template it was made from, if any.
    pub policy_template_id: Option<String>,
    /// The library template it was made from by an adoption, if any (read-only).
    pub library: Option<crate::library::LibraryOrigin>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// The number of the published version readers and signers see; 0 before the first publish.
    pub current_version: i32,
    /// While `pending_approval`: the user who submitted it and the note they gave.
    pub submitted_by: Option<UserId>,
    /// While `pending_approval`: the submitter's note.
    pub change_note: Option<String>,
    /// Why the approver returned the last submission to draft.
    pub rejection_reason: Option<String>,
}

/// Rich-text content: an array of nodes, each an object with a string `type`, optional `attrs`
/// (object or null), optional `content` (nodes) and, on `text` nodes, a string `text`.
/// Other keys (such as `marks`) are kept as they are.
///
/// Held as its JSON text once validated: policies are the largest records, and a list of them is
/// stored and answered as it is instead of being parsed into trees and written out again.
#[derive(Debug, Clone)]
pub struct RichText(Box<RawValue>);

impl PartialEq for RichText {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl RichText {
    /// Checks the nodes of a rich-text document.
    pub fn parse(nodes: Vec<Value>) -> Result<Self, FieldError> {
        for (index, node) in nodes.iter().enumerate() {
            check_node(node, &format!("content[{index}]"), 1)?;
        }
        let too_big = || FieldError::new("content", format!("must be at most {CONTENT_BYTES_MAX} bytes of JSON"));
        let json = serde_json::value::to_raw_value(&nodes).map_err(|_| too_big())?;
        if json.get().len() > CONTENT_BYTES_MAX {
            return Err(too_big());
        }
        Ok(Self(json))
    }

    /// Content read back from storage, where it was validated before it was written: only its
    /// JSON syntax and its being an array are checked again.
    pub fn from_stored(json: String) -> Result<Self, serde_json::Error> {
        if !json.trim_start().starts_with('[') {
            return Err(serde::de::Error::custom("content is not a JSON array"));
        }
        RawValue::from_string(json).map(Self)
    }

    /// The nodes as JSON text (an array).
    pub fn json(&self) -> &RawValue {
        &self.0
    }
}

/// `pending_approval` is reached through `POST /v1/policies/{id}/submit` only.
fn not_by_status() -> FieldError {
    FieldError::new("status", "cannot be set to pending_approval: submit the policy (POST /v1/policies/{id}/submit)")
}

fn check_node(node: &Value, path: &str, depth: usize) -> Result<(), FieldError> {
    let invalid = |message: &str| Err(FieldError::new("content", format!("{path} {message}")));
    if depth > CONTENT_DEPTH_MAX {
        return invalid(&format!("nests deeper than {CONTENT_DEPTH_MAX} levels"));
    }
    let Some(object) = node.as_object() else {
        return invalid("must be an object");
    };
    let Some(kind) = object.get("type").and_then(Value::as_str) else {
        return invalid("must have a string `type`");
    };
    // PostgreSQL text cannot hold NUL, and no rich text needs it: refused in keys and values alike.
    let own_members = object.iter().filter(|(key, _)| key.as_str() != "content");
    if object.keys().any(|key| key.contains('\0')) || own_members.clone().any(|(_, value)| holds_nul(value)) {
        return invalid("must not contain NUL characters");
    }
    if !matches!(object.get("attrs"), None | Some(Value::Null | Value::Object(_))) {
        return invalid("has `attrs` that is neither an object nor null");
    }
    if kind == "text" && !object.get("text").is_some_and(Value::is_string) {
        return invalid("is a text node without a string `text`");
    }
    if object.get("text").is_some_and(|text| !text.is_string()) {
        return invalid("has `text` that is not a string");
    }
    match object.get("content") {
        None => Ok(()),
        Some(Value::Array(children)) => children
            .iter()
            .enumerate()
            .try_for_each(|(index, child)| check_node(child, &format!("{path}.content[{index}]"), depth + 1)),
        Some(_) => invalid("has `content` that is not an array"),
    }
}

/// Whether a string anywhere in `value` (outside nested `content`, which is checked node by node)
/// holds a NUL character.
fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(key, value)| key.contains('\0') || holds_nul(value)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The body of a create. Omitted enumerations take the specification's defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewPolicy {
    /// Required: 1 to 255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// Up to 10,000 characters; empty when omitted.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// `draft` (the default) or `needs_review`; publishing and approval are separate steps.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::settable_status))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<PolicyStatus>,
    /// Required: the document's nodes.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::policy_content, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub content: Option<Vec<Value>>,
    /// `yearly` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = PolicyFrequency))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub frequency: Option<PolicyFrequency>,
    /// `none` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Department))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub department: Option<Department>,
    /// `true` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub is_required_to_sign: Option<bool>,
    /// A year from now when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = Timestamp))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub review_date: Option<Timestamp>,
    /// `false` when omitted.
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub is_archived: Option<bool>,
    /// The member responsible for it: an active member of the organization.
    pub assignee_id: Option<MemberId>,
    /// The member who approves its submissions: an active member of the organization.
    pub approver_id: Option<MemberId>,
    /// The template it is made from.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::template_id))]
    pub policy_template_id: Option<String>,
}

/// The body of a PATCH: only present fields change; `null` clears a nullable field.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyChanges {
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub name: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub description: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::settable_status))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub status: Option<PolicyStatus>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::openapi::policy_content))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub content: Option<Vec<Value>>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = PolicyFrequency))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub frequency: Option<PolicyFrequency>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Department))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub department: Option<Department>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub is_required_to_sign: Option<bool>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = Timestamp))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub review_date: Option<Timestamp>,
    /// Absent: unchanged; `null` is refused.
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub is_archived: Option<bool>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    pub assignee_id: Option<Option<MemberId>>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    pub approver_id: Option<Option<MemberId>>,
    /// Absent: unchanged; `null`: cleared.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::template_id))]
    #[serde(default, deserialize_with = "nullable")]
    pub policy_template_id: Option<Option<String>>,
}

/// The body of `POST /v1/policies/{id}/submit`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicySubmission {
    /// What changed, for the approver and the version's record (at most 2,000 characters).
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::change_note))]
    pub change_note: Option<String>,
}

/// The body of `POST /v1/policies/{id}/reject`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyRejection {
    /// Why, for the submitter (1 to 2,000 characters).
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::rejection_reason, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub reason: Option<String>,
}

/// Validated changes to a policy.
#[derive(Debug, Clone)]
pub struct PolicyPatch {
    /// Every change but the content (its `content` is always `None`).
    changes: PolicyChanges,
    /// The new content, validated.
    content: Option<RichText>,
}

impl PolicyPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: PolicyChanges) -> Result<Self, ValidationErrors> {
        if changes.status == Some(PolicyStatus::PendingApproval) {
            return Err(not_by_status().into());
        }
        let content = map_present(changes.content, RichText::parse)?;
        let changes = PolicyChanges {
            name: map_present(changes.name, |n| text("name", n, 1, NAME_MAX))?,
            description: map_present(changes.description, |d| text("description", d, 0, DESCRIPTION_MAX))?,
            content: None,
            policy_template_id: map_nullable(changes.policy_template_id, |t| {
                text("policyTemplateId", t, 1, TEMPLATE_ID_MAX)
            })?,
            ..changes
        };
        Ok(Self { changes, content })
    }

    /// Whether no field is to change.
    pub fn is_empty(&self) -> bool {
        self.changes == PolicyChanges::default() && self.content.is_none()
    }

    /// Whether the patch sets the content (to anything).
    pub fn sets_content(&self) -> bool {
        self.content.is_some()
    }

    /// The members the patch names as assignee or approver.
    pub fn named_members(&self) -> impl Iterator<Item = (&'static str, &MemberId)> {
        let assignee = self.changes.assignee_id.as_ref().and_then(Option::as_ref).map(|m| ("assigneeId", m));
        let approver = self.changes.approver_id.as_ref().and_then(Option::as_ref).map(|m| ("approverId", m));
        assignee.into_iter().chain(approver)
    }
}

impl Policy {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

impl Policy {
    /// A new policy of the organization, validated, with the defaults filled in.
    pub fn create(organization_id: OrganizationId, input: NewPolicy, now: Timestamp) -> Result<Self, ValidationErrors> {
        if input.status == Some(PolicyStatus::PendingApproval) {
            return Err(not_by_status().into());
        }
        let mut policy = Self {
            id: PolicyId::generate(),
            organization_id,
            name: text("name", required("name", input.name)?, 1, NAME_MAX)?,
            description: text("description", input.description.unwrap_or_default(), 0, DESCRIPTION_MAX)?,
            status: PolicyStatus::Draft,
            content: RichText::parse(required("content", input.content)?)?,
            frequency: input.frequency.unwrap_or(PolicyFrequency::Yearly),
            department: input.department.unwrap_or(Department::None),
            is_required_to_sign: input.is_required_to_sign.unwrap_or(true),
            signed_by: Vec::new(),
            review_date: input.review_date.unwrap_or(now.plus(DEFAULT_REVIEW_AFTER)),
            is_archived: false,
            last_archived_at: None,
            last_published_at: None,
            assignee_id: input.assignee_id,
            approver_id: input.approver_id,
            policy_template_id: input
                .policy_template_id
                .map(|t| text("policyTemplateId", t, 1, TEMPLATE_ID_MAX))
                .transpose()?,
            created_at: now,
            updated_at: now,
            current_version: 0,
            library: None,
            submitted_by: None,
            change_note: None,
            rejection_reason: None,
        };
        // Publishing snapshots a version, which the use case does (`Policy::publish`) after
        // checking who may publish: a policy is created as a draft or as needing review.
        if input.status == Some(PolicyStatus::NeedsReview) {
            policy.status = PolicyStatus::NeedsReview;
        }
        policy.set_archived(input.is_archived.unwrap_or(false), now);
        Ok(policy)
    }

    /// The members named as assignee or approver.
    pub fn named_members(&self) -> impl Iterator<Item = (&'static str, &MemberId)> {
        let assignee = self.assignee_id.as_ref().map(|m| ("assigneeId", m));
        assignee.into_iter().chain(self.approver_id.as_ref().map(|m| ("approverId", m)))
    }

    /// Applies a validated patch; an empty patch changes nothing, not even `updated_at`.
    /// Answers whether the patch asks to publish (`status` → `published` from another status):
    /// the use case then checks who may and calls [`Policy::publish`]. Changing the content of a
    /// published policy moves it to `needs_review`, unless the patch names a status itself.
    pub fn apply(&mut self, patch: &PolicyPatch, now: Timestamp) -> bool {
        if patch.is_empty() {
            return false;
        }
        let c = &patch.changes;
        set(&mut self.name, &c.name);
        set(&mut self.description, &c.description);
        let mut content_changed = false;
        if let Some(content) = &patch.content {
            content_changed = *content != self.content;
            self.content = content.clone();
        }
        set(&mut self.frequency, &c.frequency);
        set(&mut self.department, &c.department);
        set(&mut self.is_required_to_sign, &c.is_required_to_sign);
        set(&mut self.review_date, &c.review_date);
        set(&mut self.assignee_id, &c.assignee_id);
        set(&mut self.approver_id, &c.approver_id);
        set(&mut self.policy_template_id, &c.policy_template_id);
        let publishes = match c.status {
            Some(PolicyStatus::Published) => self.status != PolicyStatus::Published || content_changed,
            Some(status) => {
                self.status = status;
                false
            }
            None => {
                if content_changed && self.status == PolicyStatus::Published {
                    self.status = PolicyStatus::NeedsReview;
                }
                false
            }
        };
        if self.status != PolicyStatus::PendingApproval {
            self.submitted_by = None;
            self.change_note = None;
        }
        if let Some(archived) = c.is_archived {
            self.set_archived(archived, now);
        }
        self.updated_at = now;
        publishes
    }

    /// Publishes the content as the next version, by `by` (a user), approved by `approved_by`
    /// when it went through approval: the status becomes `published`, `lastPublishedAt` is
    /// stamped, a new round of signatures starts, and a republish moves `reviewDate` to one
    /// review period (`frequency`) after now. Answers the version to store.
    pub fn publish(&mut self, by: &UserId, approved_by: Option<&UserId>, now: Timestamp) -> PolicyVersion {
        let republish = self.current_version > 0;
        self.current_version += 1;
        self.status = PolicyStatus::Published;
        self.last_published_at = Some(now);
        self.signed_by.clear();
        if republish {
            self.review_date = crate::frequency::plus_months(now, self.frequency.months());
        }
        let change_note = self.change_note.take();
        self.submitted_by = None;
        self.rejection_reason = None;
        self.updated_at = now;
        PolicyVersion {
            organization_id: self.organization_id.clone(),
            policy_id: self.id.clone(),
            number: self.current_version,
            name: self.name.clone(),
            content: self.content.clone(),
            change_note,
            published_at: now,
            published_by: Some(by.clone()),
            approved_by: approved_by.cloned(),
            approved_at: approved_by.map(|_| now),
        }
    }

    /// Submits the draft (or the changes under review) for approval by the approver.
    pub fn submit(&mut self, by: &UserId, change_note: Option<String>, now: Timestamp) -> Result<(), String> {
        match self.status {
            PolicyStatus::Draft | PolicyStatus::NeedsReview => {}
            PolicyStatus::PendingApproval => return Err("the policy is already pending approval".into()),
            PolicyStatus::Published => {
                return Err("the policy is published and unchanged since: there is nothing to approve".into());
            }
        }
        self.status = PolicyStatus::PendingApproval;
        self.submitted_by = Some(by.clone());
        self.change_note = change_note;
        self.rejection_reason = None;
        self.updated_at = now;
        Ok(())
    }

    /// Returns a pending submission to draft with the approver's reason.
    pub fn reject(&mut self, reason: String, now: Timestamp) -> Result<(), String> {
        if self.status != PolicyStatus::PendingApproval {
            return Err(format!("the policy is {}, not pending approval", self.status));
        }
        self.status = PolicyStatus::Draft;
        self.submitted_by = None;
        self.change_note = None;
        self.rejection_reason = Some(reason);
        self.updated_at = now;
        Ok(())
    }

    /// Records that `user` acknowledged the current version; `false` when they already had.
    pub fn sign(&mut self, user: &UserId, now: Timestamp) -> Result<bool, String> {
        if self.current_version == 0 {
            return Err(format!(
                "the policy is {} and has never been published: there is nothing to sign",
                self.status
            ));
        }
        if self.signed_by.contains(user) {
            return Ok(false);
        }
        self.signed_by.push(user.clone());
        self.updated_at = now;
        Ok(true)
    }

    /// Archiving (moving `is_archived` to true) stamps `last_archived_at`.
    fn set_archived(&mut self, archived: bool, now: Timestamp) {
        if archived && (!self.is_archived || self.last_archived_at.is_none()) {
            self.last_archived_at = Some(now);
        }
        self.is_archived = archived;
    }
}

impl PolicyFrequency {
    /// The review period, in months.
    pub fn months(self) -> u8 {
        match self {
            PolicyFrequency::Monthly => 1,
            PolicyFrequency::Quarterly => 3,
            PolicyFrequency::Yearly => 12,
        }
    }
}

/// A published version of a policy: immutable once written.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyVersion {
    /// The organization.
    pub organization_id: OrganizationId,
    /// The policy.
    pub policy_id: PolicyId,
    /// The version number, from 1.
    pub number: i32,
    /// The policy's name when published.
    pub name: String,
    /// The text as published.
    pub content: RichText,
    /// What changed, as the submitter wrote it.
    pub change_note: Option<String>,
    /// When it was published.
    pub published_at: Timestamp,
    /// The user who published it; unknown for versions made of policies published before
    /// versions existed.
    pub published_by: Option<UserId>,
    /// The approver, if it went through approval.
    pub approved_by: Option<UserId>,
    /// When it was approved, if it was.
    pub approved_at: Option<Timestamp>,
}

impl PolicyVersion {
    /// The entity tag of the version. A version never changes once published, so its tag never
    /// does either: a digest of its whole state ([`ETag::of_state`](crate::etag::ETag::of_state)).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of_state(&format!("{}/versions/{}", self.policy_id, self.number), self)
    }
}

/// A version as a list shows it: without its content, with how many signed it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyVersionSummary {
    /// The version number, from 1.
    pub number: i32,
    /// The policy's name when published.
    pub name: String,
    /// What changed.
    pub change_note: Option<String>,
    /// When it was published.
    pub published_at: Timestamp,
    /// Who published it, if known.
    pub published_by: Option<UserId>,
    /// The approver, if any.
    pub approved_by: Option<UserId>,
    /// When it was approved, if it was.
    pub approved_at: Option<Timestamp>,
    /// How many members signed it.
    pub signature_count: i64,
}

/// One acknowledgement of one version.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySignature {
    /// The organization.
    pub organization_id: OrganizationId,
    /// The policy.
    pub policy_id: PolicyId,
    /// The version signed.
    pub version: i32,
    /// The user who signed.
    pub user_id: UserId,
    /// When.
    pub signed_at: Timestamp,
}

/// A member as the signature lists show them; `signed_at` for those who signed.
#[derive(Debug, Clone, PartialEq)]
pub struct Signer {
    /// The user.
    pub user_id: UserId,
    /// Their name.
    pub name: String,
    /// Their e-mail address.
    pub email: String,
    /// When they signed; `None` while they have not.
    pub signed_at: Option<Timestamp>,
}

/// Who signed a version, and the active members who have not.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VersionSigners {
    /// Members who signed the version.
    pub signed: Vec<Signer>,
    /// Members who have not signed it yet.
    pub unsigned: Vec<Signer>,
}

/// The schemas of this module's inputs, as the validation checks them.
#[cfg(feature = "openapi")]
mod schemas {
    use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

    crate::openapi::text_fields! {
        name = text(1, super::NAME_MAX);
        description = text(0, super::DESCRIPTION_MAX);
        template_id = nullable_text(1, super::TEMPLATE_ID_MAX);
        change_note = nullable_text(0, super::NOTE_MAX);
        rejection_reason = text(1, super::NOTE_MAX);
    }

    /// The statuses a client may set on a policy: every one but `pending_approval`, which only
    /// `POST /v1/policies/{id}/submit` reaches.
    pub fn settable_status() -> Object {
        use super::PolicyStatus;
        let settable = [PolicyStatus::Draft, PolicyStatus::Published, PolicyStatus::NeedsReview];
        ObjectBuilder::new().schema_type(Type::String).enum_values(Some(settable.map(PolicyStatus::as_str))).build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy() -> Policy {
        let input: NewPolicy = serde_json::from_value(json!({
            "name": "Access control",
            "content": [{"type": "paragraph", "attrs": {"textAlign": null},
                         "content": [{"type": "text", "text": "Least privilege.", "marks": [{"type": "bold"}]}]}]
        }))
        .unwrap();
        Policy::create(OrganizationId::generate(), input, Timestamp::now()).unwrap()
    }

    #[test]
    fn content_is_kept_as_given() {
        let policy = policy();
        let nodes: Value = serde_json::from_str(policy.content.json().get()).unwrap();
        assert_eq!(nodes[0]["content"][0]["marks"][0]["type"], "bold");
        assert_eq!(policy.status, PolicyStatus::Draft);
        assert_eq!(policy.last_published_at, None);
    }

    #[test]
    fn malformed_nodes_are_refused_with_their_path() {
        for (nodes, needle) in [
            (json!([{"attrs": {}}]), "content[0] must have a string `type`"),
            (json!([{"type": "p", "attrs": 3}]), "attrs"),
            (json!([{"type": "p", "content": [{"type": "text"}]}]), "content[0].content[0] is a text node"),
            (json!([{"type": "text", "text": "a\0b"}]), "content[0] must not contain NUL"),
            (json!([{"type": "p", "attrs": {"a\0": 1}}]), "content[0] must not contain NUL"),
            (json!(["text"]), "must be an object"),
        ] {
            let nodes: Vec<Value> = serde_json::from_value(nodes).unwrap();
            let error = RichText::parse(nodes).unwrap_err();
            assert_eq!(error.field, "content");
            assert!(error.message.contains(needle), "{}", error.message);
        }
    }

    #[test]
    fn too_deep_content_is_refused() {
        let mut node = json!({"type": "text", "text": "x"});
        for _ in 0..CONTENT_DEPTH_MAX {
            node = json!({"type": "div", "content": [node]});
        }
        assert!(RichText::parse(vec![node]).is_err());
    }

    #[test]
    fn publishing_and_archiving_stamp_their_times() {
        let mut policy = policy();
        let later = Timestamp::now().plus(time::Duration::seconds(1));
        let changes: PolicyChanges =
            serde_json::from_value(json!({"status": "published", "isArchived": true})).unwrap();
        assert!(policy.apply(&PolicyPatch::new(changes).unwrap(), later), "asks to publish");
        let version = policy.publish(&UserId::generate(), None, later);
        assert_eq!((version.number, policy.current_version), (1, 1));
        assert_eq!(policy.last_published_at, Some(later));
        assert_eq!(policy.last_archived_at, Some(later));
        let again = later.plus(time::Duration::seconds(1));
        let same: PolicyChanges = serde_json::from_value(json!({"status": "published"})).unwrap();
        assert!(!policy.apply(&PolicyPatch::new(same).unwrap(), again), "already published: nothing to publish");
        assert_eq!(policy.last_published_at, Some(later));
    }

    #[test]
    fn editing_published_content_needs_review_and_republishing_moves_the_review_date() {
        let mut policy = policy();
        let start = Timestamp::parse("2026-01-31T10:00:00Z").unwrap();
        policy.frequency = PolicyFrequency::Monthly;
        policy.publish(&UserId::generate(), None, start);
        let changes: PolicyChanges = serde_json::from_value(json!({"content": [{"type": "paragraph"}]})).unwrap();
        assert!(!policy.apply(&PolicyPatch::new(changes).unwrap(), start));
        assert_eq!(policy.status, PolicyStatus::NeedsReview);
        policy.publish(&UserId::generate(), None, start);
        assert_eq!(policy.current_version, 2);
        assert_eq!(policy.review_date, Timestamp::parse("2026-02-28T10:00:00Z").unwrap());
    }

    #[test]
    fn pending_approval_is_reached_only_by_submitting() {
        let changes: PolicyChanges = serde_json::from_value(json!({"status": "pending_approval"})).unwrap();
        assert!(PolicyPatch::new(changes).is_err());
        let mut policy = policy();
        let user = UserId::generate();
        policy.submit(&user, Some("first".into()), Timestamp::now()).unwrap();
        assert!(policy.submit(&user, None, Timestamp::now()).is_err(), "twice");
        policy.reject("too vague".into(), Timestamp::now()).unwrap();
        assert_eq!((policy.status, policy.rejection_reason.as_deref()), (PolicyStatus::Draft, Some("too vague")));
        assert!(policy.sign(&user, Timestamp::now()).is_err(), "never published");
    }
}
