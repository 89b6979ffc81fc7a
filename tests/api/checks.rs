//! Assertions on JSON values: ids, timestamps, present and absent keys, the acting user.

use serde_json::Value;

use crate::harness::{PATIENCE, poll_until};
use crate::tenant::User;

/// Lowercase Crockford base32, the alphabet of the 32 characters after an id's prefix.
const ID_ALPHABET: &str = "0123456789abcdefghjkmnpqrstvwxyz";

/// `value` is a string id: `prefix` (e.g. `rsk_`) and 32 characters of lowercase Crockford base32.
#[track_caller]
pub fn assert_id(value: &Value, prefix: &str) {
    let id = value.as_str().unwrap_or_else(|| panic!("id {value} is not a string"));
    let rest = id.strip_prefix(prefix).unwrap_or_else(|| panic!("id {id} does not start with {prefix}"));
    assert_eq!(rest.len(), 32, "id {id}: expected {prefix} and 32 characters");
    assert!(rest.chars().all(|c| ID_ALPHABET.contains(c)), "id {id}: not lowercase Crockford base32");
}

/// A well-formed id with `prefix` that names no record.
pub fn missing_id(prefix: &str) -> String {
    let bytes = ID_ALPHABET.as_bytes();
    let rest: String = (0..32).map(|_| char::from(bytes[usize::from(rand::random::<u8>() % 32)])).collect();
    format!("{prefix}{rest}")
}

/// `value` is an RFC 3339 UTC timestamp: `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
#[track_caller]
pub fn assert_timestamp(value: &Value) {
    let ts = value.as_str().unwrap_or_else(|| panic!("timestamp {value} is not a string"));
    let shape_ok = ts.len() >= 20 && ts.is_char_boundary(19) && {
        let (head, tail) = ts.split_at(19);
        let digits_at = |idx: &[usize]| idx.iter().all(|&i| head.as_bytes()[i].is_ascii_digit());
        let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
        digits_at(&[0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18])
            && seps.iter().all(|&(i, c)| head.as_bytes()[i] == c)
            && match tail.strip_suffix('Z') {
                Some("") => true,
                Some(frac) => frac.len() > 1 && frac.starts_with('.') && frac[1..].bytes().all(|b| b.is_ascii_digit()),
                None => false,
            }
    };
    assert!(shape_ok, "timestamp {ts:?} is not RFC 3339 UTC ending in Z");
}

/// The string field `key` of `value`.
#[track_caller]
pub fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("no string `{key}` in {value}"))
}

#[track_caller]
pub fn assert_has(value: &Value, keys: &[&str]) {
    for key in keys {
        assert!(value.get(key).is_some(), "`{key}` missing from {value}");
    }
}

#[track_caller]
pub fn assert_lacks(value: &Value, keys: &[&str]) {
    for key in keys {
        assert!(value.get(key).is_none(), "`{key}` must be absent from {value}");
    }
}

/// `value.authenticatedUser` is `{id, email}` of `user`.
#[track_caller]
pub fn assert_acting_user(value: &Value, user: &User) {
    let acting = &value["authenticatedUser"];
    assert_eq!(acting["id"], user.id.as_str(), "authenticatedUser in {value}");
    assert_eq!(acting["email"], user.email.as_str(), "authenticatedUser in {value}");
}

/// The `data` array of a list envelope.
#[track_caller]
pub fn data(envelope: &Value) -> &Vec<Value> {
    envelope["data"].as_array().unwrap_or_else(|| panic!("no `data` array in {envelope}"))
}

/// The ids of a list envelope's items, in order.
#[track_caller]
pub fn ids(envelope: &Value) -> Vec<String> {
    data(envelope).iter().map(|item| str_of(item, "id").to_owned()).collect()
}

/// `value` without `keys` (to compare records apart from fields that legitimately change).
pub fn without(value: &Value, keys: &[&str]) -> Value {
    let mut copy = value.clone();
    if let Some(object) = copy.as_object_mut() {
        for key in keys {
            object.remove(*key);
        }
    }
    copy
}

/// Waits until the clock has moved on from the current microsecond, the precision of the server's
/// timestamps (it reads the same clock): a record written after this gets a later `createdAt` or
/// `updatedAt` than every record written before.
pub async fn tick() {
    let micros = || {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros()).unwrap_or_default()
    };
    let start = micros();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while micros() <= start {
        assert!(std::time::Instant::now() < deadline, "the system clock stood still for a second");
        tokio::task::yield_now().await;
    }
}

/// Asserts that timestamp `later` is strictly after timestamp `earlier`.
#[track_caller]
pub fn assert_later(later: &Value, earlier: &Value) {
    assert_timestamp(later);
    assert_timestamp(earlier);
    assert!(sortable(later) > sortable(earlier), "{later} is not after {earlier}");
}

/// A timestamp with its fraction padded to nanoseconds, so that string order is time order.
fn sortable(ts: &Value) -> String {
    let ts = ts.as_str().unwrap_or_default().trim_end_matches('Z');
    let (head, frac) = ts.split_at(19);
    format!("{head}.{:0<9}", frac.trim_start_matches('.'))
}

/// `after` equals `before` except for the `changed` keys, `updatedAt` and the response envelope
/// (`authType`, `authenticatedUser`).
#[track_caller]
pub fn assert_only_changed(before: &Value, after: &Value, changed: &[&str]) {
    let ignored: Vec<&str> = ["updatedAt", "authType", "authenticatedUser"].iter().chain(changed).copied().collect();
    assert_eq!(without(after, &ignored), without(before, &ignored), "only {changed:?} may change");
}

/// `bytes` in standard base64 with padding (RFC 4648 §4).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Polls `condition` every 20 ms for up to [`PATIENCE`]; true as soon as it holds.
pub async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    poll_until(PATIENCE, || {
        let holds = condition();
        async move { holds.then_some(()) }
    })
    .await
    .is_some()
}

#[cfg(test)]
mod tests {
    use super::base64;

    #[test]
    fn base64_matches_rfc_4648() {
        let cases =
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("foobar", "Zm9vYmFy")];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }
}
