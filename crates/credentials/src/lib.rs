//! Integration credential strategies for the compliance service: the four ways a third-party service
//! is connected (`oauth2`, `api_key`, `basic`, `custom`), the OAuth 2.0 authorization-code flow, the
//! encrypted credential vault's cipher, and authenticated requests for checks.
//!
//! # What it offers
//!
//! - [`strategy`]: the `auth: {type, config}` model, deserialised from the spec's camelCase JSON with
//!   its defaults, and the choice rule [`choose_strategy`].
//! - [`validation`]: [`parse_strategy`] (JSON in, validated strategy out) and [`validate_strategy`], with [`FieldError`]s that name the field by JSON path
//!   (`config.credentialFields[2].options`).
//! - [`fields`]: the credential fields each strategy generates ([`credential_fields`]) and
//!   [`validate_values`] for what a user submits.
//! - [`oauth`]: [`authorization_url`], PKCE ([`PkceVerifier`]), the state ([`StateToken`],
//!   [`OAuthState`]), the callback ([`accept_callback`], [`complete_authorization`]), the token client
//!   ([`TokenClient`], on the `oauth2` crate over [`ProviderHttp`]) and single-flight refreshing ([`TokenRefresher`], [`needs_refresh`]).
//! - [`check_context`]: [`CheckContext`] with `access_token`, `credentials` and `fetch`.
//! - [`vault`]: [`Keyring`] and [`Key`]: AES-256-GCM, key ids, rotation, owner binding.
//! - [`diagnostics`]: the spec's log messages, word for word.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use compliance_credentials::{Binding, Key, Keyring, credential_fields, parse_strategy, validate_values};
//! use secrecy::{ExposeSecret, SecretString};
//!
//! let auth = serde_json::json!({"type": "api_key", "config": {"in": "header", "name": "Authorization", "prefix": "Token "}});
//! let strategy = parse_strategy(&auth)?;
//! let fields = credential_fields(&strategy);
//! assert_eq!(fields[0].id, "api_key");
//!
//! let submitted = BTreeMap::from([("api_key".to_owned(), SecretString::from("k-123"))]);
//! let values = validate_values(&fields, submitted)?;
//!
//! let keyring = Keyring::new(Key::generate(), Vec::new())?;
//! let owner = Binding::connection("org_1", "con_1");
//! let sealed = keyring.encrypt_secret(values.get("api_key").ok_or("missing")?, owner)?;
//! assert_eq!(keyring.decrypt_secret(&sealed, owner)?.expose_secret(), "k-123");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! No database and no HTTP server here: storage of states, tokens and ciphertexts, and key loading from
//! `VAULT_KEY` / `VAULT_KEY_FILE` / `DATA_DIR`, come later.
//!
//! # Choices where the spec is silent
//!
//! - **Token client**: the `oauth2` crate builds the exchange and refresh requests and parses token
//!   responses (`ProviderTokenResponse`, which also takes a missing `token_type` and a string
//!   `expires_in`), over [`ProviderHttp`], our reqwest client behind its `AsyncHttpClient` trait.
//!   oauth2 reads any non-200 answer as an error body and keeps the body in its parse errors, so our
//!   client judges every answer first (redirects refused, 5xx and 429 transient by status alone,
//!   RFC 6749 error bodies reduced to their code) and oauth2 only ever sees successes. Revocation
//!   uses the same client without oauth2, whose `revoke_token` refuses http URLs. A refresh that
//!   brings no new refresh token keeps the old one.
//! - **Redirects** are never followed, for token endpoints and checks alike: credentials must not
//!   travel to a host the configuration did not name. Timeouts: 5 s connect, 30 s total
//!   ([`HttpSettings`]). Token responses over 1 MiB are refused. `Accept: application/json` is sent,
//!   and a 200 answer with an `error` member (GitHub does this) counts as an error.
//! - **Errors** never carry a submitted value, code, token or secret; a provider's OAuth error code is
//!   echoed only when it is a lowercase word such as `invalid_client`. reqwest errors lose their URL
//!   (an API key may be in the query).
//! - **Unknown keys** in any config object are refused (a typo such as `clientAuthMetod` would
//!   otherwise silently fall back to a default). `custom` needs at least one credential field.
//!   A custom setting's `required` defaults to false and its `token` is optional; every `{NAME}`
//!   placeholder in `authorizeUrl` must be the token of a setting. An optional setting left empty
//!   replaces its token with the empty string. Setting values are percent-encoded (RFC 3986
//!   unreserved characters kept).
//! - **Reserved parameters**: `authorizationParams` may not set client_id, response_type,
//!   redirect_uri, scope, state, code_challenge or code_challenge_method; `tokenParams` may not set
//!   grant_type, code, redirect_uri, code_verifier, client_id, client_secret or refresh_token.
//!   `tokenParams` are sent with refreshes too. No scope is sent on refresh. An empty scope list sends
//!   no `scope` parameter. Scopes may not contain spaces.
//! - **PKCE**: S256 only; the verifier is 64 random bytes in base64url (86 characters).
//! - **State**: 32 random bytes in base64url; stored as hex SHA-256; compared in constant time; a
//!   record dated more than a minute in the future counts as expired. It also carries the PKCE
//!   verifier, which the store must encrypt.
//! - **Refresh**: due when `now + 5 min >= expires_at`; a token without `expires_in` is never refreshed
//!   proactively; an expired token without a refresh token means re-authorisation. 429 is retryable
//!   like 5xx, timeouts and connection failures. A refresh failure logs `Token refresh failed` (not
//!   in the spec's table, which covers the connection flow).
//! - **Values**: an optional field submitted empty (or only whitespace) is dropped; whitespace-only
//!   counts as missing for a required one. Numbers must parse as finite decimals.
//! - **api_key with in=query** sends the key without the prefix (the spec's rule 2). Basic
//!   authentication for checks is `base64(username:password)` as RFC 7617 (no URL-encoding, unlike the
//!   OAuth client header).
//! - **Vault**: layout `version ‖ key id (8) ‖ nonce (12) ‖ ciphertext+tag`; the key id is the first 8
//!   bytes of SHA-256 over a label and the key, so keys need no names; the AAD is a label, the version,
//!   the key id, the organization id, the owner kind (`connection`, `oauth_app`, …) and the owner id,
//!   each length-prefixed. aes-gcm 0.10 (the
//!   released aead 0.5 API) with nonces and keys from `rand`'s OS-seeded generator.

