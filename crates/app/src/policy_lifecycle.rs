//! A policy's life after its content is written: submitting it for approval, approving or
//! rejecting it, its published versions, and who signed them.
//!
//! Who may act is decided here from docs/api.md's matrix and the record: reading policies lets a
//! member take part; submitting takes write access or being the policy's assignee; approving and
//! rejecting take being its approver; signing is each member's own act. An API key additionally
//! needs a scope covering `policies:write` for every one of these changes.

use compliance_domain::access::{Action, Family};
use compliance_domain::policy::{
    Policy, PolicyRejection, PolicySignature, PolicyStatus, PolicySubmission, PolicyVersion, PolicyVersionSummary,
    Signer,
};
use compliance_domain::{MemberId, PolicyId, Timestamp};
use compliance_ports::{POLICY_CHANGED, PolicyWrite, RepoError};

use crate::access::{require, require_scope};
use crate::policies::{ATTEMPTS, later_than, not_found};
use crate::{AppError, PolicyService, Principal};

/// Who signed a version and who still must.
#[derive(Debug, Clone, PartialEq)]
pub struct Signatures {
    /// The version the round is about (the current published one).
    pub version: i32,
    /// Who signed that version, and when.
    pub signed: Vec<Signer>,
    /// Active members who have not signed; empty when the policy need not be signed.
    pub pending: Vec<Signer>,
}

/// A published policy as one member's portal shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyToSign {
    /// The policy, at its published version.
    pub policy: Policy,
    /// When the member signed that version; `None` while they have not.
    pub signed_at: Option<Timestamp>,
}

/// The longest change note and rejection reason.
pub const NOTE_MAX: usize = compliance_domain::policy::NOTE_MAX;

impl PolicyService {
    /// Submits the policy for its approver: by an owner or admin, or by its assignee.
    pub async fn submit_policy(
        &self,
        caller: &Principal,
        id: &PolicyId,
        input: PolicySubmission,
    ) -> Result<Policy, AppError> {
        require_change(caller)?;
        let change_note = input.change_note.map(|note| note_text("changeNote", note)).transpose()?;
        self.transition(caller, id, "policy.submitted", |policy, now| {
            let may_write = require(caller, Family::Policies, Action::Write).is_ok();
            if !may_write && policy.assignee_id.as_ref() != Some(&caller.member_id) {
                return Err(denied(caller, "submit policies assigned to them"));
            }
            let Some(approver) = &policy.approver_id else {
                return Err(AppError::Conflict(
                    "the policy has no approver: set approverId, or publish it directly (status published)".into(),
                ));
            };
            if *approver == caller.member_id {
                return Err(AppError::Conflict("the approver may not submit a policy for their own approval".into()));
            }
            policy.submit(&caller.user_id, change_note.clone(), now).map_err(AppError::Conflict)?;
            Ok(None)
        })
        .await
    }

    /// Approves the pending submission: only its approver, who did not submit it. Publishes the
    /// next version.
    pub async fn approve_policy(&self, caller: &Principal, id: &PolicyId) -> Result<Policy, AppError> {
        require_change(caller)?;
        self.transition(caller, id, "policy.approved", |policy, now| {
            require_approver(caller, policy)?;
            if policy.status != PolicyStatus::PendingApproval {
                return Err(AppError::Conflict(format!("the policy is {}, not pending approval", policy.status)));
            }
            if policy.submitted_by.as_ref() == Some(&caller.user_id) {
                return Err(AppError::Conflict("the submitter may not approve their own submission".into()));
            }
            Ok(Some(policy.publish(&caller.user_id, Some(&caller.user_id), now)))
        })
        .await
    }

    /// Returns the pending submission to draft with the approver's reason.
    pub async fn reject_policy(
        &self,
        caller: &Principal,
        id: &PolicyId,
        input: PolicyRejection,
    ) -> Result<Policy, AppError> {
        require_change(caller)?;
        let Some(reason) = input.reason else {
            return Err(AppError::invalid("reason", "is required"));
        };
        let reason = compliance_domain::validation::text("reason", reason, 1, NOTE_MAX)
            .map_err(|error| AppError::Validation(error.into()))?;
        self.transition(caller, id, "policy.rejected", |policy, now| {
            require_approver(caller, policy)?;
            policy.reject(reason.clone(), now).map_err(AppError::Conflict)?;
            Ok(None)
        })
        .await
    }

    /// Records the caller's (the key's creator's) acknowledgement of the current version; signing
    /// again changes nothing.
    pub async fn sign_policy(&self, caller: &Principal, id: &PolicyId) -> Result<Policy, AppError> {
        require_change(caller)?;
        for _ in 0..ATTEMPTS {
            let before = self.policies.get_policy(&caller.organization_id, id).await.map_err(not_found)?;
            let mut after = before.clone();
            let now = later_than(self.clock.now(), &before);
            if !after.sign(&caller.user_id, now).map_err(AppError::Conflict)? {
                return Ok(before);
            }
            let signature = PolicySignature {
                organization_id: caller.organization_id.clone(),
                policy_id: before.id.clone(),
                version: before.current_version,
                user_id: caller.user_id.clone(),
                signed_at: now,
            };
            let write = PolicyWrite { policy: &after, version: None, signature: Some(&signature) };
            match self.save_write(caller, &before, &write, "policy.signed").await {
                Err(AppError::Conflict(why)) if why == POLICY_CHANGED => continue,
                written => return written.map(|()| after),
            }
        }
        Err(AppError::Conflict(POLICY_CHANGED.into()))
    }

