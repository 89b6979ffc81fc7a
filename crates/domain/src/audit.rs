//! The audit trail: who changed what, when, from what; sealed into a Merkle tree so that an
//! entry edited, removed or reordered in the database is detected.
//!
//! A change's transaction writes its entry unsealed. The sequencer then gives it its `seq` and
//! makes it a leaf of its organization's tree ([`crate::merkle`]): the leaf's `hash` is
//! `SHA-256(0x00 ‖ canonical JSON)` ([`canonical_json`]: the fields the API shows plus `seq` and
//! the event `data`, keys sorted, no white space), and a signed [`TreeHead`] commits to every
//! leaf sealed so far.

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::merkle::{Frontier, Hash, leaf_hash, to_hex};
use crate::{ApiKeyId, AuditEntryId, OrganizationId, Timestamp};

/// Who made a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ActorType {
    /// A signed-in user.
    User,
    /// An API key, acting as the member who made it.
    ApiKey,
    /// The service itself: workers, retention, the admin CLI.
    System,
}

impl ActorType {
    /// The wire name (`user`, `apiKey`, `system`).
    pub fn as_str(self) -> &'static str {
        match self {
            ActorType::User => "user",
            ActorType::ApiKey => "apiKey",
            ActorType::System => "system",
        }
    }

    /// The actor type of a wire name; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        [ActorType::User, ActorType::ApiKey, ActorType::System].into_iter().find(|t| t.as_str() == text)
    }
}

/// The actor of an entry. For an API key, `id` is the user who made the key and `api_key_id` the
/// key; for the system, `id` names the part of the service (`retention`, `automation-worker`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Actor {
    /// A user, an API key or the service itself.
    #[serde(rename = "type")]
    pub actor_type: ActorType,
    /// The user (for an API key, the user who made it) or the part of the service.
    pub id: String,
    /// The user's e-mail address at the time, if a user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The API key, when one made the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_id: Option<ApiKeyId>,
}

impl Actor {
    /// The service itself; `part` names which (`retention`, `webhook-worker`, …).
    pub fn system(part: &str) -> Self {
        Self { actor_type: ActorType::System, id: part.to_owned(), email: None, api_key_id: None }
    }
}

/// An entry before it has its place in the chain: what a use case hands to the store with the
/// change it describes.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditDraft {
    /// The entry's id.
    pub id: AuditEntryId,
    /// The organization whose chain it joins.
    pub organization_id: OrganizationId,
    /// Who made the change.
    pub actor: Actor,
    /// `risk.updated`, `member.deactivated`, `session.created`…
    pub action: String,
    /// `risk`, `member`, `apiKey`… (singular, as in the action).
    pub resource_type: String,
    /// The changed record's id.
    pub resource_id: String,
    /// `{field: {from, to}}`, already redacted (see [`diff`]).
    pub changes: JsonText,
    /// The resource as the API returns it after the change (as it was, for a delete); what
    /// webhooks deliver. `None` when there is no such resource.
    pub data: Option<JsonText>,
    /// The request's `X-Request-Id`, if the change came from a request.
    pub request_id: Option<String>,
    /// When the change committed.
    pub created_at: Timestamp,
    /// The request's hold on its `Idempotency-Key`, if it sent one: the store marks the key
    /// applied in the change's transaction. Not part of the entry (neither stored nor hashed).
    pub idempotency: Option<crate::idempotency::IdempotencyClaim>,
    /// What the change proves about a control's evidence source (see [`crate::evidence`]), decided
    /// by the use case from the typed records: the store records it for the linked controls in
    /// the change's transaction. Not part of the entry (neither stored nor hashed).
    pub evidence: Option<crate::evidence::Observation>,
}

/// A JSON value kept as its text: an entry's `changes` and `data` go to the store and to webhooks
/// as text, and are read back as a tree only to be hashed. As `serde_json::Value` trees (a
/// `BTreeMap` node per object, each field's `{from, to}` one more) the entries of four bulk
/// requests of 500 creates were 17.9 of their 42.5 MiB of peak heap (heaptrack), about 9 KiB per
/// entry; as text, about 1 KiB.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct JsonText(Box<RawValue>);

impl JsonText {
    /// The text of `value`.
    pub fn of(value: &Value) -> Self {
        // A `Value` always serializes: its map keys are strings.
        Self(serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned()))
    }

    /// `text` when it is JSON.
    pub fn parse(text: String) -> Result<Self, serde_json::Error> {
        RawValue::from_string(text).map(Self)
    }

    /// The text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The value, read from the text.
    pub fn value(&self) -> Value {
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }
}

