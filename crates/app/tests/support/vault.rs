//! The vault in memory: a secret store, a cipher that binds each ciphertext to its owner (without
//! encrypting: these tests look at who may open what, not at cryptography), and connections.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use compliance_domain::integration::Connection;
use compliance_domain::{ConnectionId, OrganizationId, Timestamp};
use compliance_ports::{
    CipherError, ConnectionRepository, RepoError, SecretCipher, SecretOwner, SecretRepository, StoredSecret,
};
use secrecy::{ExposeSecret, SecretString};

use super::audit::Drafts;

type Owner = (String, String, String);

#[derive(Default)]
pub struct MemorySecrets {
    rows: Mutex<BTreeMap<Owner, StoredSecret>>,
}

impl MemorySecrets {
    /// Every ciphertext stored, for tests that look for a value where it must not be.
    pub fn ciphertexts(&self) -> Vec<Vec<u8>> {
        self.rows.lock().unwrap().values().map(|s| s.ciphertext.clone()).collect()
    }
}

fn key(org: &OrganizationId, kind: &str, id: &str) -> Owner {
    (org.to_string(), kind.to_owned(), id.to_owned())
}

#[async_trait]
impl SecretRepository for MemorySecrets {
    async fn put(&self, secret: &StoredSecret) -> Result<(), RepoError> {
        let owner = key(&secret.organization_id, &secret.owner_kind, &secret.owner_id);
        self.rows.lock().unwrap().insert(owner, secret.clone());
        Ok(())
    }
    async fn get(&self, org: &OrganizationId, kind: &str, id: &str) -> Result<Option<StoredSecret>, RepoError> {
        Ok(self.rows.lock().unwrap().get(&key(org, kind, id)).cloned())
    }
    async fn owner_ids(&self, org: &OrganizationId, kind: &str) -> Result<Vec<String>, RepoError> {
        let rows = self.rows.lock().unwrap();
        Ok(rows.keys().filter(|(o, k, _)| *o == org.as_str() && k == kind).map(|(_, _, id)| id.clone()).collect())
    }
    async fn children(&self, org: &OrganizationId, kind: &str, parent: &str) -> Result<Vec<StoredSecret>, RepoError> {
        let prefix = format!("{parent}/");
        let rows = self.rows.lock().unwrap();
        let mine = |(o, k, id): &Owner| *o == org.as_str() && k == kind && id.starts_with(&prefix);
        Ok(rows.iter().filter(|(owner, _)| mine(owner)).map(|(_, s)| s.clone()).collect())
    }
    async fn delete(&self, org: &OrganizationId, kind: &str, id: &str) -> Result<bool, RepoError> {
        Ok(self.rows.lock().unwrap().remove(&key(org, kind, id)).is_some())
    }
    async fn put_audited(
        &self,
        secret: &StoredSecret,
        _: &compliance_domain::etag::IfMatch,
        _: &compliance_ports::AuditOf<'_, StoredSecret>,
    ) -> Result<(), RepoError> {
        self.put(secret).await
    }
    async fn delete_audited(
        &self,
        org: &OrganizationId,
        kind: &str,
        id: &str,
        _: &compliance_domain::etag::IfMatch,
        _: &compliance_ports::AuditOf<'_, StoredSecret>,
    ) -> Result<bool, RepoError> {
        self.delete(org, kind, id).await
    }
    async fn count_stale(&self, _current: &str) -> Result<u64, RepoError> {
        Ok(0)
    }
    async fn stale(&self, _current: &str, _limit: usize) -> Result<Vec<StoredSecret>, RepoError> {
        Ok(Vec::new())
    }
    async fn reencrypt(&self, _secret: &StoredSecret, _previous: &[u8]) -> Result<bool, RepoError> {
        Ok(false)
    }
}

/// "Seals" as the owner, a NUL, then the value reversed; opens only for the same owner.
pub struct BindingCipher;

fn tag(owner: SecretOwner<'_>) -> String {
    format!("{}|{}|{}\0", owner.organization_id, owner.owner_kind, owner.owner_id)
}

impl SecretCipher for BindingCipher {
    fn current_key_id(&self) -> String {
        "test-key".into()
    }
    fn seal(&self, plaintext: &SecretString, owner: SecretOwner<'_>) -> Result<Vec<u8>, CipherError> {
        let reversed: String = plaintext.expose_secret().chars().rev().collect();
        Ok(format!("{}{reversed}", tag(owner)).into_bytes())
    }
    fn open(&self, ciphertext: &[u8], owner: SecretOwner<'_>) -> Result<SecretString, CipherError> {
        let text = std::str::from_utf8(ciphertext).map_err(|_| CipherError("decrypt a secret"))?;
        let reversed = text.strip_prefix(&tag(owner)).ok_or(CipherError("decrypt a secret"))?;
        Ok(SecretString::from(reversed.chars().rev().collect::<String>()))
    }
}

