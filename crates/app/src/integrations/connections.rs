//! Connections: created from a credential form (api_key, basic, custom) or by the OAuth flow;
//! listed, and disconnected (their check is in `connection_check.rs`).

use std::collections::BTreeMap;

use compliance_credentials::{
    AuthStrategy, CredentialValues, OAuth2Config, Provider, RevokeRequest, StrategyKind, TokenSet, TokenTypeHint,
    credential_fields, validate_values,
};
use compliance_domain::access::{Action, Family};
use compliance_domain::etag::IfMatch;
use compliance_domain::integration::{Connection, ConnectionStatus};
use compliance_domain::{ConnectionId, FieldError, OrganizationId, Timestamp, UserId, ValidationErrors};
use compliance_ports::{ConnectionQuery, Page, RepoError};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::audit::CONNECTION;
use super::connection_tokens::ConnectionKey;
use super::limits::VALUE_MAX;
use super::oauth_apps::OAuthApp;
use super::sealed::CONNECTION_CREDENTIALS;
use super::service::IntegrationService;
use crate::access::require;
use crate::controls::EVIDENCE_SOURCE;
use crate::library::suggested_checks;
use crate::{AppError, Principal};

/// `POST /v1/integrations/connections`.
#[derive(Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewConnection {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::slug_input))]
    pub provider_slug: String,
    #[serde(deserialize_with = "crate::integrations::secret_input::secret_map")]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::credentials_input))]
    pub credentials: BTreeMap<String, SecretString>,
}

/// A connection; no secret, token or credential value is ever part of it.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = Connection))]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    pub id: ConnectionId,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::slug))]
    pub provider_slug: String,
    /// `null` when the provider is no longer offered.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub provider_name: Option<String>,
    /// `null` when the provider is no longer offered.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub auth_type: Option<StrategyKind>,
    pub status: ConnectionStatus,
    pub created_by: UserId,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub connected_at: Option<Timestamp>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub disconnected_at: Option<Timestamp>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub token_expires_at: Option<Timestamp>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub last_checked_at: Option<Timestamp>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub last_error: Option<String>,
}

impl ConnectionView {
    /// The entity tag of this state of the connection: a check or a token refresh changes fields
    /// beside `updatedAt`, so the whole state counts
    /// ([`ETag::of_state`](compliance_domain::etag::ETag::of_state)).
    pub fn etag(&self) -> compliance_domain::etag::ETag {
        compliance_domain::etag::ETag::of_state(self.id.as_str(), self)
    }
}

/// What became of the tokens at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Revocation {
    Revoked,
    Failed,
    NotSupported,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Disconnected {
    pub connection: ConnectionView,
    pub revocation: Revocation,
}

/// How often a disconnect re-reads a connection that changed between reading and writing.
const UPDATE_ATTEMPTS: usize = 3;

/// A connection's tokens and OAuth app, read before a disconnect destroys them.
#[allow(clippy::large_enum_variant, reason = "one short-lived value per disconnect")]
enum Revocable {
    NotSupported,
    /// The manifest says how, but the tokens or the app are gone or unreadable.
    Unavailable,
    Ready {
        provider: String,
        config: OAuth2Config,
        url: String,
        tokens: TokenSet,
        app: OAuthApp,
    },
}

