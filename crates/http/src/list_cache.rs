//! List pages kept serialized in memory: asked for again, a page is answered from here while the
//! database says its list has not changed since (one read of the list's generation), without
//! loading, decoding or serializing its rows.
//!
//! A page is kept per organization, list, filter and page request. Only the items, the total and
//! the next cursor are kept; `authType` and `authenticatedUser` are the caller's and are written
//! around them on every response.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use compliance_app::{AppError, Held, Kept, Listed, Principal};
use compliance_domain::OrganizationId;
use compliance_ports::{ListName, Page, PageRequest};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::ApiError;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, ListEnvelope, auth_type};

/// Which page of which list: everything the items depend on. The caller's organization comes
/// first, so one organization's pages are never another's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListKey {
    org: OrganizationId,
    list: ListName,
    /// The people list's `includeInactive`; `false` elsewhere.
    include_inactive: bool,
    page: PageRequest,
}

impl ListKey {
    pub fn new(caller: &Principal, list: ListName, page: &PageRequest) -> Self {
        Self { org: caller.organization_id.clone(), list, include_inactive: false, page: page.clone() }
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
    fn of<T>(page: &Page<T>, data: Box<RawValue>) -> Self {
        Self { data, count: page.total, next_cursor: page.next.as_ref().map(crate::paging::encode) }
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

    /// `{data, count, nextCursor, authType, authenticatedUser}` for `caller`.
    pub fn envelope<'a>(&'a self, caller: &'a Principal) -> ListEnvelope<'a, &'a RawValue> {
        ListEnvelope {
            data: &self.data,
            count: Some(self.count),
            next_cursor: self.next_cursor.as_deref(),
            auth_type: auth_type(caller, AuthTypeStyle::Standard),
            authenticated_user: Some(AuthenticatedUser::of(caller)),
        }
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

    /// What is kept under `key`: the page, with its list's generation when it was loaded.
    pub fn held(&self, key: &ListKey) -> Held<Arc<ListPage>> {
        if self.budget == 0 {
            return Held::NotKeeping;
        }
        let kept = self.lock();
        Held::Keeping(kept.pages.get(key).map(|entry| Kept { generation: entry.generation, value: entry.page.clone() }))
    }

    /// The page a list call answered: the kept one when still current, else the one loaded,
    /// serialized with `data` (see [`items`]) and kept.
    pub fn answer<T>(
        &self,
        key: ListKey,
        listed: Listed<Arc<ListPage>, Page<T>>,
        data: impl FnOnce(&Page<T>) -> serde_json::Result<Box<RawValue>>,
    ) -> Result<Arc<ListPage>, ApiError> {
        match listed {
            Listed::Current(page) => Ok(page),
            Listed::Loaded { generation, page } => {
                let data = data(&page).map_err(|error| {
                    ApiError::from(AppError::Internal(format!("a list page did not serialize: {error}")))
                })?;
                let page = Arc::new(ListPage::of(&page, data));
                if let Some(generation) = generation {
                    self.keep(key, generation, page.clone());
                }
                Ok(page)
            }
        }
    }

    fn keep(&self, key: ListKey, generation: u64, page: Arc<ListPage>) {
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

    fn caller(org: &OrganizationId) -> Principal {
        Principal {
            organization_id: org.clone(),
            user_id: UserId::generate(),
            email: "a@example.com".into(),
            auth_type: AuthType::ApiKey,
            role: "owner".into(),
        }
    }

    fn kept(cache: &ListCache, key: &ListKey) -> Option<Kept<Arc<ListPage>>> {
        match cache.held(key) {
            Held::Keeping(kept) => kept,
            Held::NotKeeping => panic!("a cache with a budget keeps pages"),
        }
    }

    fn loaded(generation: u64, items: Vec<u32>) -> Listed<Arc<ListPage>, Page<u32>> {
        let total = items.len() as u64;
        Listed::Loaded { generation: Some(generation), page: Page { items, total, next: None } }
    }

    #[test]
    fn a_loaded_page_is_kept_with_its_generation_per_organization() {
        let (a, b) = (OrganizationId::generate(), OrganizationId::generate());
        let cache = ListCache::new(1 << 20);
        let key = ListKey::new(&caller(&a), ListName::Risks, &PageRequest::first(10));
        let page = cache.answer(key.clone(), loaded(7, vec![1, 2, 3]), |page| items(page, |n| *n)).unwrap();
        assert_eq!(page.data.get(), "[1,2,3]");
        let page = kept(&cache, &key).unwrap();
        assert_eq!((page.generation, page.value.data.get()), (7, "[1,2,3]"));
        for other in [
            ListKey::new(&caller(&b), ListName::Risks, &PageRequest::first(10)),
            ListKey::new(&caller(&a), ListName::Vendors, &PageRequest::first(10)),
            ListKey::new(&caller(&a), ListName::Risks, &PageRequest::first(11)),
            key.clone().including_inactive(true),
            ListKey::new(
                &caller(&a),
                ListName::Risks,
                &PageRequest {
                    after: Some(Cursor { created_at: compliance_domain::Timestamp::now(), id: "x".into() }),
                    ..PageRequest::first(10)
                },
            ),
        ] {
            assert!(kept(&cache, &other).is_none(), "{other:?}");
        }
    }

    #[test]
    fn the_oldest_pages_go_first_and_a_big_page_is_not_kept() {
        let org = OrganizationId::generate();
        let key = |limit| ListKey::new(&caller(&org), ListName::Risks, &PageRequest::first(limit));
        // "[1,2,…]" of 10 items is 22 bytes: four of them fit in 100.
        let cache = ListCache::new(100);
        for limit in 1..=5 {
            cache.answer(key(limit), loaded(1, (1..=10).collect()), |page| items(page, |n| *n)).unwrap();
        }
        assert!(kept(&cache, &key(1)).is_none());
        assert!((2..=5).all(|limit| kept(&cache, &key(limit)).is_some()));
        // Kept again, the second is now the newest: the third goes next.
        cache.answer(key(2), loaded(2, (1..=10).collect()), |page| items(page, |n| *n)).unwrap();
        cache.answer(key(6), loaded(1, (1..=10).collect()), |page| items(page, |n| *n)).unwrap();
        assert!(kept(&cache, &key(3)).is_none());
        assert_eq!(kept(&cache, &key(2)).map(|kept| kept.generation), Some(2));
        assert!(cache.lock().bytes <= 100);
        cache.answer(key(7), loaded(1, (1..=30).collect()), |page| items(page, |n| *n)).unwrap();
        assert!(kept(&cache, &key(7)).is_none(), "over a quarter of the budget");
        let none = ListCache::new(0);
        assert!(matches!(none.held(&key(1)), Held::NotKeeping), "no budget: the generation is not even read");
        assert!(none.answer(key(1), loaded(1, vec![1]), |page| items(page, |n| *n)).is_ok());
    }
}
