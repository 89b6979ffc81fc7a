//! The background worker that moves policies whose review date has passed to `needs_review`.
//! Every server instance runs one; the store's conditional update makes sure each policy is moved,
//! and its `policy.review_requested` entry written, by exactly one instance.

use std::sync::Arc;
use std::time::Duration;

use compliance_ports::{Clock, PolicyRepository, RepoError};

use crate::Ports;
use crate::audit::{AuditTrail, Provenance};
use crate::policies::POLICY;

/// Organizations looked at per statement.
const ORGANIZATION_BATCH: usize = 100;
/// Policies moved per transaction.
const POLICY_BATCH: usize = 100;
/// The part of the service its entries name as their actor.
pub const ACTOR: &str = "policy-review-worker";
/// The action of its entries (and the webhook event).
pub const ACTION: &str = "policy.review_requested";

/// Tunables of the worker (`POLICY_REVIEW_POLL_MILLIS`, see docs/operations.md).
#[derive(Debug, Clone)]
pub struct PolicyReviewSettings {
    /// How often the worker looks for policies whose review date has passed.
    pub poll_interval: Duration,
}

impl Default for PolicyReviewSettings {
    fn default() -> Self {
        // Review dates are days apart: a minute late is on time.
        Self { poll_interval: Duration::from_secs(60) }
    }
}

/// Moves published policies whose `reviewDate` has passed to `needs_review`, with an audit
/// entry each. Every instance runs one; the store's conditional update makes each move happen once.
pub struct PolicyReviewWorker {
    policies: Arc<dyn PolicyRepository>,
    clock: Arc<dyn Clock>,
    audit: AuditTrail,
    settings: PolicyReviewSettings,
}

impl PolicyReviewWorker {
    pub(crate) fn new(ports: &Ports, settings: PolicyReviewSettings) -> Self {
        Self {
            policies: ports.policies.clone(),
            clock: ports.clock.clone(),
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
            settings,
        }
    }

    /// Works until the task is dropped or aborted: a tick, then the poll interval. A tick cut
    /// short leaves nothing half-done: each batch is one transaction.
    pub async fn run(self) {
        let worker = Arc::new(self);
        loop {
            let tick = tokio::spawn({
                let worker = worker.clone();
                async move { worker.tick().await }
            });
            match tick.await {
                Ok(Err(error)) => tracing::warn!(%error, "could not move policies due for review"),
                Err(error) => tracing::error!(%error, "a policy review worker tick failed; going on"),
                Ok(Ok(_)) => {}
            }
            tokio::time::sleep(worker.settings.poll_interval).await;
        }
    }

    /// One pass: every policy due for review by the worker's clock is moved (by this instance or
    /// another). Answers how many this instance moved.
    pub async fn tick(&self) -> Result<usize, RepoError> {
        let now = self.clock.now();
        let mut moved = 0;
        loop {
            let organizations = self.policies.organizations_with_reviews_due(now, ORGANIZATION_BATCH).await?;
            for org in &organizations {
                let provenance = Provenance::system(ACTOR, org);
                let audit = self.audit.change_by(provenance, |_, _| ACTION, &POLICY);
                loop {
                    let flagged = self.policies.flag_policies_for_review(org, now, POLICY_BATCH, &audit).await?;
                    moved += flagged.len();
                    if flagged.len() < POLICY_BATCH {
                        break;
                    }
                }
            }
            if organizations.len() < ORGANIZATION_BATCH {
                return Ok(moved);
            }
        }
    }
}
