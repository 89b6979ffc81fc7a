//! Prefixed, time-ordered identifiers: `rsk_` followed by 32 characters of Crockford base32 that
//! encode 48 bits of millisecond time and 112 random bits.

use std::fmt;
use std::marker::PhantomData;

use rand::RngCore;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A kind of identifier, known by its prefix.
pub trait IdKind {
    /// The prefix without the underscore, e.g. `rsk`.
    const PREFIX: &'static str;
    /// The name of the identifier type, e.g. `RiskId`.
    const NAME: &'static str;
}

/// An identifier of kind `K`. Its text is always well-formed for that kind.
pub struct Id<K> {
    text: String,
    kind: PhantomData<fn() -> K>,
}

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
const BODY_LEN: usize = 32;
/// Membership in [`ALPHABET`] by byte: one load per byte instead of a search of the alphabet.
const IN_ALPHABET: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < ALPHABET.len() {
        table[ALPHABET[i] as usize] = true;
        i += 1;
    }
    table
};

impl<K: IdKind> Id<K> {
    /// A new identifier: the current time, then 112 random bits.
    pub fn generate() -> Self {
        let millis = ::time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
        let mut bytes = [0u8; 20];
        let time_bytes = (millis as u64).to_be_bytes();
        bytes[..6].copy_from_slice(&time_bytes[2..]);
        rand::rng().fill_bytes(&mut bytes[6..]);
        let mut text = String::with_capacity(K::PREFIX.len() + 1 + BODY_LEN);
        text.push_str(K::PREFIX);
        text.push('_');
        encode_base32(&bytes, &mut text);
        Self::from_trusted(text)
    }

    /// Parses text that must be an identifier of this kind.
    pub fn parse(text: &str) -> Result<Self, InvalidId> {
        Self::check(text)?;
        Ok(Self::from_trusted(text.to_owned()))
    }

    /// [`Id::parse`] keeping the string it is given (ids read from the database, hundreds per list).
    pub fn parse_owned(text: String) -> Result<Self, InvalidId> {
        Self::check(&text)?;
        Ok(Self::from_trusted(text))
    }

    fn check(text: &str) -> Result<(), InvalidId> {
        let body = text
            .strip_prefix(K::PREFIX)
            .and_then(|rest| rest.strip_prefix('_'))
            .ok_or(InvalidId { prefix: K::PREFIX })?;
        let well_formed = body.len() == BODY_LEN && body.bytes().all(|b| IN_ALPHABET[usize::from(b)]);
        if well_formed { Ok(()) } else { Err(InvalidId { prefix: K::PREFIX }) }
    }

    fn from_trusted(text: String) -> Self {
        Self { text, kind: PhantomData }
    }

    /// The id's text, prefix included.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The id's text, prefix included.
    pub fn into_string(self) -> String {
        self.text
    }
}

fn encode_base32(bytes: &[u8; 20], out: &mut String) {
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
}

/// Text that is not an identifier of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be an id starting with `{prefix}_`")]
pub struct InvalidId {
    prefix: &'static str,
}

impl<K> Clone for Id<K> {
    fn clone(&self) -> Self {
        Self { text: self.text.clone(), kind: PhantomData }
    }
}
impl<K> PartialEq for Id<K> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}
impl<K> Eq for Id<K> {}
impl<K> std::hash::Hash for Id<K> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}
impl<K> fmt::Debug for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
impl<K> fmt::Display for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
impl<K> Serialize for Id<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}
impl<'de, K: IdKind> Deserialize<'de> for Id<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

macro_rules! id_kinds {
    ($($(#[$doc:meta])* $alias:ident = $kind:ident($prefix:literal);)*) => {$(
        #[doc = concat!("The kind of [`", stringify!($alias), "`]: ids `", $prefix, "_…`.")]
        #[derive(Debug)]
        pub enum $kind {}
        impl IdKind for $kind {
            const PREFIX: &'static str = $prefix;
            const NAME: &'static str = stringify!($alias);
        }
        $(#[$doc])*
        pub type $alias = Id<$kind>;
    )*};
}

id_kinds! {
    /// `org_…`
    OrganizationId = OrganizationKind("org");
    /// `usr_…`
    UserId = UserKind("usr");
    /// `mem_…`: a membership of a user in an organization.
    MemberId = MemberKind("mem");
    /// `ctx_…`
    ContextEntryId = ContextEntryKind("ctx");
    /// `pol_…`
    PolicyId = PolicyKind("pol");
    /// `vnd_…`
    VendorId = VendorKind("vnd");
    /// `rsk_…`
    RiskId = RiskKind("rsk");
    /// `tsk_…`
    TaskId = TaskKind("tsk");
    /// `cmt_…`
    CommentId = CommentKind("cmt");
    /// `att_…`
    AttachmentId = AttachmentKind("att");
    /// `apk_…`
    ApiKeyId = ApiKeyKind("apk");
    /// `ses_…`
    SessionId = SessionKind("ses");
    /// `con_…`: an organization's connection to a third-party service.
    ConnectionId = ConnectionKind("con");
    /// `aut_…`: a browser automation.
    AutomationId = AutomationKind("aut");
    /// `run_…`: one run of a browser automation.
    AutomationRunId = AutomationRunKind("run");
    /// `inv_…`: an invitation to join an organization.
    InvitationId = InvitationKind("inv");
    /// `whk_…`: a webhook endpoint.
    WebhookId = WebhookKind("whk");
    /// `msg_…`: one event's delivery to one webhook (the `webhook-id` header: the same on every attempt).
    WebhookDeliveryId = WebhookDeliveryKind("msg");
    /// `aud_…`: an entry of the audit trail.
    AuditEntryId = AuditEntryKind("aud");
    /// `fwk_…`: a framework (a catalog of requirements) an organization adopted.
    FrameworkId = FrameworkKind("fwk");
    /// `req_…`: one requirement of a framework.
    RequirementId = RequirementKind("req");
    /// `ctl_…`: a control.
    ControlId = ControlKind("ctl");
    /// `evd_…`: an evidence item of a control.
    EvidenceId = EvidenceItemKind("evd");
    /// `chr_…`: one run of a connection's checks.
    CheckRunId = CheckRunKind("chr");
    /// `fnd_…`: a resource a check failed, from its first failure until it passes again.
    FindingId = FindingKind("fnd");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_have_prefix_and_fixed_width_and_parse_back() {
        let id = RiskId::generate();
        assert!(id.as_str().starts_with("rsk_"));
        assert_eq!(id.as_str().len(), 4 + BODY_LEN);
        assert_eq!(RiskId::parse(id.as_str()), Ok(id));
    }

    #[test]
    fn later_ids_sort_after_earlier_ones() {
        let first = RiskId::generate();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = RiskId::generate();
        assert!(first.as_str() < second.as_str());
    }

    #[test]
    fn wrong_prefix_or_body_is_refused() {
        let risk = RiskId::generate();
        assert!(VendorId::parse(risk.as_str()).is_err());
        assert!(RiskId::parse("rsk_short").is_err());
        assert!(RiskId::parse(&format!("rsk_{}", "u".repeat(32))).is_err(), "u is not Crockford");
    }
}
