//! The OAuth connect flow: start (authorization URL and stored state), then the callback (state
//! checked and consumed, code exchanged, tokens stored, connection active).

use compliance_credentials::{
    AuthorizationRequest, CodeExchange, PkceVerifier, STATE_LIFETIME, StateToken, TokenSet, authorization_url,
    diagnostics,
};
use compliance_domain::access::{Action, Family};
use compliance_domain::integration::Connection;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{OAuthStateRecord, RepoError};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use url::Url;

use super::audit::CONNECTION;
use super::connections::connection_key;
use super::sealed::OAUTH_STATE;
use super::service::IntegrationService;
use crate::access::require;
use crate::controls::EVIDENCE_SOURCE;
use crate::library::suggested_checks;
use crate::{AppError, Principal};

/// How often the callback re-reads the live connection when a concurrent callback or disconnect
/// changed it between reading and writing.
const STORE_ATTEMPTS: usize = 3;

/// `POST /v1/integrations/oauth/start`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartOAuth {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::slug_input))]
    pub provider_slug: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::redirect_url))]
    pub redirect_url: Option<String>,
}

/// A state taken from the store by the callback: it cannot be taken again.
#[derive(Debug)]
pub struct PendingAuthorization {
    record: OAuthStateRecord,
}

/// What a presented state says before it is taken: where the callback authenticates.
#[derive(Debug, Clone)]
pub struct StateFor {
    /// The organization the flow was started for.
    pub organization_id: OrganizationId,
    /// The provider's slug.
    pub provider: String,
}

/// The presented state, or the 400 of a missing one (the provider is unknown until a stored
/// state names it).
fn presented(state: Option<&str>) -> Result<StateToken, AppError> {
    state.filter(|s| !s.is_empty()).map(StateToken::presented).ok_or_else(|| invalid_state("unknown", "no state"))
}

/// Where the callback sends the browser.
#[derive(Debug)]
pub struct CallbackRedirect(pub String);

/// The refusal of a state that is unknown, expired, used, or someone else's; logged as the
/// spec's `Invalid state`.
pub fn invalid_state(provider: &str, why: &str) -> AppError {
    diagnostics::invalid_state(provider, why);
    AppError::InvalidOAuthState("is unknown, expired, already used or another user's: start the connection again")
}

impl IntegrationService {
    pub async fn start_oauth(&self, caller: &Principal, input: StartOAuth) -> Result<String, AppError> {
        require(caller, Family::Integrations, Action::Write)?;
        let slug = input.provider_slug.as_str();
        let provider = self.provider(slug)?.clone();
        let config = self.oauth_provider(slug)?;
        let redirect_url = input.redirect_url.map(|url| self.allowed_redirect(&url)).transpose()?;
        let org = &caller.organization_id;
        let Some((app, _)) = self.load_oauth_app(org, slug).await? else {
            return Err(AppError::SetupRequired {
                detail: format!(
                    "no OAuth app is configured for {} in this organization: an administrator must add one",
                    provider.name
                ),
                setup_instructions: config.setup_instructions.clone(),
                create_app_url: config.create_app_url.clone(),
            });
        };
        let state = StateToken::generate();
        let verifier = config.pkce.then(PkceVerifier::generate);
        let challenge = verifier.as_ref().map(PkceVerifier::challenge);
        // Built before anything is stored: a URL that cannot be built leaves nothing behind.
        let request = AuthorizationRequest {
            client_id: &app.client_id,
            redirect_uri: &self.callback_url(),
            settings: &app.custom_settings,
            state: &state,
            pkce_challenge: challenge.as_ref(),
        };
        let url = authorization_url(config, &request)
            .map_err(|e| AppError::invalid("customSettings", format!("the OAuth app cannot be used: {e}")))?;
        let now = self.clock.now();
        if let Err(error) = self.oauth_states.purge_expired(now).await {
            tracing::warn!(%error, "could not purge expired OAuth states");
        }
        let state_hash = state.hash();
        let sealed_pkce_verifier = verifier
            .map(|v| self.sealed.seal(org, OAUTH_STATE, &state_hash, &v.secret().expose_secret()))
            .transpose()?;
        let record = OAuthStateRecord {
            state_hash,
            organization_id: org.clone(),
            user_id: caller.user_id.clone(),
            provider: slug.to_owned(),
            redirect_url,
            created_at: now,
            expires_at: now.plus(STATE_LIFETIME),
            sealed_pkce_verifier,
        };
        self.oauth_states.insert(&record).await?;
        Ok(url.into())
    }

