//! Where the vault's master keys come from: `VAULT_KEY` (and `VAULT_OLD_KEYS`), or a key file in
//! the data directory that is generated, owner-readable only, on first start.

use std::io::Write;
use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};

use crate::vault::{Key, Keyring, VaultError};

/// Where the keys are configured.
#[derive(Debug)]
pub enum KeySource {
    /// From the environment: the current key and older keys that still decrypt.
    Configured { current: SecretString, old: Vec<SecretString> },
    /// A file of base64 keys, one a line, the current one first.
    File(PathBuf),
}

/// Why the keys could not be loaded; never shows a key.
#[derive(Debug, thiserror::Error)]
pub enum KeyLoadError {
    #[error("vault key: {0}")]
    Invalid(#[from] VaultError),
    #[error("the vault key file {path} cannot be used: {reason}")]
    File { path: PathBuf, reason: String },
    #[error(
        "new keys are generated only into the key file; with VAULT_KEY set, set a new VAULT_KEY and move the old one to VAULT_OLD_KEYS"
    )]
    NotAFile,
}

/// The keyring, and whether a key file was just created (worth a log line: it must be backed up).
pub fn load_keyring(source: &KeySource) -> Result<(Keyring, bool), KeyLoadError> {
    match source {
        KeySource::Configured { current, old } => Ok((Keyring::from_base64_keys(current, old)?, false)),
        KeySource::File(path) => {
            // Of two first starts racing, one creates the file and both use its key.
            let created = !path.exists() && create_key_file(path, &[Key::generate().to_base64()])?;
            Ok((keyring_from_file(path)?, created))
        }
    }
}

/// Puts a newly generated key in front of the file's keys: it becomes current, the others still
/// decrypt. Returns the new keyring.
pub fn add_current_key(source: &KeySource) -> Result<Keyring, KeyLoadError> {
    let KeySource::File(path) = source else {
        return Err(KeyLoadError::NotAFile);
    };
    let _lock = KeyFileLock::take(path)?;
    let mut keys = vec![Key::generate().to_base64()];
    keys.extend(read_keys(path)?);
    let temporary = write_temporary(path, &keys)?;
    std::fs::rename(&temporary, path).map_err(|e| file_error(path, e))?;
    sync_directory(path)?;
    keyring_from_file(path)
}

/// Only one key change at a time: a second `--generate-key` racing the first would otherwise keep
/// a key the file loses.
struct KeyFileLock(PathBuf);

impl KeyFileLock {
    fn take(path: &Path) -> Result<Self, KeyLoadError> {
        let lock = path.with_extension("lock");
        std::fs::OpenOptions::new().write(true).create_new(true).open(&lock).map_err(|e| {
            file_error(path, format!("{e}: another key change holds {} (remove it if none runs)", lock.display()))
        })?;
        Ok(Self(lock))
    }
}

impl Drop for KeyFileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn keyring_from_file(path: &Path) -> Result<Keyring, KeyLoadError> {
    let keys = read_keys(path)?;
    let (current, old) = keys.split_first().ok_or_else(|| file_error(path, "it holds no key"))?;
    Ok(Keyring::from_base64_keys(current, old)?)
}

fn read_keys(path: &Path) -> Result<Vec<SecretString>, KeyLoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| file_error(path, e))?;
    Ok(text.lines().map(str::trim).filter(|line| !line.is_empty()).map(SecretString::from).collect())
}

/// Creates the key file unless it exists; whether this call created it.
fn create_key_file(path: &Path, keys: &[SecretString]) -> Result<bool, KeyLoadError> {
    let temporary = write_temporary(path, keys)?;
    // A hard link, unlike a rename, refuses to replace a file another process created meanwhile.
    let linked = std::fs::hard_link(&temporary, path);
    let _ = std::fs::remove_file(&temporary);
    match linked {
        Ok(()) => sync_directory(path).map(|()| true),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(file_error(path, error)),
    }
}

/// Writes the keys to a new, uniquely named file beside `path`, readable by the owner only.
fn write_temporary(path: &Path, keys: &[SecretString]) -> Result<PathBuf, KeyLoadError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| file_error(path, e))?;
    }
    let temporary = path.with_extension(format!("tmp.{}", hex::encode(rand::random::<[u8; 8]>())));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&temporary).map_err(|e| file_error(path, e))?;
    for key in keys {
        writeln!(file, "{}", key.expose_secret()).map_err(|e| file_error(path, e))?;
    }
    file.sync_all().map_err(|e| file_error(path, e))?;
    Ok(temporary)
}

/// Makes the file's new name durable, so a crash cannot bring back the previous keys.
fn sync_directory(path: &Path) -> Result<(), KeyLoadError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| file_error(path, e))
}

fn file_error(path: &Path, reason: impl std::fmt::Display) -> KeyLoadError {
    KeyLoadError::File { path: path.to_owned(), reason: reason.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file() -> PathBuf {
        std::env::temp_dir().join(format!("vault-keys-{}", hex::encode(rand::random::<[u8; 8]>()))).join("vault.keys")
    }

    #[test]
    fn a_key_file_is_generated_once_owner_only_and_grows_on_rotation() {
        let path = temp_file();
        let source = KeySource::File(path.clone());
        let (first, created) = load_keyring(&source).unwrap();
        assert!(created);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let (again, created) = load_keyring(&source).unwrap();
        assert!(!created);
        assert_eq!(again.current_key_id(), first.current_key_id(), "the same key on every start");

        let rotated = add_current_key(&source).unwrap();
        assert_ne!(rotated.current_key_id(), first.current_key_id());
        let binding = crate::vault::Binding::connection("org_a", "c1");
        let old_ciphertext = first.encrypt(b"s3cret", binding).unwrap();
        assert_eq!(rotated.decrypt(&old_ciphertext, binding).unwrap().as_slice(), b"s3cret", "old keys still decrypt");
        assert!(rotated.needs_reencryption(&old_ciphertext).unwrap());
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    #[test]
    fn configured_keys_cannot_be_extended_from_here() {
        let source = KeySource::Configured { current: Key::generate().to_base64(), old: Vec::new() };
        assert!(matches!(add_current_key(&source), Err(KeyLoadError::NotAFile)));
        let bad = KeySource::Configured { current: SecretString::from("short"), old: Vec::new() };
        let error = load_keyring(&bad).unwrap_err().to_string();
        assert!(!error.contains("short"), "{error}");
    }
}
