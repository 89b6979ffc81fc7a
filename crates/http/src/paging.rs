//! `limit` and `cursor` of the paginated lists, and the cursor's opaque text.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use compliance_app::Settings;
use compliance_domain::Timestamp;
use compliance_ports::{Cursor, PageRequest};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::ApiError;

/// The most rows a client may ask for in one page.
pub const MAX_LIMIT: usize = 1000;

/// The versioned prefix of a cursor's text, so that the format can change without misreading
/// cursors issued before.
const VERSION: &str = "v1:";

/// The query parameters of a paginated list. Both are read as text and checked here, so that a
/// bad value is a 400 naming the parameter.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Rows per page, 1 to 1000. Without it the list holds every row up to the server's cap
    /// (`LIST_MAX_ROWS`, default 10,000) and, beyond the cap, the first page and `nextCursor`.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
    /// The `nextCursor` of the previous page, as it was given: opaque, and valid for this list only.
    #[param(value_type = Option<String>, min_length = 1, max_length = 200, pattern = "^[A-Za-z0-9_-]+$")]
    cursor: Option<String>,
}

impl PageQuery {
    /// The page asked for, capped by the settings; a 400 naming `limit` or `cursor` when malformed.
    pub fn request(&self, settings: &Settings) -> Result<PageRequest, ApiError> {
        let limit = match self.limit.as_deref() {
            None => None,
            Some(text) => match text.parse::<usize>() {
                Ok(limit) if (1..=MAX_LIMIT).contains(&limit) => Some(limit),
                _ => return Err(ApiError::invalid_field("limit", "must be a whole number from 1 to 1000")),
            },
        };
        let after = match self.cursor.as_deref() {
            None => None,
            Some(text) => Some(decode(text).ok_or_else(|| {
                ApiError::invalid_field("cursor", "must be a `nextCursor` this list returned, unchanged")
            })?),
        };
        Ok(settings.page(limit, after))
    }
}

/// `v1:<created_at as Unix microseconds>:<id>`, in URL-safe base64 without padding.
pub fn encode(cursor: &Cursor) -> String {
    URL_SAFE_NO_PAD.encode(format!("{VERSION}{}:{}", cursor.created_at.as_unix_micros(), cursor.id))
}

/// The cursor of `text`, or `None` when it is not one this service issued.
fn decode(text: &str) -> Option<Cursor> {
    let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
    let (micros, id) = std::str::from_utf8(&bytes).ok()?.strip_prefix(VERSION)?.split_once(':')?;
    let created_at = Timestamp::from_unix_micros(micros.parse().ok()?).ok()?;
    // Ids are a prefix, `_` and base32: anything else (a NUL byte, say) never reaches the database.
    let plausible_id = (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plausible_id.then(|| Cursor { created_at, id: id.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_is_url_safe() {
        let cursor = Cursor { created_at: Timestamp::now(), id: "rsk_06f3x0000000000000000000000000".into() };
        let text = encode(&cursor);
        assert!(text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{text}");
        assert_eq!(decode(&text), Some(cursor));
    }

    #[test]
    fn text_that_is_not_an_issued_cursor_is_refused() {
        let garbage = |text: &str| URL_SAFE_NO_PAD.encode(text);
        for text in [
            "!!!".to_owned(),
            garbage("hello"),
            garbage("v1:abc:rsk_1"),
            garbage("v1:1:"),
            garbage("v1:1:rsk\u{0}1"),
            garbage("v2:1:rsk_1"),
            garbage(&format!("v1:{}:rsk_1", i64::MAX)),
        ] {
            assert_eq!(decode(&text), None, "{text}");
        }
    }
}
