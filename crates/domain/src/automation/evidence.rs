//! What a run found: the steps it carried out and its verdict.

use serde::Serialize;

crate::string_enum! {
    /// Whether the evidence was found.
    VerdictOutcome { Passed = "passed", Failed = "failed" }
}

crate::string_enum! {
    /// Whether one step did what it said.
    StepOutcome { Ok = "ok", Failed = "failed" }
}

/// The judgement of a completed run: every `expect` held (or the agent finished `passed`), or the
/// reason it did not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Verdict {
    /// Passed or failed.
    pub outcome: VerdictOutcome,
    /// Why, in a sentence fit to show.
    pub reason: String,
}

impl Verdict {
    /// A verdict that the check passed, for `reason`.
    pub fn passed(reason: impl Into<String>) -> Self {
        Self { outcome: VerdictOutcome::Passed, reason: reason.into() }
    }

    /// A verdict that the check failed, for `reason`.
    pub fn failed(reason: impl Into<String>) -> Self {
        Self { outcome: VerdictOutcome::Failed, reason: reason.into() }
    }
}

/// One step a run carried out (a line of a step list, or one tool call of the agent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStep {
    /// 0-based, in the order carried out.
    pub index: u32,
    /// The step's keyword (`go to`, `click`, `type secret`, …) or the agent's tool name.
    pub action: String,
    /// What it acted on: a URL, a text, a selector, a field. Never a typed value.
    pub target: Option<String>,
    /// How the step went.
    pub outcome: StepOutcome,
    /// What happened, fit to show the user; never a secret.
    pub detail: String,
    /// How long it took, in milliseconds.
    pub duration_ms: i64,
    /// Where the screenshot taken after the step is in the blob store, when it changed the page.
    pub screenshot_key: Option<String>,
}

/// The most steps a run records; the agent and step lists are bounded below it.
pub const MAX_RUN_STEPS: usize = 120;