    /// Which organization and provider the presented state is for, leaving the state in place:
    /// the callback authenticates its session there first, so that a request that cannot
    /// authenticate (or another user's) never uses up the state of the user who started.
    pub async fn state_for(&self, state: Option<&str>) -> Result<StateFor, AppError> {
        let record = self.oauth_states.find(&presented(state)?.hash()).await?;
        let record = record.ok_or_else(|| invalid_state("unknown", "unknown or already used state"))?;
        Ok(StateFor { organization_id: record.organization_id, provider: record.provider })
    }

    /// Takes the presented state from the store, if the caller started it (once: a second
    /// callback with it finds nothing; another user's leaves it in place).
    pub async fn take_state(&self, caller: &Principal, state: Option<&str>) -> Result<PendingAuthorization, AppError> {
        let presented = presented(state)?;
        let record = self.oauth_states.take(&presented.hash(), &caller.organization_id, &caller.user_id).await?;
        let record = record.ok_or_else(|| {
            invalid_state(
                "unknown",
                "unknown or already used state, or the session is not the one that started the flow",
            )
        })?;
        if record.expires_at <= self.clock.now() {
            return Err(invalid_state(&record.provider, "expired state"));
        }
        Ok(PendingAuthorization { record })
    }

    /// Finishes the flow for the session's user: a redirect to the `redirectUrl` given at start
    /// (or the provider's connect page) with `status=connected` or `status=error`.
    pub async fn complete_oauth(
        &self,
        caller: &Principal,
        pending: PendingAuthorization,
        code: Option<SecretString>,
        error: Option<String>,
    ) -> Result<CallbackRedirect, AppError> {
        require(caller, Family::Integrations, Action::Write)?;
        let PendingAuthorization { record } = pending;
        // Before anything else, a provider error included: only who started may finish.
        if caller.user_id != record.user_id || caller.organization_id != record.organization_id {
            return Err(invalid_state(&record.provider, "the session is not the one that started the flow"));
        }
        let org = &record.organization_id;
        let verifier = self.open_verifier(&record)?;
        let redirect_error = |code: &str| Ok(self.redirect_after(&record, &[("status", "error"), ("error", code)]));
        // The state was taken once, unexpired, by its own user: what remains is the provider's answer.
        if let Some(error) = &error {
            diagnostics::oauth_callback_error(&record.provider, error);
            return redirect_error(diagnostics::safe_code(error));
        }
        let Some(code) = code else { return redirect_error("missing_code") };
        let Some((app, _)) = self.load_oauth_app(org, &record.provider).await? else {
            return redirect_error("oauth_app_missing");
        };
        let exchange = CodeExchange {
            provider: &record.provider,
            config: self.oauth_provider(&record.provider)?,
            client: &app.client(),
            code: &code,
            redirect_uri: &self.callback_url(),
            pkce_verifier: verifier.as_ref(),
        };
        // The provider client logs `OAuth completed for <provider>`, or `Token exchange failed`.
        let Ok(tokens) = self.providers.exchange(&exchange).await else {
            return redirect_error("token_exchange_failed");
        };
        match self.store_authorization(caller, &record.provider, &tokens).await? {
            Some(connection) => {
                Ok(self.redirect_after(&record, &[("status", "connected"), ("connectionId", connection.id.as_str())]))
            }
            None => redirect_error("connection_changed"),
        }
    }

    fn open_verifier(&self, record: &OAuthStateRecord) -> Result<Option<PkceVerifier>, AppError> {
        let Some(sealed) = &record.sealed_pkce_verifier else { return Ok(None) };
        let verifier: String = self.sealed.open(&record.organization_id, OAUTH_STATE, &record.state_hash, sealed)?;
        PkceVerifier::from_secret(SecretString::from(verifier))
            .map(Some)
            .map_err(|_| AppError::Internal("a stored PKCE verifier is malformed".into()))
    }

