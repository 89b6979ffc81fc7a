//! Checking a connection: the provider's `verify` request, sent through the [`ProviderClient`]
//! port with the connection's credentials (an OAuth access token refreshed first when due), and
//! what its answer says, recorded on the connection.
//!
//! [`ProviderClient`]: compliance_ports::ProviderClient

use std::collections::BTreeMap;

use compliance_credentials::{AuthStrategy, CredentialValues, Provider, RequestAuth};
use compliance_domain::access::{Action, Family};
use compliance_domain::integration::{CheckOutcome, Connection};
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{ProviderRequestError, RepoError};
use secrecy::SecretString;
use serde::Serialize;

use super::audit::CONNECTION;
use super::connection_tokens::{AccessTokenError, OAuthConnection};
use super::connections::{ConnectionView, connection_key};
use super::sealed::CONNECTION_CREDENTIALS;
use super::service::IntegrationService;
use crate::access::require;
use crate::{AppError, Principal};

/// What a check found, beside the updated connection.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub connection: ConnectionView,
    pub check: CheckResult,
}

#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    pub ok: bool,
    /// The provider's answer, when there was one.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub http_status: Option<u16>,
    /// Why the check did not pass; `null` when it did.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub message: Option<String>,
}

/// A check, ready to send or impossible from the start.
enum CheckSetup {
    Ready(RequestAuth),
    Impossible(CheckOutcome),
}

/// How a check run reads a connection's account: its request authentication and its stored
/// credential fields (empty for OAuth), or why it cannot (`Err`: a message fit to show).
pub(crate) type ReadCredentials = Result<(RequestAuth, CredentialValues), String>;

impl IntegrationService {
    /// Sends the provider's `verify` request with the connection's credentials and records what
    /// it found.
    pub async fn check_connection(&self, caller: &Principal, id: &str) -> Result<CheckReport, AppError> {
        require(caller, Family::Integrations, Action::Write)?;
        let org = &caller.organization_id;
        let mut connection = self.find_connection(org, id).await?;
        if connection.is_disconnected() {
            return Err(AppError::Conflict("the connection is disconnected: connect the provider again".into()));
        }
        let provider = self
            .catalog
            .get(&connection.provider)
            .cloned()
            .ok_or_else(|| AppError::Conflict("the connection's provider is no longer offered".into()))?;
        let verify = provider.verify.clone().ok_or_else(|| {
            AppError::invalid("id", "the connection's provider declares no verify request to check it with")
        })?;
        let read_at = connection.updated_at;
        let (outcome, http_status) = match self.check_setup(&provider, &connection).await? {
            CheckSetup::Ready(auth) => judge(self.providers.verify(&verify, &auth).await),
            CheckSetup::Impossible(outcome) => (outcome, None),
        };
        if let AuthStrategy::OAuth2(_) = provider.auth {
            connection.token_expires_at = self.stored_token_expiry(&connection).await;
        }
        connection.record_check(outcome.clone(), self.clock.now());
        let audit = self.audit.change(caller, "connection.checked", &CONNECTION);
        if let Err(error) = self.connections.update_connection(&connection, read_at, &audit).await {
            return Err(self.check_lost_race(org, &connection, error).await);
        }
        let message = match outcome {
            CheckOutcome::Passed => None,
            CheckOutcome::Refused(why) | CheckOutcome::Failed(why) => Some(why),
        };
        let check = CheckResult { ok: message.is_none(), http_status, message };
        Ok(CheckReport { connection: self.connection_view(connection), check })
    }

    /// The connection changed while it was checked: its outcome is stale. A refresh during the
    /// check may have stored tokens for a connection disconnected meanwhile; those go.
    async fn check_lost_race(&self, org: &OrganizationId, connection: &Connection, error: RepoError) -> AppError {
        if !matches!(error, RepoError::NotFound) {
            return error.into();
        }
        let now = self.connections.get_connection(org, &connection.id).await;
        if now.as_ref().is_ok_and(Connection::is_disconnected) {
            if let Err(error) = self.sealed.destroy_connection_secrets(org, &connection.id).await {
                tracing::warn!(%error, connection = %connection.id, "could not destroy tokens after a disconnect");
            }
            return AppError::Conflict("the connection was disconnected during the check".into());
        }
        AppError::Conflict("the connection changed during the check; check it again".into())
    }

