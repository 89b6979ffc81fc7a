//! How many rows match a list's query without counting them, where the database keeps the number:
//! - a list asked for without any filter, time range or search: its size, the sum of its shards in
//!   `list_row_counts` (migration `list_row_counts`): `count(*)` of 100,000 risks read them all,
//!   10–20 ms alone, where the page itself took 1 ms;
//! - risks and tasks filtered by nothing but `status` and `assigneeId` ("open ones assigned to
//!   me"): the sum of the matching groups' shards in `list_status_counts` (migration
//!   `list_status_counts`): counting the 16,666 entries of such a filter was the whole request.
//!
//! The triggers keep both in every writing transaction. [`read_page!`](crate::paging::read_page)
//! answers `count` from a [`KeptCount`] when the list hands it one, else with `count(*)`.

use compliance_ports::{Assignee, ListName, ListQuery, TimeRange};
use diesel::dsl;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

use crate::paging::{Boxed, ListBackend, text_in};
use crate::schema::{list_row_counts, list_status_counts};

/// A count the database keeps for a list's query.
pub(crate) enum KeptCount {
    /// The whole list of one organization.
    Whole(WholeList),
    /// The rows of one organization's list with any of some statuses and any of some assignees.
    ByStatusAndAssignee(StatusAndAssignee),
}

impl KeptCount {
    /// The organization's `list`, when `query` narrows nothing (so its count is the list's size);
    /// `None` when the matching rows must be counted.
    pub(crate) fn whole<Filter: Default + PartialEq, Field>(
        org: &str,
        list: ListName,
        query: &ListQuery<Filter, Field>,
    ) -> Option<Self> {
        query.narrows_nothing().then(|| Self::Whole(WholeList { organization_id: org.to_owned(), list: list.as_str() }))
    }

    /// The rows of `list` with any of `statuses` (empty: all) and any of `assignees` (empty: all),
    /// when `query` narrows by nothing else: its filter equals `kept_part` (the same filter with
    /// every field but status and assignee emptied), and it has no time range or search.
    pub(crate) fn by_status_and_assignee<Filter: PartialEq, Field, Status: ToString>(
        org: &str,
        list: ListName,
        query: &ListQuery<Filter, Field>,
        kept_part: Filter,
        statuses: &[Status],
        assignees: &[Assignee],
    ) -> Option<Self> {
        let narrows_only_these =
            query.filter == kept_part && query.times == TimeRange::default() && query.search.is_none();
        narrows_only_these.then(|| {
            Self::ByStatusAndAssignee(StatusAndAssignee {
                organization_id: org.to_owned(),
                list: list.as_str(),
                statuses: statuses.iter().map(ToString::to_string).collect(),
                assignees: assignees.iter().map(group_key).collect(),
            })
        })
    }

    /// The sum of the shards [`WholeList::shards`] or [`StatusAndAssignee::shards`] loaded, as
    /// `count(*)` would answer it. Summed here: PostgreSQL's `SUM(bigint)` is a numeric, which
    /// needs a decoder.
    pub(crate) fn size(shards: Vec<i64>) -> i64 {
        shards.into_iter().sum()
    }
}

/// A whole list of one organization, whose size `list_row_counts` holds.
pub(crate) struct WholeList {
    organization_id: String,
    list: &'static str,
}

impl WholeList {
    /// The list's shards' counts, to be summed by [`KeptCount::size`].
    pub(crate) fn shards(&self) -> whole_list_shards<'_> {
        whole_list_shards(&self.organization_id, self.list)
    }
}

#[dsl::auto_type]
fn whole_list_shards<'a>(org: &'a str, list: &'static str) -> _ {
    list_row_counts::table
        .filter(list_row_counts::organization_id.eq(org))
        .filter(list_row_counts::list.eq(list))
        .select(list_row_counts::row_count)
}

/// Some statuses and assignees of one organization's list, whose groups `list_status_counts`
/// counts.
pub(crate) struct StatusAndAssignee {
    organization_id: String,
    list: &'static str,
    statuses: Vec<String>,
    /// The kept key of each assignee: the member's id, or '' for nobody.
    assignees: Vec<String>,
}

impl StatusAndAssignee {
    /// The matching groups' shards' counts, to be summed by [`KeptCount::size`]: `all` (the
    /// table boxed for the caller's backend) narrowed to them. An empty set of statuses or
    /// assignees is no condition at all.
    pub(crate) fn shards<DB: ListBackend>(
        &self,
        all: list_status_counts::BoxedQuery<'static, DB>,
    ) -> Boxed<BigInt, list_status_counts::table, DB> {
        let conditions = [
            text_in(list_status_counts::status, &self.statuses),
            text_in(list_status_counts::assignee_id, &self.assignees),
        ];
        let mut groups = all
            .filter(list_status_counts::organization_id.eq(DB::text(self.organization_id.clone())))
            .filter(list_status_counts::list.eq(DB::text(self.list.to_owned())));
        for condition in conditions.into_iter().flatten() {
            groups = groups.filter(condition);
        }
        groups.select(list_status_counts::row_count)
    }
}

/// How `list_status_counts` names an assignee: '' for nobody (a key column cannot be NULL).
fn group_key(assignee: &Assignee) -> String {
    match assignee {
        Assignee::Nobody => String::new(),
        Assignee::Member(member) => member.to_string(),
    }
}
