//! The secrets an automation logs in with: write-only values kept in the vault, sealed for the
//! organization and the automation together (the vault owner is `{automation id}/{NAME}`, bound
//! into the ciphertext), so a value sealed for one automation never opens for another. A run reads
//! them with [`AutomationSecrets::resolve`]; no answer, log or error ever carries a value.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::automation::{BrowserAutomation, origin_of};
use compliance_domain::automation_secret::{PER_AUTOMATION_MAX, SecretInput, SecretName};
use compliance_domain::etag::{ETag, IfMatch};
use compliance_domain::{AutomationId, OrganizationId, Timestamp};
use compliance_ports::{
    AUTOMATION_SECRET_OWNER_KIND, AutomationRepository, BrowserPage, CONNECTION_CREDENTIALS_OWNER_KIND, Clock,
    PageError, SecretCipher, SecretOwner, SecretRepository, StoredSecret,
};
use secrecy::{ExposeSecret, SecretString};

use crate::access::require;
use crate::audit::{AUTOMATION_SECRET, AuditTrail};
use crate::{AppError, Ports, Principal};

/// A stored secret as callers see it: its name and when it was set, never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretView {
    /// The name steps refer to it by (`{{secret:NAME}}`).
    pub name: SecretName,
    /// When the value was last set.
    pub updated_at: Timestamp,
    /// The secret's `ETag` (the tag of its vault row), which `PUT` and `DELETE` check `If-Match`
    /// against.
    pub etag: ETag,
}

/// What a `PUT` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretWritten {
    /// The secret as stored.
    pub secret: SecretView,
    /// `false` when it replaced a value set before.
    pub created: bool,
}

/// An automation's login secrets: sealed in the vault, readable only by its runs.
pub struct AutomationSecrets {
    automations: Arc<dyn AutomationRepository>,
    secrets: Arc<dyn SecretRepository>,
    cipher: Arc<dyn SecretCipher>,
    clock: Arc<dyn Clock>,
    audit: AuditTrail,
}

