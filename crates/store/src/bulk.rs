//! What the resources' `apply_<resource>_bulk` methods share: collecting the failed operations
//! inside the transaction, rolling it back when there is one, and the answer once it committed.

use compliance_domain::comment::Attachment;
use compliance_ports::{BulkApplied, BulkError, RepoError};

use crate::error::TxError;
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