impl IntegrationService {
    pub async fn create_connection(
        &self,
        caller: &Principal,
        input: NewConnection,
    ) -> Result<ConnectionView, AppError> {
        require(caller, Family::Integrations, Action::Write)?;
        let provider = self.provider(&input.provider_slug)?.clone();
        if let AuthStrategy::OAuth2(_) = provider.auth {
            return Err(AppError::invalid(
                "providerSlug",
                "is an OAuth provider: connect it with POST /v1/integrations/oauth/start",
            ));
        }
        let values = submitted_values(&provider, input.credentials)?;
        let org = &caller.organization_id;
        if self.connections.find_live(org, &provider.slug).await?.is_some() {
            return Err(already_connected(&provider));
        }
        let connection =
            Connection::connected(org.clone(), provider.slug.clone(), caller.user_id.clone(), None, self.clock.now());
        let exposed: BTreeMap<&str, &str> =
            values.ids().filter_map(|id| Some((id, values.get(id)?.expose_secret()))).collect();
        self.sealed.put(org, CONNECTION_CREDENTIALS, connection.id.as_str(), &exposed).await?;
        let audit = self.audit.change(caller, "connection.created", &CONNECTION);
        let link_audit = self.audit.change(caller, "control.evidence_source_added", &EVIDENCE_SOURCE);
        let links = suggested_checks(&provider.slug, &link_audit);
        if let Err(error) = self.connections.insert(&connection, &audit, &links).await {
            // Nothing may point at the credentials now: destroy them rather than leave them behind.
            if let Err(cleanup) = self.sealed.destroy_connection_secrets(org, &connection.id).await {
                tracing::warn!(error = %cleanup, "could not destroy the credentials of a connection not created");
            }
            return Err(match error {
                RepoError::Conflict(_) => already_connected(&provider),
                other => other.into(),
            });
        }
        Ok(self.connection_view(connection))
    }

    /// A page of the organization's connections matching `query`.
    pub async fn list_connections(
        &self,
        caller: &Principal,
        query: &ConnectionQuery,
    ) -> Result<Page<ConnectionView>, AppError> {
        require(caller, Family::Integrations, Action::Read)?;
        let page = self.connections.list(&caller.organization_id, query).await?;
        let Page { items, total, next } = page;
        Ok(Page { items: items.into_iter().map(|c| self.connection_view(c)).collect(), total, next })
    }

    pub async fn get_connection(&self, caller: &Principal, id: &str) -> Result<ConnectionView, AppError> {
        require(caller, Family::Integrations, Action::Read)?;
        Ok(self.connection_view(self.find_connection(&caller.organization_id, id).await?))
    }

    /// Marks the connection disconnected, destroys its credentials and tokens, then revokes the
    /// tokens at the provider when its manifest says how. Disconnecting twice answers the same.
    pub async fn disconnect_connection(
        &self,
        caller: &Principal,
        id: &str,
        if_match: &IfMatch,
    ) -> Result<Disconnected, AppError> {
        require(caller, Family::Integrations, Action::Write)?;
        let org = &caller.organization_id;
        for _ in 0..UPDATE_ATTEMPTS {
            let mut connection = self.find_connection(org, id).await?;
            // Checked against the state read (the tag its read answers); the update below writes
            // only while the connection is still that state, and a change meanwhile reads it
            // again and checks anew.
            if_match.check(&self.connection_view(connection.clone()).etag())?;
            if connection.is_disconnected() {
                // Idempotent, and a second chance to destroy what a failed first attempt left.
                self.sealed.destroy_connection_secrets(org, &connection.id).await?;
                let connection = self.connection_view(connection);
                return Ok(Disconnected { connection, revocation: Revocation::NotSupported });
            }
            // Read before the secrets go: revocation needs them.
            let revocable = self.revocable_token(&connection).await;
            let read_at = connection.updated_at;
            connection.disconnect(self.clock.now());
            let audit = self.audit.change(caller, "connection.disconnected", &CONNECTION);
            match self.connections.update_connection(&connection, read_at, &audit).await {
                Ok(()) => {
                    self.sealed.destroy_connection_secrets(org, &connection.id).await?;
                    let revocation = self.revoke(revocable).await;
                    return Ok(Disconnected { connection: self.connection_view(connection), revocation });
                }
                Err(RepoError::NotFound) => continue, // changed meanwhile: read it again
                Err(other) => return Err(other.into()),
            }
        }
        Err(AppError::Conflict("the connection kept changing during the disconnect; try again".into()))
    }

    pub(super) async fn find_connection(&self, org: &OrganizationId, id: &str) -> Result<Connection, AppError> {
        const MISSING: AppError = AppError::NotFound("connection");
        let id = ConnectionId::parse(id).map_err(|_| MISSING)?;
        self.connections.get_connection(org, &id).await.map_err(|e| AppError::from_repo(e, "connection"))
    }

