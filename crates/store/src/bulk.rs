//! What the resources' `apply_<resource>_bulk` methods share: locking each record an update
//! reads, inserting its creates in as few statements as the backend allows, queueing the audit
//! entries together, collecting the failed operations inside the transaction, rolling it back
//! when there is one, and the answer once it committed.
//!
//! Why creates are inserted together and audit entries queued together: on PostgreSQL each
//! statement is a round trip, and each one of a transaction updating the same rows again (the
//! list counters of the statement triggers) leaves one more row version to step over; one
//! multi-row `INSERT` and one `append_many` make 500 creates a handful of statements.

use std::future::Future;
use std::pin::Pin;

use compliance_domain::comment::Attachment;
use compliance_ports::{AuditOf, BulkApplied, BulkError, BulkWrite, RepoError};
use diesel::result::QueryResult;

use crate::audit::AuditQueue;
use crate::error::TxError;
use crate::locks::lock_records;
use crate::rows::AttachmentRow;

/// The failed operations of one bulk transaction, by their index in the request.
#[derive(Default)]
pub(crate) struct Failures(Vec<(usize, RepoError)>);

impl Failures {
    /// Notes that operation `index` failed; `false` when the transaction cannot go on. A missing
    /// record fails no statement, so the next operations are still tried (and reported too);
    /// any other error may have aborted the transaction (PostgreSQL refuses every later
    /// statement), so the loop stops there.
    pub(crate) fn record(&mut self, index: usize, error: TxError) -> bool {
        let error = RepoError::from(error);
        let go_on = matches!(error, RepoError::NotFound);
        self.0.push((index, error));
        go_on
    }

    /// Whether no operation failed so far.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Notes the outcome of the creates' insert: a failure is reported at the first create's
    /// index (the database refuses a multi-row insert as a whole). None is expected: every id
    /// is new and the members named were checked.
    pub(crate) fn record_insert<T, I, P>(&mut self, writes: &[BulkWrite<T, I, P>], inserted: QueryResult<()>) {
        if let Err(error) = inserted {
            let first = writes.iter().position(|write| matches!(write, BulkWrite::Create(_))).unwrap_or_default();
            self.record(first, error.into());
        }
    }

    /// What the transaction's closure answers after the loop: an error, so that it rolls back,
    /// when any operation failed.
    pub(crate) fn commit_or_roll_back<T>(&self, applied: T) -> Result<T, TxError> {
        match self.0.is_empty() {
            true => Ok(applied),
            false => Err(TxError::Repo(RepoError::Conflict("a bulk operation failed".into()))),
        }
    }

    /// The bulk write's answer from the transaction's result: the failed operations if there
    /// were any, else what the transaction's own error or records are.
    pub(crate) fn answer<R>(
        self,
        result: Result<Vec<(R, Vec<AttachmentRow>)>, TxError>,
    ) -> Result<BulkApplied<R>, BulkError> {
        if !self.0.is_empty() {
            return Err(BulkError::Operations(self.0));
        }
        let mut records = Vec::new();
        let mut attachments = Vec::new();
        for (record, rows) in result.map_err(RepoError::from)? {
            records.push(record);
            for row in rows {
                attachments.push(Attachment::try_from(row)?);
            }
        }
        Ok(BulkApplied { records, attachments })
    }
}

/// A statement's work on the transaction's connection, for [`Statements`].
pub(crate) type Work<'c, T> = Pin<Box<dyn Future<Output = T> + Send + 'c>>;

/// A statement on the organization's (`&str`) record with an id `I`, answering `Out`.
pub(crate) type ById<'s, C, I, Out> =
    &'s (dyn for<'c> Fn(&'c mut C, &'c str, &'c I) -> Work<'c, Result<Out, TxError>> + Sync);
/// A statement writing a record `T` as patch `P` leaves it, answering the record after.
pub(crate) type Patching<'s, C, T, P> =
    &'s (dyn for<'c> Fn(&'c mut C, &'c str, &'c T, &'c P) -> Work<'c, Result<T, TxError>> + Sync);
