//! Keyset pagination of the lists, for every backend: the list's filters as a boxed query, its
//! sort as boxed columns, and the cursor as the condition "after this row in that order".
//!
//! A list's repository method builds its filtered query with a function generic over the backend
//! ([`ListBackend`]), names its sort columns with another, and hands both to [`read_page!`].

use compliance_ports::{Assignee, Cursor, SortKey, SortValue, TimeRange};
use diesel::backend::Backend;
use diesel::expression::expression_types::NotSelectable;
use diesel::expression::{AsExpression, BoxableExpression, ValidGrouping, is_aggregate};
use diesel::internal::migrations::DieselReserveSpecialization;
use diesel::prelude::*;
use diesel::serialize::ToSql;
use diesel::sql_types::HasSqlType;
use diesel::sql_types::{BigInt, Bool, Nullable, Text, Timestamp};
use time::PrimitiveDateTime;

use crate::search::SearchSql;

diesel::define_sql_function! {
    /// `lower(text)`, on both backends.
    fn lower(x: Text) -> Text;
}

/// A boxed `SELECT` of `ST` from `QS` (a table, or tables joined), for backend `DB`.
///
/// diesel 2.3 exports `BoxedSelectStatement` and `FromClause` only in its hidden `internal`
/// module (the `table!` macro's expansion names them). Its public `helper_types::IntoBoxed` names
/// a boxed query of one source with that source's default selection only, while the people and
/// comments lists build their joined filter once for any selection `ST` (rows and count): so this
/// one alias names them, and the version is pinned in Cargo.lock.
pub(crate) type Boxed<ST, QS, DB> =
    diesel::internal::table_macro::BoxedSelectStatement<'static, ST, diesel::internal::table_macro::FromClause<QS>, DB>;

/// A boolean condition on the rows of `QS`, for backend `DB`.
pub(crate) type Condition<QS, DB> = Box<dyn BoxableExpression<QS, DB, SqlType = Bool>>;

/// A column (or expression) a list sorts on, boxed so that the sort can be chosen per request.
pub(crate) enum SortColumn<QS, DB> {
    Text(Box<dyn BoxableExpression<QS, DB, SqlType = Text>>),
    Time(Box<dyn BoxableExpression<QS, DB, SqlType = Timestamp>>),
    /// A search's relevance (`crate::search`).
    Integer(Box<dyn BoxableExpression<QS, DB, SqlType = BigInt>>),
}

impl<QS, DB: ListBackend> SortColumn<QS, DB> {
    pub(crate) fn text(column: impl BoxableExpression<QS, DB, SqlType = Text> + 'static) -> Self {
        Self::Text(Box::new(column))
    }

    pub(crate) fn time(column: impl BoxableExpression<QS, DB, SqlType = Timestamp> + 'static) -> Self {
        Self::Time(Box::new(column))
    }
}

/// A list's order: its sort columns, each with its direction, the id (a unique tie-breaker) last.
pub(crate) type SortColumns<QS, DB> = Vec<(SortColumn<QS, DB>, bool)>;

/// The backends, as the list functions generic over them need them: values bound as parameters
/// of the statement.
///
/// diesel writes a column for any backend that opts into `DieselReserveSpecialization`, which it
/// exports only in its hidden `internal` module: both of ours do, and naming it here once lets
/// every list's filters and sort be one function for both (the version is pinned in Cargo.lock).
pub(crate) trait ListBackend: Backend + DieselReserveSpecialization + SearchSql + Sized + 'static {
    fn text<QS: 'static>(value: String) -> Box<dyn BoxableExpression<QS, Self, SqlType = Text>>;
    fn time<QS: 'static>(value: PrimitiveDateTime) -> Box<dyn BoxableExpression<QS, Self, SqlType = Timestamp>>;
    fn integer<QS: 'static>(value: i64) -> Box<dyn BoxableExpression<QS, Self, SqlType = BigInt>>;
    fn boolean<QS: 'static>(value: bool) -> Box<dyn BoxableExpression<QS, Self, SqlType = Bool>>;
    /// `text LIKE '%needle%' ESCAPE '\\'`: the text holds `needle`, its own `%` and `_` taken
    /// literally (case as the backend's `LIKE` compares it).
    fn contains<QS: 'static>(
        text: Box<dyn BoxableExpression<QS, Self, SqlType = Text>>,
        needle: &str,
    ) -> Condition<QS, Self>;
}

