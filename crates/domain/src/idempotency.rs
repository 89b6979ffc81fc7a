//! Idempotency keys (`Idempotency-Key`, the IETF httpapi draft's header): the key a client
//! sends to make a write safe to retry, and the claim a request holds on it while it runs.

/// The longest key accepted, in bytes.
pub const KEY_MAX: usize = 255;

/// A well-formed `Idempotency-Key`: 1 to 255 visible ASCII characters (`!` to `~`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The key in `value`, or why it is not one.
    ///
    /// ```
    /// use compliance_domain::idempotency::IdempotencyKey;
    /// assert!(IdempotencyKey::parse("9f2c-4e1a").is_ok());
    /// assert!(IdempotencyKey::parse("has space").is_err());
    /// assert!(IdempotencyKey::parse("").is_err());
    /// ```
    pub fn parse(value: &str) -> Result<Self, &'static str> {
        if value.is_empty() || value.len() > KEY_MAX {
            return Err("must be 1 to 255 characters");
        }
        if !value.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("must be visible ASCII characters only (no spaces)");
        }
        Ok(Self(value.to_owned()))
    }

    /// The key as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A request's hold on its reserved key: the reservation's id and the attempt that holds it.
///
/// The change's transaction marks the reservation applied only while `attempt` still holds it
/// (a retry that took over an expired lease bumps the attempt), so a change is never applied
/// twice under one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyClaim {
    /// The reservation's id.
    pub id: String,
    /// The attempt this request is.
    pub attempt: i64,
}
