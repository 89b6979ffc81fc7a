//! The HTTP client under the `oauth2` crate: our reqwest client (no redirects, timeouts; see
//! [`build_http_client`](crate::build_http_client)) and our reading of a provider's
//! answer.
//!
//! oauth2 takes any non-200 answer for an RFC 6749 error body: a 503 page becomes a parse error
//! that carries the page (which may echo a token), a 204 from a revocation endpoint an "empty
//! error response". So every answer is judged here first, and oauth2 only ever sees a success:
//! - a redirect is an error, never followed;
//! - 5xx and 429 are transient, decided by the status alone: their body is not even read;
//! - a body with an RFC 6749 `error` member is a rejection whatever the status (GitHub answers
//!   some errors with 200), reported by its code alone, never its description or the body;
//! - any other 4xx is a rejection without a code;
//! - any other 2xx reaches oauth2 as 200 with the body and no headers (its Content-Type check
//!   would refuse the `text/plain` JSON some providers send).

use std::future::Future;
use std::pin::Pin;

use oauth2::basic::BasicErrorResponse;
use oauth2::{AsyncHttpClient, HttpRequest, HttpResponse};
use reqwest::StatusCode;
use reqwest::header::AUTHORIZATION;

use compliance_credentials::{TokenError, diagnostics};

/// A token or revocation answer larger than this is refused rather than buffered.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Sends requests to a provider's token and revocation endpoints.
#[derive(Debug, Clone)]
pub struct ProviderHttp(reqwest::Client);

impl ProviderHttp {
    /// `http` must not follow redirects (see [`build_http_client`](crate::build_http_client)).
    pub fn new(http: reqwest::Client) -> Self {
        Self(http)
    }

    /// The client itself, to build requests with.
    pub fn client(&self) -> &reqwest::Client {
        &self.0
    }

    /// Sends `request` and reads the answer as the module says: `Ok` only for a success, with its body.
    pub async fn send(&self, mut request: reqwest::Request) -> Result<Vec<u8>, TokenError> {
        if let Some(credentials) = request.headers_mut().get_mut(AUTHORIZATION) {
            credentials.set_sensitive(true);
        }
        let response = self.0.execute(request).await.map_err(transport_error)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(TokenError::Redirected { status: status.as_u16() });
        }
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(TokenError::Transient { status: Some(status.as_u16()) });
        }
        let body = read_limited(response).await?;
        judge(status, &body)?;
        Ok(body)
    }
}

impl<'c> AsyncHttpClient<'c> for ProviderHttp {
    type Error = TokenError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, TokenError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(async move {
            let request = reqwest::Request::try_from(request).map_err(|_| TokenError::Request)?;
            // A new response: status 200, no headers.
            Ok(HttpResponse::new(self.send(request).await?))
        })
    }
}

/// A 2xx or 4xx answer: success, or the rejection its status and RFC 6749 error body say.
fn judge(status: StatusCode, body: &[u8]) -> Result<(), TokenError> {
    let error = serde_json::from_slice::<BasicErrorResponse>(body).ok();
    match error {
        Some(error) => Err(match error.error().as_ref() {
            "invalid_grant" => TokenError::InvalidGrant,
            // RFC 6749 §4.1.2.1 and RFC 7009 §2.2.1: try again later.
            "temporarily_unavailable" => TokenError::Transient { status: Some(status.as_u16()) },
            code => TokenError::Rejected { status: status.as_u16(), error: diagnostics::safe_code(code).to_owned() },
        }),
        None if status.is_success() => Ok(()),
        None => Err(TokenError::Rejected { status: status.as_u16(), error: "no_error_code".to_owned() }),
    }
}

/// Timeouts and connection failures are transient; reqwest errors lose their URL.
fn transport_error(error: reqwest::Error) -> TokenError {
    if error.is_timeout() || error.is_connect() { TokenError::Transient { status: None } } else { TokenError::Request }
}

async fn read_limited(mut response: reqwest::Response) -> Result<Vec<u8>, TokenError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(TokenError::InvalidResponse);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn answers_are_judged_by_status_and_error_code() {
        assert!(judge(StatusCode::OK, br#"{"access_token":"a"}"#).is_ok());
        assert!(judge(StatusCode::NO_CONTENT, b"").is_ok());
        assert!(matches!(
            judge(StatusCode::OK, br#"{"error":"bad_verification_code"}"#),
            Err(TokenError::Rejected { status: 200, ref error }) if error == "bad_verification_code"
        ));
        assert!(matches!(
            judge(StatusCode::BAD_REQUEST, br#"{"error":"invalid_grant","error_description":"revoked"}"#),
            Err(TokenError::InvalidGrant)
        ));
        assert!(judge(StatusCode::BAD_REQUEST, br#"{"error":"temporarily_unavailable"}"#).unwrap_err().is_retryable());
        assert!(matches!(
            judge(StatusCode::FORBIDDEN, b"<html>no</html>"),
            Err(TokenError::Rejected { status: 403, ref error }) if error == "no_error_code"
        ));
        let odd = judge(StatusCode::UNAUTHORIZED, br#"{"error":"Secret-Echo-123"}"#).unwrap_err();
        assert!(!format!("{odd} {odd:?}").contains("Secret-Echo"));
    }
}