    /// What revoking this connection's tokens takes, read while they still exist.
    async fn revocable_token(&self, connection: &Connection) -> Revocable {
        let Some(provider) = self.catalog.get(&connection.provider) else { return Revocable::NotSupported };
        let (AuthStrategy::OAuth2(config), Some(url)) = (&provider.auth, &provider.revoke) else {
            return Revocable::NotSupported;
        };
        let tokens = self.tokens.load(&connection_key(connection)).await;
        let app = self.load_oauth_app(&connection.organization_id, &provider.slug).await;
        match (tokens, app) {
            (Ok(Some(tokens)), Ok(Some((app, _)))) => Revocable::Ready {
                provider: provider.slug.clone(),
                config: config.clone(),
                url: url.clone(),
                tokens,
                app,
            },
            _ => Revocable::Unavailable,
        }
    }

    /// RFC 7009: the refresh token (revoking it ends the grant), else the access token.
    async fn revoke(&self, revocable: Revocable) -> Revocation {
        let (provider, config, url, tokens, app) = match revocable {
            Revocable::NotSupported => return Revocation::NotSupported,
            Revocable::Unavailable => return Revocation::Failed,
            Revocable::Ready { provider, config, url, tokens, app } => (provider, config, url, tokens, app),
        };
        let (token, token_type_hint) = match &tokens.refresh_token {
            Some(refresh) => (refresh, TokenTypeHint::RefreshToken),
            None => (&tokens.access_token, TokenTypeHint::AccessToken),
        };
        let request = RevokeRequest {
            provider: &provider,
            url: &url,
            client: &app.client(),
            config: &config,
            token,
            token_type_hint,
        };
        // A failure is logged by the provider client as `Token revocation failed`.
        match self.providers.revoke(&request).await {
            Ok(()) => Revocation::Revoked,
            Err(_) => Revocation::Failed,
        }
    }

    pub(crate) fn connection_view(&self, c: Connection) -> ConnectionView {
        let provider = self.catalog.get(&c.provider);
        ConnectionView {
            id: c.id,
            provider_name: provider.map(|p| p.name.clone()),
            auth_type: provider.map(|p| p.auth.kind()),
            provider_slug: c.provider,
            status: c.status,
            created_by: c.created_by,
            created_at: c.created_at,
            updated_at: c.updated_at,
            connected_at: c.connected_at,
            disconnected_at: c.disconnected_at,
            token_expires_at: c.token_expires_at,
            last_checked_at: c.last_checked_at,
            last_error: c.last_error,
        }
    }
}

pub(crate) fn connection_key(connection: &Connection) -> ConnectionKey {
    ConnectionKey { organization_id: connection.organization_id.clone(), connection_id: connection.id.clone() }
}

fn already_connected(provider: &Provider) -> AppError {
    AppError::Conflict(format!(
        "this organization is already connected to {}: disconnect that connection first",
        provider.name
    ))
}

/// The provider's fields, checked; errors are named `credentials.<id>` and never carry a value.
fn submitted_values(
    provider: &Provider,
    submitted: BTreeMap<String, SecretString>,
) -> Result<CredentialValues, AppError> {
    let prefixed = |errors: Vec<FieldError>| {
        let errors = errors.into_iter().map(|e| FieldError::new(format!("credentials.{}", e.field), e.message));
        AppError::Validation(ValidationErrors(errors.collect()))
    };
    let mut bad = Vec::new();
    for (id, value) in &submitted {
        let value = value.expose_secret();
        if value.chars().count() > VALUE_MAX {
            bad.push(FieldError::new(id.clone(), format!("must be at most {VALUE_MAX} characters")));
        } else if value.contains('\0') {
            bad.push(FieldError::new(id.clone(), "must not contain NUL characters"));
        }
    }
    if !bad.is_empty() {
        return Err(prefixed(bad));
    }
    validate_values(&credential_fields(&provider.auth), submitted).map_err(|e| prefixed(e.0))
}
