//! Accepting the redirect back from the provider: its error, its state, its code.

use secrecy::SecretString;
use time::OffsetDateTime;

use crate::diagnostics;
use crate::oauth::state::{OAuthState, StateError, StateToken};

/// The query of the redirect back from the provider. `Debug` leaves the state value out.
#[derive(Default)]
pub struct CallbackParams {
    pub code: Option<SecretString>,
    pub state: Option<String>,
    /// RFC 6749 §4.1.2.1, e.g. `access_denied`.
    pub error: Option<String>,
}

impl std::fmt::Debug for CallbackParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackParams")
            .field("code", &self.code)
            .field("state", &self.state.as_ref().map(|_| "[redacted]"))
            .field("error", &self.error)
            .finish()
    }
}

/// Who the callback request belongs to (from the session), to bind it to the stored state.
#[derive(Debug, Clone, Copy)]
pub struct CallbackCaller<'a> {
    pub organization_id: &'a str,
    pub user_id: &'a str,
    pub provider: &'a str,
}

#[derive(Debug, thiserror::Error)]
pub enum CallbackError {
    #[error("the provider reported an authorization error ({0})")]
    Provider(String),
    #[error("invalid OAuth state: {0}")]
    InvalidState(#[from] StateError),
    #[error("the callback carries no authorization code")]
    MissingCode,
}

/// Accepts the callback: refuses a provider error (`OAuth callback error`) and a bad state (`Invalid
/// state`), consumes the stored state, and hands back the code. `stored` is the record found by
/// [`StateToken::hash`] of the presented state, if any.
pub fn accept_callback(
    params: CallbackParams,
    stored: Option<&mut OAuthState>,
    caller: CallbackCaller<'_>,
    now: OffsetDateTime,
) -> Result<SecretString, CallbackError> {
    if let Some(error) = &params.error {
        diagnostics::oauth_callback_error(caller.provider, error);
        return Err(CallbackError::Provider(diagnostics::safe_code(error).to_owned()));
    }
    let state_result = match (params.state.as_deref(), stored) {
        (Some(presented), Some(record)) if record.matches(&StateToken::presented(presented)) => {
            record.consume(now, caller.organization_id, caller.user_id, caller.provider)
        }
        _ => Err(StateError::Unknown),
    };
    if let Err(error) = state_result {
        diagnostics::invalid_state(caller.provider, &error.to_string());
        return Err(error.into());
    }
    params.code.ok_or(CallbackError::MissingCode)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;
    use secrecy::ExposeSecret;

    const CALLER: CallbackCaller<'static> =
        CallbackCaller { organization_id: "org_1", user_id: "usr_1", provider: "github" };

    fn started() -> (StateToken, OAuthState) {
        let token = StateToken::generate();
        let record = OAuthState::new(&token, "org_1", "usr_1", "github", OffsetDateTime::now_utc(), None);
        (token, record)
    }

    fn params(state: &StateToken) -> CallbackParams {
        CallbackParams {
            code: Some("the-code".into()),
            state: Some(state.value().expose_secret().to_owned()),
            error: None,
        }
    }

    #[test]
    fn a_good_callback_yields_the_code_once() {
        let (token, mut record) = started();
        let now = OffsetDateTime::now_utc();
        let code = accept_callback(params(&token), Some(&mut record), CALLER, now).unwrap();
        assert_eq!(code.expose_secret(), "the-code");
        let again = accept_callback(params(&token), Some(&mut record), CALLER, now).unwrap_err();
        assert!(matches!(again, CallbackError::InvalidState(StateError::AlreadyUsed)));
    }

    #[test]
    fn wrong_missing_or_foreign_state_is_refused() {
        let (token, mut record) = started();
        let now = OffsetDateTime::now_utc();
        let forged = StateToken::generate();
        assert!(matches!(
            accept_callback(params(&forged), Some(&mut record), CALLER, now),
            Err(CallbackError::InvalidState(StateError::Unknown))
        ));
        assert!(matches!(
            accept_callback(params(&token), None, CALLER, now),
            Err(CallbackError::InvalidState(StateError::Unknown))
        ));
        let other_org = CallbackCaller { organization_id: "org_2", ..CALLER };
        assert!(matches!(
            accept_callback(params(&token), Some(&mut record), other_org, now),
            Err(CallbackError::InvalidState(StateError::Mismatch))
        ));
        assert!(!record.used);
    }

    #[test]
    fn a_provider_error_is_reported() {
        let (token, mut record) = started();
        let mut p = params(&token);
        p.error = Some("access_denied".into());
        let err = accept_callback(p, Some(&mut record), CALLER, OffsetDateTime::now_utc()).unwrap_err();
        assert!(matches!(err, CallbackError::Provider(ref code) if code == "access_denied"));
    }
}
