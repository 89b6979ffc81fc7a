//! Context entries, policies, vendors and risks: one repository shape, generated per table.

use async_trait::async_trait;
use compliance_domain::comment::Attachment;
use compliance_domain::context::ContextEntry;
use compliance_domain::policy::Policy;
use compliance_domain::risk::Risk;
use compliance_domain::task::Task;
use compliance_domain::vendor::Vendor;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{Cursor, Deleted, Page, PageRequest, RecordRepository, RepoError, TenantRecord};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};

use crate::Store;
use crate::changesets;
use crate::comments::delete_comments_of;
use crate::db::db_run;
use crate::error::{TxError, repo_error};
use crate::paging::read_page;
use crate::prepared::Prepared;
use crate::rows::{AttachmentRow, ContextEntryRow, PolicyRow, RiskRow, TaskRow, VendorRow, naive};
use crate::schema::{context_entries, policies, risks, tasks, vendors};

/// Read-modify-write of one record in a transaction. `$lock` is `for_update` on PostgreSQL, so
/// concurrent patches of different fields do not overwrite each other; SQLite has a single writer.
macro_rules! patch_in_transaction {
    ($conn:ident, $record:ty, $table:ident, $row:ty, $org:expr, $id:expr, $patch:expr, $now:expr $(, $lock:ident)?) => {
        $conn
            .transaction(async |c| {
                let row: $row = $table::table
                    .filter($table::organization_id.eq($org.as_str()))
                    .filter($table::id.eq($id.to_string()))
                    .select(<$row>::as_select())
                    $(.$lock())?
                    .first(c)
                    .await?;
                let mut record: $record = row.try_into().map_err(TxError::Repo)?;
                TenantRecord::apply(&mut record, $patch, $now);
                diesel::update(
                    $table::table
                        .filter($table::organization_id.eq($org.as_str()))
                        .filter($table::id.eq(TenantRecord::id(&record).to_string())),
                )
                    .set(&<$row>::from(&record))
                    .execute(c)
                    .await?;
                Ok::<_, TxError>(record)
            })
            .await
    };
}

/// PostgreSQL's fast path: read the record, apply the patch, and write it back only if its
/// `updated_at` is still what was read — two round trips, where the locking transaction (BEGIN,
/// SELECT … FOR UPDATE, UPDATE, COMMIT) takes four. `None` when a concurrent patch changed the
/// record in between: then the caller takes the locking path, which always gets through.
macro_rules! patch_if_unchanged {
    ($conn:ident, $record:ty, $table:ident, $row:ty, $org:expr, $id:expr, $patch:expr, $now:expr) => {
        async {
            let the_record =
                $table::table.filter($table::organization_id.eq($org.as_str())).filter($table::id.eq($id.to_string()));
            let row: $row = the_record.clone().select(<$row>::as_select()).first(&mut *$conn).await?;
            let mut record: $record = row.try_into().map_err(TxError::Repo)?;
            let read = record.updated_at;
            // strictly later than what was read, so that the check tells the versions apart
            let now = if $now > read { $now } else { read.plus(time::Duration::microseconds(1)) };
            TenantRecord::apply(&mut record, $patch, now);
            let written = diesel::update(the_record.filter($table::updated_at.eq(naive(read))))
                .set(&<$row>::from(&record))
                .execute(&mut *$conn)
                .await?;
            Ok::<_, TxError>((written == 1).then_some(record))
        }
        .await
    };
}

