//! Entity tags: the validator every single resource answers with (`ETag`), and the two
//! preconditions that compare with it (RFC 9110 §8.8.3, §13.1.1 `If-Match`, §13.1.2
//! `If-None-Match`).
//!
//! A tag is computed, never stored: the first 64 bits of SHA-256 over the record's id and its
//! `updatedAt` in microseconds, the precision both databases keep. Every committed change of a
//! record moves its `updatedAt`, so the tag changes with every change; it is strong because two
//! records with the same id and `updatedAt` are the same state. Records without an `updatedAt`
//! (members, organizations) hash their whole state instead ([`ETag::of_state`]).
//!
//! ```
//! use compliance_domain::Timestamp;
//! use compliance_domain::etag::{ETag, IfMatch, IfNoneMatch};
//!
//! let tag = ETag::of("rsk_1", Timestamp::parse("2026-01-02T03:04:05.000006Z").unwrap());
//! let quoted = tag.to_string();
//! assert!(IfMatch::parse([quoted.as_str()]).check(&tag).is_ok());
//! assert!(IfMatch::parse(["\"stale\""]).check(&tag).is_err());
//! assert!(IfNoneMatch::parse([format!("W/{quoted}").as_str()]).matches(&tag));
//! ```

use std::fmt;

use sha2::{Digest, Sha256};

use crate::Timestamp;

/// A strong entity tag, shown quoted (`"3f9a…"`) in `ETag` headers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ETag(String);

impl ETag {
    /// The tag of the state of record `id` last changed at `updated_at`.
    pub fn of(id: &str, updated_at: Timestamp) -> Self {
        Self::digest(id, &updated_at.as_unix_micros().to_be_bytes())
    }

    /// The tag of a record that keeps no `updatedAt` (a member, an organization): a digest of
    /// its whole state as its `Debug` text shows it, every field. It changes with every change
    /// of a field, stays when a write changes nothing, and may change when a new version of the
    /// service adds a field (a client then reads once more).
    pub fn of_state(id: &str, state: &impl fmt::Debug) -> Self {
        Self::digest(id, format!("{state:?}").as_bytes())
    }

    fn digest(id: &str, version: &[u8]) -> Self {
        let digest = Sha256::new().chain_update(id.as_bytes()).chain_update([0]).chain_update(version).finalize();
        Self(digest.iter().take(8).map(|byte| format!("{byte:02x}")).collect())
    }

    /// The tag without its quotes (the `opaque-tag`'s inside).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Quoted, as an `ETag` header value.
impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.0)
    }
}

/// What a write's `If-Match` asks: the write happens only while the record's current tag is one
/// of these (strong comparison).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum IfMatch {
    /// No `If-Match`: the write is unconditional.
    #[default]
    Absent,
    /// `If-Match: *`: any current state of an existing record.
    Any,
    /// The strong tags listed, without quotes. Weak tags never match by strong comparison, and a
    /// value that is not a tag list matches nothing, so both leave no tag here.
    Tags(Vec<String>),
}

impl IfMatch {
    /// Reads the header's values (every `If-Match` line of the request, in order).
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        match TagList::parse(values) {
            None => Self::Absent,
            Some(TagList::Any) => Self::Any,
            Some(TagList::Tags(tags)) => Self::Tags(tags.into_iter().filter(|t| !t.weak).map(|t| t.opaque).collect()),
        }
    }

    /// Whether a write may go ahead on a record whose tag is `current`.
    pub fn check(&self, current: &ETag) -> Result<(), PreconditionFailed> {
        match self {
            Self::Absent | Self::Any => Ok(()),
            Self::Tags(tags) if tags.contains(&current.0) => Ok(()),
            Self::Tags(_) => Err(PreconditionFailed { current: Some(current.clone()) }),
        }
    }

    /// For a `PUT` that creates the record it names when there is none: [`check`](Self::check)
    /// against the record's tag when there is one; with none, the write may go ahead only
    /// without `If-Match` (even `*` asks for a current record, RFC 9110 §13.1.1).
    pub fn check_existing(&self, current: Option<&ETag>) -> Result<(), PreconditionFailed> {
        match (current, self) {
            (Some(current), _) => self.check(current),
            (None, Self::Absent) => Ok(()),
            (None, Self::Any | Self::Tags(_)) => Err(PreconditionFailed { current: None }),
        }
    }
}

/// A read's `If-None-Match`: the client already holds one of these states (weak comparison).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum IfNoneMatch {
    /// No `If-None-Match`.
    #[default]
    Absent,
    /// `If-None-Match: *`: any current state.
    Any,
    /// The tags listed, weak or strong, without quotes or `W/`.
    Tags(Vec<String>),
}

impl IfNoneMatch {
    /// Reads the header's values (every `If-None-Match` line of the request, in order).
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        match TagList::parse(values) {
            None => Self::Absent,
            Some(TagList::Any) => Self::Any,
            Some(TagList::Tags(tags)) => Self::Tags(tags.into_iter().map(|t| t.opaque).collect()),
        }
    }

    /// Whether the client already holds `current`, so a GET answers 304 Not Modified.
    pub fn matches(&self, current: &ETag) -> bool {
        match self {
            Self::Absent => false,
            Self::Any => true,
            Self::Tags(tags) => tags.contains(&current.0),
        }
    }
}

