//! How many rows an organization's list holds, without counting them: the sum of its shards in
//! `list_row_counts`, which the database's triggers keep in every writing transaction (migration
//! `list_row_counts`). A list asked for without any filter, time range or search answers its
//! `count` from here ([`read_page!`](crate::paging::read_page)): `count(*)` of 100,000 risks read
//! them all, 10–20 ms alone, where the page itself took 1 ms.

use compliance_ports::{ListName, ListQuery};
use diesel::dsl;
use diesel::prelude::*;

use crate::schema::list_row_counts;

/// A whole list of one organization, whose size `list_row_counts` holds.
pub(crate) struct WholeList {
    organization_id: String,
    list: &'static str,
}

impl WholeList {
    /// The organization's `list`, when `query` narrows nothing (so its count is the list's size);
    /// `None` when the matching rows must be counted.
    pub(crate) fn of<Filter: Default + PartialEq, Field>(
        org: &str,
        list: ListName,
        query: &ListQuery<Filter, Field>,
    ) -> Option<Self> {
        query.narrows_nothing().then(|| Self { organization_id: org.to_owned(), list: list.as_str() })
    }

    /// The list's shards' counts, to be summed by [`Self::size`].
    pub(crate) fn shards(&self) -> shards<'_> {
        shards(&self.organization_id, self.list)
    }

    /// The sum of the shards [`Self::shards`] loaded, as `count(*)` would answer it. Summed here:
    /// PostgreSQL's `SUM(bigint)` is a numeric, which needs a decoder.
    pub(crate) fn size(shards: Vec<i64>) -> i64 {
        shards.into_iter().sum()
    }
}

#[dsl::auto_type]
fn shards<'a>(org: &'a str, list: &'static str) -> _ {
    list_row_counts::table
        .filter(list_row_counts::organization_id.eq(org))
        .filter(list_row_counts::list.eq(list))
        .select(list_row_counts::row_count)
}
