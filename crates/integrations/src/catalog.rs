//! The provider catalog: which third-party services can be connected, read from manifest files.
//!
//! The manifests in the repository's `providers/` directory are compiled into the binary; an
//! operator may add more from `PROVIDERS_DIR`. Any invalid manifest stops start-up with an error
//! naming the file and the field.

use std::collections::BTreeMap;
use std::sync::Arc;

use compliance_credentials::AuthStrategy;

/// One provider, from one manifest file.
#[derive(Debug, Clone)]
pub struct Provider {
    /// Lowercase letters, digits and `-`; unique across every manifest.
    pub slug: String,
    pub name: String,
    pub description: String,
    pub auth: AuthStrategy,
    /// Markdown shown on the connect page for strategies whose config has no `setupInstructions`
    /// of its own (api_key, basic).
    pub setup_instructions: Option<String>,
    /// A request that proves a credential works.
    pub verify: Option<VerifyRequest>,
    /// The RFC 7009 revocation endpoint (oauth2 providers only).
    pub revoke: Option<String>,
    /// Where the manifest came from (`providers/github.json`, or a path under `PROVIDERS_DIR`).
    pub source: String,
}

/// `verify: {method, url}` of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyRequest {
    /// `GET`, `HEAD` or `POST`.
    pub method: reqwest::Method,
    /// An absolute http(s) URL.
    pub url: String,
}

/// Every known provider by slug.
#[derive(Debug, Clone, Default)]
pub struct ProviderCatalog {
    providers: BTreeMap<String, Arc<Provider>>,
}

/// An invalid manifest: which file, which field (a JSON path such as `auth.config.tokenUrl`), why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("provider manifest {file}: {field}: {message}")]
pub struct ManifestError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl ProviderCatalog {
    pub fn get(&self, slug: &str) -> Option<&Arc<Provider>> {
        self.providers.get(slug)
    }

    /// Sorted by slug.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Provider>> {
        self.providers.values()
    }
}

impl Provider {
    /// The Markdown setup guide: the strategy config's own (oauth2, custom), else the manifest's.
    pub fn setup_instructions(&self) -> Option<&str> {
        let from_config = match &self.auth {
            AuthStrategy::OAuth2(config) => config.setup_instructions.as_deref(),
            AuthStrategy::Custom(config) => config.setup_instructions.as_deref(),
            AuthStrategy::ApiKey(_) | AuthStrategy::Basic(_) => None,
        };
        from_config.or(self.setup_instructions.as_deref())
    }
}
