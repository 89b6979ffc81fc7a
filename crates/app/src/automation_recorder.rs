//! The record of what a run carried out, shared by the step and agent executors: each step with
//! its outcome and duration, and a screenshot after every step that changed the page.

use std::sync::Arc;
use std::time::Instant;

use compliance_domain::automation::{AutomationRun, MAX_RUN_STEPS, RunStep, StepOutcome};
use compliance_ports::{BlobStore, BrowserPage};

/// One step as an executor reports it.
#[derive(Debug, Clone)]
pub(crate) struct StepRecord {
    /// The step's keyword or the agent's tool name.
    pub action: String,
    /// What it acted on; never a typed value.
    pub target: Option<String>,
    pub outcome: StepOutcome,
    /// What happened; never a secret.
    pub detail: String,
    /// When the step began (for its duration).
    pub started: Instant,
    /// Whether to keep a screenshot after it.
    pub changed_page: bool,
}

pub(crate) struct RunRecorder {
    blobs: Arc<dyn BlobStore>,
    /// The run the steps belong to (for the blob keys of their screenshots).
    run: AutomationRun,
    steps: Vec<RunStep>,
}

impl RunRecorder {
    pub(crate) fn new(blobs: Arc<dyn BlobStore>, run: &AutomationRun) -> Self {
        Self { blobs, run: run.clone(), steps: Vec::new() }
    }

    /// Whether the run has recorded as many steps as it may ([`MAX_RUN_STEPS`]): an executor
    /// stops then.
    pub(crate) fn is_full(&self) -> bool {
        self.steps.len() >= MAX_RUN_STEPS
    }

    /// Appends a step; with `changed_page`, takes a screenshot and stores it first. A screenshot
    /// that cannot be taken or stored is logged and left out: the step itself stands.
    pub(crate) async fn record(&mut self, page: &mut dyn BrowserPage, step: StepRecord) -> &RunStep {
        let index = u32::try_from(self.steps.len()).unwrap_or(u32::MAX);
        let duration_ms = i64::try_from(step.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let screenshot_key = match step.changed_page {
            true => self.store_screenshot(page, self.run.step_screenshot_blob_key(index)).await,
            false => None,
        };
        self.steps.push(RunStep {
            index,
            action: step.action,
            target: step.target,
            outcome: step.outcome,
            detail: step.detail,
            duration_ms,
            screenshot_key,
        });
        &self.steps[self.steps.len() - 1]
    }

    /// The run's final screenshot (its `screenshotUrl`), stored under the run's own key.
    pub(crate) async fn final_screenshot(&self, page: &mut dyn BrowserPage) -> Option<String> {
        self.store_screenshot(page, self.run.screenshot_blob_key()).await
    }

    pub(crate) fn into_steps(self) -> Vec<RunStep> {
        self.steps
    }

    async fn store_screenshot(&self, page: &mut dyn BrowserPage, key: String) -> Option<String> {
        let png = match page.screenshot().await {
            Ok(png) => png,
            Err(error) => {
                tracing::warn!(%error, run = %self.run.id, "could not take a step's screenshot");
                return None;
            }
        };
        match self.blobs.put(&key, png, "image/png").await {
            Ok(()) => Some(key),
            Err(error) => {
                tracing::warn!(%error, run = %self.run.id, "could not store a screenshot");
                None
            }
        }
    }
}
