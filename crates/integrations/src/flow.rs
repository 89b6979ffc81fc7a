//! The OAuth connect flow: start (authorization URL and stored state), then the callback (state
//! checked and consumed, code exchanged, tokens stored, connection active).

use compliance_app::{AppError, Principal};
use compliance_credentials::oauth::state::OAuthState;
use compliance_credentials::{
    AuthorizationRequest, CallbackCaller, CallbackError, CallbackParams, CodeExchange, ConnectionKey, PkceVerifier,
    STATE_LIFETIME, StateToken, TokenSet, TokenStore as _, VaultTokenStore, accept_callback, authorization_url,
    complete_authorization, diagnostics,
};
use compliance_domain::integration::Connection;
use compliance_domain::{OrganizationId, Timestamp, UserId};
use compliance_ports::{OAuthStateRecord, RepoError};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use url::Url;

use crate::Integrations;
use crate::sealed::OAUTH_STATE;

/// `POST /v1/integrations/oauth/start`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartOAuth {
    pub provider_slug: String,
    #[serde(default)]
    pub redirect_url: Option<String>,
}

/// A state taken from the store by the callback: it cannot be taken again.
#[derive(Debug)]
pub struct PendingAuthorization {
    record: OAuthStateRecord,
    presented: StateToken,
}

impl PendingAuthorization {
    /// The organization the flow was started for: the callback authenticates the session for it.
    pub fn organization_id(&self) -> &OrganizationId {
        &self.record.organization_id
    }
}

/// Where the callback sends the browser.
#[derive(Debug)]
pub struct CallbackRedirect(pub String);

impl Integrations {
    pub async fn start_oauth(&self, caller: &Principal, input: StartOAuth) -> Result<String, AppError> {
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
        let now = self.clock.now();
        if let Err(error) = self.oauth_states.purge_expired(now).await {
            tracing::warn!(%error, "could not purge expired OAuth states");
        }
        let state = StateToken::generate();
        let verifier = config.pkce.then(PkceVerifier::generate);
        let record = OAuthStateRecord {
            state_hash: state.hash(),
            organization_id: org.clone(),
            user_id: caller.user_id.clone(),
            provider: slug.to_owned(),
            redirect_url,
            created_at: now,
            expires_at: now.plus(STATE_LIFETIME),
        };
        if let Some(verifier) = &verifier {
            self.sealed.put(org, OAUTH_STATE, &record.state_hash, &verifier.secret().expose_secret()).await?;
        }
        self.oauth_states.insert(&record).await?;
        let challenge = verifier.as_ref().map(PkceVerifier::challenge);
        let request = AuthorizationRequest {
            client_id: &app.client_id,
            redirect_uri: &self.callback_url(),
            settings: &app.custom_settings,
            state: &state,
            pkce_challenge: challenge.as_ref(),
        };
        let url = authorization_url(config, &request)
            .map_err(|e| AppError::invalid("customSettings", format!("the OAuth app cannot be used: {e}")))?;
        Ok(url.into())
    }

    /// Takes the presented state from the store (once: a second callback with it finds nothing).
    /// An unknown or expired state is a 400, logged as `Invalid state`.
    pub async fn take_state(&self, state: Option<&str>) -> Result<PendingAuthorization, AppError> {
        let refused = |why: &str| {
            // The provider is unknown until a stored state names it.
            diagnostics::invalid_state("unknown", why);
            AppError::invalid("state", "is unknown, expired or already used: start the connection again")
        };
        let Some(presented) = state.filter(|s| !s.is_empty()).map(StateToken::presented) else {
            return Err(refused("no state"));
        };
        let record = self.oauth_states.take(&presented.hash()).await?.ok_or_else(|| refused("unknown state"))?;
        if record.expires_at <= self.clock.now() {
            return Err(refused("expired state"));
        }
        Ok(PendingAuthorization { record, presented })
    }

