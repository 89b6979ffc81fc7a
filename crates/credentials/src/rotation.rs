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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotationReport {
    pub reencrypted: u64,
    /// Secrets that changed while they were being re-encrypted; they are current already or will
    /// be taken up by the next run.
    pub skipped: u64,
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
    let mut report = RotationReport { reencrypted: 0, skipped: 0 };
    progress(0, total);
    while report.reencrypted + report.skipped < total {
        let batch = secrets.stale(&current, BATCH).await?;
        if batch.is_empty() {
            break;
        }
        for secret in batch {
            if reencrypt_one(secrets, keyring, &secret, &current).await? {
                report.reencrypted += 1;
            } else {
                report.skipped += 1;
            }
            progress(report.reencrypted + report.skipped, total);
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
    let updated = StoredSecret {
        key_id: current.to_owned(),
        ciphertext,
        updated_at: compliance_domain::Timestamp::now(),
        ..secret.clone()
    };
    Ok(secrets.reencrypt(&updated, &secret.key_id).await?)
}
