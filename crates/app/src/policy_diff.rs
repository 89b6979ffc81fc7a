//! What changed between two versions of a policy, or between a version and the current draft:
//! `GET /v1/policies/{id}/versions/{from}/diff/{to}` (the blocks and their pairing are
//! `compliance_domain::policy_diff`'s). Reading it takes what reading the versions takes.

use std::time::{Duration, Instant};

use compliance_domain::PolicyId;
use compliance_domain::policy::RichText;
use compliance_domain::policy_diff::{BlockChange, diff};

use crate::{AppError, PolicyService, Principal};

/// How long one diff may look for the smallest difference before it settles for a coarser one:
/// content is up to 1 MiB on each side, and a diff of two such documents can otherwise take long.
const DIFF_BUDGET: Duration = Duration::from_secs(1);

/// What a diff compares a version with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffTarget {
    /// A published version, by its number.
    Version(i32),
    /// The policy's content as it is now: what its next publish would make a version.
    Draft,
}

/// The changes from version `from` to `to`, in reading order.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyDiff {
    /// The earlier version's number.
    pub from: i32,
    /// The later side.
    pub to: DiffTarget,
    /// The differences in reading order; empty when both sides read the same.
    pub changes: Vec<BlockChange>,
}

impl PolicyService {
    /// Both sides must exist (404 otherwise); a version compared with itself has no changes.
    pub async fn diff_policy_versions(
        &self,
        caller: &Principal,
        id: &PolicyId,
        from: i32,
        to: DiffTarget,
    ) -> Result<PolicyDiff, AppError> {
        let old = self.get_policy_version(caller, id, from).await?.content;
        let new = match to {
            DiffTarget::Version(number) => self.get_policy_version(caller, id, number).await?.content,
            DiffTarget::Draft => self.get_policy(caller, id).await?.content,
        };
        let changes = if to == DiffTarget::Version(from) { Vec::new() } else { compare(old, new).await? };
        Ok(PolicyDiff { from, to, changes })
    }
}

/// Diffs on a blocking thread: a large diff must not hold up the requests served beside it.
async fn compare(old: RichText, new: RichText) -> Result<Vec<BlockChange>, AppError> {
    let work = tokio::task::spawn_blocking(move || diff(&old, &new, Some(Instant::now() + DIFF_BUDGET)));
    match work.await {
        Ok(Ok(changes)) => Ok(changes),
        Ok(Err(error)) => Err(AppError::Internal(format!("a stored policy version is not readable JSON: {error}"))),
        Err(error) => Err(AppError::Internal(format!("the policy diff failed: {error}"))),
    }
}
