//! The secrets a run types (`type secret "NAME"`, the agent's `type_secret`): values the
//! organization stored for the automation, or the credential fields of its connection.

use compliance_domain::automation::BrowserAutomation;
use secrecy::SecretString;

use crate::Ports;

pub(crate) struct AutomationSecrets {}

impl AutomationSecrets {
    pub(crate) fn new(_ports: &Ports) -> Self {
        Self {}
    }

    /// The value of the automation's secret `name`; the error is fit for a step's detail and never
    /// holds a value.
    pub(crate) async fn resolve(&self, _automation: &BrowserAutomation, name: &str) -> Result<SecretString, String> {
        Err(format!("no secret named {name} is stored for this automation"))
    }
}
