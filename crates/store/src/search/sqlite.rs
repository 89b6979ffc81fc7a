//! The search on SQLite: an FTS5 table `<table>_search` per searched table (unicode61, diacritics
//! removed), with external content, kept in step by triggers and holding the organization too,
//! so that a search reads one organization's matches only.
//!
//! Each value bound is an FTS5 query that [`fts_query`] writes with every word quoted: no text of
//! the user's is ever read as FTS5 syntax.

use diesel::IntoSql;
use diesel::dsl::sql;
use diesel::sql_types::{BigInt, Bool, Text};
use diesel::sqlite::Sqlite;

use super::{Relevance, SearchSql, Searched};
use crate::paging::Condition;

impl SearchSql for Sqlite {
    fn matches<QS: 'static>(list: &Searched, org: &str, words: &[String]) -> Condition<QS, Self> {
        let Some(query) = fts_query(list, org, words, Columns::All, Join::And) else {
            return Box::new(sql::<Bool>("0"));
        };
        Box::new(sql::<Bool>(&fts_rows(list)).bind::<Text, _>(query).sql(")"))
    }

    fn relevance<QS: 'static>(list: &Searched, org: &str, words: &[String]) -> Relevance<QS, Self> {
        let rows = fts_rows(list);
        let title = fts_query(list, org, words, Columns::Title, Join::And);
        // One word is its own phrase: every row the search keeps holds it, so its point is 1
        // without asking FTS5 again for the rows it has just found.
        if let [_] = words {
            return match title {
                None => Box::new(1_i64.into_sql::<BigInt>()),
                Some(title) => Box::new(
                    sql::<BigInt>(&format!("(1 + CASE WHEN {rows}")).bind::<Text, _>(title).sql(") THEN 2 ELSE 0 END)"),
                ),
            };
        }
        let Some(phrase) = fts_query(list, org, words, Columns::All, Join::Phrase) else {
            return Self::no_relevance();
        };
        let phrase = sql::<BigInt>(&format!("(CASE WHEN {rows}")).bind::<Text, _>(phrase).sql(") THEN 1 ELSE 0 END");
        match title {
            None => Box::new(phrase.sql(")")),
            Some(title) => {
                Box::new(phrase.sql(&format!(" + CASE WHEN {rows}")).bind::<Text, _>(title).sql(") THEN 2 ELSE 0 END)"))
            }
        }
    }

    fn no_relevance<QS: 'static>() -> Relevance<QS, Self> {
        // A bound value, not `sql("0")`: diesel never keeps the prepared statement of a query
        // holding literal SQL, so every plain list would be prepared again on each call.
        Box::new(0_i64.into_sql::<BigInt>())
    }
}

/// `<table>.rowid IN (SELECT rowid FROM <table>_search WHERE <table>_search MATCH `, to be
/// followed by the query and `)`. SQLite reads the subquery's rows once, into a set.
fn fts_rows(list: &Searched) -> String {
    format!("{table}.rowid IN (SELECT rowid FROM {table}_search WHERE {table}_search MATCH ", table = list.table)
}

/// Which text columns a query reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Columns {
    All,
    Title,
}

/// How a query's words go together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    /// Every word, anywhere in the columns.
    And,
    /// The words next to each other, in order.
    Phrase,
}

/// An FTS5 query: the organization (where the table holds it), then the words in the columns,
/// each a quoted string (so no word is read as FTS5 syntax), the last marked as a prefix.
/// `None` without words, or for [`Columns::Title`] of a list without a title.
fn fts_query(list: &Searched, org: &str, words: &[String], columns: Columns, join: Join) -> Option<String> {
    let (last, leading) = words.split_last()?;
    let columns = match (columns, list.title) {
        (Columns::All, Some(title)) => format!("{{{title} {}}}", list.body),
        (Columns::All, None) => list.body.to_owned(),
        (Columns::Title, Some(title)) => title.to_owned(),
        (Columns::Title, None) => return None,
    };
    let separator = match join {
        Join::And => " AND ",
        Join::Phrase => " + ",
    };
    let mut terms: Vec<String> = leading.iter().map(|word| fts_string(word)).collect();
    terms.push(format!("{} *", fts_string(last)));
    let words = format!("{columns} : ({})", terms.join(separator));
    Some(match list.scoped {
        true => format!("organization_id : {} AND {words}", fts_string(organization_term(org))),
        false => words,
    })
}

/// The one FTS5 term that stands for organization `org` in the `organization_id` column: its id
/// without the `org_` prefix. unicode61 splits `org_<body>` at the underscore into `org`, which
/// every row of every organization holds, and the body: matching the body alone reads one term's
/// rows instead of checking a two-term phrase against every row's `org` (the bench's grown
/// database: 2.26 ms as a phrase, 1.41 ms as the body for an organization of 100,000 risks;
/// 0.70 and 0.25 ms for one of 100).
fn organization_term(org: &str) -> &str {
    org.split_once('_').map_or(org, |(_, body)| body)
}

/// An FTS5 string: in double quotes, a double quote doubled. The tokenizer splits it into tokens
/// as it does the documents (a phrase of them, when it holds several).
fn fts_string(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{COMMENTS, CONTEXT, PEOPLE, RISKS, TASKS};

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn an_fts_query_quotes_every_word_and_marks_the_last_as_a_prefix() {
        let query = fts_query(&RISKS, "org_1", &words("nightly back"), Columns::All, Join::And);
        let expected = r#"organization_id : "1" AND {title description} : ("nightly" AND "back" *)"#;
        assert_eq!(query.as_deref(), Some(expected));
    }

    #[test]
    fn a_phrase_joins_the_words_with_plus() {
        let query = fts_query(&COMMENTS, "org_1", &words("of the back"), Columns::All, Join::Phrase);
        assert_eq!(query.as_deref(), Some(r#"organization_id : "1" AND content : ("of" + "the" + "back" *)"#));
    }

    #[test]
    fn the_title_query_reads_the_title_only_and_comments_have_none() {
        let query = fts_query(&CONTEXT, "org_1", &words("vpn"), Columns::Title, Join::And);
        assert_eq!(query.as_deref(), Some(r#"organization_id : "1" AND question : ("vpn" *)"#));
        assert_eq!(fts_query(&COMMENTS, "org_1", &words("vpn"), Columns::Title, Join::And), None);
    }

    #[test]
    fn users_are_not_scoped_in_their_fts_table() {
        let query = fts_query(&PEOPLE, "org_1", &words("ada"), Columns::All, Join::And);
        assert_eq!(query.as_deref(), Some(r#"{name email} : ("ada" *)"#));
    }

    #[test]
    fn a_double_quote_in_a_word_cannot_end_its_string() {
        let query = fts_query(&TASKS, "org_1", &[r#"a" OR "b"#.to_owned()], Columns::All, Join::And);
        assert_eq!(query.as_deref(), Some(r#"organization_id : "1" AND {title description} : ("a"" OR ""b" *)"#));
    }

    #[test]
    fn no_words_no_query() {
        assert_eq!(fts_query(&RISKS, "org_1", &[], Columns::All, Join::And), None);
    }
}
