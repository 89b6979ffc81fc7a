//! The search on SQLite: an FTS5 table `<table>_search` per searched table (unicode61, diacritics
//! removed), with external content, kept in step by triggers. An organization's rows have FTS5
//! rowids in a range of their own (migration `2026-11-29-000029_search_by_organization_range`),
//! so a search reads only that range of each word's rows: [`organization_keys`].
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
        let Some(query) = fts_query(list, words, Columns::All, Join::And) else {
            return Box::new(sql::<Bool>("0"));
        };
        let (rows, end) = fts_rows(list, org);
        Box::new(sql::<Bool>(&rows).bind::<Text, _>(query).sql(&end))
    }

    fn relevance<QS: 'static>(list: &Searched, org: &str, words: &[String]) -> Relevance<QS, Self> {
        let (rows, end) = fts_rows(list, org);
        let title = fts_query(list, words, Columns::Title, Join::And);
        // One word is its own phrase: every row the search keeps holds it, so its point is 1
        // without asking FTS5 again for the rows it has just found.
        if let [_] = words {
            return match title {
                None => Box::new(1_i64.into_sql::<BigInt>()),
                Some(title) => Box::new(
                    sql::<BigInt>(&format!("(1 + CASE WHEN {rows}"))
                        .bind::<Text, _>(title)
                        .sql(&format!("{end} THEN 2 ELSE 0 END)")),
                ),
            };
        }
        let Some(phrase) = fts_query(list, words, Columns::All, Join::Phrase) else {
            return Self::no_relevance();
        };
        let phrase = sql::<BigInt>(&format!("(CASE WHEN {rows}"))
            .bind::<Text, _>(phrase)
            .sql(&format!("{end} THEN 1 ELSE 0 END"));
        match title {
            None => Box::new(phrase.sql(")")),
            Some(title) => Box::new(
                phrase
                    .sql(&format!(" + CASE WHEN {rows}"))
                    .bind::<Text, _>(title)
                    .sql(&format!("{end} THEN 2 ELSE 0 END)")),
            ),
        }
    }

    fn no_relevance<QS: 'static>() -> Relevance<QS, Self> {
        // A bound value, not `sql("0")`: diesel never keeps the prepared statement of a query
        // holding literal SQL, so every plain list would be prepared again on each call.
        Box::new(0_i64.into_sql::<BigInt>())
    }
}

/// The SQL around an FTS query (bound between the two) that makes it a condition on the list's
/// rows: `<table>.rowid IN (SELECT … WHERE <table>_search MATCH ` and, for an organization's
/// list, ` AND rowid BETWEEN first AND last)` with the organization's range, whose rowids hold
/// the table's rowid in their low 32 bits. The range's numbers are ours, never the user's, so
/// they are written into the SQL. SQLite reads the subquery's rows once, into a set.
fn fts_rows(list: &Searched, org: &str) -> (String, String) {
    let table = list.table;
    if !list.scoped {
        return (format!("{table}.rowid IN (SELECT rowid FROM {table}_search WHERE {table}_search MATCH "), ")".into());
    }
    let (first, last) = organization_keys(org);
    (
        format!("{table}.rowid IN (SELECT rowid & {ROW_MASK} FROM {table}_search WHERE {table}_search MATCH "),
        format!(" AND rowid BETWEEN {first} AND {last})"),
    )
}

/// The low bits of an FTS rowid: the table row's rowid.
const ROW_MASK: i64 = (1 << 32) - 1;

/// The FTS5 rowids of organization `org`'s rows: its bucket times 2^32, plus each row's rowid.
/// The bucket is what the migration's triggers compute in SQL: the id's last six characters, each
/// one's code point & 31, five bits apiece (the last character lowest). Organizations sharing a
/// bucket share a range; the list's `organization_id = ?` keeps each one's own rows.
fn organization_keys(org: &str) -> (i64, i64) {
    let bucket = org
        .chars()
        .rev()
        .take(6)
        .enumerate()
        .fold(0_i64, |sum, (n, c)| sum + ((i64::from(u32::from(c)) & 31) << (5 * n)));
    let first = bucket << 32;
    (first, first + ROW_MASK)
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

/// An FTS5 query: the words in the columns, each a quoted string (so no word is read as FTS5
/// syntax), the last marked as a prefix. `None` without words, or for [`Columns::Title`] of a list
/// without a title.
fn fts_query(list: &Searched, words: &[String], columns: Columns, join: Join) -> Option<String> {
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
    Some(format!("{columns} : ({})", terms.join(separator)))
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
        let query = fts_query(&RISKS, &words("nightly back"), Columns::All, Join::And);
        assert_eq!(query.as_deref(), Some(r#"{title description} : ("nightly" AND "back" *)"#));
    }

    #[test]
    fn a_phrase_joins_the_words_with_plus() {
        let query = fts_query(&COMMENTS, &words("of the back"), Columns::All, Join::Phrase);
        assert_eq!(query.as_deref(), Some(r#"content : ("of" + "the" + "back" *)"#));
    }

    #[test]
    fn the_title_query_reads_the_title_only_and_comments_have_none() {
        let query = fts_query(&CONTEXT, &words("vpn"), Columns::Title, Join::And);
        assert_eq!(query.as_deref(), Some(r#"question : ("vpn" *)"#));
        assert_eq!(fts_query(&COMMENTS, &words("vpn"), Columns::Title, Join::And), None);
    }

    #[test]
    fn a_double_quote_in_a_word_cannot_end_its_string() {
        let query = fts_query(&TASKS, &[r#"a" OR "b"#.to_owned()], Columns::All, Join::And);
        assert_eq!(query.as_deref(), Some(r#"{title description} : ("a"" OR ""b" *)"#));
    }

    #[test]
    fn no_words_no_query() {
        assert_eq!(fts_query(&RISKS, &[], Columns::All, Join::And), None);
    }

    #[test]
    fn an_organization_s_rows_are_a_range_of_rowids_and_users_are_not_scoped() {
        // The bucket of `…zy0123`: '3' (51 & 31 = 19), '2' (18), '1' (17), '0' (16), 'y' (121 & 31
        // = 25), 'z' (26), five bits apiece from the last character up.
        let bucket: i64 = 19 + (18 << 5) + (17 << 10) + (16 << 15) + (25 << 20) + (26 << 25);
        assert_eq!(organization_keys("org_0000000000000000000000000zy0123"), (bucket << 32, (bucket << 32) + ROW_MASK));
        let (rows, end) = fts_rows(&RISKS, "org_0000000000000000000000000zy0123");
        assert_eq!(rows, "risks.rowid IN (SELECT rowid & 4294967295 FROM risks_search WHERE risks_search MATCH ");
        assert_eq!(end, format!(" AND rowid BETWEEN {} AND {})", bucket << 32, (bucket << 32) + ROW_MASK));
        assert_eq!(fts_rows(&PEOPLE, "org_1").1, ")");
    }
}
