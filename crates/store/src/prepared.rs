//! Writes that keep their prepared statement, and the store's multi-row inserts ([`insert_rows!`]).
//!
//! diesel never caches an `UPDATE`, nor a PostgreSQL `INSERT` (whose values may say `DEFAULT`),
//! because their SQL can vary from call to call. diesel-async then prepares the statement again on
//! every call: a round trip of its own, and a parse and plan in PostgreSQL, before the round trip
//! that runs it. [`Prepared`] marks a statement as safe to keep; the cache is keyed by its SQL
//! text, so a statement that can take several shapes still gets one entry per shape, and the few
//! shapes must be bounded: an insert of a fixed row type, or a patch written by [`Assignments`],
//! which has one shape whatever the patch holds.

use std::marker::PhantomData;

use diesel::backend::Backend;
use diesel::query_builder::{AsChangeset, AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{Bool, HasSqlType, Nullable, Text, Timestamp};
use diesel::{Column, QueryResult, Table};
use time::PrimitiveDateTime;

/// The most rows one multi-row `INSERT` of the store writes (on PostgreSQL; [`insert_rows!`]).
/// 100: a bulk request's 500 rows were one statement of 500, whose parameters tokio-postgres
/// encodes whole into its message and then keeps as its write buffer's capacity, on every
/// connection that ever sent one (docs/performance.md, "Bulk memory"). Far under the 65,535
/// parameters a statement may bind.
pub(crate) const INSERT_CHUNK: usize = 100;

/// Inserts rows of a table: on PostgreSQL one statement per [`INSERT_CHUNK`] rows, on SQLite one
/// statement a row (diesel builds no multi-row INSERT for SQLite through diesel-async, and
/// in-process SQLite pays no round trip per statement). PostgreSQL keeps the statement of one row
/// (what most writes send: one record, one entry) and that of a full chunk prepared, two shapes
/// per table; preparing them again was a round trip more inside the write's transaction. A bulk
/// request's last, shorter chunk is prepared each time.
macro_rules! insert_rows {
    ($conn:expr, $table:expr, $rows:expr) => {
        match ($conn, $rows) {
            ($crate::db::ConnRef::Pg(c), rows) => {
                for chunk in rows.chunks($crate::prepared::INSERT_CHUNK) {
                    match chunk {
                        [row] => {
                            $crate::prepared::Prepared(diesel::insert_into($table).values(row)).execute(&mut *c).await?
                        }
                        full if full.len() == $crate::prepared::INSERT_CHUNK => {
                            $crate::prepared::Prepared(diesel::insert_into($table).values(full))
                                .execute(&mut *c)
                                .await?
                        }
                        rest => diesel::insert_into($table).values(rest).execute(&mut *c).await?,
                    };
                }
                Ok(())
            }
            ($crate::db::ConnRef::Sqlite(c), rows) => {
                for row in rows {
                    diesel::insert_into($table).values(row).execute(&mut *c).await?;
                }
                Ok(())
            }
        }
    };
}
pub(crate) use insert_rows;

/// A statement whose prepared form the connection keeps (see the module's comment).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prepared<Q>(pub Q);

impl<Q> QueryId for Prepared<Q> {
    type QueryId = ();
    // keyed by its SQL text, not by its type
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Prepared<Q> {
    type SqlType = Q::SqlType;
}

impl<Q: QueryFragment<DB>, DB: Backend> QueryFragment<DB> for Prepared<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &DB) -> QueryResult<bool> {
        Ok(true)
    }
}

/// The `SET` list of a patch of text columns, with the same SQL whatever the patch changes: a
/// column the patch leaves alone is assigned its own value.
/// - a required column: `"title" = COALESCE($n, "title")`, with NULL for "unchanged";
/// - a nullable column: `"department" = CASE WHEN $n THEN $m ELSE "department" END`, where `$n`
///   says whether the patch sets it (perhaps to NULL);
/// - then the table's `"updated_at" = $k`.
pub(crate) struct Assignments<T> {
    assignments: Vec<Assignment>,
    updated_at_column: &'static str,
    updated_at: PrimitiveDateTime,
    table: PhantomData<T>,
}

enum Assignment {
    Required { column: &'static str, change: Option<String> },
    Nullable { column: &'static str, is_set: bool, change: Option<String> },
}

impl<T: Table> Assignments<T> {
    /// A patch made at `updated_at`, which it writes to `column`.
    pub(crate) fn new<C: Column<Table = T>>(_column: C, updated_at: PrimitiveDateTime) -> Self {
        Self { assignments: Vec::new(), updated_at_column: C::NAME, updated_at, table: PhantomData }
    }

    /// Sets a NOT NULL column when `change` holds a value.
    pub(crate) fn required<C: Column<Table = T>>(mut self, _column: C, change: Option<String>) -> Self {
        self.assignments.push(Assignment::Required { column: C::NAME, change });
        self
    }

    /// Sets a nullable column when `change` is `Some` (to NULL when it holds `None`).
    pub(crate) fn nullable<C: Column<Table = T>>(mut self, _column: C, change: Option<Option<String>>) -> Self {
        let is_set = change.is_some();
        self.assignments.push(Assignment::Nullable { column: C::NAME, is_set, change: change.flatten() });
        self
    }
}

impl<T: Table> AsChangeset for &Assignments<T> {
    type Target = T;
    type Changeset = Self;

    fn as_changeset(self) -> Self {
        self
    }
}

impl<T> QueryId for Assignments<T> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<T, DB> QueryFragment<DB> for Assignments<T>
where
    DB: Backend + HasSqlType<Bool> + HasSqlType<Nullable<Text>> + HasSqlType<Timestamp>,
    bool: ToSql<Bool, DB>,
    Option<String>: ToSql<Nullable<Text>, DB>,
    PrimitiveDateTime: ToSql<Timestamp, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        for assignment in &self.assignments {
            match assignment {
                Assignment::Required { column, change } => {
                    out.push_identifier(column)?;
                    out.push_sql(" = COALESCE(");
                    out.push_bind_param::<Nullable<Text>, _>(change)?;
                    out.push_sql(", ");
                    out.push_identifier(column)?;
                    out.push_sql("), ");
                }
                Assignment::Nullable { column, is_set, change } => {
                    out.push_identifier(column)?;
                    out.push_sql(" = CASE WHEN ");
                    out.push_bind_param::<Bool, _>(is_set)?;
                    out.push_sql(" THEN ");
                    out.push_bind_param::<Nullable<Text>, _>(change)?;
                    out.push_sql(" ELSE ");
                    out.push_identifier(column)?;
                    out.push_sql(" END, ");
                }
            }
        }
        out.push_identifier(self.updated_at_column)?;
        out.push_sql(" = ");
        out.push_bind_param::<Timestamp, _>(&self.updated_at)
    }
}

/// A changed value as its column stores it (enums and ids by their text).
pub(crate) fn text<T: ToString>(change: &Option<T>) -> Option<String> {
    change.as_ref().map(ToString::to_string)
}

/// A changed nullable value as its column stores it.
pub(crate) fn nullable_text<T: ToString>(change: &Option<Option<T>>) -> Option<Option<String>> {
    change.as_ref().map(|value| value.as_ref().map(ToString::to_string))
}
