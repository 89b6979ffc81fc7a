//! What callers see of a provider: its strategy, the fields to fill in, whether this organization
//! has configured an OAuth app for it.

use std::collections::BTreeSet;

use compliance_credentials::{AuthStrategy, CredentialField, CustomSetting, Provider, StrategyKind, credential_fields};
use compliance_domain::access::{Action, Family};
use serde::Serialize;

use super::sealed::OAUTH_APP;
use super::service::IntegrationService;
use crate::access::require;
use crate::{AppError, Principal};

/// A provider: its strategy, the fields to fill in, and whether this organization configured its OAuth app.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = Provider))]
#[serde(rename_all = "camelCase")]
pub struct ProviderView {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::slug))]
    pub slug: String,
    pub name: String,
    pub description: String,
    pub auth_type: StrategyKind,
    /// Markdown; `null` when the manifest has none.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub setup_instructions: Option<String>,
    /// The fields to fill in; `[]` for `oauth2` providers.
    pub credential_fields: Vec<CredentialField>,
    /// `null` unless the provider is `oauth2`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub oauth: Option<OAuthView>,
    pub supports_verify: bool,
    pub supports_revoke: bool,
    pub connect_url: String,
}

impl ProviderView {
    /// The provider's `ETag`: a digest of all it shows (the shipped manifest, and whether this
    /// organization configured its OAuth app), which a new manifest or an app's `PUT`/`DELETE`
    /// changes.
    pub fn etag(&self) -> compliance_domain::etag::ETag {
        compliance_domain::etag::ETag::of_state(&self.slug, self)
    }
}

/// An `oauth2` provider's OAuth details.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = ProviderOAuth))]
#[serde(rename_all = "camelCase")]
pub struct OAuthView {
    /// Whether this organization has configured an OAuth app for the provider.
    pub configured: bool,
    pub scopes: Vec<String>,
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub create_app_url: Option<String>,
    /// What the administrator registers at the provider.
    pub callback_url: String,
    pub custom_settings: Vec<CustomSetting>,
}

impl IntegrationService {
    /// Every provider, sorted by slug.
    pub async fn list_providers(&self, caller: &Principal) -> Result<Vec<ProviderView>, AppError> {
        require(caller, Family::Integrations, Action::Read)?;
        let configured: BTreeSet<String> =
            self.sealed.owners(&caller.organization_id, OAUTH_APP).await?.into_iter().collect();
        Ok(self.catalog.iter().map(|p| self.view(p, configured.contains(&p.slug))).collect())
    }

    pub async fn get_provider(&self, caller: &Principal, slug: &str) -> Result<ProviderView, AppError> {
        require(caller, Family::Integrations, Action::Read)?;
        let provider = self.provider(slug)?;
        let configured = match provider.auth {
            AuthStrategy::OAuth2(_) => self.load_oauth_app(&caller.organization_id, slug).await?.is_some(),
            _ => false,
        };
        Ok(self.view(provider, configured))
    }

    fn view(&self, provider: &Provider, oauth_app_configured: bool) -> ProviderView {
        let oauth = match &provider.auth {
            AuthStrategy::OAuth2(config) => Some(OAuthView {
                configured: oauth_app_configured,
                scopes: config.scopes.clone(),
                create_app_url: config.create_app_url.clone(),
                callback_url: self.callback_url(),
                custom_settings: config.custom_settings.clone(),
            }),
            _ => None,
        };
        ProviderView {
            slug: provider.slug.clone(),
            name: provider.name.clone(),
            description: provider.description.clone(),
            auth_type: provider.auth.kind(),
            setup_instructions: provider.setup_instructions().map(str::to_owned),
            credential_fields: credential_fields(&provider.auth),
            oauth,
            supports_verify: provider.verify.is_some(),
            supports_revoke: provider.revoke.is_some(),
            connect_url: format!("/integrations/{}/connect", provider.slug),
        }
    }
}
