//! How connections and OAuth apps appear in the audit trail: never a credential, token or client
//! secret (those live only in the vault, and nothing here reads them).

use crate::Subject;
use compliance_domain::audit::Redaction;
use compliance_domain::integration::Connection;
use compliance_ports::StoredSecret;

/// Connections in entries: the row, which holds no credential.
pub(crate) const CONNECTION: Subject<Connection> = Subject {
    resource_type: "connection",
    id: |connection| connection.id.to_string(),
    render: |_, c| {
        serde_json::json!({
            "id": c.id, "providerSlug": c.provider, "status": c.status, "createdBy": c.created_by,
            "createdAt": c.created_at, "updatedAt": c.updated_at, "connectedAt": c.connected_at,
            "disconnectedAt": c.disconnected_at, "tokenExpiresAt": c.token_expires_at,
            "lastCheckedAt": c.last_checked_at, "lastError": c.last_error,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: Some(|_, before, after| compliance_domain::evidence::of_connection(before, after)),
};

/// An OAuth app in entries (`resourceId` is the provider's slug): that it was set and when; its
/// client id and secret are sealed together and never read for an entry.
pub(crate) const OAUTH_APP: Subject<StoredSecret> = Subject {
    resource_type: "oauthApp",
    id: |app| app.owner_id.clone(),
    render: |_, app| serde_json::json!({"providerSlug": app.owner_id, "updatedAt": app.updated_at}),
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// `oauthApp.created` for the first PUT of a provider's app, `oauthApp.updated` after.
pub(crate) fn oauth_app_action(before: Option<&StoredSecret>, _: Option<&StoredSecret>) -> &'static str {
    match before {
        None => "oauthApp.created",
        Some(_) => "oauthApp.updated",
    }
}
