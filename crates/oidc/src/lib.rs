//! The `IdentityProvider` port over OpenID Connect, on the `openidconnect` crate.
//!
//! Discovery (`{issuer}/.well-known/openid-configuration`) runs on first use and again after a
//! failure, never at start-up: a provider that is down must not keep the service from starting.
//! The provider's keys come with discovery and are fetched again when an ID token names a key id
//! they do not hold (the provider rotated its keys). Requests go through one `reqwest::Client`
//! that follows no redirect and gives up after [`OidcSettings::timeout`].

use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{AuthorizationParams, IdentityError, IdentityProvider, VerifiedIdentity};
use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreGenderClaim, CoreIdToken, CoreProviderMetadata, CoreUserInfoClaims,
};
use openidconnect::{
    AccessToken, AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, EmptyAdditionalClaims,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenClaims, IssuerUrl, JsonWebKeySet, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope, SignatureVerificationError,
    TokenResponse,
};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::RwLock;

/// The client `from_provider_metadata` builds: authorization endpoint set, token and userinfo
/// endpoints as discovery found them.
type DiscoveredClient =
    CoreClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointMaybeSet, EndpointMaybeSet>;

/// `OIDC_*` from the configuration.
#[derive(Debug, Clone)]
pub struct OidcSettings {
    pub issuer_url: String,
    pub client_id: String,
    pub client_secret: SecretString,
    /// Always holds `openid`.
    pub scopes: Vec<String>,
    /// Where the provider sends the browser back: `PUBLIC_URL` + `/auth/callback`.
    pub redirect_url: String,
    /// Per request to the provider, connection included.
    pub timeout: Duration,
}

/// A start-up mistake in the settings, naming the setting.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

pub struct OidcProvider {
    settings: OidcSettings,
    issuer: IssuerUrl,
    redirect: RedirectUrl,
    http: reqwest::Client,
    /// The discovered metadata with its keys; `None` until discovery first succeeds.
    metadata: RwLock<Option<CoreProviderMetadata>>,
}

impl OidcProvider {
    pub fn new(settings: OidcSettings) -> Result<Self, SettingsError> {
        let issuer = IssuerUrl::new(settings.issuer_url.clone())
            .map_err(|_| SettingsError(format!("OIDC_ISSUER_URL `{}` is not a URL", settings.issuer_url)))?;
        let redirect = RedirectUrl::new(settings.redirect_url.clone())
            .map_err(|_| SettingsError(format!("the callback URL `{}` is not a URL", settings.redirect_url)))?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(settings.timeout)
            .timeout(settings.timeout)
            .build()
            .map_err(|_| SettingsError("cannot build the HTTP client for OpenID Connect".into()))?;
        Ok(Self { settings, issuer, redirect, http, metadata: RwLock::new(None) })
    }

    /// The discovered metadata, discovering now if nothing is kept yet.
    async fn metadata(&self) -> Result<CoreProviderMetadata, IdentityError> {
        if let Some(metadata) = self.metadata.read().await.as_ref() {
            return Ok(metadata.clone());
        }
        let discovered = CoreProviderMetadata::discover_async(self.issuer.clone(), &self.http)
            .await
            .map_err(|error| IdentityError::Unavailable(format!("discovery failed: {}", discovery_reason(&error))))?;
        *self.metadata.write().await = Some(discovered.clone());
        Ok(discovered)
    }

    /// Fetches the provider's keys again and keeps them with the metadata.
    async fn refresh_keys(&self, metadata: CoreProviderMetadata) -> Result<CoreProviderMetadata, IdentityError> {
        let keys = JsonWebKeySet::fetch_async(metadata.jwks_uri(), &self.http).await.map_err(|error| {
            IdentityError::Unavailable(format!("key set fetch failed: {}", discovery_reason(&error)))
        })?;
        tracing::info!(keys = keys.keys().len(), "fetched the identity provider's keys again");
        let refreshed = metadata.set_jwks(keys);
        *self.metadata.write().await = Some(refreshed.clone());
        Ok(refreshed)
    }

    fn client(&self, metadata: CoreProviderMetadata) -> DiscoveredClient {
        CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            Some(ClientSecret::new(self.settings.client_secret.expose_secret().to_owned())),
        )
        .set_redirect_uri(self.redirect.clone())
    }

    /// The ID token's claims, checked against the keys; once more with fresh keys when the token
    /// names a key the kept set lacks.
    async fn verified_claims(
        &self,
        metadata: CoreProviderMetadata,
        token: &CoreIdToken,
        nonce: &Nonce,
    ) -> Result<IdTokenClaims<EmptyAdditionalClaims, CoreGenderClaim>, IdentityError> {
        let client = self.client(metadata.clone());
        match token.claims(&client.id_token_verifier(), nonce) {
            Ok(claims) => Ok(claims.clone()),
            Err(ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey)) => {
                let client = self.client(self.refresh_keys(metadata).await?);
                token.claims(&client.id_token_verifier(), nonce).cloned().map_err(invalid_token)
            }
            Err(error) => Err(invalid_token(error)),
        }
    }

    /// The userinfo claims, for what the ID token left out (providers may put e-mail and profile
    /// only there); `None` when the provider has no userinfo endpoint.
    async fn user_info(
        &self,
        client: &DiscoveredClient,
        access_token: &AccessToken,
        subject: &openidconnect::SubjectIdentifier,
    ) -> Result<Option<CoreUserInfoClaims>, IdentityError> {
        let Ok(request) = client.user_info(access_token.clone(), Some(subject.clone())) else {
            return Ok(None);
        };
        request.request_async(&self.http).await.map(Some).map_err(|error| match error {
            openidconnect::UserInfoError::ClaimsVerification(_) => {
                IdentityError::InvalidToken("userinfo names another subject".into())
            }
            _ => IdentityError::Unavailable("the userinfo request failed".into()),
        })
    }
}