pub mod check_context;
pub mod diagnostics;
pub mod field_error;
pub mod fields;
pub mod http_client;
pub mod oauth;
mod random;
pub mod rotation;
pub mod strategy;
pub mod validation;
pub mod vault;
pub mod vault_keys;

pub use check_context::{CheckAuth, CheckContext, FetchError};
pub use field_error::{FieldError, ValidationErrors};
pub use fields::{
    API_KEY_FIELD_ID, CredentialField, CredentialValues, FieldOption, FieldType, credential_fields, validate_values,
};
pub use http_client::{HttpClientError, HttpSettings, build_http_client};
pub use oauth::authorize::{AuthorizationRequest, AuthorizeUrlError, authorization_url, percent_encode};
pub use oauth::callback::{CallbackCaller, CallbackError, CallbackParams, accept_callback, complete_authorization};
pub use oauth::pkce::{PkceChallenge, PkceVerifier};
pub use oauth::provider_http::ProviderHttp;
pub use oauth::refresh::{
    AccessTokenError, ConnectionKey, DEFAULT_REFRESH_MARGIN, InMemoryTokenStore, OAuthConnection, TokenRefresher,
    TokenStore, TokenStoreError, needs_refresh,
};
pub use oauth::revoke::{RevokeRequest, TokenTypeHint};
pub use oauth::state::{OAuthState, STATE_LIFETIME, StateError, StateToken};
pub use oauth::token::{ClientCredentials, CodeExchange, RefreshRequest, TokenClient, TokenError, TokenSet};
pub use oauth::vault_store::{TOKENS_OWNER_KIND, VaultTokenStore};
pub use rotation::{RotationError, RotationReport, reencrypt_all};
pub use strategy::{
    ApiKeyConfig, ApiKeyLocation, AuthStrategy, BasicConfig, ClientAuthMethod, CustomConfig, CustomSetting,
    OAuth2Config, OfferedCredential, ServiceAuthOffer, StrategyKind, choose_strategy,
};
pub use validation::{parse_strategy, validate_strategy};
pub use vault::{Binding, Key, Keyring, VaultError};
pub use vault_keys::{KeyLoadError, KeySource, add_current_key, load_keyring};