/// Equal when they hold the same value, whatever the order of their keys.
impl PartialEq for JsonText {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get() || self.value() == other.value()
    }
}

impl std::fmt::Display for JsonText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.get())
    }
}

/// An entry of an organization's log: sealed (with its place and leaf hash) or still queued.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// What the entry says.
    pub draft: AuditDraft,
    /// Its place in the tree, once the sequencer sealed it.
    pub seal: Option<Seal>,
}

/// An entry's place in its organization's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seal {
    /// 1, 2, 3… per organization, without gaps, in the order the sequencer sealed them.
    pub seq: i64,
    /// The leaf hash (hex): `SHA-256(0x00 ‖ canonical JSON)`.
    pub hash: String,
}

impl AuditDraft {
    /// The entry sealed as number `seq`, with its leaf hash.
    pub fn sealed(self, seq: i64) -> AuditEntry {
        let hash = to_hex(&entry_leaf(&self, seq));
        AuditEntry { draft: self, seal: Some(Seal { seq, hash }) }
    }

    /// The entry as its change's transaction writes it: not yet sealed.
    pub fn queued(self) -> AuditEntry {
        AuditEntry { draft: self, seal: None }
    }
}

impl AuditEntry {
    /// Whether the entry is sealed and its `hash` is what its content and `seq` give.
    pub fn leaf_matches(&self) -> bool {
        self.seal.as_ref().is_some_and(|seal| to_hex(&entry_leaf(&self.draft, seal.seq)) == seal.hash)
    }
}

/// The Merkle leaf hash of an entry sealed as number `seq`.
pub fn entry_leaf(draft: &AuditDraft, seq: i64) -> Hash {
    leaf_hash(canonical_json(draft, seq).as_bytes())
}

/// A signed tree head: the organization's tree of `size` sealed entries, its root, and the
/// server's Ed25519 signature of [`TreeHead::checkpoint_body`]. Also what stands for a pruned
/// prefix (a checkpoint), with the frontier the remaining leaves are appended to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeHead {
    /// Whose log.
    pub organization_id: OrganizationId,
    /// The perfect subtrees of the tree (its size and, folded, its root).
    pub frontier: Frontier,
    /// When it was signed.
    pub signed_at: Timestamp,
    /// Which key signed it (see the signing key's `key_id`).
    pub key_id: String,
    /// The Ed25519 signature of the checkpoint body, base64.
    pub signature: String,
}

impl TreeHead {
    /// How many entries the tree holds.
    pub fn size(&self) -> u64 {
        self.frontier.size()
    }

    /// The root hash.
    pub fn root(&self) -> Hash {
        self.frontier.root()
    }

    /// What the signature covers, in the C2SP `tlog-checkpoint` form: the log's origin, the
    /// size, the root in base64, then the signing time as an extension line.
    pub fn checkpoint_body(&self) -> String {
        checkpoint_body(&self.organization_id, self.size(), &self.root(), self.signed_at)
    }
}

/// The text a tree head's signature covers (see [`TreeHead::checkpoint_body`]).
pub fn checkpoint_body(org: &OrganizationId, size: u64, root: &Hash, signed_at: Timestamp) -> String {
    use base64::Engine as _;
    let root = base64::engine::general_purpose::STANDARD.encode(root);
    format!("{}\n{size}\n{root}\n{signed_at}\n", log_origin(org))
}

/// The origin line of an organization's checkpoints: names the log a tree head is of.
pub fn log_origin(org: &OrganizationId) -> String {
    format!("compliance/audit-log/{org}")
}

/// The text an entry's hash covers: sorted keys (serde_json's map is ordered), no white space.
pub fn canonical_json(draft: &AuditDraft, seq: i64) -> String {
    let value = json!({
        "id": draft.id,
        "organizationId": draft.organization_id,
        "seq": seq,
        "actor": draft.actor,
        "action": draft.action,
        "resourceType": draft.resource_type,
        "resourceId": draft.resource_id,
        "changes": draft.changes,
        "data": draft.data,
        "requestId": draft.request_id,
        "createdAt": draft.created_at,
    });
    value.to_string()
}

/// How a resource's fields are shown in `changes`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Redaction {
    /// Fields whose values never appear: each side is `"[redacted]"` (or null when absent).
    pub secret: &'static [&'static str],
    /// Rich text, shown by length: `{"length": n}`.
    pub rich_text: &'static [&'static str],
}

/// Field names that are secret whatever the resource: a value under one of these is never written.
const ALWAYS_SECRET: [&str; 7] = ["secret", "token", "password", "key", "clientSecret", "accessToken", "refreshToken"];

