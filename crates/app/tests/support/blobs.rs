//! Blob bytes in a map, with a switch that makes writes fail like a full or broken disk.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{BlobError, BlobStore};

#[derive(Default)]
pub struct MemoryBlobs {
    blobs: Mutex<BTreeMap<String, Vec<u8>>>,
    /// How many more writes succeed before every write fails; `None`: all succeed.
    puts_left: Mutex<Option<usize>>,
    /// Answer `presigned_get` with a URL of the store's own, as S3 does.
    presigns: Mutex<bool>,
}

impl MemoryBlobs {
    /// The next `n` writes succeed, every later one fails.
    pub fn fail_after(&self, n: usize) {
        *self.puts_left.lock().unwrap() = Some(n);
    }

    pub fn presign(&self) {
        *self.presigns.lock().unwrap() = true;
    }

    pub fn keys(&self) -> Vec<String> {
        self.blobs.lock().unwrap().keys().cloned().collect()
    }

    pub fn bytes(&self, key: &str) -> Option<Vec<u8>> {
        self.blobs.lock().unwrap().get(key).cloned()
    }
}

#[async_trait]
impl BlobStore for MemoryBlobs {
    async fn put(&self, key: &str, bytes: Vec<u8>, _content_type: &str) -> Result<(), BlobError> {
        if let Some(left) = self.puts_left.lock().unwrap().as_mut() {
            if *left == 0 {
                return Err(BlobError::Unavailable("the fake disk is full".into()));
            }
            *left -= 1;
        }
        self.blobs.lock().unwrap().insert(key.to_owned(), bytes);
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Vec<u8>, BlobError> {
        self.bytes(key).ok_or(BlobError::NotFound)
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.blobs.lock().unwrap().remove(key);
        Ok(())
    }

    async fn presigned_get(&self, key: &str, ttl: Duration) -> Result<Option<String>, BlobError> {
        let presigns = *self.presigns.lock().unwrap();
        Ok(presigns.then(|| format!("https://bucket.test/{key}?ttl={}", ttl.as_secs())))
    }
}
