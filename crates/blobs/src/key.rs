//! The key format shared by every adapter.

use compliance_ports::BlobError;

/// Longest accepted segment: ids are far shorter, and this keeps file names under every
/// filesystem's limit.
const MAX_SEGMENT_LEN: usize = 128;

/// Checks that `key` is `ORG_ID/ATTACHMENT_ID`: exactly two non-empty `[a-z0-9_]` segments.
/// This alone rules out `..`, absolute paths, backslashes and empty segments.
pub(crate) fn validate(key: &str) -> Result<[&str; 2], BlobError> {
    let mut parts = key.split('/');
    let (Some(org), Some(id), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(BlobError::Internal(format!("blob key {key:?} is not ORG_ID/ATTACHMENT_ID")));
    };
    for segment in [org, id] {
        let well_formed = !segment.is_empty()
            && segment.len() <= MAX_SEGMENT_LEN
            && segment.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !well_formed {
            return Err(BlobError::Internal(format!(
                "blob key {key:?} has a segment that is not 1 to {MAX_SEGMENT_LEN} of [a-z0-9_]"
            )));
        }
    }
    Ok([org, id])
}

#[cfg(test)]
mod tests {
    use super::validate;

    #[test]
    fn accepts_two_lowercase_segments() {
        assert_eq!(validate("org_abc123/att_9z").ok(), Some(["org_abc123", "att_9z"]));
    }

    #[test]
    fn refuses_everything_else() {
        let long = format!("org/{}", "a".repeat(129));
        for bad in [
            "",
            "org",
            "org/",
            "/att",
            "org//att",
            "org/att/x",
            "../x",
            "a/../../b",
            "/etc/passwd",
            "Org/att",
            "org/ATT",
            "org/a.b",
            "org/a-b",
            "org\\att",
            "org/a b",
            "org/é",
            &long,
        ] {
            assert!(validate(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