    /// Finishes the flow for the session's user: always a redirect, to the `redirectUrl` given at
    /// start (or the provider's connect page) with `status=connected` or `status=error`.
    pub async fn complete_oauth(
        &self,
        caller: &Principal,
        pending: PendingAuthorization,
        code: Option<SecretString>,
        error: Option<String>,
    ) -> Result<CallbackRedirect, AppError> {
        let PendingAuthorization { record, presented } = pending;
        let org = record.organization_id.clone();
        let verifier = self.take_verifier(&org, &record.state_hash).await?;
        let redirect = |outcome: &[(&str, &str)]| self.redirect_after(&record, outcome);
        let mut state = OAuthState::new(
            &presented,
            org.as_str(),
            record.user_id.as_str(),
            record.provider.as_str(),
            record.created_at.to_offset(),
            verifier,
        );
        let params = CallbackParams { code, state: Some(presented.value().expose_secret().to_owned()), error };
        let who = CallbackCaller {
            organization_id: caller.organization_id.as_str(),
            user_id: caller.user_id.as_str(),
            provider: &record.provider,
        };
        let code = match accept_callback(params, Some(&mut state), who, self.clock.now().to_offset()) {
            Ok(code) => code,
            Err(CallbackError::InvalidState(_)) => {
                return Err(AppError::invalid("state", "belongs to another user's authorization"));
            }
            Err(CallbackError::Provider(code)) => return Ok(redirect(&[("status", "error"), ("error", &code)])),
            Err(CallbackError::MissingCode) => return Ok(redirect(&[("status", "error"), ("error", "missing_code")])),
        };
        let Some((app, _)) = self.load_oauth_app(&org, &record.provider).await? else {
            return Ok(redirect(&[("status", "error"), ("error", "oauth_app_missing")]));
        };
        let config = self.oauth_provider(&record.provider)?;
        let exchange = CodeExchange {
            provider: &record.provider,
            config,
            client: &app.client(),
            code: &code,
            redirect_uri: &self.callback_url(),
            pkce_verifier: state.pkce_verifier.as_ref(),
        };
        let tokens = match complete_authorization(&self.tokens, &exchange).await {
            Ok(tokens) => tokens,
            Err(error) => {
                tracing::warn!(provider = %record.provider, reason = %error, "OAuth code exchange failed");
                return Ok(redirect(&[("status", "error"), ("error", "token_exchange_failed")]));
            }
        };
        let connection = self.store_authorization(&org, &caller.user_id, &record.provider, &tokens).await?;
        Ok(redirect(&[("status", "connected"), ("connectionId", connection.id.as_str())]))
    }

    /// Makes the organization's live connection to the provider active with these tokens, or
    /// creates one.
    async fn store_authorization(
        &self,
        org: &OrganizationId,
        user: &UserId,
        provider: &str,
        tokens: &TokenSet,
    ) -> Result<Connection, AppError> {
        let now = self.clock.now();
        let expires_at = tokens.expires_at.map(Timestamp::from_offset);
        let store = VaultTokenStore::new(self.sealed.secrets(), self.sealed.keyring());
        let (connection, is_new) = match self.connections.find_live(org, provider).await? {
            Some(mut connection) => {
                connection.reconnect(expires_at, now);
                (connection, false)
            }
            None => (Connection::connected(org.clone(), provider.to_owned(), user.clone(), expires_at, now), true),
        };
        let key = ConnectionKey { organization_id: org.to_string(), connection_id: connection.id.to_string() };
        store.save(&key, tokens).await.map_err(|e| AppError::Internal(e.to_string()))?;
        let stored = if is_new {
            self.connections.insert(&connection).await
        } else {
            self.connections.update(&connection).await
        };
        match stored {
            Ok(()) => Ok(connection),
            Err(RepoError::Conflict(_)) => {
                // Another callback created the live connection meanwhile: these tokens are orphans.
                if let Err(error) = self.sealed.destroy_connection_secrets(org, &connection.id).await {
                    tracing::warn!(%error, "could not destroy the tokens of a connection that lost a race");
                }
                Err(AppError::Conflict("the provider was connected meanwhile; try again".into()))
            }
            Err(other) => Err(other.into()),
        }
    }

    async fn take_verifier(&self, org: &OrganizationId, state_hash: &str) -> Result<Option<PkceVerifier>, AppError> {
        let Some((verifier, _)) = self.sealed.get::<String>(org, OAUTH_STATE, state_hash).await? else {
            return Ok(None);
        };
        self.sealed.delete(org, OAUTH_STATE, state_hash).await?;
        let verifier = PkceVerifier::from_secret(SecretString::from(verifier))
            .map_err(|_| AppError::Internal("a stored PKCE verifier is malformed".into()))?;
        Ok(Some(verifier))
    }

    fn redirect_after(&self, record: &OAuthStateRecord, outcome: &[(&str, &str)]) -> CallbackRedirect {
        let default = format!(
            "{}/integrations/{}/connect?organizationId={}",
            self.settings.public_url.trim_end_matches('/'),
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
        let public = Url::parse(&self.settings.public_url).map(|u| u.origin().ascii_serialization()).ok();
        let allowed = public.as_deref() == Some(origin.as_str())
            || self.settings.redirect_origins.iter().any(|o| o.trim_end_matches('/') == origin);
        match allowed {
            true => Ok(parsed.into()),
            false => Err(invalid("must be on an allowed origin (PUBLIC_URL's or OAUTH_REDIRECT_ORIGINS)")),
        }
    }
}
