//! What HTTP allows in a header's name and value (RFC 9110 §5.1, §5.5), checked when a manifest is
//! read, so that a configuration the adapter could not send is refused up front.

/// A token: one or more of the letters, digits and ``!#$%&'*+-.^_`|~``.
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Visible ASCII, spaces and tabs (what the `http` crate's `HeaderValue::from_str` takes).
pub fn is_header_value(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || (b' '..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_tokens_and_values_visible_ascii() {
        assert!(is_header_name("Authorization") && is_header_name("X-Api_Key.1"));
        assert!(!is_header_name("Bad Header") && !is_header_name("") && !is_header_name("a:b"));
        assert!(is_header_value("Token ") && is_header_value("Bearer\tx") && is_header_value(""));
        assert!(!is_header_value("a\nb") && !is_header_value("é") && !is_header_value("\u{7f}"));
    }
}