    /// Makes the organization's live connection to the provider active with these tokens (a
    /// re-authorisation keeps its id), or creates one. `None` when concurrent changes kept
    /// winning; the tokens are then destroyed.
    async fn store_authorization(
        &self,
        caller: &Principal,
        provider: &str,
        tokens: &TokenSet,
    ) -> Result<Option<Connection>, AppError> {
        let org = &caller.organization_id;
        for _ in 0..STORE_ATTEMPTS {
            let now = self.clock.now();
            let expires_at = tokens.expires_at.map(Timestamp::from_offset);
            let (connection, read_at) = match self.connections.find_live(org, provider).await? {
                Some(mut live) => {
                    let read_at = live.updated_at;
                    live.reconnect(expires_at, now);
                    (live, Some(read_at))
                }
                None => (
                    Connection::connected(org.clone(), provider.to_owned(), caller.user_id.clone(), expires_at, now),
                    None,
                ),
            };
            self.tokens
                .save(&connection_key(&connection), tokens)
                .await
                .map_err(|e| AppError::Unavailable(e.to_string()))?;
            let stored = match read_at {
                Some(read_at) => {
                    let audit = self.audit.change(caller, "connection.reconnected", &CONNECTION);
                    self.connections.update_connection(&connection, read_at, &audit).await
                }
                None => {
                    let audit = self.audit.change(caller, "connection.created", &CONNECTION);
                    let link_audit = self.audit.change(caller, "control.evidence_source_added", &EVIDENCE_SOURCE);
                    let links = suggested_checks(provider, &link_audit);
                    self.connections.insert(&connection, &audit, &links).await
                }
            };
            match stored {
                Ok(()) => return Ok(Some(connection)),
                // Disconnected, re-authorised or created meanwhile: look again.
                Err(RepoError::NotFound | RepoError::Conflict(_)) => self.destroy_orphan_tokens(org, &connection).await,
                Err(other) => {
                    self.destroy_orphan_tokens(org, &connection).await;
                    return Err(other.into());
                }
            }
        }
        Ok(None)
    }

    /// Tokens saved for a connection that is not live must not stay behind: one this call failed
    /// to create, or one disconnected meanwhile. A live one keeps them (another callback for it won).
    async fn destroy_orphan_tokens(&self, org: &OrganizationId, connection: &Connection) {
        let live_now = self.connections.get_connection(org, &connection.id).await.is_ok_and(|c| !c.is_disconnected());
        if live_now {
            return;
        }
        if let Err(error) = self.sealed.destroy_connection_secrets(org, &connection.id).await {
            tracing::warn!(%error, connection = %connection.id, "could not destroy orphaned OAuth tokens");
        }
    }

    fn redirect_after(&self, record: &OAuthStateRecord, outcome: &[(&str, &str)]) -> CallbackRedirect {
        let default = format!(
            "{}/integrations/{}/connect?organizationId={}",
            self.public_url.trim_end_matches('/'),
            record.provider,
            record.organization_id
        );
        let target = record.redirect_url.as_deref().unwrap_or(&default);
        let Ok(mut url) = Url::parse(target) else { return CallbackRedirect(target.to_owned()) };
        url.query_pairs_mut().append_pair("provider", &record.provider).extend_pairs(outcome.iter().copied());
        CallbackRedirect(url.into())
    }

    /// An absolute http(s) URL on `PUBLIC_URL`'s origin or an allowed one.
    fn allowed_redirect(&self, url: &str) -> Result<String, AppError> {
        let invalid = |why: &str| AppError::invalid("redirectUrl", why);
        let parsed = Url::parse(url).map_err(|_| invalid("must be an absolute http(s) URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(invalid("must be an absolute http(s) URL"));
        }
        let origin = parsed.origin().ascii_serialization();
        let public = Url::parse(&self.public_url).map(|u| u.origin().ascii_serialization()).ok();
        let allowed = public.as_deref() == Some(origin.as_str())
            || self.redirect_origins.iter().any(|o| o.trim_end_matches('/') == origin);
        match allowed {
            true => Ok(parsed.into()),
            false => Err(invalid("must be on an allowed origin (PUBLIC_URL's or OAUTH_REDIRECT_ORIGINS)")),
        }
    }
}
