//! The spec's diagnostic log messages, word for word. Only the provider name and an OAuth error code
//! are ever attached: never a code, token, secret or state value.

/// Success: `OAuth completed for <provider>`.
pub fn oauth_completed(provider: &str) {
    tracing::info!(provider, "OAuth completed for {provider}");
}

/// The provider sent the user back with `error=…` instead of a code: `OAuth callback error`.
/// The HTTP callback handler calls this (or [`crate::oauth::callback::accept_callback`] does).
pub fn oauth_callback_error(provider: &str, error_code: &str) {
    tracing::warn!(provider, error = %safe_code(error_code), "OAuth callback error");
}

/// The token endpoint refused the code or the client credentials: `Token exchange failed`.
pub fn token_exchange_failed(provider: &str, reason: &str) {
    tracing::warn!(provider, reason = %safe_code(reason), "Token exchange failed");
}

/// The callback's state is unknown, used, expired or bound to someone else: `Invalid state`.
pub fn invalid_state(provider: &str, reason: &str) {
    tracing::warn!(provider, reason, "Invalid state");
}

/// An OAuth error code is a short lowercase word such as `invalid_client` (RFC 6749 §5.2); anything
/// else is not echoed, because a provider could put a secret in it.
pub fn safe_code(code: &str) -> &str {
    let plain = !code.is_empty() && code.len() <= 40 && code.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    if plain { code } else { "unrecognised" }
}