/// A statement inserting rows `R`.
pub(crate) type Inserting<'s, C, R> = &'s (dyn for<'c> Fn(&'c mut C, &'c [R]) -> Work<'c, QueryResult<()>> + Sync);

/// The statements of one resource's bulk write on connection `C`, for [`apply_in`]: record `T`
/// (row `R`), named by id `I`, changed by patch `P`. Written in the resource's `db_run!` body, so
/// once per backend like every statement.
pub(crate) struct Statements<'s, C, T, I, P, R> {
    /// The records' table, whose record an update locks before reading it.
    pub table: &'static str,
    /// A record id's text.
    pub id: fn(&I) -> &str,
    /// Whether a patch changes nothing (then the record is only read).
    pub is_empty: fn(&P) -> bool,
    /// The organization's record with this id.
    pub read: ById<'s, C, I, T>,
    /// The record as `P` leaves it, from the record before.
    pub update: Patching<'s, C, T, P>,
    /// Deletes the record with its comments: the record as it was and its attachments' rows.
    pub delete: ById<'s, C, I, (T, Vec<AttachmentRow>)>,
    /// The creates' rows, inserted together ([`insert_rows!`](crate::prepared::insert_rows)).
    pub insert: Inserting<'s, C, R>,
    /// A created record's row.
    pub row: fn(&T) -> R,
}

/// A bulk request's `writes` in order, inside the caller's transaction on `c`: the records it
/// updates or deletes locked first, all at once in id order (as a single update locks its record,
/// so the record read is the one the write replaces); updates and deletes one by one; the creates inserted together after them (no update or
/// delete can name a record the request creates: its id is new); then every entry queued at once,
/// in the operations' order. An empty patch only reads. Failed operations go to `failures`, and
/// the transaction rolls back.
pub(crate) async fn apply_in<C: AuditQueue, T: Clone, I, P, R>(
    c: &mut C,
    org: &str,
    writes: &[BulkWrite<T, I, P>],
    audit: &AuditOf<'_, T>,
    failures: &mut Failures,
    statements: Statements<'_, C, T, I, P, R>,
) -> Result<Vec<(T, Vec<AttachmentRow>)>, TxError> {
    let Statements { table, id: id_text, is_empty, read, update, delete, insert, row } = statements;
    // Every record the request changes, locked at once in id order: two bulk requests naming the
    // same records in other orders wait for each other instead of deadlocking.
    let changed: Vec<&str> = writes
        .iter()
        .filter_map(|write| match write {
            BulkWrite::Update(id, patch) if !is_empty(patch) => Some(id_text(id)),
            BulkWrite::Delete(id) => Some(id_text(id)),
            _ => None,
        })
        .collect();
    lock_records(c.any(), table, org, &changed).await?;
    let (mut created, mut drafts) = (Vec::new(), Vec::with_capacity(writes.len()));
    let mut applied = Vec::with_capacity(writes.len());
    for (index, write) in writes.iter().enumerate() {
        let one = match write {
            BulkWrite::Create(record) => {
                created.push(row(record));
                drafts.push(audit(None, Some(record)));
                Ok((record.clone(), Vec::new()))
            }
            BulkWrite::Update(id, patch) if is_empty(patch) => {
                read(c, org, id).await.map(|record| (record, Vec::new()))
            }
            BulkWrite::Update(id, patch) => match read(c, org, id).await {
                Ok(before) => update(c, org, &before, patch).await.map(|after| {
                    drafts.push(audit(Some(&before), Some(&after)));
                    (after, Vec::new())
                }),
                Err(error) => Err(error),
            },
            BulkWrite::Delete(id) => delete(c, org, id).await.map(|(deleted, attachments)| {
                drafts.push(audit(Some(&deleted), None));
                (deleted, attachments)
            }),
        };
        match one {
            Ok(done) => applied.push(done),
            Err(error) => {
                if !failures.record(index, error) {
                    break;
                }
            }
        }
    }
    if failures.is_empty() {
        failures.record_insert(writes, insert(c, &created).await);
    }
    if failures.is_empty() && !drafts.is_empty() {
        c.append_many(drafts).await?;
    }
    failures.commit_or_roll_back(applied)
}
