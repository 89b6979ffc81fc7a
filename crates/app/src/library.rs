//! The control library (`library/` in the repository): what it holds, readable by the roles that
//! read frameworks. It holds no organization's data.

use compliance_domain::access::{Action, Family};
use compliance_domain::control::EvidenceSource;
use compliance_domain::library::adoption::checks_of_provider;
use compliance_domain::library::library;
use compliance_domain::oscal::component_definition;
use compliance_ports::{AuditOf, Clock, SuggestedChecks};
use std::sync::Arc;

use crate::access::require;
use crate::{AppError, Principal};

/// The library's use cases.
pub struct LibraryService {
    clock: Arc<dyn Clock>,
    /// The service's public address, for the document's links.
    public_url: String,
}

impl LibraryService {
    pub(crate) fn new(clock: Arc<dyn Clock>, public_url: String) -> Self {
        Self { clock, public_url }
    }

    /// The library as an OSCAL component-definition: each control with the requirements of the
    /// framework templates it implements.
    pub fn component_definition(&self, caller: &Principal) -> Result<serde_json::Value, AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        Ok(component_definition::document(library(), self.clock.now(), &self.public_url))
    }
}

/// What a new connection to `provider` links: the checks of the provider that the library's
/// controls suggest, to the organization's controls made from them, each link with `audit`'s entry.
pub(crate) fn suggested_checks<'a>(provider: &str, audit: &'a AuditOf<'a, EvidenceSource>) -> SuggestedChecks<'a> {
    SuggestedChecks { checks: checks_of_provider(library(), provider), audit }
}