    /// How the check authenticates for this connection, or why it cannot. Our own vault failing
    /// says nothing about the credentials: that is an error, not an outcome.
    async fn check_setup(&self, provider: &Provider, connection: &Connection) -> Result<CheckSetup, AppError> {
        Ok(match self.credentials_of(provider, connection).await? {
            Ok((auth, _)) => CheckSetup::Ready(auth),
            Err(outcome) => CheckSetup::Impossible(outcome),
        })
    }

    /// The credentials a check run reads `connection`'s account with.
    pub(crate) async fn read_credentials(&self, connection: &Connection) -> Result<ReadCredentials, AppError> {
        let Some(provider) = self.catalog.get(&connection.provider).cloned() else {
            return Ok(Err("the connection's provider is no longer offered".into()));
        };
        Ok(self.credentials_of(&provider, connection).await?.map_err(|outcome| match outcome {
            CheckOutcome::Passed => String::new(),
            CheckOutcome::Refused(why) | CheckOutcome::Failed(why) => why,
        }))
    }

    async fn credentials_of(
        &self,
        provider: &Provider,
        connection: &Connection,
    ) -> Result<Result<(RequestAuth, CredentialValues), CheckOutcome>, AppError> {
        let org = &connection.organization_id;
        let values = match &provider.auth {
            AuthStrategy::OAuth2(config) => {
                let Some((app, _)) = self.load_oauth_app(org, &provider.slug).await? else {
                    let why = "no OAuth app is configured for this provider";
                    return Ok(Err(CheckOutcome::Failed(why.into())));
                };
                let oauth = OAuthConnection {
                    key: connection_key(connection),
                    provider: provider.slug.clone(),
                    config: config.clone(),
                    client: app.client(),
                };
                return match self.tokens.access_token(&oauth).await {
                    Ok(token) => Ok(Ok((RequestAuth::Bearer(token), CredentialValues::default()))),
                    Err(AccessTokenError::Store(error)) => {
                        Err(AppError::Unavailable(format!("the token store failed during a check: {error}")))
                    }
                    Err(error) => Ok(Err(token_outcome(&error))),
                };
            }
            _ => {
                let stored: Option<(BTreeMap<String, String>, _)> =
                    self.sealed.get(org, CONNECTION_CREDENTIALS, connection.id.as_str()).await?;
                let Some((values, _)) = stored else {
                    let why = "no credentials are stored: connect again";
                    return Ok(Err(CheckOutcome::Refused(why.into())));
                };
                CredentialValues::from_validated(values.into_iter().map(|(k, v)| (k, SecretString::from(v))).collect())
            }
        };
        let auth = match &provider.auth {
            AuthStrategy::ApiKey(config) => RequestAuth::ApiKey { config: config.clone(), values: values.clone() },
            AuthStrategy::Basic(config) => RequestAuth::Basic { config: config.clone(), values: values.clone() },
            _ => RequestAuth::Custom,
        };
        Ok(Ok((auth, values)))
    }

    async fn stored_token_expiry(&self, connection: &Connection) -> Option<Timestamp> {
        let tokens = self.tokens.load(&connection_key(connection)).await.ok().flatten()?;
        tokens.expires_at.map(Timestamp::from_offset)
    }
}

/// What the provider's answer (or the lack of one) says about the credentials.
fn judge(sent: Result<u16, ProviderRequestError>) -> (CheckOutcome, Option<u16>) {
    match sent {
        Ok(status) => {
            let outcome = if (200..300).contains(&status) {
                CheckOutcome::Passed
            } else if matches!(status, 401 | 403) {
                CheckOutcome::Refused(format!("the provider refused the credentials (HTTP {status})"))
            } else {
                CheckOutcome::Failed(format!("the provider answered HTTP {status}"))
            };
            (outcome, Some(status))
        }
        Err(ProviderRequestError::InvalidHeader) => {
            (CheckOutcome::Refused("the stored credentials cannot be sent in an HTTP header".into()), None)
        }
        Err(ProviderRequestError::MissingCredential(id)) => {
            (CheckOutcome::Refused(format!("the credential field {id} has no value: connect again")), None)
        }
        Err(other) => (CheckOutcome::Failed(other.to_string()), None),
    }
}

fn token_outcome(error: &AccessTokenError) -> CheckOutcome {
    match error {
        AccessTokenError::NotConnected | AccessTokenError::ReauthorizationRequired => {
            CheckOutcome::Refused(error.to_string())
        }
        AccessTokenError::Token(token) if token.needs_reauthorization() => CheckOutcome::Refused(error.to_string()),
        other => CheckOutcome::Failed(other.to_string()),
    }
}