/// One impl for every backend whose types bind these values, which both of ours do: the bodies
/// are written once and type-checked for each backend where a list names it.
impl<DB> ListBackend for DB
where
    DB: Backend + DieselReserveSpecialization + SearchSql + 'static,
    DB: HasSqlType<Text> + HasSqlType<Timestamp> + HasSqlType<BigInt> + HasSqlType<Bool>,
    String: ToSql<Text, DB>,
    PrimitiveDateTime: ToSql<Timestamp, DB>,
    i64: ToSql<BigInt, DB>,
    bool: ToSql<Bool, DB>,
{
    fn text<QS: 'static>(value: String) -> Box<dyn BoxableExpression<QS, Self, SqlType = Text>> {
        Box::new(<String as AsExpression<Text>>::as_expression(value))
    }
    fn time<QS: 'static>(value: PrimitiveDateTime) -> Box<dyn BoxableExpression<QS, Self, SqlType = Timestamp>> {
        Box::new(<PrimitiveDateTime as AsExpression<Timestamp>>::as_expression(value))
    }
    fn integer<QS: 'static>(value: i64) -> Box<dyn BoxableExpression<QS, Self, SqlType = BigInt>> {
        Box::new(<i64 as AsExpression<BigInt>>::as_expression(value))
    }
    fn boolean<QS: 'static>(value: bool) -> Box<dyn BoxableExpression<QS, Self, SqlType = Bool>> {
        Box::new(<bool as AsExpression<Bool>>::as_expression(value))
    }
    fn contains<QS: 'static>(
        text: Box<dyn BoxableExpression<QS, Self, SqlType = Text>>,
        needle: &str,
    ) -> Condition<QS, Self> {
        Box::new(text.like(format!("%{}%", like_escaped(needle))).escape('\\'))
    }
}

/// `a AND b`, either possibly absent.
pub(crate) fn and<QS: 'static, DB: ListBackend>(
    a: Option<Condition<QS, DB>>,
    b: Option<Condition<QS, DB>>,
) -> Option<Condition<QS, DB>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Box::new(a.and(b))),
        (a, b) => a.or(b),
    }
}

/// `c1 OR c2 OR …` of the conditions; `None` when there are none (no filter).
pub(crate) fn any_of<QS: 'static, DB: ListBackend>(
    conditions: impl IntoIterator<Item = Condition<QS, DB>>,
) -> Option<Condition<QS, DB>> {
    conditions.into_iter().reduce(|a, b| Box::new(a.or(b)))
}

/// `column = v1 OR column = v2 …` of a text column and the values' wire names; `None` when there
/// are no values (no filter).
pub(crate) fn text_in<QS: 'static, DB: ListBackend, C, V: ToString>(
    column: C,
    values: &[V],
) -> Option<Condition<QS, DB>>
where
    C: BoxableExpression<QS, DB, SqlType = Text> + ValidGrouping<(), IsAggregate = is_aggregate::No> + Copy + 'static,
{
    any_of(values.iter().map(|value| -> Condition<QS, DB> { Box::new(column.eq(DB::text(value.to_string()))) }))
}

/// `assigneeId=`: the column holds any of the members, or (`Assignee::Nobody`) is null.
pub(crate) fn assigned<QS: Table + 'static, DB: ListBackend, C>(
    column: C,
    assignees: &[Assignee],
) -> Option<Condition<QS, DB>>
where
    C: BoxableExpression<QS, DB, SqlType = Nullable<Text>>
        + ValidGrouping<(), IsAggregate = is_aggregate::No>
        + Copy
        + 'static,
{
    any_of(assignees.iter().map(|assignee| -> Condition<QS, DB> {
        match assignee {
            Assignee::Nobody => Box::new(column.is_null()),
            Assignee::Member(member) => Box::new(column.assume_not_null().eq(DB::text(member.to_string()))),
        }
    }))
}