/// A patch that only assigns fields: one prepared `UPDATE … SET … RETURNING *`, whose `SET` list
/// `$changeset` (a function of `store::changesets`) builds from the patch.
macro_rules! update_columns {
    ($store:ident, $record:ty, $table:ident, $row:ty, $org:ident, $id:ident, $patch:ident, $now:ident, $changeset:path) => {{
        let changes = $changeset($patch, $now);
        let mut conn = $store.pools.write().await?;
        let row: $row = db_run!(&mut conn, |c| {
            Prepared(
                diesel::update(
                    $table::table.filter($table::organization_id.eq($org.as_str())).filter($table::id.eq($id.as_str())),
                )
                .set(&changes)
                .returning(<$row>::as_returning()),
            )
            .get_result(c)
            .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }};
}

/// A patch whose effect depends on the record (a policy's status and archive dates): read the
/// record, apply the patch in the domain, write it back.
macro_rules! read_modify_write {
    ($store:ident, $record:ty, $table:ident, $row:ty, $org:ident, $id:ident, $patch:ident, $now:ident) => {{
        let mut conn = $store.pools.write().await?;
        let result: Result<$record, TxError> = match &mut conn {
            crate::db::DbConn::Pg(c) => match patch_if_unchanged!(c, $record, $table, $row, $org, $id, $patch, $now) {
                Ok(Some(record)) => Ok(record),
                Ok(None) => patch_in_transaction!(c, $record, $table, $row, $org, $id, $patch, $now, for_update),
                Err(error) => Err(error),
            },
            crate::db::DbConn::Sqlite(c) => patch_in_transaction!(c, $record, $table, $row, $org, $id, $patch, $now),
        };
        result.map_err(RepoError::from)
    }};
}

/// `$update` is how a patch is written: `update_columns` with the record's changeset function, or
/// `read_modify_write`.
macro_rules! record_repository {
    ($record:ty, $row:ty, $table:ident, $update:ident $(($changeset:path))?) => {
        #[async_trait]
        impl RecordRepository<$record> for Store {
            async fn list(&self, org: &OrganizationId, page: &PageRequest) -> Result<Page<$record>, RepoError> {
                let org = org.to_string();
                let mut conn = self.pools.read().await?;
                let (rows, total): (Vec<$row>, _) = read_page!(
                    &mut conn,
                    page,
                    $table::table.filter($table::organization_id.eq(org.as_str())),
                    <$row>::as_select(),
                    $table::created_at,
                    $table::id
                )
                .map_err(repo_error)?;
                let records = rows.into_iter().map(<$record>::try_from).collect::<Result<Vec<_>, _>>()?;
                Ok(Page::from_rows(records, page, total, |r| Cursor { created_at: r.created_at, id: r.id.to_string() }))
            }

            async fn get(
                &self,
                org: &OrganizationId,
                id: &<$record as TenantRecord>::Id,
            ) -> Result<$record, RepoError> {
                let mut conn = self.pools.read().await?;
                let row: $row = db_run!(&mut conn, |c| {
                    $table::table
                        .filter($table::organization_id.eq(org.as_str()))
                        .filter($table::id.eq(id.as_str()))
                        .select(<$row>::as_select())
                        .first(c)
                        .await
                })
                .map_err(repo_error)?;
                row.try_into()
            }

            async fn insert(&self, record: &$record) -> Result<(), RepoError> {
                let row = <$row>::from(record);
                let mut conn = self.pools.write().await?;
                db_run!(&mut conn, |c| Prepared(diesel::insert_into($table::table).values(&row)).execute(c).await)
                    .map_err(repo_error)?;
                Ok(())
            }

            async fn update(
                &self,
                org: &OrganizationId,
                id: &<$record as TenantRecord>::Id,
                patch: &<$record as TenantRecord>::Patch,
                now: Timestamp,
            ) -> Result<$record, RepoError> {
                $update!(self, $record, $table, $row, org, id, patch, now $(, $changeset)?)
            }

            async fn delete(
                &self,
                org: &OrganizationId,
                id: &<$record as TenantRecord>::Id,
            ) -> Result<Deleted<$record>, RepoError> {
                let mut conn = self.pools.write().await?;
                let result: Result<($row, Vec<AttachmentRow>), TxError> = db_run!(&mut conn, |c| {
                    c.transaction(async |c| {
                        let attachments = match <$record as TenantRecord>::COMMENT_ENTITY {
                            Some(kind) => delete_comments_of!(c, org.as_str(), kind.as_str(), id.as_str()),
                            None => Vec::new(),
                        };
                        let row: $row = diesel::delete(
                            $table::table
                                .filter($table::organization_id.eq(org.as_str()))
                                .filter($table::id.eq(id.as_str())),
                        )
                        .returning(<$row>::as_returning())
                        .get_result(c)
                        .await?;
                        Ok((row, attachments))
                    })
                    .await
                });
                let (row, attachments) = result.map_err(RepoError::from)?;
                Ok(Deleted {
                    record: row.try_into()?,
                    attachments: attachments.into_iter().map(Attachment::try_from).collect::<Result<_, _>>()?,
                })
            }
        }
    };
}

record_repository!(ContextEntry, ContextEntryRow, context_entries, update_columns(changesets::context_entry));
record_repository!(Policy, PolicyRow, policies, read_modify_write);
record_repository!(Vendor, VendorRow, vendors, update_columns(changesets::vendor));
record_repository!(Risk, RiskRow, risks, update_columns(changesets::risk));
record_repository!(Task, TaskRow, tasks, update_columns(changesets::task));