#[async_trait]
impl IdentityProvider for OidcProvider {
    fn issuer(&self) -> &str {
        self.issuer.as_str()
    }

    async fn authorization_url(&self, params: AuthorizationParams<'_>) -> Result<String, IdentityError> {
        let client = self.client(self.metadata().await?);
        let state = CsrfToken::new(params.state.expose_secret().to_owned());
        let nonce = Nonce::new(params.nonce.expose_secret().to_owned());
        let verifier = PkceCodeVerifier::new(params.pkce_verifier.expose_secret().to_owned());
        let mut request = client.authorize_url(CoreAuthenticationFlow::AuthorizationCode, move || state, move || nonce);
        // `openid` is added by the client itself.
        for scope in self.settings.scopes.iter().filter(|scope| *scope != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, _, _) = request.set_pkce_challenge(PkceCodeChallenge::from_code_verifier_sha256(&verifier)).url();
        Ok(url.to_string())
    }

    async fn redeem(
        &self,
        code: SecretString,
        pkce_verifier: SecretString,
        nonce: &SecretString,
    ) -> Result<VerifiedIdentity, IdentityError> {
        let metadata = self.metadata().await?;
        let client = self.client(metadata.clone());
        let request = client
            .exchange_code(AuthorizationCode::new(code.expose_secret().to_owned()))
            .map_err(|_| IdentityError::Unavailable("the provider names no token endpoint".into()))?;
        let response = request
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.expose_secret().to_owned()))
            .request_async(&self.http)
            .await
            .map_err(token_error)?;
        let token = response.id_token().ok_or_else(|| IdentityError::InvalidToken("no ID token".into()))?;
        let nonce = Nonce::new(nonce.expose_secret().to_owned());
        let claims = self.verified_claims(metadata, token, &nonce).await?;
        let mut identity = VerifiedIdentity {
            issuer: claims.issuer().to_string(),
            subject: claims.subject().to_string(),
            email: claims.email().map(|email| email.to_string()),
            email_verified: claims.email_verified().unwrap_or(false),
            name: claims.name().and_then(|name| name.get(None)).map(|name| name.to_string()),
            picture: claims.picture().and_then(|picture| picture.get(None)).map(|picture| picture.to_string()),
        };
        if identity.email.is_none() || identity.name.is_none() {
            let client = self.client(self.metadata().await?);
            if let Some(info) = self.user_info(&client, response.access_token(), claims.subject()).await? {
                fill_from_user_info(&mut identity, &info);
            }
        }
        Ok(identity)
    }
}

/// Userinfo fills only what the ID token left out; its `email_verified` goes with its `email`.
fn fill_from_user_info(identity: &mut VerifiedIdentity, info: &CoreUserInfoClaims) {
    if identity.email.is_none() {
        identity.email = info.email().map(|email| email.to_string());
        identity.email_verified = info.email_verified().unwrap_or(false);
    }
    if identity.name.is_none() {
        identity.name = info.name().and_then(|name| name.get(None)).map(|name| name.to_string());
    }
    if identity.picture.is_none() {
        identity.picture = info.picture().and_then(|picture| picture.get(None)).map(|picture| picture.to_string());
    }
}

/// The check that failed, in a fixed phrase: the error's own text may quote claim values.
fn invalid_token(error: ClaimsVerificationError) -> IdentityError {
    let reason = match error {
        ClaimsVerificationError::Expired(_) => "expired",
        ClaimsVerificationError::InvalidAudience(_) => "audience is not this client",
        ClaimsVerificationError::InvalidIssuer(_) => "issuer is not the configured one",
        ClaimsVerificationError::InvalidNonce(_) => "nonce does not match this sign-in",
        ClaimsVerificationError::InvalidSubject(_) => "subject is missing",
        ClaimsVerificationError::SignatureVerification(_) => "signature does not verify",
        _ => "claims do not verify",
    };
    IdentityError::InvalidToken(reason.into())
}

/// The token endpoint's refusal as its OAuth error code; a server error or a network failure as
/// the provider being unavailable. No response body reaches the error.
fn token_error<RE: std::error::Error + 'static>(
    error: RequestTokenError<RE, openidconnect::StandardErrorResponse<openidconnect::core::CoreErrorResponseType>>,
) -> IdentityError {
    match error {
        RequestTokenError::ServerResponse(response) => IdentityError::Refused(response.error().to_string()),
        RequestTokenError::Request(_) => IdentityError::Unavailable("the token request failed".into()),
        RequestTokenError::Parse(..) => IdentityError::Unavailable("the token response is not OAuth JSON".into()),
        RequestTokenError::Other(_) => IdentityError::Unavailable("the token response is unexpected".into()),
    }
}

fn discovery_reason<RE: std::error::Error + 'static>(error: &openidconnect::DiscoveryError<RE>) -> &'static str {
    match error {
        openidconnect::DiscoveryError::Request(_) => "request failed",
        openidconnect::DiscoveryError::Response(..) => "unexpected status",
        openidconnect::DiscoveryError::Parse(_) => "not valid JSON",
        openidconnect::DiscoveryError::Validation(_) => "issuer does not match",
        _ => "unexpected answer",
    }
}
