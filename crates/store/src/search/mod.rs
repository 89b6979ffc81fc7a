//! Full-text search of the lists (`q=`): the filter that keeps the rows holding every word (the
//! last as a prefix), and their relevance, which orders a search without `sort`.
//!
//! The indexes are made by the migration `2026-11-26-000016_search`; the SQL of each backend is in
//! its own module ([`postgres`], [`sqlite`]). A list's query calls [`filter`] among its filters,
//! selects [`relevance`] with its rows, orders by [`order`] and makes its cursors with [`cursor`].
//! SQLite's indexes are kept merged by [`merge`].
//!
//! Relevance is a small whole number, so that a cursor holds it exactly: 2 when the title (name,
//! question) holds every word, plus 1 when the words stand next to each other in order (a phrase).
//! It depends on the row and the words only, never on the other rows (as SQLite's bm25 would), so
//! a page's position stays put while rows are added, and another organization's rows never
//! change the order of this one's.

mod merge;
mod postgres;
mod sqlite;

use compliance_ports::{Cursor, ListQuery, Search, SortValue};
use diesel::backend::Backend;
use diesel::expression::BoxableExpression;
use diesel::sql_types::BigInt;

use crate::paging::{Condition, ListBackend, SortColumn, SortColumns};

/// A searched list: its table and the text columns its search reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Searched {
    /// The table the list's query reads the searched rows from (`users` for people).
    table: &'static str,
    /// The title's column (SQLite's FTS table names the table's own columns); `None` for comments,
    /// which have only a body.
    title: Option<&'static str>,
    body: &'static str,
    /// Whether the list is one organization's rows, which SQLite's FTS table keeps in the
    /// organization's range of rowids (every one but users': a user belongs to several
    /// organizations, and the people list scopes by membership).
    scoped: bool,
}

pub(crate) const RISKS: Searched = Searched { table: "risks", title: Some("title"), body: "description", scoped: true };
pub(crate) const VENDORS: Searched =
    Searched { table: "vendors", title: Some("name"), body: "description", scoped: true };
pub(crate) const POLICIES: Searched =
    Searched { table: "policies", title: Some("name"), body: "description", scoped: true };
pub(crate) const CONTEXT: Searched =
    Searched { table: "context_entries", title: Some("question"), body: "answer", scoped: true };
pub(crate) const TASKS: Searched = Searched { table: "tasks", title: Some("title"), body: "description", scoped: true };
pub(crate) const COMMENTS: Searched = Searched { table: "comments", title: None, body: "content", scoped: true };
/// People: a member's user's name and email.
pub(crate) const PEOPLE: Searched = Searched { table: "users", title: Some("name"), body: "email", scoped: false };
/// An automation's runs: the verdict's reason and the error.
pub(crate) const RUNS: Searched =
    Searched { table: "automation_runs", title: Some("verdict_reason"), body: "error", scoped: true };
/// Connections: the provider's slug and the last error.
pub(crate) const CONNECTIONS: Searched =
    Searched { table: "connections", title: Some("provider"), body: "last_error", scoped: true };
/// Every searched list, for the upkeep of their indexes.
const ALL: [Searched; 9] = [RISKS, VENDORS, POLICIES, CONTEXT, TASKS, COMMENTS, PEOPLE, RUNS, CONNECTIONS];

/// A row's relevance: higher first.
pub(crate) type Relevance<QS, DB> = Box<dyn BoxableExpression<QS, DB, SqlType = BigInt>>;

/// The SQL of a search on one backend. `words` is never empty (a `q` without words matches
/// nothing and never reaches these); every word reaches the statement as a bound value.
pub(crate) trait SearchSql: Backend + Sized {
    /// Keeps the rows of `list` in `org` that hold every word, the last as a prefix.
    fn matches<QS: 'static>(list: &Searched, org: &str, words: &[String]) -> Condition<QS, Self>;
    /// The relevance of a row that [`SearchSql::matches`] keeps, 0 to 3.
    fn relevance<QS: 'static>(list: &Searched, org: &str, words: &[String]) -> Relevance<QS, Self>;
    /// A relevance of 0 for every row: what a list selects when it is not ordered by relevance.
    fn no_relevance<QS: 'static>() -> Relevance<QS, Self>;
}

/// Whether a list's rows come by relevance: a search for some words without `sort`.
fn by_relevance<F, S>(query: &ListQuery<F, S>) -> Option<&Search> {
    query.search.as_ref().filter(|search| query.sort.is_empty() && !search.words.is_empty())
}

/// The filter of `query`'s search on `list`, in `org`; `None` without `q`. The list's query
/// still filters on the organization itself: this narrows it.
pub(crate) fn filter<QS: 'static, DB: ListBackend>(
    list: &Searched,
    org: &str,
    search: Option<&Search>,
) -> Option<Condition<QS, DB>> {
    search.map(|search| match search.words.is_empty() {
        // A `q` of punctuation only (`?q=--`) names no word, so no row holds its words.
        true => DB::boolean(false),
        false => DB::matches(list, org, &search.words),
    })
}

/// What a list selects beside each row: its relevance when the rows come by relevance, else 0
/// (the relevance then costs nothing and no cursor holds it).
pub(crate) fn relevance<QS: 'static, DB: SearchSql, F, S>(
    list: &Searched,
    org: &str,
    query: &ListQuery<F, S>,
) -> Relevance<QS, DB> {
    match by_relevance(query) {
        Some(search) => DB::relevance(list, org, &search.words),
        None => DB::no_relevance(),
    }
}

/// The list's order `columns` (its default, newest first, when `query` has no sort), behind the
/// relevance, descending, when the rows come by relevance.
pub(crate) fn order<QS: 'static, DB: SearchSql, F, S>(
    list: &Searched,
    org: &str,
    query: &ListQuery<F, S>,
    mut columns: SortColumns<QS, DB>,
) -> SortColumns<QS, DB> {
    if let Some(search) = by_relevance(query) {
        columns.insert(0, (SortColumn::Integer(DB::relevance(list, org, &search.words)), true));
    }
    columns
}

/// The cursor after a row of `query`'s list: the row's relevance (when the rows come by it), its
/// values of the sort keys, and its id.
pub(crate) fn cursor<F, S>(query: &ListQuery<F, S>, relevance: i64, values: Vec<SortValue>, id: String) -> Cursor {
    let values = match by_relevance(query) {
        Some(_) => std::iter::once(SortValue::Integer(relevance)).chain(values).collect(),
        None => values,
    };
    Cursor { values, id }
}
