//! List pages kept serialized in memory: asked for again, a page is answered from here while the
//! database says its list has not changed since (one read of the list's generation), without
//! loading, decoding or serializing its rows.
//!
//! A page is kept per organization, list, filter and page request. Only the items, the total and
//! the next cursor are kept; `authType` and `authenticatedUser` are the caller's and are written
//! around them on every response.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use compliance_app::access::Reach;
use compliance_app::{AppError, Principal};
use compliance_domain::{MemberId, OrganizationId};
use compliance_ports::{ListName, Page, PageRequest};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::ApiError;
use crate::list_query::QueryShape;

/// Which page of which list: everything the items depend on. The caller's organization comes
/// first, so one organization's pages are never another's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListKey {
    org: OrganizationId,
    list: ListName,
    /// The people list's `includeInactive`; `false` elsewhere.
    include_inactive: bool,
    /// The member whose own records the page holds, when the caller's role reads only those
    /// (an employee's tasks); `None` when the page holds the whole list.
    own: Option<MemberId>,
    /// The list's filters, search and sort.
    shape: QueryShape,
    page: PageRequest,
}

impl ListKey {
    pub fn new(caller: &Principal, list: ListName, shape: &QueryShape, page: &PageRequest) -> Self {
        let own = match compliance_app::access::list_reach(caller, list) {
            Ok(Reach::Own) => Some(caller.member_id.clone()),
            _ => None,
        };
        let (org, page, shape) = (caller.organization_id.clone(), page.clone(), shape.clone());
        Self { org, list, include_inactive: false, own, shape, page }
    }

    pub fn including_inactive(self, include_inactive: bool) -> Self {
        Self { include_inactive, ..self }
    }

    pub fn organization(&self) -> &OrganizationId {
        &self.org
    }

    pub fn list(&self) -> ListName {
        self.list
    }

    /// The fingerprint the page's `nextCursor` carries.
    pub fn fingerprint(&self) -> String {
        self.shape.fingerprint()
    }
}

/// A page as it goes on the wire.
#[derive(Debug)]
pub struct ListPage {
    /// The items, a JSON array.
    data: Box<RawValue>,
    /// The number of matching rows in all.
    count: u64,
    next_cursor: Option<String>,
}

impl ListPage {
    /// `page` as it goes on the wire, its items serialized by `data` (see [`items`]).
    pub fn serialize<T>(
        page: &Page<T>,
        data: impl FnOnce(&Page<T>) -> serde_json::Result<Box<RawValue>>,
        fingerprint: &str,
    ) -> Result<Arc<Self>, ApiError> {
        let data = data(page)
            .map_err(|error| ApiError::from(AppError::Internal(format!("a list page did not serialize: {error}"))))?;
        Ok(Arc::new(Self {
            data,
            count: page.total,
            next_cursor: page.next.as_ref().map(|next| crate::paging::encode(next, fingerprint)),
        }))
    }

    /// The items, a JSON array.
    pub fn data(&self) -> &RawValue {
        &self.data
    }

    /// The number of matching rows in all.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Where the next page starts; `None` on the last page.
    pub fn next_cursor(&self) -> Option<&str> {
        self.next_cursor.as_deref()
    }

    /// The bytes it holds, as the cache counts them.
    fn size(&self) -> usize {
        self.data.get().len() + self.next_cursor.as_ref().map_or(0, String::len)
    }
}

/// The kept pages, at most `budget` bytes of them; the oldest kept go first.
pub struct ListCache {
    budget: usize,
    kept: Mutex<KeptPages>,
}

#[derive(Default)]
struct KeptPages {
    pages: HashMap<ListKey, Entry>,
    /// Keys in the order they were kept, each with its entry's number; a number that is no longer
    /// its key's (the page was kept again since) is skipped.
    order: VecDeque<(u64, ListKey)>,
    bytes: usize,
    kept_so_far: u64,
}

struct Entry {
    number: u64,
    generation: u64,
    page: Arc<ListPage>,
}

impl ListCache {
    /// A cache of at most `budget` bytes of pages; zero keeps none. A page over a quarter of the
    /// budget is not kept, so that one huge list does not push out every other.
    pub fn new(budget: usize) -> Self {
        Self { budget, kept: Mutex::default() }
    }

    /// Whether pages are kept at all: with no budget, a list is loaded every time and its
    /// generation is not even read.
    pub fn keeps_pages(&self) -> bool {
        self.budget > 0
    }

    /// The page kept under `key`, if it was loaded at `generation` (its list unchanged since).
    pub fn current(&self, key: &ListKey, generation: u64) -> Option<Arc<ListPage>> {
        let kept = self.lock();
        kept.pages.get(key).filter(|entry| entry.generation == generation).map(|entry| entry.page.clone())
    }