/// A write refused because its `If-Match` no longer holds: the record is now at `current`, or
/// (for a `PUT` that would create it) does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.detail())]
pub struct PreconditionFailed {
    /// The record's tag now; `None` when there is no record.
    pub current: Option<ETag>,
}

impl PreconditionFailed {
    fn detail(&self) -> String {
        match &self.current {
            Some(current) => {
                format!("If-Match does not match the current ETag {current}: the record changed since it was read")
            }
            None => "If-Match names a record that does not exist: nothing was created".to_owned(),
        }
    }
}

/// One `entity-tag` of a list.
struct ListedTag {
    weak: bool,
    opaque: String,
}

/// `"*" / #entity-tag`.
enum TagList {
    Any,
    Tags(Vec<ListedTag>),
}

impl TagList {
    /// `None` when there is no value at all. Elements that are not entity tags are skipped, so
    /// a malformed list is one that lists fewer tags (RFC 9110 lets a recipient ignore them).
    fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        let mut seen = false;
        let mut tags = Vec::new();
        for value in values {
            seen = true;
            if value.trim() == "*" {
                return Some(Self::Any);
            }
            let mut rest = value;
            while let Some((tag, after)) = next_tag(rest) {
                tags.extend(tag);
                rest = after;
            }
        }
        seen.then_some(Self::Tags(tags))
    }
}

/// The next element of a comma-separated list of entity tags, and the text after it; the element
/// is `None` when it is not an entity tag. `None` at the end of the text.
fn next_tag(text: &str) -> Option<(Option<ListedTag>, &str)> {
    let text = text.trim_start_matches([' ', '\t', ',']);
    if text.is_empty() {
        return None;
    }
    let (weak, rest) = match text.strip_prefix("W/") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if let Some(inside) = rest.strip_prefix('"')
        && let Some(end) = inside.find('"')
    {
        let opaque = &inside[..end];
        let after = &inside[end + 1..];
        // etagc: visible ASCII but the quote, or obs-text; nothing but a separator may follow.
        let valid = opaque.bytes().all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80);
        let next = after.trim_start_matches([' ', '\t']);
        let separated = next.is_empty() || next.starts_with(',');
        if valid && separated {
            return Some((Some(ListedTag { weak, opaque: opaque.to_owned() }), after));
        }
    }
    // Not a tag: skip to the next comma.
    let after = text.find(',').map_or("", |comma| &text[comma..]);
    Some((None, after))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    fn tag() -> ETag {
        ETag::of("rsk_1", Timestamp::parse("2026-01-02T03:04:05.000006Z").unwrap())
    }

    #[test]
    fn a_tag_changes_with_the_instant_and_the_id() {
        let at = Timestamp::parse("2026-01-02T03:04:05.000006Z").unwrap();
        let a_microsecond_later = Timestamp::parse("2026-01-02T03:04:05.000007Z").unwrap();
        assert_ne!(ETag::of("rsk_1", at), ETag::of("rsk_1", a_microsecond_later));
        assert_ne!(ETag::of("rsk_1", at), ETag::of("rsk_2", at));
        assert_eq!(ETag::of("rsk_1", at), tag());
        assert_eq!(tag().as_str().len(), 16);
        assert_eq!(tag().to_string(), format!("\"{}\"", tag().as_str()));
    }

    #[test]
    fn if_match_compares_strongly() {
        let current = tag();
        let quoted = current.to_string();
        assert_eq!(IfMatch::parse([]), IfMatch::Absent);
        assert!(IfMatch::parse([quoted.as_str()]).check(&current).is_ok());
        assert!(IfMatch::parse(["*"]).check(&current).is_ok());
        assert!(IfMatch::parse([format!("\"x\", {quoted}").as_str()]).check(&current).is_ok());
        assert!(IfMatch::parse(["\"x\"", quoted.as_str()]).check(&current).is_ok());
        let weak = format!("W/{quoted}");
        let failed = IfMatch::parse([weak.as_str()]).check(&current).unwrap_err();
        assert_eq!(failed.current, Some(current.clone()));
        assert!(IfMatch::parse(["\"x\""]).check(&current).is_err());
        assert!(IfMatch::parse([""]).check(&current).is_err());
        assert!(IfMatch::parse([current.as_str()]).check(&current).is_err(), "an unquoted tag is not a tag");
    }

    #[test]
    fn only_an_unconditional_put_creates() {
        assert!(IfMatch::Absent.check_existing(None).is_ok());
        for asked in [IfMatch::Any, IfMatch::parse([tag().to_string().as_str()])] {
            let failed = asked.check_existing(None).unwrap_err();
            assert_eq!(failed.current, None);
            assert!(failed.to_string().contains("does not exist"), "{failed}");
            assert!(asked.check_existing(Some(&tag())).is_ok());
        }
    }

    #[test]
    fn if_none_match_compares_weakly() {
        let current = tag();
        let quoted = current.to_string();
        assert!(!IfNoneMatch::parse([]).matches(&current));
        assert!(IfNoneMatch::parse(["*"]).matches(&current));
        assert!(IfNoneMatch::parse([quoted.as_str()]).matches(&current));
        assert!(IfNoneMatch::parse([format!("\"a\",W/{quoted} , \"b\"").as_str()]).matches(&current));
        assert!(!IfNoneMatch::parse(["\"a\", \"b\""]).matches(&current));
        assert!(!IfNoneMatch::parse(["garbage, \"a"]).matches(&current));
        assert!(IfNoneMatch::parse([format!("garbage, {quoted}").as_str()]).matches(&current));
    }
}
