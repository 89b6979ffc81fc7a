//! The search on PostgreSQL: stored tsvector columns `search_title` and `search_body` (lowercase,
//! unaccented words, `simple` configuration) with a GIN index on the two together, and the SQL
//! functions `search_query` and `search_phrase` that turn the words into a query alike.
//!
//! Words arrive as two bound values, the leading words and the last (the prefix), and those
//! functions read their lexemes (`plainto_tsquery`): no text of the user's is ever parsed as query
//! syntax, and words without lexemes match nothing instead of failing.

use diesel::IntoSql;
use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::sql_types::{BigInt, Bool, Text};

use super::{Relevance, SearchSql, Searched};
use crate::paging::Condition;

impl SearchSql for Pg {
    fn matches<QS: 'static>(list: &Searched, _org: &str, words: &[String]) -> Condition<QS, Self> {
        let Some((leading, last)) = split(words) else { return Box::new(sql::<Bool>("FALSE")) };
        Box::new(
            sql::<Bool>(&format!("{} @@ search_query(", document(list)))
                .bind::<Text, _>(leading)
                .sql(", ")
                .bind::<Text, _>(last)
                .sql(")"),
        )
    }

    fn relevance<QS: 'static>(list: &Searched, _org: &str, words: &[String]) -> Relevance<QS, Self> {
        let Some((leading, last)) = split(words) else { return Self::no_relevance() };
        let phrase = sql::<BigInt>(&format!("(CASE WHEN {} @@ search_phrase(", document(list)))
            .bind::<Text, _>(leading.clone())
            .sql(", ")
            .bind::<Text, _>(last.clone())
            .sql(") THEN 1 ELSE 0 END");
        match list.title {
            None => Box::new(phrase.sql(")::bigint")),
            Some(_) => Box::new(
                phrase
                    .sql(&format!(" + CASE WHEN {}.search_title @@ search_query(", list.table))
                    .bind::<Text, _>(leading)
                    .sql(", ")
                    .bind::<Text, _>(last)
                    .sql(") THEN 2 ELSE 0 END)::bigint"),
            ),
        }
    }

    fn no_relevance<QS: 'static>() -> Relevance<QS, Self> {
        // A bound value, not `sql("0")`: diesel never keeps the prepared statement of a query
        // holding literal SQL, so every plain list would be prepared again on each call.
        Box::new(0_i64.into_sql::<BigInt>())
    }
}

/// The tsvector a list's GIN index is built on: the same expression, so the planner uses it.
fn document(list: &Searched) -> String {
    match list.title {
        Some(_) => format!("({table}.search_title || {table}.search_body)", table = list.table),
        None => format!("{}.search_body", list.table),
    }
}

/// The words but the last, joined by spaces, and the last.
fn split(words: &[String]) -> Option<(String, String)> {
    let (last, leading) = words.split_last()?;
    Some((leading.join(" "), last.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_word_stands_apart() {
        assert_eq!(split(&[]), None);
        let words: Vec<String> = ["a", "b", "c"].map(str::to_owned).to_vec();
        assert_eq!(split(&words), Some(("a b".to_owned(), "c".to_owned())));
    }
}