/// One term of `ORDER BY`: a sort column with its direction.
pub(crate) type OrderTerm<QS, DB> = Box<dyn BoxableExpression<QS, DB, SqlType = NotSelectable>>;

/// The order terms (`column ASC|DESC`) of `columns`, in order.
pub(crate) fn order_terms<QS: 'static, DB: ListBackend>(columns: SortColumns<QS, DB>) -> Vec<OrderTerm<QS, DB>> {
    columns
        .into_iter()
        .map(|(column, descending)| -> OrderTerm<QS, DB> {
            match (column, descending) {
                (SortColumn::Text(c), false) => Box::new(c.asc()),
                (SortColumn::Text(c), true) => Box::new(c.desc()),
                (SortColumn::Time(c), false) => Box::new(c.asc()),
                (SortColumn::Time(c), true) => Box::new(c.desc()),
                (SortColumn::Integer(c), false) => Box::new(c.asc()),
                (SortColumn::Integer(c), true) => Box::new(c.desc()),
            }
        })
        .collect()
}

/// The rows after `cursor` in the order of `columns` (built anew by each call, as boxed
/// expressions are used once): `k1 ≥ v1 AND (k1 > v1 OR (k1 = v1 AND (k2 > v2 OR …)))`, with `<`
/// for a descending key. The leading, redundant `k1 ≥ v1` lets an index on the first key start
/// the scan at the cursor (diesel has no row-value comparison). `None` when the cursor does not
/// fit the columns (another list's, or another sort's).
pub(crate) fn after<QS: 'static, DB: ListBackend>(
    columns: &dyn Fn() -> SortColumns<QS, DB>,
    cursor: &Cursor,
) -> Option<Condition<QS, DB>> {
    let values: Vec<&SortValue> = cursor.values.iter().collect();
    let id = SortValue::Text(cursor.id.clone());
    let values: Vec<&SortValue> = values.into_iter().chain(std::iter::once(&id)).collect();
    if values.len() != columns().len() {
        return None;
    }
    let (mut strictly, mut equal) = (columns(), columns());
    let mut condition: Option<Condition<QS, DB>> = None;
    for (index, value) in values.iter().enumerate().rev() {
        let (column, descending) = strictly.pop()?;
        let beyond = compare(column, value, if descending { Ordering::Less } else { Ordering::Greater })?;
        let (column, _) = equal.pop()?;
        condition = Some(match condition {
            None => beyond,
            Some(rest) => Box::new(beyond.or(compare(column, value, Ordering::Equal)?.and(rest))),
        });
        if index == 0 {
            let (column, descending) = columns().into_iter().next()?;
            let from = compare(column, value, if descending { Ordering::AtMost } else { Ordering::AtLeast })?;
            condition = condition.map(|c| -> Condition<QS, DB> { Box::new(from.and(c)) });
        }
    }
    condition
}

#[derive(Clone, Copy)]
enum Ordering {
    Less,
    AtMost,
    Equal,
    AtLeast,
    Greater,
}

/// `column <op> value`; `None` when the value is not of the column's type.
fn compare<QS: 'static, DB: ListBackend>(
    column: SortColumn<QS, DB>,
    value: &SortValue,
    ordering: Ordering,
) -> Option<Condition<QS, DB>> {
    Some(match (column, value) {
        (SortColumn::Text(column), SortValue::Text(value)) => by(column, DB::text(value.clone()), ordering),
        (SortColumn::Time(column), SortValue::Time(value)) => by(column, DB::time(value.to_utc_naive()), ordering),
        (SortColumn::Integer(column), SortValue::Integer(value)) => by(column, DB::integer(*value), ordering),
        _ => return None,
    })
}

