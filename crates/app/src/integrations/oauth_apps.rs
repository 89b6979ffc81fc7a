//! An organization's OAuth app (client credentials and custom settings) for one provider.

use std::collections::BTreeMap;

use compliance_credentials::{ClientCredentials, OAuth2Config};
use compliance_domain::access::{Action, Family};
use compliance_domain::etag::{ETag, IfMatch};
use compliance_domain::{FieldError, OrganizationId, Timestamp, ValidationErrors};
use compliance_ports::secret_etag;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::audit::{OAUTH_APP as OAUTH_APP_ENTRY, oauth_app_action};
use super::limits::{CLIENT_ID_MAX, CLIENT_SECRET_MAX, SETTING_MAX};
use super::sealed::OAUTH_APP;
use super::service::IntegrationService;
use crate::access::require;
use crate::{AppError, Principal};

/// `PUT /v1/integrations/oauth-apps/{slug}`.
#[derive(Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthAppInput {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::client_id))]
    pub client_id: String,
    /// May be left out when an app is configured already: the stored secret is kept.
    #[serde(default, deserialize_with = "crate::integrations::secret_input::optional_secret")]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::client_secret))]
    pub client_secret: Option<SecretString>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::custom_settings_input))]
    pub custom_settings: Option<BTreeMap<String, String>>,
}

/// What is stored (encrypted, as one document).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OAuthApp {
    pub(crate) client_id: String,
    #[serde(serialize_with = "expose")]
    pub(crate) client_secret: SecretString,
    pub(crate) custom_settings: BTreeMap<String, String>,
}

fn expose<S: serde::Serializer>(secret: &SecretString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(secret.expose_secret())
}

impl OAuthApp {
    pub(crate) fn client(&self) -> ClientCredentials {
        ClientCredentials { client_id: self.client_id.clone(), client_secret: self.client_secret.clone() }
    }
}

/// What is shown: never the secret.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = OAuthApp))]
#[serde(rename_all = "camelCase")]
pub struct OAuthAppView {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::integrations::openapi::slug))]
    pub provider_slug: String,
    pub client_id: String,
    /// Always `true`: an app has a secret, which is never returned.
    pub client_secret_set: bool,
    pub custom_settings: BTreeMap<String, String>,
    pub updated_at: Timestamp,
}

impl OAuthAppView {
    /// The app's `ETag`: the tag of its sealed document (see `compliance_ports::secret_etag`),
    /// which its `PUT` and `DELETE` check `If-Match` against.
    pub fn etag(&self) -> ETag {
        secret_etag(OAUTH_APP, &self.provider_slug, self.updated_at)
    }
}

impl IntegrationService {
    pub async fn get_oauth_app(&self, caller: &Principal, slug: &str) -> Result<OAuthAppView, AppError> {
        require(caller, Family::Integrations, Action::Read)?;
        self.oauth_provider(slug)?;
        let (app, updated_at) =
            self.load_oauth_app(&caller.organization_id, slug).await?.ok_or(AppError::NotFound("OAuth app"))?;
        Ok(view(slug, app, updated_at))
    }

    /// Configures (or replaces) the app, while `if_match` holds for the one configured (only an
    /// unconditional `PUT` configures a first one).
    pub async fn put_oauth_app(
        &self,
        caller: &Principal,
        slug: &str,
        input: OAuthAppInput,
        if_match: &IfMatch,
    ) -> Result<OAuthAppView, AppError> {
        require(caller, Family::Integrations, Action::Write)?;
        let config = self.oauth_provider(slug)?;
        let org = &caller.organization_id;
        // Keeping the stored secret is read-then-write: a rotation racing this PUT can be lost,
        // unless the PUT sends `If-Match` (checked again in the write's transaction). Without it,
        // the last write wins, as for any unconditional PUT.
        let client_secret = match input.client_secret {
            Some(secret) => secret,
            None => match self.load_oauth_app(org, slug).await? {
                Some((stored, _)) => stored.client_secret,
                None => return Err(AppError::invalid("clientSecret", "is required when no OAuth app is configured")),
            },
        };
        let app = OAuthApp {
            client_id: input.client_id,
            client_secret,
            custom_settings: input.custom_settings.unwrap_or_default(),
        };
        validate(&app, config)?;
        let audit = self.audit.change_by(crate::Provenance::of(caller), oauth_app_action, &OAUTH_APP_ENTRY);
        let updated_at = self.sealed.put_audited(org, (OAUTH_APP, slug), &app, if_match, &audit).await?;
        Ok(view(slug, app, updated_at))
    }

    /// Removes the app, while `if_match` holds for it.
    pub async fn delete_oauth_app(&self, caller: &Principal, slug: &str, if_match: &IfMatch) -> Result<(), AppError> {
        require(caller, Family::Integrations, Action::Write)?;
        self.oauth_provider(slug)?;
        let audit = self.audit.change(caller, "oauthApp.deleted", &OAUTH_APP_ENTRY);
        match self.sealed.delete_audited(&caller.organization_id, (OAUTH_APP, slug), if_match, &audit).await? {
            true => Ok(()),
            false => Err(AppError::NotFound("OAuth app")),
        }
    }

    pub(crate) async fn load_oauth_app(
        &self,
        org: &OrganizationId,
        slug: &str,
    ) -> Result<Option<(OAuthApp, Timestamp)>, AppError> {
        self.sealed.get(org, OAUTH_APP, slug).await
    }
}

fn view(slug: &str, app: OAuthApp, updated_at: Timestamp) -> OAuthAppView {
    OAuthAppView {
        provider_slug: slug.to_owned(),
        client_id: app.client_id,
        client_secret_set: true,
        custom_settings: app.custom_settings,
        updated_at,
    }
}

/// Lengths, no control characters, and exactly the manifest's settings (every required one).
fn validate(app: &OAuthApp, config: &OAuth2Config) -> Result<(), AppError> {
    let mut errors = Vec::new();
    let mut check = |field: String, value: &str, max: usize, required: bool| {
        if value.trim().is_empty() {
            if required {
                errors.push(FieldError::new(field, "is required"));
            }
        } else if value.chars().count() > max {
            errors.push(FieldError::new(field, format!("must be at most {max} characters")));
        } else if value.chars().any(char::is_control) {
            errors.push(FieldError::new(field, "must not contain control characters"));
        }
    };
    check("clientId".into(), &app.client_id, CLIENT_ID_MAX, true);
    check("clientSecret".into(), app.client_secret.expose_secret(), CLIENT_SECRET_MAX, true);
    for setting in &config.custom_settings {
        let value = app.custom_settings.get(&setting.id).map_or("", String::as_str);
        check(format!("customSettings.{}", setting.id), value, SETTING_MAX, setting.required);
    }
    for id in app.custom_settings.keys() {
        if !config.custom_settings.iter().any(|s| &s.id == id) {
            errors.push(FieldError::new(format!("customSettings.{id}"), "is not a setting of this provider"));
        }
    }
    match errors.is_empty() {
        true => Ok(()),
        false => Err(AppError::Validation(ValidationErrors(errors))),
    }
}
