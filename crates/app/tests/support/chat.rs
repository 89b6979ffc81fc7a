//! Chat histories that expire by the fake clock, and a record of the time to live each write asked
//! for: the use case decides the TTL, the store enforces it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use compliance_domain::chat::ChatMessage;
use compliance_domain::{OrganizationId, Timestamp, UserId};
use compliance_ports::{ChatStore, Clock, RepoError};

use super::FakeClock;

pub struct MemoryChat {
    clock: Arc<FakeClock>,
    histories: Mutex<HashMap<(OrganizationId, UserId), History>>,
    ttls: Mutex<Vec<Duration>>,
}

struct History {
    messages: Vec<ChatMessage>,
    expires: Timestamp,
}

impl MemoryChat {
    pub fn new(clock: Arc<FakeClock>) -> Self {
        Self { clock, histories: Mutex::default(), ttls: Mutex::default() }
    }

    /// The TTL of every `replace` so far, in order.
    pub fn ttls(&self) -> Vec<Duration> {
        self.ttls.lock().unwrap().clone()
    }
}

#[async_trait]
impl ChatStore for MemoryChat {
    async fn replace(
        &self,
        org: &OrganizationId,
        user: &UserId,
        messages: &[ChatMessage],
        ttl: Duration,
    ) -> Result<(), RepoError> {
        self.ttls.lock().unwrap().push(ttl);
        let expires = self.clock.now().plus(time::Duration::try_from(ttl).unwrap());
        self.histories
            .lock()
            .unwrap()
            .insert((org.clone(), user.clone()), History { messages: messages.to_vec(), expires });
        Ok(())
    }

    async fn get(&self, org: &OrganizationId, user: &UserId) -> Result<Vec<ChatMessage>, RepoError> {
        let now = self.clock.now();
        let histories = self.histories.lock().unwrap();
        Ok(histories
            .get(&(org.clone(), user.clone()))
            .filter(|history| now < history.expires)
            .map(|history| history.messages.clone())
            .unwrap_or_default())
    }

    async fn clear(&self, org: &OrganizationId, user: &UserId) -> Result<(), RepoError> {
        self.histories.lock().unwrap().remove(&(org.clone(), user.clone()));
        Ok(())
    }
}