/// Integration connections in memory, with the store's rules: one live connection per provider,
/// an update only while the row is as it was read, a disconnected connection final. Each write
/// makes its audit draft with the row before and after, as the store does, kept in `Drafts`.
#[derive(Default)]
pub struct MemoryConnections {
    rows: Mutex<Vec<Connection>>,
    drafts: Drafts,
}

impl MemoryConnections {
    pub fn new(drafts: Drafts) -> Self {
        Self { rows: Mutex::default(), drafts }
    }

    /// A new active connection of `org`, made by `by`.
    pub fn add(&self, org: &OrganizationId, by: &compliance_domain::UserId, now: Timestamp) -> ConnectionId {
        let connection = Connection {
            id: ConnectionId::generate(),
            organization_id: org.clone(),
            provider: "acme".into(),
            status: compliance_domain::integration::ConnectionStatus::Active,
            created_by: by.clone(),
            created_at: now,
            updated_at: now,
            connected_at: Some(now),
            disconnected_at: None,
            token_expires_at: None,
            last_checked_at: None,
            last_error: None,
        };
        let id = connection.id.clone();
        self.rows.lock().unwrap().push(connection);
        id
    }

    /// Someone else disconnects `id` at `now` (another request, another instance).
    pub fn disconnect_behind_the_back(&self, id: &ConnectionId, now: Timestamp) {
        let mut rows = self.rows.lock().unwrap();
        let row = rows.iter_mut().find(|c| &c.id == id).unwrap();
        row.disconnect(now);
    }

    /// The connection as stored.
    pub fn row(&self, id: &ConnectionId) -> Connection {
        self.rows.lock().unwrap().iter().find(|c| &c.id == id).cloned().unwrap()
    }
}

#[async_trait]
impl ConnectionRepository for MemoryConnections {
    async fn insert(
        &self,
        connection: &Connection,
        audit: &compliance_ports::AuditOf<'_, Connection>,
        // No controls here to link: the links are tested over both databases in tests/api.
        _: &compliance_ports::SuggestedChecks<'_>,
    ) -> Result<(), RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let live = |c: &&Connection| {
            c.organization_id == connection.organization_id && c.provider == connection.provider && !c.is_disconnected()
        };
        if rows.iter().any(|c| live(&c)) {
            return Err(RepoError::Conflict("a live connection to this provider exists".into()));
        }
        self.drafts.record(audit, None, Some(connection));
        rows.push(connection.clone());
        Ok(())
    }
    async fn list(
        &self,
        org: &OrganizationId,
        _query: &compliance_ports::ConnectionQuery,
    ) -> Result<compliance_ports::Page<Connection>, RepoError> {
        let items: Vec<Connection> =
            self.rows.lock().unwrap().iter().filter(|c| &c.organization_id == org).cloned().collect();
        let total = items.len() as u64;
        Ok(compliance_ports::Page { items, total, next: None })
    }
    async fn get_connection(&self, org: &OrganizationId, id: &ConnectionId) -> Result<Connection, RepoError> {
        let rows = self.rows.lock().unwrap();
        rows.iter().find(|c| &c.organization_id == org && &c.id == id).cloned().ok_or(RepoError::NotFound)
    }
    async fn find_live(&self, org: &OrganizationId, provider: &str) -> Result<Option<Connection>, RepoError> {
        let rows = self.rows.lock().unwrap();
        Ok(rows.iter().find(|c| &c.organization_id == org && c.provider == provider && !c.is_disconnected()).cloned())
    }
    async fn update_connection(
        &self,
        connection: &Connection,
        read_at: Timestamp,
        audit: &compliance_ports::AuditOf<'_, Connection>,
    ) -> Result<(), RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let row = rows
            .iter_mut()
            .find(|c| c.organization_id == connection.organization_id && c.id == connection.id)
            .filter(|c| !c.is_disconnected() && c.updated_at == read_at)
            .ok_or(RepoError::NotFound)?;
        self.drafts.record(audit, Some(&*row), Some(connection));
        *row = connection.clone();
        Ok(())
    }
}
