//! Bulk operations: up to [`MAX_OPERATIONS`] creates, updates and deletes of one kind of record in
//! one request (`POST /v1/<resource>/bulk`). Each resource's service has its `bulk_<resource>`
//! method (`RiskService::bulk_risks`), which hands its own steps to the one `apply` here.
//!
//! Atomic (the default): every operation is validated first (the domain's rules, the members it
//! names), then the store applies them all in ONE transaction, each with its audit entry, through
//! the resource's `apply_<resource>_bulk`. Any failure writes nothing and answers
//! [`AppError::BulkFailed`], which lists every failing operation by index. Not atomic: each
//! operation goes through the single write's use case, one after the other, and answers its own
//! result.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use compliance_domain::{MemberId, OrganizationId};
use compliance_ports::{BulkApplied, BulkError, BulkWrite, MemberRepository, RepoError};

use crate::assignees::NOT_ACTIVE;
use crate::{AppError, CommentService};

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

/// A step's work, borrowed from the use case that runs the bulk request.
pub(crate) type Work<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// One step of a resource's bulk request: from one operation's input to its result.
pub(crate) type Step<'a, In, Out> = Box<dyn Fn(In) -> Work<'a, Result<Out, AppError>> + Send + Sync + 'a>;

/// The store's write of a bulk request's checked operations, in one transaction.
pub(crate) type StoreWrite<'a, T, I, P> =
    Box<dyn FnOnce(Vec<BulkWrite<T, I, P>>) -> Work<'a, Result<BulkApplied<T>, BulkError>> + Send + 'a>;

/// What a resource hands [`apply`]: record `T`, created from `N`, changed by `C` (checked into
/// patch `P`), named by id `I`.
pub(crate) struct Steps<'a, T, N, C, I, P> {
    /// What the record is called in errors ("risk" for "risk not found").
    pub what: &'static str,
    /// The single writes, for a request that is not atomic (each with its own result, `If-Match`
    /// absent): `create_risk`, `update_risk`, `delete_risk`.
    pub create: Step<'a, N, T>,
    pub update: Step<'a, (I, C), T>,
    pub delete: Step<'a, I, T>,
    /// For an atomic request, the single create's and update's checks without their write: the
    /// domain's rules and the members they name (through the shared [`ActiveMembers`]).
    pub check_create: Step<'a, N, T>,
    pub check_update: Step<'a, C, P>,
    /// Reads a record, to name the missing ones of a request that failed validation.
    pub find: Step<'a, I, T>,
    /// The store's one-transaction write of every checked operation.
    pub write: StoreWrite<'a, T, I, P>,
}

/// Applies a bulk request's `operations` with a resource's `steps` (see the module's text):
/// answers each operation's record, in order (for a delete, the record as it was), and removes
/// the bytes of the attachments the deleted records had.
pub(crate) async fn apply<T, N, C, I: Clone, P>(
    operations: Vec<BulkOperation<N, C, I>>,
    atomic: bool,
    comments: &CommentService,
    steps: Steps<'_, T, N, C, I, P>,
) -> Result<Vec<Result<T, AppError>>, AppError> {
    check_count(operations.len())?;
    if !atomic {
        let mut results = Vec::with_capacity(operations.len());
        for operation in operations {
            results.push(match operation {
                BulkOperation::Create(input) => (steps.create)(input).await,
                BulkOperation::Update(id, changes) => (steps.update)((id, changes)).await,
                BulkOperation::Delete(id) => (steps.delete)(id).await,
                BulkOperation::Unreadable(error) => Err(error),
            });
        }
        return Ok(results);
    }
    let (mut writes, mut failed) = (Vec::with_capacity(operations.len()), Vec::new());
    for (index, operation) in operations.into_iter().enumerate() {
        let write = match operation {
            BulkOperation::Create(input) => (steps.check_create)(input).await.map(BulkWrite::Create),
            BulkOperation::Update(id, changes) => (steps.check_update)(changes).await.map(|p| BulkWrite::Update(id, p)),
            BulkOperation::Delete(id) => Ok(BulkWrite::Delete(id)),
            BulkOperation::Unreadable(error) => Err(error),
        };
        match write {
            Ok(write) => writes.push((index, write)),
            Err(error) => failed.push((index, error)),
        }
    }
    if !failed.is_empty() {
        // Nothing is written, but the answer also names the valid operations' missing records.
        for (index, write) in &writes {
            if let BulkWrite::Update(id, _) | BulkWrite::Delete(id) = write
                && let Err(AppError::NotFound(_)) = (steps.find)(id.clone()).await
            {
                failed.push((*index, AppError::NotFound(steps.what)));
            }
        }
        failed.sort_by_key(|(index, _)| *index);
        return Err(AppError::BulkFailed(failed));
    }
    let writes = writes.into_iter().map(|(_, write)| write).collect();
    let applied = (steps.write)(writes).await.map_err(|error| store_failure(error, steps.what))?;
    comments.remove_attachments(&applied.attachments).await;
    Ok(applied.records.into_iter().map(Ok).collect())
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
fn store_failure(error: BulkError, what: &'static str) -> AppError {
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
/// them (500 operations naming one assignee read it once). Shared by a request's create and
/// update checks, hence the lock (never held across a read).
pub(crate) struct ActiveMembers<'a> {
    members: &'a dyn MemberRepository,
    org: &'a OrganizationId,
    known: Mutex<HashMap<MemberId, bool>>,
}

impl<'a> ActiveMembers<'a> {
    pub(crate) fn new(members: &'a dyn MemberRepository, org: &'a OrganizationId) -> Self {
        Self { members, org, known: Mutex::new(HashMap::new()) }
    }

    /// Every `(field, member)` must name an active member of the organization (the rule of
    /// `assignees::require_active_members`); else a 400 naming the first that does not.
    pub(crate) async fn require_all(
        &self,
        named: impl IntoIterator<Item = (&'static str, &MemberId)>,
    ) -> Result<(), AppError> {
        for (field, member) in named {
            let known = self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(member).copied();
            let active = match known {
                Some(active) => active,
                None => {
                    let active = match self.members.get(self.org, member).await {
                        Ok(person) => person.member.is_active,
                        Err(RepoError::NotFound) => false,
                        Err(other) => return Err(other.into()),
                    };
                    self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(member.clone(), active);
                    active
                }
            };
            if !active {
                return Err(AppError::invalid(field, NOT_ACTIVE));
            }
        }
        Ok(())
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
