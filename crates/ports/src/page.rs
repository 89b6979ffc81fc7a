//! Keyset pages of the lists, ordered by their sort key (newest first by default) then id.

use async_trait::async_trait;
use compliance_domain::{OrganizationId, Timestamp};

use crate::{RepoError, SortValue};

/// The position after one row of a list: the values of its sort key (one per key of the list's
/// sort, in order) and its id. The next page holds the rows ordered after it, so rows inserted
/// meanwhile shift nothing: each lands before or after the position, never across it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    /// The row's sort key values, one per sort key.
    pub values: Vec<SortValue>,
    /// The row's id, which breaks ties.
    pub id: String,
}

impl Cursor {
    /// The position of a row of a list ordered newest first: its creation time, then its id.
    pub fn newest_first(created_at: Timestamp, id: String) -> Self {
        Self { values: vec![SortValue::Time(created_at)], id }
    }
}

/// Which page to load.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageRequest {
    /// The most rows to return (at least 1; callers cap it).
    pub limit: usize,
    /// Start after this row; `None` for the first page.
    pub after: Option<Cursor>,
    /// Whether the page's `total` must be right. An export's batches never show it, and counting
    /// every matching row again for each batch made a large export quadratic; they set it off.
    pub counted: bool,
}

impl PageRequest {
    /// The first `limit` rows.
    pub fn first(limit: usize) -> Self {
        Self { limit: limit.max(1), after: None, counted: true }
    }

    /// The same rows without their total: [`Page::total`] is then only a lower bound (the rows
    /// loaded), and no statement counts the matching rows.
    pub fn uncounted(self) -> Self {
        Self { counted: false, ..self }
    }

    /// The rows to load: one more than fit, to tell whether another page follows.
    pub fn rows_to_load(&self) -> i64 {
        i64::try_from(self.limit.saturating_add(1)).unwrap_or(i64::MAX)
    }

    /// Whether `loaded` rows leave the total unknown, so that it must be counted: on a later page,
    /// or when more rows match than fit. A first page that is also the last counts itself. Never
    /// when the request is [`PageRequest::uncounted`].
    pub fn needs_count(&self, loaded: usize) -> bool {
        self.counted && (self.after.is_some() || loaded > self.limit)
    }
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The rows, in the list's order.
    pub items: Vec<T>,
    /// How many rows match in all, across every page (of an [`PageRequest::uncounted`] request:
    /// the rows of this page and before, a lower bound).
    pub total: u64,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}

impl<T> Page<T> {
    /// Builds a page from up to `limit + 1` rows loaded in list order: the extra row only tells
    /// that another page follows. `total` is the count of matching rows when it was queried; it
    /// is needed only when the rows loaded do not show it (a later page, or more rows than fit).
    pub fn from_rows(mut items: Vec<T>, request: &PageRequest, total: Option<u64>, key: impl Fn(&T) -> Cursor) -> Self {
        let more = items.len() > request.limit;
        items.truncate(request.limit);
        let next = if more { items.last().map(key) } else { None };
        let total = total.unwrap_or(items.len() as u64);
        Self { items, total, next }
    }

    /// The same page with each item turned into another (e.g. a row without the values its
    /// cursor was made of).
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page { items: self.items.into_iter().map(f).collect(), total: self.total, next: self.next }
    }
}

/// The lists whose changes the database counts per organization (`ListGenerations`). The names
/// are those its triggers write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListName {
    /// Context entries.
    Context,
    /// Policies.
    Policies,
    /// Vendors.
    Vendors,
    /// Risks.
    Risks,
    /// Tasks.
    Tasks,
    /// Members.
    People,
    /// Not a list: the organization's access (members' roles and activity, API keys, sessions),
    /// counted the same way so that every instance's principal cache sees a revocation at once.
    Access,
}

impl ListName {
    /// The name the database's triggers count it under.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Context => "context",
            Self::Policies => "policies",
            Self::Vendors => "vendors",
            Self::Risks => "risks",
            Self::Tasks => "tasks",
            Self::People => "people",
            Self::Access => "access",
        }
    }
}

/// How many changes of an organization's list have committed: a page read when the count was `n`
/// is still current while it is `n`. The database counts them itself (triggers in the writing
/// transaction), so a write by another instance or another program counts too.
#[async_trait]
pub trait ListGenerations: Send + Sync {
    /// The count of committed changes of `org`'s `list` (0 before the first).
    async fn generation(&self, org: &OrganizationId, list: ListName) -> Result<u64, RepoError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(n: &u32) -> Cursor {
        Cursor::newest_first(Timestamp::now(), n.to_string())
    }

    #[test]
    fn the_extra_row_means_another_page() {
        let request = PageRequest::first(2);
        assert!(request.needs_count(3));
        let page = Page::from_rows(vec![3, 2, 1], &request, Some(7), cursor);
        assert_eq!((page.items, page.total, page.next.map(|c| c.id)), (vec![3, 2], 7, Some("2".to_owned())));
    }

    #[test]
    fn a_first_page_that_is_also_the_last_counts_itself() {
        let request = PageRequest::first(2);
        assert!(!request.needs_count(2));
        let page = Page::from_rows(vec![2, 1], &request, None, cursor);
        assert_eq!((page.items, page.total, page.next), (vec![2, 1], 2, None));
    }

    #[test]
    fn a_later_page_is_always_counted() {
        let request = PageRequest { after: Some(cursor(&9)), ..PageRequest::first(5) };
        assert!(request.needs_count(1));
    }

    #[test]
    fn an_uncounted_request_never_counts() {
        let first = PageRequest::first(2).uncounted();
        assert!(!first.needs_count(3));
        let later = PageRequest { after: Some(cursor(&9)), ..first };
        assert!(!later.needs_count(3));
        let page = Page::from_rows(vec![3, 2, 1], &later, None, cursor);
        assert_eq!((page.items, page.next.map(|c| c.id)), (vec![3, 2], Some("2".to_owned())));
    }
}
