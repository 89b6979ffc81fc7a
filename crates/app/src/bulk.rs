//! Bulk operations: up to [`MAX_OPERATIONS`] creates, updates and deletes of one kind of record in
//! one request (`POST /v1/<resource>/bulk`). Each resource's service has its `bulk_<resource>`
//! method (`RiskService::bulk_risks`); this module holds what they share.
//!
//! Atomic (the default): every operation is validated first (the domain's rules, the members it
//! names), then the store applies them all in ONE transaction, each with its audit entry, through
//! the resource's `apply_<resource>_bulk`. Any failure writes nothing and answers
//! [`AppError::BulkFailed`], which lists every failing operation by index. Not atomic: each
//! operation goes through the single write's use case, one after the other, and answers its own
//! result.

use std::collections::HashMap;

use compliance_domain::{MemberId, OrganizationId};
use compliance_ports::{BulkError, MemberRepository, RepoError};

use crate::AppError;
use crate::assignees::NOT_ACTIVE;

/// The most operations one bulk request may hold.
pub const MAX_OPERATIONS: usize = 500;

/// One operation of a bulk request, as the delivery layer read it.
#[derive(Debug)]
pub enum BulkOperation<N, C, I> {
    /// Create a record from this input (the body `POST /v1/<resource>` takes).
    Create(N),
    /// Change the record with this id (the body `PATCH /v1/<resource>/{id}` takes).
    Update(I, C),
    /// Delete the record with this id.
    Delete(I),
    /// An operation the delivery layer could not read (a malformed id, a body of the wrong
    /// shape): its error, answered at its index like any other failure.
    Unreadable(AppError),
}

/// 1 to [`MAX_OPERATIONS`] operations; else a 400 naming `operations`.
pub(crate) fn check_count(count: usize) -> Result<(), AppError> {
    match count {
        1..=MAX_OPERATIONS => Ok(()),
        _ => Err(AppError::invalid("operations", format!("must hold 1 to {MAX_OPERATIONS} operations, not {count}"))),
    }
}

/// The error of a bulk write the store refused: its failed operations, each named as the single
/// write would name it (`what`: "risk not found").
pub(crate) fn store_failure(error: BulkError, what: &'static str) -> AppError {
    match error {
        BulkError::Operations(failed) => AppError::BulkFailed(
            failed.into_iter().map(|(index, error)| (index, AppError::from_repo(error, what))).collect(),
        ),
        BulkError::Store(error) => error.into(),
    }
}

/// An audit entry's action from the record before and after the change, for a bulk write's
/// entries: `[created, updated, deleted]`.
pub(crate) fn action_of<T>(
    [created, updated, deleted]: [&'static str; 3],
) -> impl Fn(Option<&T>, Option<&T>) -> &'static str + Send + Sync {
    move |before, after| match (before, after) {
        (None, _) => created,
        (Some(_), Some(_)) => updated,
        (Some(_), None) => deleted,
    }
}

/// The check that a named member is active, asked once per member however many operations name
/// them (500 operations naming one assignee read it once).
pub(crate) struct ActiveMembers<'a> {
    members: &'a dyn MemberRepository,
    org: &'a OrganizationId,
    known: HashMap<MemberId, bool>,
}

impl<'a> ActiveMembers<'a> {
    pub(crate) fn new(members: &'a dyn MemberRepository, org: &'a OrganizationId) -> Self {
        Self { members, org, known: HashMap::new() }
    }

    /// Every `(field, member)` must name an active member of the organization.
    pub(crate) async fn require_all(
        &mut self,
        named: impl IntoIterator<Item = (&'static str, &MemberId)>,
    ) -> Result<(), AppError> {
        for named in named {
            self.require(Some(named)).await?;
        }
        Ok(())
    }

    /// The `(field, member)`, if any, must name an active member of the organization (the rule
    /// of `assignees::require_active_members`).
    pub(crate) async fn require(&mut self, named: Option<(&'static str, &MemberId)>) -> Result<(), AppError> {
        let Some((field, member)) = named else { return Ok(()) };
        let active = match self.known.get(member) {
            Some(active) => *active,
            None => {
                let active = match self.members.get(self.org, member).await {
                    Ok(person) => person.member.is_active,
                    Err(RepoError::NotFound) => false,
                    Err(other) => return Err(other.into()),
                };
                self.known.insert(member.clone(), active);
                active
            }
        };
        match active {
            true => Ok(()),
            false => Err(AppError::invalid(field, NOT_ACTIVE)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulk_request_holds_1_to_500_operations() {
        assert!(check_count(1).is_ok() && check_count(MAX_OPERATIONS).is_ok());
        for count in [0, MAX_OPERATIONS + 1] {
            let Err(AppError::Validation(errors)) = check_count(count) else { panic!("{count} accepted") };
            assert_eq!(errors.0[0].field, "operations");
        }
    }

    #[test]
    fn the_action_follows_the_records_before_and_after() {
        let action = action_of::<u8>(["risk.created", "risk.updated", "risk.deleted"]);
        assert_eq!(action(None, Some(&1)), "risk.created");
        assert_eq!(action(Some(&1), Some(&2)), "risk.updated");
        assert_eq!(action(Some(&1), None), "risk.deleted");
    }
}