type BoxedExpr<QS, DB, ST> = Box<dyn BoxableExpression<QS, DB, SqlType = ST>>;

fn by<QS: 'static, DB: ListBackend, ST>(
    column: BoxedExpr<QS, DB, ST>,
    value: BoxedExpr<QS, DB, ST>,
    ordering: Ordering,
) -> Condition<QS, DB>
where
    ST: diesel::sql_types::SqlType<IsNull = diesel::sql_types::is_nullable::NotNull>
        + diesel::sql_types::SingleValue
        + 'static,
{
    match ordering {
        Ordering::Less => Box::new(column.lt(value)),
        Ordering::AtMost => Box::new(column.le(value)),
        Ordering::Equal => Box::new(column.eq(value)),
        Ordering::AtLeast => Box::new(column.ge(value)),
        Ordering::Greater => Box::new(column.gt(value)),
    }
}

/// The columns of a list's sort `keys` (see `ListQuery::sort_keys`), then its `id` in the last
/// key's direction, so that the order is total.
pub(crate) fn sort_columns<QS: 'static, DB: ListBackend, F: Copy>(
    keys: &[SortKey<F>],
    column: impl Fn(F) -> SortColumn<QS, DB>,
    id: impl BoxableExpression<QS, DB, SqlType = Text> + 'static,
) -> SortColumns<QS, DB> {
    let last_descending = keys.last().is_some_and(|key| key.descending);
    let mut columns: SortColumns<QS, DB> = keys.iter().map(|key| (column(key.field), key.descending)).collect();
    columns.push((SortColumn::Text(Box::new(id)), last_descending));
    columns
}

/// Newest first: `created` descending, then `id` descending (the lists that take no sort).
pub(crate) fn newest_first<QS: 'static, DB: ListBackend>(
    created: impl BoxableExpression<QS, DB, SqlType = Timestamp> + 'static,
    id: impl BoxableExpression<QS, DB, SqlType = Text> + 'static,
) -> SortColumns<QS, DB> {
    vec![(SortColumn::time(created), true), (SortColumn::text(id), true)]
}

/// `text` with `LIKE`'s wildcards (and the escape character `\`) escaped, for `ESCAPE '\'`.
pub(crate) fn like_escaped(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// `createdAfter` … `updatedBefore` on the list's creation and (where it has one) update columns.
pub(crate) fn time_range<QS: 'static, DB: ListBackend, C, U>(
    times: &TimeRange,
    created: C,
    updated: Option<U>,
) -> Option<Condition<QS, DB>>
where
    C: BoxableExpression<QS, DB, SqlType = Timestamp>
        + ValidGrouping<(), IsAggregate = is_aggregate::No>
        + Copy
        + 'static,
    U: BoxableExpression<QS, DB, SqlType = Timestamp>
        + ValidGrouping<(), IsAggregate = is_aggregate::No>
        + Copy
        + 'static,
{
    let at = |time: &Option<compliance_domain::Timestamp>| time.map(|t| DB::time::<QS>(t.to_utc_naive()));
    let mut condition = None;
    if let Some(t) = at(&times.created_after) {
        condition = and(condition, Some(Box::new(created.ge(t))));
    }
    if let Some(t) = at(&times.created_before) {
        condition = and(condition, Some(Box::new(created.lt(t))));
    }
    if let Some(updated) = updated {
        if let Some(t) = at(&times.updated_after) {
            condition = and(condition, Some(Box::new(updated.ge(t))));
        }
        if let Some(t) = at(&times.updated_before) {
            condition = and(condition, Some(Box::new(updated.lt(t))));
        }
    }
    condition
}

/// What [`read_page!`] fails with when a cursor's values do not fit the list's sort keys; the
/// store's error mapping turns it into [`compliance_ports::RepoError::BadCursor`] (a 400).
pub(crate) const CURSOR_MISFIT: &str = "a cursor of another sort";

