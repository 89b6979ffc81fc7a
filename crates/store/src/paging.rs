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
/// inside one call to the connection (which runs in place, see `db::InPlace`), the rows built
/// straight from the statement: diesel-async's own `load` first copies every value of every row
/// (`sqlite3_value_dup`, in SQLite's allocator) so that it can cross threads, which took a third of
/// a list's CPU. So whatever `$filtered` borrows must be owned by the caller's scope and moved
/// in: use owned values (`String`), not references into the request.
///
/// A macro, like `db_run!`, because each backend type-checks the body on its own; the two arms
/// are the same statements, awaited on PostgreSQL and called directly on SQLite. It expands to no
/// other macro. Evaluates to `Result<(Vec<Row>, Option<u64>), diesel::result::Error>`.
macro_rules! read_page {
    ($conn:expr, $request:expr, $filtered:expr, $select:expr, $created_at:expr, $id:expr) => {{
        let request: compliance_ports::PageRequest = ($request).clone();
        let (order, rows_to_load) = (($created_at.desc(), $id.desc()), request.rows_to_load());
        let total = |count: i64| Some(u64::try_from(count).unwrap_or_default());
        match $conn {
            $crate::db::DbConn::Pg(pooled) => {
                let c: &mut diesel_async::AsyncPgConnection = &mut *pooled;
                async {
                    use diesel_async::RunQueryDsl as Run;
                    let rows: Vec<_> = match &request.after {
                        None => Run::load($filtered.select($select).order(order).limit(rows_to_load), c).await?,
                        Some(cursor) => {
                            let at = cursor.created_at.to_utc_naive();
                            let after = $created_at.lt(at).or($created_at.eq(at).and($id.lt(cursor.id.as_str())));
                            let page = $filtered.select($select).filter($created_at.le(at).and(after));
                            Run::load(page.order(order).limit(rows_to_load), c).await?
                        }
                    };
                    let total = match request.needs_count(rows.len()) {
                        true => total(Run::get_result($filtered.count(), c).await?),
                        false => None,
                    };
                    Ok::<_, diesel::result::Error>((rows, total))
                }
                .await
            }
            $crate::db::DbConn::Sqlite(pooled) => {
                let c: &mut $crate::db::SqliteAsync = &mut *pooled;
                c.spawn_blocking(move |c| {
                    use diesel::RunQueryDsl as Run;
                    let rows: Vec<_> = match &request.after {
                        None => Run::load($filtered.select($select).order(order).limit(rows_to_load), c)?,
                        Some(cursor) => {
                            let at = cursor.created_at.to_utc_naive();
                            let after = $created_at.lt(at).or($created_at.eq(at).and($id.lt(cursor.id.as_str())));
                            let page = $filtered.select($select).filter($created_at.le(at).and(after));
                            Run::load(page.order(order).limit(rows_to_load), c)?
                        }
                    };
                    let total = match request.needs_count(rows.len()) {
                        true => total(Run::get_result($filtered.count(), c)?),
                        false => None,
                    };
                    Ok::<_, diesel::result::Error>((rows, total))
                })
                .await
            }
        }
    }};
}
pub(crate) use read_page;
