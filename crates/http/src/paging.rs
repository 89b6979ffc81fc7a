//! `limit` and `cursor` of the paginated lists, and the cursor's opaque text.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use compliance_app::Settings;
use compliance_domain::Timestamp;
use compliance_ports::{Cursor, PageRequest, SortValue};
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use crate::ApiError;
use crate::list_query::{ListParams, QueryShape, SortField};

/// The most rows a client may ask for in one page.
pub const MAX_LIMIT: usize = 1000;

/// The versioned prefix of a cursor's text, so that the format can change without misreading
/// cursors issued before.
const VERSION: &str = "v2:";

/// The longest cursor accepted (a sort key may hold a title of 255 characters).
const MAX_CURSOR_CHARS: usize = 8192;

/// The query parameters of a paginated list. Both are read as text and checked here, so that a
/// bad value is a 400 naming the parameter.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Rows per page, 1 to 1000. Without it the list holds every row up to the server's cap
    /// (`LIST_MAX_ROWS`, default 10,000) and, beyond the cap, the first page and `nextCursor`.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
    /// The `nextCursor` of the previous page, as it was given: opaque, and valid only for this list
    /// with the same filters, `q` and `sort` (else a 400 naming `cursor`).
    #[param(value_type = Option<String>, min_length = 1, max_length = 8192, pattern = "^[A-Za-z0-9_-]+$")]
    cursor: Option<String>,
}

impl PageQuery {
    /// The page asked for of `list`, a list that takes no other parameter, capped by the
    /// settings; a 400 naming `limit` or `cursor` when malformed.
    pub fn request(&self, settings: &Settings, list: &str) -> Result<PageRequest, ApiError> {
        let pairs = [("limit", &self.limit), ("cursor", &self.cursor)]
            .into_iter()
            .filter_map(|(name, value)| value.clone().map(|value| (name.to_owned(), value)))
            .collect();
        let shape = QueryShape::unfiltered(list);
        let query: compliance_ports::ListQuery<(), NoSort> =
            ListParams::from_pairs(pairs).finish((), false, &shape, settings)?;
        Ok(query.page)
    }
}

/// The sort of a list that takes none.
#[derive(Debug, Clone, Copy)]
pub enum NoSort {}

impl SortField for NoSort {
    const FIELDS: &'static [(&'static str, Self)] = &[];
}

/// A cursor as its text holds it: the fingerprint of the query it was issued for, the values of
/// the row's sort key and its id.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CursorText {
    f: String,
    k: Vec<KeyText>,
    id: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
enum KeyText {
    /// A time, as Unix microseconds.
    #[serde(rename = "t")]
    Time(i64),
    #[serde(rename = "s")]
    Text(String),
    #[serde(rename = "i")]
    Integer(i64),
}

/// `v2` and the cursor as JSON, in URL-safe base64 without padding; `fingerprint` is the
/// [`QueryShape`]'s the page was read with.
pub fn encode(cursor: &Cursor, fingerprint: &str) -> String {
    let keys = cursor
        .values
        .iter()
        .map(|value| match value {
            SortValue::Time(at) => KeyText::Time(at.as_unix_micros()),
            SortValue::Text(text) => KeyText::Text(text.clone()),
            SortValue::Integer(n) => KeyText::Integer(*n),
        })
        .collect();
    let text = CursorText { f: fingerprint.to_owned(), k: keys, id: cursor.id.clone() };
    // Serializing strings and numbers cannot fail.
    URL_SAFE_NO_PAD.encode(format!("{VERSION}{}", serde_json::to_string(&text).unwrap_or_default()))
}

/// The cursor of `text`, or `None` when it is not one this service issued for a query of this
/// `fingerprint`.
pub(crate) fn decode(text: &str, fingerprint: &str) -> Option<Cursor> {
    if text.len() > MAX_CURSOR_CHARS {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
    let json = std::str::from_utf8(&bytes).ok()?.strip_prefix(VERSION)?;
    let CursorText { f, k, id } = serde_json::from_str(json).ok()?;
    if f != fingerprint {
        return None;
    }
    let values = k
        .into_iter()
        .map(|key| match key {
            KeyText::Time(micros) => Timestamp::from_unix_micros(micros).ok().map(SortValue::Time),
            // PostgreSQL's text cannot hold a NUL byte: a cursor carrying one was made by hand.
            KeyText::Text(text) => (!text.contains('\0')).then_some(SortValue::Text(text)),
            KeyText::Integer(n) => Some(SortValue::Integer(n)),
        })
        .collect::<Option<Vec<_>>>()?;
    // Ids are a prefix, `_` and base32: anything else (a NUL byte, say) never reaches the database.
    let plausible_id = (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plausible_id.then_some(Cursor { values, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor() -> Cursor {
        Cursor {
            values: vec![SortValue::Text("Backups: \"weekly\"".into()), SortValue::Time(Timestamp::now())],
            id: "rsk_06f3x0000000000000000000000000".into(),
        }
    }

    #[test]
    fn a_cursor_round_trips_and_is_url_safe() {
        let cursor = cursor();
        let text = encode(&cursor, "abc");
        assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{text}");
        assert_eq!(decode(&text, "abc"), Some(cursor));
    }

    #[test]
    fn a_cursor_of_another_query_is_refused() {
        assert_eq!(decode(&encode(&cursor(), "abc"), "abd"), None);
    }

    #[test]
    fn text_that_is_not_an_issued_cursor_is_refused() {
        let garbage = |text: &str| URL_SAFE_NO_PAD.encode(text);
        for text in [
            "!!!".to_owned(),
            garbage("hello"),
            garbage("v1:1:rsk_1"),
            garbage(r#"v2:{"f":"abc","k":[],"id":""}"#),
            garbage(r#"v2:{"f":"abc","k":[],"id":"rsk\u00001"}"#),
            garbage(&format!(r#"v2:{{"f":"abc","k":[{{"t":{}}}],"id":"rsk_1"}}"#, i64::MAX)),
            "a".repeat(MAX_CURSOR_CHARS + 1),
        ] {
            assert_eq!(decode(&text, "abc"), None, "{text}");
        }
    }
}
