//! Connections of an organization to third-party services (integrations).
//!
//! The secrets of a connection (credential values, OAuth tokens) are not here: they live in the
//! encrypted vault, keyed by the connection's id.

use crate::{ConnectionId, OrganizationId, Timestamp, UserId};

crate::string_enum! {
    /// Where a connection stands: `active` (credentials stored, the last check passed if there was
    /// one), `needs_reauth` (the provider refused the credentials or refresh token), `error` (the
    /// last check failed otherwise), `disconnected` (credentials destroyed; kept for the record).
    ConnectionStatus {
        Active = "active",
        NeedsReauth = "needs_reauth",
        Error = "error",
        Disconnected = "disconnected",
    }
}

/// One organization's connection to one provider. At most one connection per organization and
/// provider is not `disconnected`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// The connection's id.
    pub id: ConnectionId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// The provider manifest's slug, e.g. `github`.
    pub provider: String,
    /// Whether its credentials work (`active`), need a new authorization, failed, or were disconnected.
    pub status: ConnectionStatus,
    /// The user who connected it.
    pub created_by: UserId,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// When credentials were last stored (created, or authorised again).
    pub connected_at: Option<Timestamp>,
    /// When it was disconnected, if it was.
    pub disconnected_at: Option<Timestamp>,
    /// When the OAuth access token expires, if the provider said.
    pub token_expires_at: Option<Timestamp>,
    /// When its credentials were last checked.
    pub last_checked_at: Option<Timestamp>,
    /// What the last check said when it did not pass: a short message with no secret in it.
    pub last_error: Option<String>,
}

impl Connection {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

impl Connection {
    /// A connection whose credentials were just stored.
    pub fn connected(
        organization_id: OrganizationId,
        provider: String,
        created_by: UserId,
        token_expires_at: Option<Timestamp>,
        now: Timestamp,
    ) -> Self {
        Self {
            id: ConnectionId::generate(),
            organization_id,
            provider,
            status: ConnectionStatus::Active,
            created_by,
            created_at: now,
            updated_at: now,
            connected_at: Some(now),
            disconnected_at: None,
            token_expires_at,
            last_checked_at: None,
            last_error: None,
        }
    }

    /// New credentials for an existing connection (authorised again).
    pub fn reconnect(&mut self, token_expires_at: Option<Timestamp>, now: Timestamp) {
        self.status = ConnectionStatus::Active;
        self.connected_at = Some(now);
        self.token_expires_at = token_expires_at;
        self.last_error = None;
        self.updated_at = now;
    }

    /// Records what a check found.
    pub fn record_check(&mut self, outcome: CheckOutcome, now: Timestamp) {
        let (status, error) = match outcome {
            CheckOutcome::Passed => (ConnectionStatus::Active, None),
            CheckOutcome::Refused(why) => (ConnectionStatus::NeedsReauth, Some(why)),
            CheckOutcome::Failed(why) => (ConnectionStatus::Error, Some(why)),
        };
        self.status = status;
        self.last_error = error;
        self.last_checked_at = Some(now);
        self.updated_at = now;
    }

    /// Marks the connection disconnected at `now` and forgets when its token expires.
    pub fn disconnect(&mut self, now: Timestamp) {
        self.status = ConnectionStatus::Disconnected;
        self.disconnected_at = Some(now);
        self.token_expires_at = None;
        self.updated_at = now;
    }

    /// Whether it was disconnected.
    pub fn is_disconnected(&self) -> bool {
        self.status == ConnectionStatus::Disconnected
    }
}

/// What a check of a connection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckOutcome {
    /// The provider accepted the credentials.
    Passed,
    /// The provider refused the credentials (401/403, or a refresh token it no longer accepts).
    Refused(String),
    /// Anything else: unreachable, timeout, an unexpected status.
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> Connection {
        Connection::connected(OrganizationId::generate(), "github".into(), UserId::generate(), None, Timestamp::now())
    }

    #[test]
    fn checks_move_the_status_and_keep_the_reason() {
        let mut c = connection();
        c.record_check(CheckOutcome::Refused("HTTP 401".into()), Timestamp::now());
        assert_eq!((c.status, c.last_error.as_deref()), (ConnectionStatus::NeedsReauth, Some("HTTP 401")));
        c.record_check(CheckOutcome::Failed("timeout".into()), Timestamp::now());
        assert_eq!(c.status, ConnectionStatus::Error);
        c.record_check(CheckOutcome::Passed, Timestamp::now());
        assert_eq!((c.status, c.last_error), (ConnectionStatus::Active, None));
        assert!(c.last_checked_at.is_some());
    }

    #[test]
    fn disconnecting_forgets_the_token_expiry() {
        let mut c = connection();
        c.token_expires_at = Some(Timestamp::now());
        c.disconnect(Timestamp::now());
        assert!(c.is_disconnected());
        assert_eq!(c.token_expires_at, None);
        assert!(c.disconnected_at.is_some());
    }
}