impl AutomationSecrets {
    pub(crate) fn new(ports: &Ports) -> Self {
        Self {
            automations: ports.automations.clone(),
            secrets: ports.secrets.clone(),
            cipher: ports.cipher.clone(),
            clock: ports.clock.clone(),
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// Sets (or replaces) the automation's secret `name`, while `if_match` holds for the value
    /// set before (only an unconditional `PUT` sets a first one). A name outside the grammar is a
    /// 400 naming `name`; more than [`PER_AUTOMATION_MAX`] secrets a 400 as well.
    pub async fn put(
        &self,
        caller: &Principal,
        automation: &AutomationId,
        name: &str,
        input: SecretInput,
        if_match: &IfMatch,
    ) -> Result<SecretWritten, AppError> {
        require(caller, Family::Automations, Action::Write)?;
        let org = &caller.organization_id;
        let name = SecretName::parse(name)?;
        let value = input.value()?;
        self.automation(org, automation).await?;
        let owner_id = SecretOwner::automation_secret(automation.as_str(), name.as_str());
        let existing = self.secrets.children(org, AUTOMATION_SECRET_OWNER_KIND, automation.as_str()).await?;
        let created = !existing.iter().any(|s| s.owner_id == owner_id);
        if created && existing.len() >= PER_AUTOMATION_MAX {
            return Err(AppError::invalid(
                "name",
                format!("the automation already has {PER_AUTOMATION_MAX} secrets, the most it may keep"),
            ));
        }
        let owner = SecretOwner { organization_id: org, owner_kind: AUTOMATION_SECRET_OWNER_KIND, owner_id: &owner_id };
        let ciphertext = self.cipher.seal(&value, owner).map_err(|e| AppError::Internal(e.to_string()))?;
        let stored = StoredSecret {
            organization_id: org.clone(),
            owner_kind: AUTOMATION_SECRET_OWNER_KIND.to_owned(),
            owner_id,
            key_id: self.cipher.current_key_id(),
            ciphertext,
            updated_at: self.clock.now(),
        };
        let audit = self.audit.change(caller, "automation.secret_set", &AUTOMATION_SECRET);
        self.secrets.put_audited(&stored, if_match, &audit).await?;
        let secret = SecretView { name, updated_at: stored.updated_at, etag: stored.etag() };
        Ok(SecretWritten { secret, created })
    }

    /// The names of the automation's secrets and when each was set, by name.
    pub async fn list(&self, caller: &Principal, automation: &AutomationId) -> Result<Vec<SecretView>, AppError> {
        require(caller, Family::Automations, Action::Read)?;
        let org = &caller.organization_id;
        self.automation(org, automation).await?;
        let stored = self.secrets.children(org, AUTOMATION_SECRET_OWNER_KIND, automation.as_str()).await?;
        Ok(stored.iter().filter_map(|secret| view(automation, secret)).collect())
    }

    /// Removes the secret, while `if_match` holds for it; 404 when the automation has none of
    /// that name.
    pub async fn delete(
        &self,
        caller: &Principal,
        automation: &AutomationId,
        name: &str,
        if_match: &IfMatch,
    ) -> Result<SecretName, AppError> {
        require(caller, Family::Automations, Action::Write)?;
        let org = &caller.organization_id;
        self.automation(org, automation).await?;
        let name = SecretName::parse(name).map_err(|_| AppError::NotFound("secret"))?;
        let owner_id = SecretOwner::automation_secret(automation.as_str(), name.as_str());
        let audit = self.audit.change(caller, "automation.secret_deleted", &AUTOMATION_SECRET);
        match self.secrets.delete_audited(org, AUTOMATION_SECRET_OWNER_KIND, &owner_id, if_match, &audit).await? {
            true => Ok(name),
            false => Err(AppError::NotFound("secret")),
        }
    }

    /// The value of secret `name` for typing into `page`, which must be on the origin of the
    /// automation's `targetUrl`: a page a run reaches (a link, a redirect, a step, the model's
    /// choice) may be another site's, which must never receive the automation's or its
    /// connection's credentials. The origin is checked before the value is opened.
    pub(crate) async fn for_page(
        &self,
        page: &mut dyn BrowserPage,
        automation: &BrowserAutomation,
        name: &str,
    ) -> Result<SecretString, NotTyped> {
        let here = origin_of(&page.current_url().await.map_err(NotTyped::Page)?);
        let target = origin_of(&automation.target_url);
        if here.is_none() || here != target {
            let target = target.unwrap_or_default();
            let here = here.map_or_else(|| "this page".to_owned(), |origin| format!("the page's origin {origin}"));
            return Err(NotTyped::Refused(format!(
                "the secret {name} may be typed only on the origin of targetUrl ({target}), not on {here}"
            )));
        }
        self.resolve(automation, name).await.map_err(NotTyped::Refused)
    }

    /// The value a run types for `type secret "NAME"` (the agent's `type_secret`): the
    /// automation's own secret of that name, else the field of that name of the automation's
    /// connection's credentials (the automation's own wins a clash). The error is fit for a
    /// step's detail and never holds a value.
    async fn resolve(&self, automation: &BrowserAutomation, name: &str) -> Result<SecretString, String> {
        match self.lookup(automation, name).await {
            Ok(Some(value)) => Ok(value),
            Ok(None) => Err(format!("no secret named {name} is stored for this automation")),
            Err(error) => {
                tracing::warn!(%error, automation = %automation.id, secret = name, "could not read an automation secret");
                Err(format!("the secret {name} could not be read"))
            }
        }
    }

    /// The names a run may type (the automation's own and its connection's fields), sorted, for
    /// the agent's prompt. Names are not secret; a vault that cannot be read gives none.
    pub(crate) async fn names(&self, automation: &BrowserAutomation) -> Vec<String> {
        match self.all_names(automation).await {
            Ok(names) => names,
            Err(error) => {
                tracing::warn!(%error, automation = %automation.id, "could not list an automation's secrets");
                Vec::new()
            }
        }
    }

    async fn all_names(&self, automation: &BrowserAutomation) -> Result<Vec<String>, AppError> {
        let org = &automation.organization_id;
        let own = self.secrets.children(org, AUTOMATION_SECRET_OWNER_KIND, automation.id.as_str()).await?;
        let mut names: Vec<String> =
            own.iter().filter_map(|secret| view(&automation.id, secret)).map(|v| v.name.as_str().to_owned()).collect();
        if let Some(connection) = &automation.connection_id
            && let Some(fields) = self.connection_fields(org, connection.as_str()).await?
        {
            names.extend(fields.keys().filter(|field| SecretName::parse(field).is_ok()).cloned());
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    async fn lookup(&self, automation: &BrowserAutomation, name: &str) -> Result<Option<SecretString>, AppError> {
        let Ok(name) = SecretName::parse(name) else { return Ok(None) };
        let org = &automation.organization_id;
        let owner_id = SecretOwner::automation_secret(automation.id.as_str(), name.as_str());
        if let Some(stored) = self.secrets.get(org, AUTOMATION_SECRET_OWNER_KIND, &owner_id).await? {
            let owner =
                SecretOwner { organization_id: org, owner_kind: AUTOMATION_SECRET_OWNER_KIND, owner_id: &owner_id };
            return self
                .cipher
                .open(&stored.ciphertext, owner)
                .map(Some)
                .map_err(|e| AppError::Internal(e.to_string()));
        }
        match &automation.connection_id {
            Some(connection) => self.connection_field(org, connection.as_str(), name.as_str()).await,
            None => Ok(None),
        }
    }

    /// One credential field of a connection: its vault document is a JSON object of field name
    /// to value (as the integration use cases seal it). A disconnected connection has none.
    async fn connection_field(
        &self,
        org: &OrganizationId,
        connection: &str,
        field: &str,
    ) -> Result<Option<SecretString>, AppError> {
        let Some(mut fields) = self.connection_fields(org, connection).await? else { return Ok(None) };
        Ok(match fields.remove(field) {
            Some(serde_json::Value::String(value)) => Some(SecretString::from(value)),
            _ => None,
        })
    }

    async fn connection_fields(
        &self,
        org: &OrganizationId,
        connection: &str,
    ) -> Result<Option<serde_json::Map<String, serde_json::Value>>, AppError> {
        let Some(stored) = self.secrets.get(org, CONNECTION_CREDENTIALS_OWNER_KIND, connection).await? else {
            return Ok(None);
        };
        let owner =
            SecretOwner { organization_id: org, owner_kind: CONNECTION_CREDENTIALS_OWNER_KIND, owner_id: connection };
        let document = self.cipher.open(&stored.ciphertext, owner).map_err(|e| AppError::Internal(e.to_string()))?;
        serde_json::from_str(document.expose_secret())
            .map(Some)
            .map_err(|_| AppError::Internal("a connection's credentials are not a JSON object".into()))
    }

    async fn automation(&self, org: &OrganizationId, id: &AutomationId) -> Result<BrowserAutomation, AppError> {
        self.automations.get(org, id).await.map_err(|e| AppError::from_repo(e, "automation"))
    }
}

/// Why a secret was not handed out for typing.
#[derive(Debug)]
pub(crate) enum NotTyped {
    /// No such secret, or the page is not on the target's origin: a message fit for a step.
    Refused(String),
    /// The page could not tell where it is.
    Page(PageError),
}

/// The name part of a stored secret's owner id; `None` for a row that is not well formed.
fn view(automation: &AutomationId, secret: &StoredSecret) -> Option<SecretView> {
    let name = secret.owner_id.strip_prefix(automation.as_str())?.strip_prefix('/')?;
    Some(SecretView { name: SecretName::parse(name).ok()?, updated_at: secret.updated_at, etag: secret.etag() })
}

/// The secrets a run has typed so far, to mask their values out of every text the run keeps or
/// shows (step details, errors, what a model reads): a page may echo what was typed into it.
#[derive(Default)]
pub(crate) struct TypedSecrets(Vec<(String, SecretString)>);

/// Secret values shorter than this are not masked (masking every `a` would garble the text); the
/// value itself is still never written anywhere.
const MASK_MIN_CHARS: usize = 3;

impl TypedSecrets {
    pub(crate) fn remember(&mut self, name: &str, value: SecretString) {
        if !self.0.iter().any(|(typed, _)| typed == name) {
            self.0.push((name.to_owned(), value));
        }
    }

    /// `text` with every secret typed so far replaced by `[secret NAME]`.
    pub(crate) fn mask(&self, text: &str) -> String {
        let mut masked = text.to_owned();
        for (name, value) in &self.0 {
            let value = value.expose_secret();
            if value.chars().count() >= MASK_MIN_CHARS {
                masked = masked.replace(value, &format!("[secret {name}]"));
            }
        }
        masked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_values_are_masked_by_name_and_short_ones_left() {
        let mut typed = TypedSecrets::default();
        typed.remember("PASSWORD", SecretString::from("hunter22"));
        typed.remember("PIN", SecretString::from("42"));
        typed.remember("PASSWORD", SecretString::from("other"));
        let masked = typed.mask("login failed for hunter22 (pin 42, not other)");
        assert_eq!(masked, "login failed for [secret PASSWORD] (pin 42, not other)");
    }
}
