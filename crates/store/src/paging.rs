//! Keyset pagination of the lists ordered newest first by (created_at, id), for every backend.

/// Loads one page of a list: at most `limit + 1` rows after the cursor (the extra row tells
/// whether another page follows), then `count(*)` of the same filter only when those rows leave
/// the total unknown (see `PageRequest::needs_count`). A first page that fits is one statement.
///
/// `$filtered` is the query with every filter (the organization's first), without selection or
/// order; it is written out once per statement, so the rows and the count see the same filter.
/// The cursor adds `created_at <= c AND (created_at < c OR (created_at = c AND id < cid))`: diesel
/// has no row-value comparison, and the redundant `<=` lets the (organization_id, created_at, id)
/// index start the scan at the cursor.
///
/// On PostgreSQL the statements run on the async connection. On SQLite the whole page is read
/// inside the connection's blocking thread, and the rows are built there straight from the
/// statement: diesel-async's own `load` first copies every value of every row
/// (`sqlite3_value_dup`, in SQLite's allocator) so that it can cross threads, which took a third
/// of a list's CPU. So whatever `$filtered` borrows must be owned by the caller's scope and moved
/// in: use owned values (`String`), not references into the request.
///
/// Evaluates to `Result<(Vec<Row>, Option<u64>), diesel::result::Error>`.
macro_rules! read_page {
    ($conn:expr, $request:expr, $filtered:expr, $select:expr, $created_at:expr, $id:expr) => {
        match $conn {
            $crate::db::DbConn::Pg(pooled) => {
                let c: &mut diesel_async::AsyncPgConnection = &mut *pooled;
                async { $crate::paging::page_statements!(run_async, c, $request, $filtered, $select, $created_at, $id) }
                    .await
            }
            $crate::db::DbConn::Sqlite(pooled) => {
                let request: compliance_ports::PageRequest = ($request).clone();
                let c: &mut $crate::db::SqliteAsync = &mut *pooled;
                c.spawn_blocking(move |c| {
                    $crate::paging::page_statements!(run_blocking, c, &request, $filtered, $select, $created_at, $id)
                })
                .await
            }
        }
    };
}
pub(crate) use read_page;

/// The statements of `read_page!`, each run with `$run!` (`run_async` or `run_blocking`); `?`
/// leaves the enclosing async block or closure.
macro_rules! page_statements {
    ($run:ident, $c:ident, $request:expr, $filtered:expr, $select:expr, $created_at:expr, $id:expr) => {{
        let request: &compliance_ports::PageRequest = $request;
        let (order, rows_to_load) = (($created_at.desc(), $id.desc()), request.rows_to_load());
        let rows: Vec<_> = match &request.after {
            None => $crate::paging::$run!($c, load, $filtered.select($select).order(order).limit(rows_to_load))?,
            Some(cursor) => {
                let at = cursor.created_at.to_utc_naive();
                let after = $created_at.lt(at).or($created_at.eq(at).and($id.lt(cursor.id.as_str())));
                let page = $filtered.select($select).filter($created_at.le(at).and(after));
                $crate::paging::$run!($c, load, page.order(order).limit(rows_to_load))?
            }
        };
        let total = if request.needs_count(rows.len()) {
            let count: i64 = $crate::paging::$run!($c, get_result, $filtered.count())?;
            Some(u64::try_from(count).unwrap_or_default())
        } else {
            None
        };
        Ok::<_, diesel::result::Error>((rows, total))
    }};
}
pub(crate) use page_statements;

/// One statement on an async connection.
macro_rules! run_async {
    ($c:ident, $method:ident, $query:expr) => {
        diesel_async::RunQueryDsl::$method($query, $c).await
    };
}
pub(crate) use run_async;

/// One statement on a synchronous connection (inside SQLite's blocking thread).
macro_rules! run_blocking {
    ($c:ident, $method:ident, $query:expr) => {
        diesel::RunQueryDsl::$method($query, $c)
    };
}
pub(crate) use run_blocking;
