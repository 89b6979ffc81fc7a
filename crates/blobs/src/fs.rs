//! Blobs as files under a root directory.

use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{BlobError, BlobStore};

use crate::key;

/// Stores each blob as the file `ROOT/ORG_ID/ATTACHMENT_ID`.
///
/// Writes go to a temporary file in the same directory, are fsynced and then renamed over the
/// target, so a reader sees either the old bytes or the new ones, never a torn file. Every
/// operation runs on tokio's blocking pool.
#[derive(Debug, Clone)]
pub struct FsBlobStore {
    root: PathBuf,
}

impl FsBlobStore {
    /// A store rooted at `root`; the directory is created on the first `put`.
    #[must_use]
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// The file for `key`, after checking the key cannot leave the root.
    fn path_of(&self, key: &str) -> Result<PathBuf, BlobError> {
        let [org, id] = key::validate(key)?;
        Ok(self.root.join(org).join(id))
    }
}

#[async_trait]
impl BlobStore for FsBlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>, _content_type: &str) -> Result<(), BlobError> {
        let path = self.path_of(key)?;
        let key = key.to_owned();
        blocking(move || write_atomically(&path, &bytes).map_err(|e| io_error("writing", &key, &e))).await
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        let path = self.path_of(key)?;
        let key = key.to_owned();
        blocking(move || match std::fs::read(&path) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == ErrorKind::NotFound => Err(BlobError::NotFound),
            Err(e) => Err(io_error("reading", &key, &e)),
        })
        .await
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = self.path_of(key)?;
        let key = key.to_owned();
        blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error("deleting", &key, &e)),
        })
        .await
    }

    async fn presigned_get(&self, key: &str, _ttl: Duration) -> Result<Option<String>, BlobError> {
        // The service signs its own download URLs for files; still refuse a bad key here.
        key::validate(key)?;
        Ok(None)
    }
}

/// Runs filesystem work off the async runtime's worker threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BlobError> + Send + 'static,
) -> Result<T, BlobError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| BlobError::Internal(format!("blob file task failed: {e}")))?
}

/// Writes `bytes` to a sibling temporary file, fsyncs it, renames it onto `path`, then fsyncs the
/// directory so the rename itself survives a crash.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("blob path has no parent"))?;
    private_dirs(dir)?;
    let tmp = dir.join(temp_name(path));
    let written = (|| {
        let mut file = private_file().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        // Best effort: a leftover temp file is harmless (its name is never a valid key).
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    sync_dir(dir)
}

/// Creates `dir` and its missing parents readable by the server's user only (0700): attachments
/// are tenants' files, not the host's other users'.
fn private_dirs(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Options that create a file readable by the server's user only (0600).
fn private_file() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
}

/// A name no key can have (keys never contain `.`), unique per process and call.
fn temp_name(path: &Path) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let stem = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    format!(".{stem}.{}.{n}.tmp", std::process::id())
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> std::io::Result<()> {
    // Directories cannot be opened for fsync on Windows; the rename is as durable as it gets.
    Ok(())
}

fn io_error(doing: &str, key: &str, error: &std::io::Error) -> BlobError {
    let message = format!("{doing} blob {key}: {error}");
    match error.kind() {
        ErrorKind::TimedOut | ErrorKind::Interrupted | ErrorKind::WouldBlock => BlobError::Unavailable(message),
        _ => BlobError::Internal(message),
    }
}
