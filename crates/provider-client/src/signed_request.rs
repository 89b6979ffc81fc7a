//! Requests to a provider's own API, signed with a connection's credentials as its strategy says.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_credentials::{API_KEY_FIELD_ID, ApiKeyLocation, CredentialValues, RequestAuth};
use compliance_ports::{ProviderAnswer, ProviderRequestError};
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use reqwest::{Method, Request, Response};
use secrecy::{ExposeSecret, SecretString};

/// The most of an answer's body a signed request reads.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Sends `method url` with `auth` added. `http` must not follow redirects: credentials never
/// follow a redirect to another host.
pub(crate) async fn send(
    http: &reqwest::Client,
    method: Method,
    url: &str,
    auth: &RequestAuth,
) -> Result<Response, ProviderRequestError> {
    let url = url::Url::parse(url).map_err(|_| ProviderRequestError::InvalidUrl)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ProviderRequestError::InvalidUrl);
    }
    let mut request = Request::new(method, url);
    authenticate(&mut request, auth)?;
    http.execute(request).await.map_err(transport_error)
}

/// The status and the body, read up to [`MAX_BODY_BYTES`].
pub(crate) async fn answer(mut response: Response) -> Result<ProviderAnswer, ProviderRequestError> {
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(ProviderRequestError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(ProviderAnswer { status, body })
}

fn authenticate(request: &mut Request, auth: &RequestAuth) -> Result<(), ProviderRequestError> {
    match auth {
        RequestAuth::Bearer(token) => {
            let value = sensitive(&format!("Bearer {}", token.expose_secret()))?;
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        RequestAuth::ApiKey { config, values } => {
            let key = value(values, API_KEY_FIELD_ID)?.expose_secret();
            match config.location {
                ApiKeyLocation::Header => {
                    let name = HeaderName::from_bytes(config.name.as_bytes())
                        .map_err(|_| ProviderRequestError::InvalidHeader)?;
                    request.headers_mut().insert(name, sensitive(&format!("{}{key}", config.prefix))?);
                }
                // The spec's rule 2: in the query, the key goes without the prefix.
                ApiKeyLocation::Query => {
                    request.url_mut().query_pairs_mut().append_pair(&config.name, key);
                }
            }
        }
        RequestAuth::Basic { config, values } => {
            let username = value(values, &config.username_field)?.expose_secret();
            let password = value(values, &config.password_field)?.expose_secret();
            // RFC 7617: no URL-encoding, unlike the OAuth client header.
            let value = sensitive(&format!("Basic {}", STANDARD.encode(format!("{username}:{password}"))))?;
            request.headers_mut().insert(AUTHORIZATION, value);
        }
        RequestAuth::Custom => {}
    }
    Ok(())
}

fn value<'a>(values: &'a CredentialValues, id: &str) -> Result<&'a SecretString, ProviderRequestError> {
    values.get(id).ok_or_else(|| ProviderRequestError::MissingCredential(id.to_owned()))
}

/// Sensitive header values are left out of reqwest's and hyper's Debug output.
fn sensitive(text: &str) -> Result<HeaderValue, ProviderRequestError> {
    let mut value = HeaderValue::from_str(text).map_err(|_| ProviderRequestError::InvalidHeader)?;
    value.set_sensitive(true);
    Ok(value)
}

/// reqwest's own error is dropped: it names the URL, where an API key may be.
fn transport_error(error: reqwest::Error) -> ProviderRequestError {
    if error.is_timeout() {
        ProviderRequestError::TimedOut
    } else if error.is_connect() {
        ProviderRequestError::Unreachable
    } else {
        ProviderRequestError::Failed
    }
}
