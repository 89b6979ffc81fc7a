//! Re-encrypting every stored secret under the vault's current key, resumably.

use compliance_ports::{RepoError, SecretRepository, StoredSecret};

use crate::vault::{Binding, Keyring, VaultError};

/// How many secrets are read and re-encrypted at a time.
const BATCH: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum RotationError {
    #[error("the secret store failed: {0}")]
    Store(#[from] RepoError),
    /// Names the owner, never the secret: an old key is missing from the keyring, or the row was
    /// tampered with.
    #[error("the secret of {owner_kind} {owner_id} cannot be decrypted: {source}")]
    Decrypt { owner_kind: String, owner_id: String, source: VaultError },
    #[error("re-encryption failed: {0}")]
    Encrypt(VaultError),
}

/// What a rotation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotationReport {
    pub reencrypted: u64,
    /// Secrets that changed while they were being re-encrypted; they are current already or will
    /// be taken up by the next run.
    pub skipped: u64,
    /// Secrets that could not be decrypted (an old key missing from the keyring, or a tampered
    /// row), by owner kind and id; the others are rotated all the same.
    pub undecryptable: Vec<(String, String)>,
}

/// Re-encrypts every secret not under `keyring`'s current key. Each row is replaced on its own,
/// only if it is still under the key it was read with, so an interrupted run leaves every row
/// valid and a second run picks up where the first stopped. `progress(done, total)` is called after
/// each row.
pub async fn reencrypt_all(
    secrets: &dyn SecretRepository,
    keyring: &Keyring,
    mut progress: impl FnMut(u64, u64),
) -> Result<RotationReport, RotationError> {
    let current = keyring.current_key_id();
    let total = secrets.count_stale(&current).await?;
    let mut report = RotationReport { reencrypted: 0, skipped: 0, undecryptable: Vec::new() };
    let mut seen = 0;
    progress(0, total);
    // Rows that cannot be decrypted stay stale and come back in later batches: they are counted
    // once, and a batch of nothing but them ends the run.
    while seen < total {
        let batch = secrets.stale(&current, BATCH).await?;
        let known = |s: &StoredSecret| report.undecryptable.iter().any(|(k, i)| *k == s.owner_kind && *i == s.owner_id);
        let fresh: Vec<StoredSecret> = batch.into_iter().filter(|s| !known(s)).collect();
        if fresh.is_empty() {
            break;
        }
        for secret in fresh {
            match reencrypt_one(secrets, keyring, &secret, &current).await {
                Ok(true) => report.reencrypted += 1,
                Ok(false) => report.skipped += 1,
                Err(RotationError::Decrypt { owner_kind, owner_id, .. }) => {
                    report.undecryptable.push((owner_kind, owner_id));
                }
                Err(other) => return Err(other),
            }
            seen += 1;
            progress(seen, total);
        }
    }
    Ok(report)
}

async fn reencrypt_one(
    secrets: &dyn SecretRepository,
    keyring: &Keyring,
    secret: &StoredSecret,
    current: &str,
) -> Result<bool, RotationError> {
    let binding = Binding {
        organization_id: secret.organization_id.as_str(),
        owner_kind: &secret.owner_kind,
        owner_id: &secret.owner_id,
    };
    let plaintext = keyring.decrypt(&secret.ciphertext, binding).map_err(|source| RotationError::Decrypt {
        owner_kind: secret.owner_kind.clone(),
        owner_id: secret.owner_id.clone(),
        source,
    })?;
    let ciphertext = keyring.encrypt(&plaintext, binding).map_err(RotationError::Encrypt)?;
    // Same value, same `updated_at`: a rotation changes no tag a client holds.
    let updated = StoredSecret { key_id: current.to_owned(), ciphertext, ..secret.clone() };
    Ok(secrets.reencrypt(&updated, &secret.ciphertext).await?)
}
