//! How a request to a provider's API authenticates, one way per strategy, with the values it
//! sends; the adapter of the `ProviderClient` port puts them into the request.

use secrecy::SecretString;

use crate::fields::CredentialValues;
use crate::strategy::{ApiKeyConfig, BasicConfig};

/// The authentication of a signed request. `Debug` shows no value.
#[derive(Debug, Clone)]
pub enum RequestAuth {
    /// `Authorization: Bearer <access token>` (oauth2).
    Bearer(SecretString),
    /// The `api_key` field's value, in the header or query parameter the config names.
    ApiKey { config: ApiKeyConfig, values: CredentialValues },
    /// `Authorization: Basic base64(username:password)` (RFC 7617) from the two fields the config names.
    Basic { config: BasicConfig, values: CredentialValues },
    /// The request authenticates itself (custom): nothing is added.
    Custom,
}