    /// Keeps `page`, loaded at `generation`, under `key`; the oldest kept pages go when the budget
    /// is exceeded, and a page over a quarter of the budget is not kept.
    pub fn keep(&self, key: ListKey, generation: u64, page: Arc<ListPage>) {
        let size = page.size();
        if size > self.budget / 4 {
            return;
        }
        let mut kept = self.lock();
        let kept = &mut *kept;
        kept.kept_so_far += 1;
        let number = kept.kept_so_far;
        kept.order.push_back((number, key.clone()));
        kept.bytes += size;
        if let Some(replaced) = kept.pages.insert(key, Entry { number, generation, page }) {
            kept.bytes -= replaced.page.size();
        }
        while kept.bytes > self.budget {
            let Some((number, key)) = kept.order.pop_front() else { break };
            if kept.pages.get(&key).is_some_and(|entry| entry.number == number)
                && let Some(evicted) = kept.pages.remove(&key)
            {
                kept.bytes -= evicted.page.size();
            }
        }
        // Keys of pages kept again since pile up at the back only while nothing is evicted.
        if kept.order.len() > 2 * kept.pages.len() + 64 {
            let pages = &kept.pages;
            kept.order.retain(|(number, key)| pages.get(key).is_some_and(|entry| entry.number == *number));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KeptPages> {
        // The map stays consistent at every await-free step, so a panic elsewhere leaves it usable.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The items of `page`, each as `item` shows it on the wire, as one JSON array.
pub fn items<'p, T, D: Serialize>(
    page: &'p Page<T>,
    item: impl FnMut(&'p T) -> D,
) -> serde_json::Result<Box<RawValue>> {
    serde_json::value::to_raw_value(&page.items.iter().map(item).collect::<Vec<D>>())
}

#[cfg(test)]
mod tests {
    use compliance_app::AuthType;
    use compliance_domain::UserId;
    use compliance_ports::Cursor;

    use super::*;

    fn shape(query: &str) -> QueryShape {
        crate::list_query::ListParams::parse(query).shape("risks")
    }

    fn caller(org: &OrganizationId) -> Principal {
        Principal {
            organization_id: org.clone(),
            user_id: UserId::generate(),
            email: "a@example.com".into(),
            member_id: compliance_domain::MemberId::generate(),
            auth_type: AuthType::ApiKey,
            role: "owner".into(),
            scopes: None,
            api_key_id: None,
            request_id: None,
            idempotency: None,
        }
    }

    /// Serializes `items` as a page and keeps it under `key` at `generation`.
    fn keep(cache: &ListCache, key: &ListKey, generation: u64, items: Vec<u32>) -> Arc<ListPage> {
        let total = items.len() as u64;
        let page =
            ListPage::serialize(&Page { items, total, next: None }, |page| super::items(page, |n| *n), "f").unwrap();
        cache.keep(key.clone(), generation, page.clone());
        page
    }

    #[test]
    fn a_loaded_page_is_kept_with_its_generation_per_organization() {
        let (a, b) = (OrganizationId::generate(), OrganizationId::generate());
        let cache = ListCache::new(1 << 20);
        let key = ListKey::new(&caller(&a), ListName::Risks, &shape(""), &PageRequest::first(10));
        let page = keep(&cache, &key, 7, vec![1, 2, 3]);
        assert_eq!(page.data.get(), "[1,2,3]");
        assert_eq!(cache.current(&key, 7).map(|page| page.data.get().to_owned()).as_deref(), Some("[1,2,3]"));
        assert!(cache.current(&key, 8).is_none(), "a list changed since is loaded again");
        for other in [
            ListKey::new(&caller(&b), ListName::Risks, &shape(""), &PageRequest::first(10)),
            ListKey::new(&caller(&a), ListName::Risks, &shape("status=open"), &PageRequest::first(10)),
            ListKey::new(&caller(&a), ListName::Risks, &shape("sort=title"), &PageRequest::first(10)),
            ListKey::new(&caller(&a), ListName::Vendors, &shape(""), &PageRequest::first(10)),
            ListKey::new(&caller(&a), ListName::Risks, &shape(""), &PageRequest::first(11)),
            key.clone().including_inactive(true),
            ListKey::new(
                &caller(&a),
                ListName::Risks,
                &shape(""),
                &PageRequest {
                    after: Some(Cursor::newest_first(compliance_domain::Timestamp::now(), "x".into())),
                    ..PageRequest::first(10)
                },
            ),
        ] {
            assert!(cache.current(&other, 7).is_none(), "{other:?}");
        }
    }

    #[test]
    fn the_oldest_pages_go_first_and_a_big_page_is_not_kept() {
        let org = OrganizationId::generate();
        let key = |limit| ListKey::new(&caller(&org), ListName::Risks, &shape(""), &PageRequest::first(limit));
        // "[1,2,…]" of 10 items is 22 bytes: four of them fit in 100.
        let cache = ListCache::new(100);
        for limit in 1..=5 {
            keep(&cache, &key(limit), 1, (1..=10).collect());
        }
        assert!(cache.current(&key(1), 1).is_none());
        assert!((2..=5).all(|limit| cache.current(&key(limit), 1).is_some()));
        // Kept again, the second is now the newest: the third goes next.
        keep(&cache, &key(2), 2, (1..=10).collect());
        keep(&cache, &key(6), 1, (1..=10).collect());
        assert!(cache.current(&key(3), 1).is_none());
        assert!(cache.current(&key(2), 2).is_some());
        assert!(cache.lock().bytes <= 100);
        keep(&cache, &key(7), 1, (1..=30).collect());
        assert!(cache.current(&key(7), 1).is_none(), "over a quarter of the budget");
        assert!(!ListCache::new(0).keeps_pages(), "no budget: the generation is not even read");
    }
}
