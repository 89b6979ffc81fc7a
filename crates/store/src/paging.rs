//! Keyset pagination of the lists ordered newest first by (created_at, id), for every backend.

/// Loads one page of a list on one connection: at most `limit + 1` rows after the cursor (the
/// extra row tells whether another page follows), then `count(*)` of the same filter only when
/// those rows leave the total unknown (see `PageRequest::needs_count`). A first page that fits
/// is a single round trip.
///
/// `$filtered` is the query with every filter (the organization's first), without selection or
/// order; it is written out once per statement, so the rows and the count see the same filter.
/// The cursor adds `created_at <= c AND (created_at < c OR (created_at = c AND id < cid))`: diesel
/// has no row-value comparison, and the redundant `<=` lets the (organization_id, created_at, id)
/// index start the scan at the cursor. A macro, because the body must be type-checked once per
/// backend (inside `db_run!`). Evaluates to `Result<(Vec<Row>, Option<u64>), diesel::result::Error>`.
macro_rules! load_page {
    ($c:ident, $request:expr, $filtered:expr, $select:expr, $created_at:expr, $id:expr) => {
        async {
            let request: &compliance_ports::PageRequest = $request;
            let (order, rows_to_load) = (($created_at.desc(), $id.desc()), request.rows_to_load());
            let rows: Vec<_> = match &request.after {
                None => $filtered.select($select).order(order).limit(rows_to_load).load($c).await?,
                Some(cursor) => {
                    let at = cursor.created_at.to_utc_naive();
                    let after = $created_at.lt(at).or($created_at.eq(at).and($id.lt(cursor.id.as_str())));
                    $filtered
                        .select($select)
                        .filter($created_at.le(at).and(after))
                        .order(order)
                        .limit(rows_to_load)
                        .load($c)
                        .await?
                }
            };
            let total = if request.needs_count(rows.len()) {
                let count: i64 = $filtered.count().get_result($c).await?;
                Some(u64::try_from(count).unwrap_or_default())
            } else {
                None
            };
            Ok::<_, diesel::result::Error>((rows, total))
        }
        .await
    };
}
pub(crate) use load_page;