/// Fields that are no change of their own.
const NOT_CHANGES: [&str; 4] = ["id", "organizationId", "createdAt", "updatedAt"];

/// What stands in an entry for a secret field's value.
pub const REDACTED: &str = "[redacted]";

/// `{field: {from, to}}` for each top-level field whose value differs between `before` and
/// `after` (JSON objects as the API shows the resource; `None` for "did not exist"), redacted.
pub fn diff(before: Option<&Value>, after: Option<&Value>, redaction: &Redaction) -> Value {
    let empty = Map::new();
    let before = before.and_then(Value::as_object).unwrap_or(&empty);
    let after = after.and_then(Value::as_object).unwrap_or(&empty);
    let mut changes = Map::new();
    let fields = before.keys().chain(after.keys().filter(|k| !before.contains_key(*k)));
    for field in fields {
        if NOT_CHANGES.contains(&field.as_str()) {
            continue;
        }
        let (from, to) = (present(before.get(field)), present(after.get(field)));
        if from == to {
            continue;
        }
        let shown = |side: Option<&Value>| shown(field, side, redaction);
        changes.insert(field.clone(), json!({"from": shown(from), "to": shown(to)}));
    }
    Value::Object(changes)
}

/// A field that is absent and one that is null are the same: no value.
fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

fn shown(field: &str, value: Option<&Value>, redaction: &Redaction) -> Value {
    let value = match value {
        None | Some(Value::Null) => return Value::Null,
        Some(value) => value,
    };
    if redaction.secret.contains(&field) || ALWAYS_SECRET.contains(&field) {
        return Value::String(REDACTED.to_owned());
    }
    if redaction.rich_text.contains(&field) {
        let length = value.as_str().map_or_else(|| value.to_string().chars().count(), |s| s.chars().count());
        return json!({ "length": length });
    }
    value.clone()
}

/// Removes secret fields from event data (a resource's API form never holds one; this is the
/// second lock on that door).
pub fn redact_data(mut data: Value, redaction: &Redaction) -> Value {
    if let Some(object) = data.as_object_mut() {
        for (field, value) in object.iter_mut() {
            if !value.is_null()
                && (redaction.secret.contains(&field.as_str()) || ALWAYS_SECRET.contains(&field.as_str()))
            {
                *value = Value::String(REDACTED.to_owned());
            }
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> AuditDraft {
        AuditDraft {
            id: AuditEntryId::generate(),
            organization_id: OrganizationId::generate(),
            actor: Actor::system("test"),
            action: "risk.updated".into(),
            resource_type: "risk".into(),
            resource_id: "rsk_x".into(),
            changes: JsonText::of(&json!({"title": {"from": "a", "to": "b"}})),
            data: Some(JsonText::of(&json!({"title": "b"}))),
            request_id: Some("rid".into()),
            created_at: Timestamp::now(),
            idempotency: None,
            evidence: None,
        }
    }

    #[test]
    fn a_sealed_entry_verifies_and_any_edit_or_move_breaks_it() {
        let entry = draft().sealed(1);
        assert!(entry.leaf_matches());
        assert!(!draft().queued().leaf_matches());
        let mut edited = entry.clone();
        edited.draft.changes = JsonText::of(&json!({"title": {"from": "a", "to": "c"}}));
        assert!(!edited.leaf_matches());
        let mut moved = entry;
        if let Some(seal) = moved.seal.as_mut() {
            seal.seq = 2;
        }
        assert!(!moved.leaf_matches());
    }

    #[test]
    fn diff_shows_changed_fields_redacts_secrets_and_measures_rich_text() {
        let redaction = Redaction { secret: &["apiToken"], rich_text: &["description"] };
        let before = json!({"id": "x", "title": "a", "description": "four", "apiToken": "s1", "same": 1,
                            "updatedAt": "t1"});
        let after = json!({"id": "x", "title": "b", "description": "fives", "apiToken": "s2", "same": 1,
                           "updatedAt": "t2", "extra": null});
        let changes = diff(Some(&before), Some(&after), &redaction);
        assert_eq!(
            changes,
            json!({
                "title": {"from": "a", "to": "b"},
                "description": {"from": {"length": 4}, "to": {"length": 5}},
                "apiToken": {"from": "[redacted]", "to": "[redacted]"},
            })
        );
        let created = diff(None, Some(&json!({"secret": "s", "name": "n"})), &Redaction::default());
        assert_eq!(created, json!({"secret": {"from": null, "to": "[redacted]"}, "name": {"from": null, "to": "n"}}));
    }
}
