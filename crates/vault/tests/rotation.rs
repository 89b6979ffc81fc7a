#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! Vault key rotation over a secret store: everything ends under the new key, still decrypts, and
//! an interrupted run is finished by the next one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{RepoError, SecretRepository, StoredSecret};
use compliance_vault::{Binding, Key, Keyring, reencrypt_all};

type Owner = (String, String, String);

/// An in-memory secret store that can be told to fail after a number of re-encryptions.
#[derive(Default)]
struct Secrets {
    rows: Mutex<BTreeMap<Owner, StoredSecret>>,
    failures_after: Mutex<Option<usize>>,
    reencryptions: AtomicUsize,
}

fn owner(s: &StoredSecret) -> Owner {
    (s.organization_id.to_string(), s.owner_kind.clone(), s.owner_id.clone())
}

#[async_trait]
impl SecretRepository for Secrets {
    async fn put(&self, secret: &StoredSecret) -> Result<(), RepoError> {
        self.rows.lock().unwrap().insert(owner(secret), secret.clone());
        Ok(())
    }
    async fn get(&self, org: &OrganizationId, kind: &str, id: &str) -> Result<Option<StoredSecret>, RepoError> {
        Ok(self.rows.lock().unwrap().get(&(org.to_string(), kind.into(), id.into())).cloned())
    }
    async fn owner_ids(&self, org: &OrganizationId, kind: &str) -> Result<Vec<String>, RepoError> {
        // The map is ordered by (organization, kind, id), so the ids come out sorted.
        let rows = self.rows.lock().unwrap();
        Ok(rows.keys().filter(|(o, k, _)| *o == org.as_str() && k == kind).map(|(_, _, id)| id.clone()).collect())
    }
    async fn children(&self, org: &OrganizationId, kind: &str, parent: &str) -> Result<Vec<StoredSecret>, RepoError> {
        let rows = self.rows.lock().unwrap();
        let prefix = format!("{parent}/");
        let mine = |(o, k, id): &Owner| *o == org.as_str() && k == kind && id.starts_with(&prefix);
        Ok(rows.iter().filter(|(key, _)| mine(key)).map(|(_, secret)| secret.clone()).collect())
    }
    async fn delete(&self, org: &OrganizationId, kind: &str, id: &str) -> Result<bool, RepoError> {
        Ok(self.rows.lock().unwrap().remove(&(org.to_string(), kind.into(), id.into())).is_some())
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
    async fn count_stale(&self, current: &str) -> Result<u64, RepoError> {
        Ok(self.rows.lock().unwrap().values().filter(|s| s.key_id != current).count() as u64)
    }
    async fn stale(&self, current: &str, limit: usize) -> Result<Vec<StoredSecret>, RepoError> {
        Ok(self.rows.lock().unwrap().values().filter(|s| s.key_id != current).take(limit).cloned().collect())
    }
    async fn reencrypt(&self, secret: &StoredSecret, previous: &[u8]) -> Result<bool, RepoError> {
        let done = self.reencryptions.fetch_add(1, Ordering::SeqCst);
        if self.failures_after.lock().unwrap().is_some_and(|limit| done >= limit) {
            return Err(RepoError::Unavailable("the database went away".into()));
        }
        let mut rows = self.rows.lock().unwrap();
        match rows.get_mut(&owner(secret)) {
            Some(row) if row.ciphertext == previous => {
                *row = secret.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

fn binding(secret: &StoredSecret) -> Binding<'_> {
    Binding {
        organization_id: secret.organization_id.as_str(),
        owner_kind: &secret.owner_kind,
        owner_id: &secret.owner_id,
    }
}

#[tokio::test]
async fn rotation_reencrypts_everything_and_resumes_after_an_interruption() {
    let old_key = Key::generate();
    let old = Keyring::new(old_key.clone(), Vec::new()).unwrap();
    let secrets = Secrets::default();
    let orgs = [OrganizationId::generate(), OrganizationId::generate()];
    for n in 0..250 {
        let mut secret = StoredSecret {
            organization_id: orgs[n % 2].clone(),
            owner_kind: "connection".into(),
            owner_id: format!("c{n:03}"),
            key_id: old.current_key_id(),
            ciphertext: Vec::new(),
            updated_at: Timestamp::now(),
        };
        secret.ciphertext = old.encrypt(format!("token-{n}").as_bytes(), binding(&secret)).unwrap();
        secrets.put(&secret).await.unwrap();
    }
    // One row under a key nobody kept: reported, and it does not stop the others.
    let lost = Keyring::new(Key::generate(), Vec::new()).unwrap();
    let mut orphan = StoredSecret {
        organization_id: orgs[0].clone(),
        owner_kind: "connection".into(),
        owner_id: "c000-lost".into(),
        key_id: lost.current_key_id(),
        ciphertext: Vec::new(),
        updated_at: Timestamp::now(),
    };
    orphan.ciphertext = lost.encrypt(b"gone", binding(&orphan)).unwrap();
    secrets.put(&orphan).await.unwrap();
    let rotated = Keyring::new(Key::generate(), vec![old_key]).unwrap();

    *secrets.failures_after.lock().unwrap() = Some(120);
    let interrupted = reencrypt_all(&secrets, &rotated, |_, _| {}).await;
    assert!(interrupted.is_err(), "the store failed half-way");
    let left = secrets.count_stale(&rotated.current_key_id()).await.unwrap();
    assert_eq!(left, 131, "what was done stays done");

    *secrets.failures_after.lock().unwrap() = None;
    let mut seen = Vec::new();
    let report = reencrypt_all(&secrets, &rotated, |done, total| seen.push((done, total))).await.unwrap();
    assert_eq!(report.reencrypted, 130);
    assert_eq!(report.undecryptable, vec![("connection".to_owned(), "c000-lost".to_owned())]);
    assert_eq!(seen.last(), Some(&(131, 131)), "progress reaches the total");
    assert_eq!(secrets.count_stale(&rotated.current_key_id()).await.unwrap(), 1, "only the lost one");

    for (n, secret) in secrets.rows.lock().unwrap().values().filter(|s| s.owner_id != "c000-lost").enumerate() {
        let plain = rotated.decrypt(&secret.ciphertext, binding(secret)).unwrap();
        assert!(String::from_utf8(plain.to_vec()).unwrap().starts_with("token-"), "row {n}");
        assert!(!rotated.needs_reencryption(&secret.ciphertext).unwrap());
    }
}

/// What the use cases seal through the `SecretCipher` port (an OAuth connection's tokens, say)
/// is the vault's ciphertext: unreadable in the store, and readable again after a rotation.
#[tokio::test]
async fn secrets_sealed_through_the_port_live_encrypted_and_survive_rotation() {
    use compliance_ports::{SecretCipher, SecretOwner};
    use secrecy::{ExposeSecret, SecretString};

    let secrets = Arc::new(Secrets::default());
    let old_key = Key::generate();
    let keyring = Keyring::new(old_key.clone(), Vec::new()).unwrap();
    let org = OrganizationId::generate();
    let owner = SecretOwner { organization_id: &org, owner_kind: "oauth_tokens", owner_id: "con_1" };
    let document = r#"{"access_token":"at-visible-only-decrypted \"quoted\" \\ back"}"#;
    let secret = StoredSecret {
        organization_id: org.clone(),
        owner_kind: "oauth_tokens".into(),
        owner_id: "con_1".into(),
        key_id: SecretCipher::current_key_id(&keyring),
        ciphertext: keyring.seal(&SecretString::from(document), owner).unwrap(),
        updated_at: Timestamp::now(),
    };
    secrets.put(&secret).await.unwrap();
    for row in secrets.rows.lock().unwrap().values() {
        let raw = String::from_utf8_lossy(&row.ciphertext);
        assert!(!raw.contains("visible-only-decrypted"), "no plaintext in the store");
    }

    let rotated = Keyring::new(Key::generate(), vec![old_key]).unwrap();
    reencrypt_all(secrets.as_ref(), &rotated, |_, _| {}).await.unwrap();
    let stored = secrets.get(&org, "oauth_tokens", "con_1").await.unwrap().unwrap();
    assert!(!rotated.needs_reencryption(&stored.ciphertext).unwrap());
    assert_eq!(rotated.open(&stored.ciphertext, owner).unwrap().expose_secret(), document, "escapes survive");
}
