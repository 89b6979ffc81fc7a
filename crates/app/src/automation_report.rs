//! Evidence reaches the task: a completed run posts its verdict and final screenshot as a comment
//! on the automation's task, written by the automation's creator, when the automation asks for it
//! (`postResultToTask`, default true).
//!
//! A failed run (it could not be carried out: page unreachable, model unavailable, timeout) posts
//! nothing: it holds no evidence either way, and an outage would otherwise flood the task's trail.
//! Its error is in the run list.

use std::sync::Arc;

use compliance_domain::automation::{AutomationRun, BrowserAutomation, RunStatus, Verdict, VerdictOutcome};
use compliance_domain::comment::{Attachment, CONTENT_MAX, Comment, CommentEntityType};
use compliance_domain::{AttachmentId, CommentId, UserId};
use compliance_ports::{BlobStore, Clock, CommentRepository};

use crate::Ports;
use crate::audit::{AuditTrail, COMMENT, Provenance};

/// The attachment's media type: run screenshots are PNG.
const SCREENSHOT_TYPE: &str = "image/png";

pub(crate) struct TaskReporter {
    comments: Arc<dyn CommentRepository>,
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    /// Its comments are the system's (`automation-worker`) in the audit trail.
    audit: AuditTrail,
}

impl TaskReporter {
    pub(crate) fn new(ports: &Ports) -> Self {
        Self {
            comments: ports.comments.clone(),
            blobs: ports.blobs.clone(),
            clock: ports.clock.clone(),
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// Called once a run's outcome is stored. Failures are logged, not returned: the run stands.
    pub(crate) async fn report(&self, automation: &BrowserAutomation, run: &AutomationRun) {
        let (RunStatus::Completed, Some(verdict)) = (run.status, &run.verdict) else { return };
        if !automation.post_result_to_task {
            return;
        }
        let Some(author) = &automation.created_by else {
            tracing::info!(automation = %automation.id, "no creator recorded: the run's result is not posted to the task");
            return;
        };
        if let Err(error) = self.post(automation, run, verdict, author).await {
            tracing::warn!(%error, run = %run.id, "could not post an automation run's result on its task");
        }
    }

    async fn post(
        &self,
        automation: &BrowserAutomation,
        run: &AutomationRun,
        verdict: &Verdict,
        author: &UserId,
    ) -> Result<(), String> {
        let now = self.clock.now();
        let comment = Comment {
            id: CommentId::generate(),
            organization_id: automation.organization_id.clone(),
            entity_type: CommentEntityType::Task,
            entity_id: automation.task_id.to_string(),
            author_id: author.clone(),
            content: content(automation, verdict),
            context_url: None,
            created_at: now,
            updated_at: now,
        };
        // The attachment is a copy: the run's screenshot goes with the run (retention, deletion),
        // the comment's with the comment.
        let mut attachments = Vec::new();
        if let Some(key) = &run.screenshot_key {
            let bytes = self.blobs.get(key).await.map_err(|e| format!("reading the screenshot: {e}"))?;
            let attachment = Attachment {
                id: AttachmentId::generate(),
                organization_id: automation.organization_id.clone(),
                comment_id: comment.id.clone(),
                name: format!("{}.png", run.id),
                media_type: SCREENSHOT_TYPE.to_owned(),
                size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
                description: Some(format!("The page at the end of run {}", run.id)),
                created_at: now,
            };
            self.blobs
                .put(&attachment.blob_key(), bytes, SCREENSHOT_TYPE)
                .await
                .map_err(|e| format!("storing the attachment: {e}"))?;
            attachments.push(attachment);
        }
        let provenance = Provenance::system("automation-worker", &automation.organization_id);
        let audit = self.audit.change_by(provenance, |_, _| "comment.created", &COMMENT);
        if let Err(error) = self.comments.insert(&comment, &attachments, &audit).await {
            for attachment in &attachments {
                if let Err(error) = self.blobs.delete(&attachment.blob_key()).await {
                    tracing::warn!(%error, "could not remove the attachment of a comment that was not stored");
                }
            }
            return Err(format!("storing the comment: {error}"));
        }
        Ok(())
    }
}

/// `Automation "NAME" passed: REASON`, cut to what a comment may hold.
fn content(automation: &BrowserAutomation, verdict: &Verdict) -> String {
    let outcome = match verdict.outcome {
        VerdictOutcome::Passed => "passed",
        VerdictOutcome::Failed => "failed",
    };
    let text = format!("Automation \"{}\" {outcome}: {}", automation.name, verdict.reason);
    if text.chars().count() <= CONTENT_MAX {
        return text;
    }
    let mut cut: String = text.chars().take(CONTENT_MAX - 1).collect();
    cut.push('…');
    cut
}