/// Loads one page of a list: at most `limit + 1` rows after the cursor (the extra row tells
/// whether another page follows), then the total only when those rows leave it unknown (see
/// `PageRequest::needs_count`). A first page that fits is one statement. The total is `count(*)`
/// of the same filter, or, when `$kept` is a [`KeptCount`](crate::list_counts::KeptCount) (the
/// query narrows nothing, or only by status and assignee), the number the triggers keep.
///
/// `$filtered` is the boxed query with every filter (the organization's first), without selection
/// or order; `$columns` the list's [`SortColumns`], the id last. Both are written out once per
/// use, so the rows and the count see the same filter. A cursor that does not fit the columns is
/// a `QueryBuilderError` of [`CURSOR_MISFIT`], a 400 naming `cursor` (a cursor made by hand can
/// carry the right fingerprint with values of other types).
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
    ($conn:expr, $request:expr, $filtered:expr, $select:expr, $columns:expr, $kept:expr $(,)?) => {{
        let request: compliance_ports::PageRequest = ($request).clone();
        let kept: Option<$crate::list_counts::KeptCount> = $kept;
        let rows_to_load = request.rows_to_load();
        let total = |count: i64| Some(u64::try_from(count).unwrap_or_default());
        let misfit = || diesel::result::Error::QueryBuilderError($crate::paging::CURSOR_MISFIT.into());
        match $crate::db::ConnRef::from($conn) {
            $crate::db::ConnRef::Pg(c) => {
                async {
                    use diesel_async::RunQueryDsl as Run;
                    let columns = || $columns;
                    let mut rows = $filtered.select($select);
                    for term in $crate::paging::order_terms(columns()) {
                        rows = rows.then_order_by(term);
                    }
                    if let Some(cursor) = &request.after {
                        rows = rows.filter($crate::paging::after(&columns, cursor).ok_or_else(misfit)?);
                    }
                    let rows: Vec<_> = Run::load(rows.limit(rows_to_load), c).await?;
                    let total = match (request.needs_count(rows.len()), &kept) {
                        (false, _) => None,
                        (true, None) => total(Run::get_result($filtered.count(), c).await?),
                        (true, Some($crate::list_counts::KeptCount::Whole(list))) => {
                            total($crate::list_counts::KeptCount::size(Run::load(list.shards(), c).await?))
                        }
                        (true, Some($crate::list_counts::KeptCount::ByStatusAndAssignee(groups))) => {
                            total($crate::list_counts::KeptCount::size(
                                Run::load(groups.shards($crate::schema::list_status_counts::table.into_boxed()), c)
                                    .await?,
                            ))
                        }
                    };
                    Ok::<_, diesel::result::Error>((rows, total))
                }
                .await
            }
            $crate::db::ConnRef::Sqlite(c) => {
                c.spawn_blocking(move |c| {
                    use diesel::RunQueryDsl as Run;
                    let columns = || $columns;
                    let mut rows = $filtered.select($select);
                    for term in $crate::paging::order_terms(columns()) {
                        rows = rows.then_order_by(term);
                    }
                    if let Some(cursor) = &request.after {
                        rows = rows.filter($crate::paging::after(&columns, cursor).ok_or_else(misfit)?);
                    }
                    let rows: Vec<_> = Run::load(rows.limit(rows_to_load), c)?;
                    let total = match (request.needs_count(rows.len()), &kept) {
                        (false, _) => None,
                        (true, None) => total(Run::get_result($filtered.count(), c)?),
                        (true, Some($crate::list_counts::KeptCount::Whole(list))) => {
                            total($crate::list_counts::KeptCount::size(Run::load(list.shards(), c)?))
                        }
                        (true, Some($crate::list_counts::KeptCount::ByStatusAndAssignee(groups))) => {
                            total($crate::list_counts::KeptCount::size(Run::load(
                                groups.shards($crate::schema::list_status_counts::table.into_boxed()),
                                c,
                            )?))
                        }
                    };
                    Ok::<_, diesel::result::Error>((rows, total))
                })
                .await
            }
        }
    }};
}
pub(crate) use read_page;