    /// The policy's published versions, newest first.
    pub async fn list_policy_versions(
        &self,
        caller: &Principal,
        id: &PolicyId,
    ) -> Result<Vec<PolicyVersionSummary>, AppError> {
        self.get_policy(caller, id).await?;
        Ok(self.policies.list_policy_versions(&caller.organization_id, id).await?)
    }

    /// One published version of the policy.
    pub async fn get_policy_version(
        &self,
        caller: &Principal,
        id: &PolicyId,
        number: i32,
    ) -> Result<PolicyVersion, AppError> {
        require(caller, Family::Policies, Action::Read)?;
        self.policies
            .get_policy_version(&caller.organization_id, id, number)
            .await
            .map_err(|error| AppError::from_repo(error, "policy version"))
    }

    /// The current version's round: who signed it, and who must and has not. The lists name
    /// members (names, emails), so a caller who may not read people sees only their own entry.
    pub async fn policy_signatures(&self, caller: &Principal, id: &PolicyId) -> Result<Signatures, AppError> {
        let policy = self.get_policy(caller, id).await?;
        if policy.current_version == 0 {
            return Ok(Signatures { version: 0, signed: Vec::new(), pending: Vec::new() });
        }
        let signers = self.policies.policy_signers(&caller.organization_id, id, policy.current_version).await?;
        let mut pending = if policy.is_required_to_sign { signers.unsigned } else { Vec::new() };
        let mut signed = signers.signed;
        if require(caller, Family::People, Action::Read).is_err() {
            signed.retain(|signer| signer.user_id == caller.user_id);
            pending.retain(|signer| signer.user_id == caller.user_id);
        }
        Ok(Signatures { version: policy.current_version, signed, pending })
    }

    /// Each published policy, with whether the member signed its current version. A member may
    /// read their own; reading another's takes reading people.
    pub async fn policies_of_person(
        &self,
        caller: &Principal,
        member: &MemberId,
    ) -> Result<Vec<PolicyToSign>, AppError> {
        require(caller, Family::Policies, Action::Read)?;
        if *member != caller.member_id {
            require(caller, Family::People, Action::Read)?;
        }
        let person = match self.members.get(&caller.organization_id, member).await {
            Err(RepoError::NotFound) => return Err(AppError::NotFound("person")),
            other => other?,
        };
        let policies = self.policies.policies_of_user(&caller.organization_id, &person.user.id).await?;
        Ok(policies.into_iter().map(|(policy, signed_at)| PolicyToSign { policy, signed_at }).collect())
    }

    /// Reads the policy, lets `change` decide and apply the transition (and the version it
    /// publishes), and writes it with its audit entry; again when another request changed the
    /// policy in between.
    async fn transition(
        &self,
        caller: &Principal,
        id: &PolicyId,
        action: &'static str,
        change: impl Fn(&mut Policy, Timestamp) -> Result<Option<PolicyVersion>, AppError>,
    ) -> Result<Policy, AppError> {
        for _ in 0..ATTEMPTS {
            let before = self.policies.get_policy(&caller.organization_id, id).await.map_err(not_found)?;
            let mut after = before.clone();
            let version = change(&mut after, later_than(self.clock.now(), &before))?;
            let write = PolicyWrite { policy: &after, version: version.as_ref(), signature: None };
            match self.save_write(caller, &before, &write, action).await {
                Err(AppError::Conflict(why)) if why == POLICY_CHANGED => continue,
                written => return written.map(|()| after),
            }
        }
        Err(AppError::Conflict(POLICY_CHANGED.into()))
    }
}

/// Taking part in a policy's life: reading policies, and for a key the scope to change them.
fn require_change(caller: &Principal) -> Result<(), AppError> {
    require(caller, Family::Policies, Action::Read)?;
    require_scope(caller, Family::Policies, Action::Write)
}

fn require_approver(caller: &Principal, policy: &Policy) -> Result<(), AppError> {
    if policy.approver_id.as_ref() == Some(&caller.member_id) {
        Ok(())
    } else {
        Err(AppError::Denied("only the policy's approver (approverId) may approve or reject it".into()))
    }
}

fn denied(caller: &Principal, what: &str) -> AppError {
    crate::access::only_own(caller, Action::Write, what)
}

fn note_text(field: &str, text: String) -> Result<String, AppError> {
    compliance_domain::validation::text(field, text, 0, NOTE_MAX).map_err(|error| AppError::Validation(error.into()))
}
