use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use compliance_domain::chat::ChatMessage;
use compliance_domain::{OrganizationId, UserId};
use compliance_ports::{ChatStore, RepoError};

/// The fewest entries at which `replace` sweeps out expired histories.
const MIN_SWEEP_LEN: usize = 64;

/// Chat histories in this process's memory; they are lost on restart and not shared between servers.
#[derive(Debug, Default)]
pub struct MemoryChatStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<(OrganizationId, UserId), Entry>,
    /// `replace` sweeps when the map reaches this size, then sets it to twice what is left, so the
    /// sweeps cost O(1) per write on average and the map stays within twice its live size.
    sweep_at_len: usize,
}

#[derive(Debug)]
struct Entry {
    messages: Vec<ChatMessage>,
    /// `None` when the time to live is too long to represent: it never expires.
    expires_at: Option<Instant>,
}

impl Entry {
    fn is_live(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }
}

impl MemoryChatStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// The lock holds plain data that every operation leaves consistent, so a poisoned lock is still usable.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl ChatStore for MemoryChatStore {
    async fn replace(
        &self,
        org: &OrganizationId,
        user: &UserId,
        messages: &[ChatMessage],
        ttl: Duration,
    ) -> Result<(), RepoError> {
        let now = Instant::now();
        let entry = Entry { messages: messages.to_vec(), expires_at: now.checked_add(ttl) };
        let mut inner = self.lock();
        inner.entries.insert((org.clone(), user.clone()), entry);
        if inner.entries.len() >= inner.sweep_at_len.max(MIN_SWEEP_LEN) {
            inner.entries.retain(|_, entry| entry.is_live(now));
            inner.sweep_at_len = inner.entries.len() * 2;
        }
        Ok(())
    }

    async fn get(&self, org: &OrganizationId, user: &UserId) -> Result<Vec<ChatMessage>, RepoError> {
        let key = (org.clone(), user.clone());
        let mut inner = self.lock();
        match inner.entries.get(&key) {
            Some(entry) if entry.is_live(Instant::now()) => Ok(entry.messages.clone()),
            Some(_) => {
                inner.entries.remove(&key);
                Ok(Vec::new())
            }
            None => Ok(Vec::new()),
        }
    }

    async fn clear(&self, org: &OrganizationId, user: &UserId) -> Result<(), RepoError> {
        self.lock().entries.remove(&(org.clone(), user.clone()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    #[tokio::test]
    async fn replace_sweeps_expired_histories() {
        let store = MemoryChatStore::new();
        let org = OrganizationId::generate();
        for _ in 0..MIN_SWEEP_LEN - 1 {
            store.replace(&org, &UserId::generate(), &[], Duration::ZERO).await.unwrap();
        }
        assert_eq!(store.lock().entries.len(), MIN_SWEEP_LEN - 1, "no sweep below the threshold");
        let live = UserId::generate();
        store.replace(&org, &live, &[], Duration::from_secs(60)).await.unwrap();
        let inner = store.lock();
        assert_eq!(inner.entries.len(), 1, "the sweep keeps only the live history");
        assert!(inner.entries.contains_key(&(org, live)));
    }
}
