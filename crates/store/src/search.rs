//! `q=`: the rows whose text fields hold every word of the search, the last word as a prefix.
//!
//! A plain case-insensitive `LIKE` on each text field: correct on both backends, but a scan.
//! (The **search** work replaces these bodies with full-text indexes; the signatures are the
//! lists' interface to it.)

use compliance_ports::Search;
use diesel::expression::BoxableExpression;
use diesel::sql_types::Text;

use crate::paging::{Condition, ListBackend, and, any_of};
use crate::schema::{automation_runs, comments, connections, context_entries, policies, risks, tasks, users, vendors};

diesel::define_sql_function! {
    /// `lower(text)`, on both backends.
    fn lower(x: Text) -> Text;
}

type People = diesel::dsl::InnerJoinQuerySource<crate::schema::members::table, users::table>;

type TextColumn<QS, DB> = Box<dyn BoxableExpression<QS, DB, SqlType = Text>>;

/// Every word of `search` in one of the text fields `columns` builds (anew for each word).
fn holds_every_word<QS: 'static, DB: ListBackend>(
    search: &Search,
    columns: impl Fn() -> Vec<TextColumn<QS, DB>>,
) -> Option<Condition<QS, DB>> {
    search.words.iter().fold(None, |every, word| {
        let any = any_of(columns().into_iter().map(|column| DB::contains(Box::new(lower(column)), word)));
        and(every, any)
    })
}

pub(crate) fn risks_matching_words<DB: ListBackend>(search: &Search) -> Option<Condition<risks::table, DB>> {
    holds_every_word(search, || vec![Box::new(risks::title), Box::new(risks::description)])
}

pub(crate) fn vendors_matching_words<DB: ListBackend>(search: &Search) -> Option<Condition<vendors::table, DB>> {
    holds_every_word(search, || vec![Box::new(vendors::name), Box::new(vendors::description)])
}

pub(crate) fn policies_matching_words<DB: ListBackend>(search: &Search) -> Option<Condition<policies::table, DB>> {
    holds_every_word(search, || vec![Box::new(policies::name), Box::new(policies::description)])
}

pub(crate) fn context_matching_words<DB: ListBackend>(
    search: &Search,
) -> Option<Condition<context_entries::table, DB>> {
    holds_every_word(search, || vec![Box::new(context_entries::question), Box::new(context_entries::answer)])
}

pub(crate) fn tasks_matching_words<DB: ListBackend>(search: &Search) -> Option<Condition<tasks::table, DB>> {
    holds_every_word(search, || vec![Box::new(tasks::title), Box::new(tasks::description)])
}

pub(crate) fn people_matching_words<DB: ListBackend>(search: &Search) -> Option<Condition<People, DB>> {
    holds_every_word(search, || vec![Box::new(users::name), Box::new(users::email)])
}

pub(crate) fn comments_matching_words<QS: 'static, DB: ListBackend>(search: &Search) -> Option<Condition<QS, DB>>
where
    comments::content: BoxableExpression<QS, DB, SqlType = Text>,
{
    holds_every_word(search, || vec![Box::new(comments::content)])
}

/// Runs have no text a person wrote: their error message is searched.
pub(crate) fn runs_matching_words<DB: ListBackend>(search: &Search) -> Option<Condition<automation_runs::table, DB>> {
    holds_every_word(search, || vec![Box::new(diesel::dsl::sql::<Text>("COALESCE(error, '')"))])
}

pub(crate) fn connections_matching_words<DB: ListBackend>(
    search: &Search,
) -> Option<Condition<connections::table, DB>> {
    holds_every_word(search, || vec![Box::new(connections::provider)])
}
