//! The agent executor: carries out a free-text instruction with an OpenAI-compatible model that
//! drives the page through tools, bounded in steps, tokens and time.

use std::time::Instant;

use compliance_domain::automation::{BrowserAutomation, Verdict};
use compliance_ports::BrowserPage;

use crate::automation_recorder::RunRecorder;
use crate::automation_secrets::AutomationSecrets;
use crate::{AutomationSettings, Ports};

pub(crate) struct AgentExecutor {}

/// What one agent run works with.
pub(crate) struct AgentRun<'a> {
    pub page: &'a mut dyn BrowserPage,
    pub automation: &'a BrowserAutomation,
    pub instruction: &'a str,
    pub recorder: &'a mut RunRecorder,
    pub secrets: &'a AutomationSecrets,
    /// The run's deadline: the agent stops before it.
    pub deadline: Instant,
}

impl AgentExecutor {
    pub(crate) fn new(_ports: &Ports, _settings: &AutomationSettings) -> Self {
        Self {}
    }

    /// `Ok(verdict)` when the model finished; `Err(message)` when the run could not be carried
    /// out (no model configured, the model failed, the budget ran out).
    pub(crate) async fn run(&self, _run: AgentRun<'_>) -> Result<Verdict, String> {
        Err("free-text instructions need AUTOMATION_LLM_URL".to_owned())
    }
}
