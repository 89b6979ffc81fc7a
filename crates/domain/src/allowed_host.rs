//! Internal hosts an operator lets one organization reach: a host name or address that the
//! outbound rules would refuse (a private address, `localhost`, plain `http`), granted for its
//! webhooks or its browser automations. `WEBHOOK_ALLOWED_HOSTS` and `AUTOMATION_ALLOWED_HOSTS`
//! still apply to every organization (a single-tenant deployment); a grant applies to its own
//! organization only.

use std::net::IpAddr;

use crate::network::plain_host_name;
use crate::validation::{Checked, FieldError};
use crate::{OrganizationId, Timestamp};

crate::string_enum! {
    /// Which outbound requests a grant is for.
    AllowedHostUse { Webhooks = "webhooks", Automations = "automations" }
}

/// The longest host a grant names, in characters (a DNS name's limit).
pub const HOST_MAX: usize = 253;

/// One grant: `organization_id` may reach `host` from its `used_for`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    /// The organization the grant is for; no other organization gets it.
    pub organization_id: OrganizationId,
    /// Webhooks or automations.
    pub used_for: AllowedHostUse,
    /// A host name (lower case, no trailing dot) or an IP address, as [`allowed_host`] spells it.
    pub host: String,
    /// When the operator granted it.
    pub granted_at: Timestamp,
}

/// A host as grants spell it: trimmed, lower case, without the brackets of an IPv6 literal or a
/// trailing dot; a plain host name or an IP address, nothing else (no scheme, port or path).
pub fn allowed_host(field: &str, value: &str) -> Checked<String> {
    let trimmed = value.trim().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
    if let Ok(ip) = trimmed.parse::<IpAddr>() {
        return Ok(ip.to_string());
    }
    if trimmed.len() > HOST_MAX || !plain_host_name(trimmed) {
        return Err(FieldError::new(
            field,
            format!(
                "must be a host name (ASCII letters, digits, '-', '_' and '.', at most {HOST_MAX}) or an IP address, \
                 without a scheme, port or path"
            ),
        ));
    }
    Ok(trimmed.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn hosts_are_spelled_one_way() {
        assert_eq!(allowed_host("host", " Hooks.Internal. ").unwrap(), "hooks.internal");
        assert_eq!(allowed_host("host", "[::1]").unwrap(), "::1");
        assert_eq!(allowed_host("host", "10.0.0.8").unwrap(), "10.0.0.8");
        for bad in ["", "http://x", "x:80", "x/y", "a b", "*"] {
            assert!(allowed_host("host", bad).is_err(), "{bad}");
        }
    }
}
