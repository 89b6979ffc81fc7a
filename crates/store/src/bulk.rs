//! What the resources' `apply_<resource>_bulk` methods share: counting the audit entries a bulk
//! request writes (their places in the chain are reserved at once), inserting its creates in as
//! few statements as the backend allows, collecting the failed operations inside the
//! transaction, rolling it back when there is one, and the answer once it committed.
//!
//! Why creates are inserted together and audit entries appended together: on PostgreSQL each
//! statement is a round trip, and each one of a transaction updating the same rows again (the
//! audit head, the list counters of the statement triggers) leaves one more row version to step
//! over; one multi-row `INSERT` and one `append_many` make 500 creates a handful of statements.

use compliance_domain::comment::Attachment;
use compliance_ports::{BulkApplied, BulkError, BulkWrite, RepoError};
use diesel::result::QueryResult;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::audit::INSERT_CHUNK;
use crate::db::SqliteAsync;
use crate::error::TxError;
use crate::risks::RiskRow;
use crate::rows::AttachmentRow;
use crate::schema::{risks, tasks, vendors};
use crate::tasks::TaskRow;
use crate::vendors::VendorRow;

/// How many audit entries `writes` make: one for each but an empty patch's (which only reads).
pub(crate) fn audited<T, I, P>(writes: &[BulkWrite<T, I, P>], is_empty: impl Fn(&P) -> bool) -> i64 {
    let audited = writes.iter().filter(|write| !matches!(write, BulkWrite::Update(_, patch) if is_empty(patch)));
    i64::try_from(audited.count()).unwrap_or(i64::MAX)
}

/// The creates of a bulk request, inserted in one statement per [`INSERT_CHUNK`] rows on
/// PostgreSQL, one per row on SQLite (diesel builds no multi-row `INSERT` for SQLite through
/// diesel-async, and in-process SQLite pays no round trip a statement).
pub(crate) trait InsertCreated {
    fn insert_risks(&mut self, rows: &[RiskRow]) -> impl Future<Output = QueryResult<()>> + Send;
    fn insert_vendors(&mut self, rows: &[VendorRow]) -> impl Future<Output = QueryResult<()>> + Send;
    fn insert_tasks(&mut self, rows: &[TaskRow]) -> impl Future<Output = QueryResult<()>> + Send;
}

impl InsertCreated for AsyncPgConnection {
    async fn insert_risks(&mut self, rows: &[RiskRow]) -> QueryResult<()> {
        for chunk in rows.chunks(INSERT_CHUNK) {
            diesel::insert_into(risks::table).values(chunk).execute(self).await?;
        }
        Ok(())
    }
    async fn insert_vendors(&mut self, rows: &[VendorRow]) -> QueryResult<()> {
        for chunk in rows.chunks(INSERT_CHUNK) {
            diesel::insert_into(vendors::table).values(chunk).execute(self).await?;
        }
        Ok(())
    }
    async fn insert_tasks(&mut self, rows: &[TaskRow]) -> QueryResult<()> {
        for chunk in rows.chunks(INSERT_CHUNK) {
            diesel::insert_into(tasks::table).values(chunk).execute(self).await?;
        }
        Ok(())
    }
}

impl InsertCreated for SqliteAsync {
    async fn insert_risks(&mut self, rows: &[RiskRow]) -> QueryResult<()> {
        for row in rows {
            diesel::insert_into(risks::table).values(row).execute(self).await?;
        }
        Ok(())
    }
    async fn insert_vendors(&mut self, rows: &[VendorRow]) -> QueryResult<()> {
        for row in rows {
            diesel::insert_into(vendors::table).values(row).execute(self).await?;
        }
        Ok(())
    }
    async fn insert_tasks(&mut self, rows: &[TaskRow]) -> QueryResult<()> {
        for row in rows {
            diesel::insert_into(tasks::table).values(row).execute(self).await?;
        }
        Ok(())
    }
}

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
