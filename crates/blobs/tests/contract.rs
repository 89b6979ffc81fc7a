#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! One `BlobStore` contract, run against the filesystem (a fresh temp dir) and against S3 (a real
//! moto_server child process on a free port). No mocks.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use compliance_blobs::{FsBlobStore, S3BlobStore, S3Config};
use compliance_ports::{BlobError, BlobStore};
use hmac::{Hmac, Mac as _};
use sha2::{Digest as _, Sha256};

const BAD_KEYS: &[&str] = &[
    "",
    "org_a",
    "org_a/",
    "/att_1",
    "org_a//att_1",
    "org_a/att_1/x",
    "../x",
    "a/../../b",
    "/etc/passwd",
    "Org_a/att_1",
];

// ---------------------------------------------------------------------------------------------
// The contract
// ---------------------------------------------------------------------------------------------

async fn contract(store: &dyn BlobStore) {
    // Round trip, with every byte value (not valid UTF-8).
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    store.put("org_a/att_1", binary.clone(), "application/octet-stream").await.unwrap();
    assert_eq!(store.get("org_a/att_1").await.unwrap(), binary);

    // Empty blobs are blobs too.
    store.put("org_a/att_empty", Vec::new(), "text/plain").await.unwrap();
    assert_eq!(store.get("org_a/att_empty").await.unwrap(), Vec::<u8>::new());

    // Overwrite replaces, shorter bytes included (no leftover tail).
    store.put("org_a/att_1", b"second".to_vec(), "text/plain").await.unwrap();
    assert_eq!(store.get("org_a/att_1").await.unwrap(), b"second");

    // Keys are distinct per organization.
    store.put("org_b/att_1", b"other org".to_vec(), "text/plain").await.unwrap();
    assert_eq!(store.get("org_a/att_1").await.unwrap(), b"second");
    assert_eq!(store.get("org_b/att_1").await.unwrap(), b"other org");

    // Missing → NotFound.
    assert!(matches!(store.get("org_a/att_missing").await, Err(BlobError::NotFound)));
    assert!(matches!(store.get("org_zz/att_1").await, Err(BlobError::NotFound)));

    // Delete removes, and is idempotent.
    store.delete("org_a/att_1").await.unwrap();
    assert!(matches!(store.get("org_a/att_1").await, Err(BlobError::NotFound)));
    store.delete("org_a/att_1").await.unwrap();
    store.delete("org_never/att_never").await.unwrap();
    assert_eq!(store.get("org_b/att_1").await.unwrap(), b"other org");

    // Bad keys are refused by every operation, as Internal naming the key.
    for &key in BAD_KEYS {
        let refused = [
            store.put(key, b"x".to_vec(), "text/plain").await.err(),
            store.get(key).await.err(),
            store.delete(key).await.err(),
            store.presigned_get(key, Duration::from_secs(60)).await.err(),
        ];
        for error in refused {
            match error {
                Some(BlobError::Internal(message)) => assert!(message.contains("blob key"), "{message}"),
                other => panic!("key {key:?} was not refused as Internal: {other:?}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Filesystem
// ---------------------------------------------------------------------------------------------

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let path = std::env::temp_dir().join(format!("compliance-blobs-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn fs_store_passes_the_contract() {
    let dir = TempDir::new("contract");
    let store = FsBlobStore::new(dir.0.join("blobs"));
    contract(&store).await;

    // The layout is ROOT/ORG/ATTACHMENT, with no temp file left behind.
    assert_eq!(std::fs::read(dir.0.join("blobs/org_b/att_1")).unwrap(), b"other org");
    let leftovers: Vec<_> =
        std::fs::read_dir(dir.0.join("blobs/org_a")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("att_empty")]);
    assert_eq!(store.presigned_get("org_b/att_1", Duration::from_secs(60)).await.unwrap(), None);
}

/// Attachments are tenants' files: readable by the server's user only, whatever the umask.
#[cfg(unix)]
#[tokio::test]
async fn fs_store_creates_private_files_and_directories() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new("modes");
    let store = FsBlobStore::new(dir.0.join("blobs"));
    store.put("org_a/att_1", b"tenant file".to_vec(), "text/plain").await.unwrap();
    let mode = |path: &str| std::fs::metadata(dir.0.join(path)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("blobs"), 0o700, "the root");
    assert_eq!(mode("blobs/org_a"), 0o700, "an organization's directory");
    assert_eq!(mode("blobs/org_a/att_1"), 0o600, "an attachment");
}

#[tokio::test]
async fn fs_store_never_leaves_its_root() {
    let dir = TempDir::new("escape");
    let root = dir.0.join("root");
    let store = FsBlobStore::new(root.clone());
    // A file beside the root that a traversal would reach.
    std::fs::write(dir.0.join("x"), b"outside").unwrap();
    let absolute = dir.0.join("x").to_string_lossy().into_owned();

    for key in ["../x", "a/../../b", "org_a/../../x", absolute.as_str(), "/x", "ORG_A/ATT_1", "org_a/Att_1"] {
        assert!(matches!(store.put(key, b"evil".to_vec(), "text/plain").await, Err(BlobError::Internal(_))), "{key}");
        assert!(matches!(store.get(key).await, Err(BlobError::Internal(_))), "{key}");
        assert!(matches!(store.delete(key).await, Err(BlobError::Internal(_))), "{key}");
    }
    assert_eq!(std::fs::read(dir.0.join("x")).unwrap(), b"outside");
    assert!(!root.exists(), "a refused key must not create anything");
}

#[tokio::test]
async fn fs_store_reports_io_failures_as_internal() {
    let dir = TempDir::new("io");
    // The root is a regular file, so no directory can be created under it.
    let root = dir.0.join("not_a_dir");
    std::fs::write(&root, b"").unwrap();
    let store = FsBlobStore::new(root);
    match store.put("org_a/att_1", b"x".to_vec(), "text/plain").await {
        Err(BlobError::Internal(message)) => assert!(message.contains("org_a/att_1"), "{message}"),
        other => panic!("expected Internal, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// S3 against a real moto_server
// ---------------------------------------------------------------------------------------------

const SECRET: &str = "moto-secret-must-not-leak";
const REGION: &str = "us-east-1";

/// A moto_server child process on a port it picks, killed on drop.
struct Moto {
    child: Child,
    endpoint: String,
}

impl Moto {
    async fn start() -> Self {
        // Port 0: moto binds a free port and says which. A port picked here and released for moto
        // could be taken first by any other socket on the machine.
        let spawned = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "moto_server is not on PATH; the S3 tests need a real local S3 server: `cargo xtask tools` installs it in target/tools/venv/bin"
            ),
            Err(e) => panic!("could not start moto_server: {e}"),
        };
        let announced = announced_endpoint(child.stderr.take().expect("moto_server's stderr"));
        let endpoint = match tokio::time::timeout(Duration::from_secs(60), announced).await {
            Ok(Ok(endpoint)) => endpoint,
            _ => {
                let _ = child.kill();
                panic!("moto_server did not say where it listens within 60 s; try: pip install 'moto[server]'")
            }
        };
        let mut moto = Self { child, endpoint };
        moto.wait_until_ready().await;
        moto
    }

    async fn wait_until_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("moto_server exited before answering ({status}); try: pip install 'moto[server]'");
            }
            if reqwest::get(&self.endpoint).await.is_ok() {
                return;
            }
            assert!(Instant::now() < deadline, "moto_server did not answer on {} within 60 s", self.endpoint);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Creates a bucket with a plain unsigned PUT (moto accepts it) and returns a store on it.
    async fn store(&self, bucket: &str) -> S3BlobStore {
        let response = reqwest::Client::new().put(format!("{}/{bucket}", self.endpoint)).send().await.unwrap();
        assert!(response.status().is_success(), "creating bucket {bucket}: {}", response.status());
        S3BlobStore::new(self.config(bucket)).unwrap()
    }

    fn config(&self, bucket: &str) -> S3Config {
        S3Config {
            bucket: bucket.to_owned(),
            region: REGION.to_owned(),
            endpoint: Some(self.endpoint.clone()),
            access_key_id: "testing".to_owned(),
            secret_access_key: SECRET.into(),
            allow_http: true,
            path_style: true,
        }
    }
}

/// The `http://127.0.0.1:PORT` of the ` * Running on …` line moto's web server writes on `stderr`,
/// which a thread then reads to its end: the server logs every request there, and a full pipe
/// would stop it.
fn announced_endpoint(stderr: ChildStderr) -> tokio::sync::oneshot::Receiver<String> {
    let (announce, announced) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut announce = Some(announce);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("Running on")
                && let Some(url) = line.split_whitespace().find(|word| word.starts_with("http://"))
                && let Some(announce) = announce.take()
            {
                let _ = announce.send(url.to_owned());
            }
        }
    });
    announced
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn s3_store_passes_the_contract() {
    let moto = Moto::start().await;
    let store = moto.store("contract").await;
    contract(&store).await;
}

#[tokio::test]
async fn s3_presigned_url_downloads_the_bytes_with_their_content_type() {
    let moto = Moto::start().await;
    let store = moto.store("presign").await;
    let bytes: Vec<u8> = (0..=255u8).rev().collect();
    store.put("org_a/att_pdf", bytes.clone(), "application/pdf").await.unwrap();

    let url = store.presigned_get("org_a/att_pdf", Duration::from_secs(300)).await.unwrap().expect("S3 signs URLs");
    assert!(url.starts_with(&format!("{}/presign/org_a/att_pdf?", moto.endpoint)), "{url}");
    assert!(url.contains("X-Amz-Expires=300"), "the URL must carry the requested ttl: {url}");
    assert!(!url.contains(SECRET), "the secret must not be in the URL");

    let response = reqwest::get(&url).await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let content_type = response.headers().get(reqwest::header::CONTENT_TYPE).unwrap().to_str().unwrap().to_owned();
    assert_eq!(content_type, "application/pdf", "the content type given to put is served back");
    assert_eq!(response.bytes().await.unwrap(), bytes.as_slice());
}

/// moto_server does not check presigned URL signatures (checked with moto 5.2: a URL whose
/// `X-Amz-Signature` is garbage still downloads, and with moto's IAM auth switched on it answers
/// 500 for any presigned URL). So the signature is checked here by an independent SigV4
/// computation from the secret, and the tampered URL must fail that same check. A real S3
/// server would refuse what this refuses.
#[tokio::test]
async fn s3_presigned_url_is_signed_with_the_secret_and_tampering_breaks_it() {
    let moto = Moto::start().await;
    let store = moto.store("signature").await;
    store.put("org_a/att_1", b"signed".to_vec(), "text/plain").await.unwrap();
    let url = store.presigned_get("org_a/att_1", Duration::from_secs(60)).await.unwrap().unwrap();

    assert!(sigv4_query_signature_is_valid(&url, SECRET), "object_store's signature does not verify: {url}");
    assert!(!sigv4_query_signature_is_valid(&url, "another-secret"), "a different secret must not verify");
    let tampered = tamper_signature(&url);
    assert_ne!(tampered, url);
    assert!(!sigv4_query_signature_is_valid(&tampered, SECRET), "a tampered signature must not verify");
}

#[tokio::test]
async fn s3_secret_never_shows_in_debug_or_errors() {
    let moto = Moto::start().await;
    let config = moto.config("nobucket");
    assert!(!format!("{config:?}").contains(SECRET));
    let store = S3BlobStore::new(config).unwrap();
    assert!(!format!("{store:?}").contains(SECRET));

    // The bucket does not exist: the server refuses, and the error must not echo the secret.
    let error = store.put("org_a/att_1", b"x".to_vec(), "text/plain").await.unwrap_err();
    assert!(matches!(error, BlobError::Internal(_)), "{error:?}");
    assert!(!format!("{error} {error:?}").contains(SECRET));

    // An unparsable endpoint is a configuration error, without the secret either.
    let bad = S3Config { endpoint: Some("not a url".to_owned()), ..moto.config("nobucket") };
    if let Err(error) = S3BlobStore::new(bad) {
        assert!(!format!("{error} {error:?}").contains(SECRET));
    }
}

#[tokio::test]
async fn s3_unreachable_server_is_unavailable() {
    // A port nobody listens on: bound, read, then released.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = S3Config {
        bucket: "b".to_owned(),
        region: REGION.to_owned(),
        endpoint: Some(format!("http://127.0.0.1:{port}")),
        access_key_id: "testing".to_owned(),
        secret_access_key: SECRET.into(),
        allow_http: true,
        path_style: true,
    };
    let store = S3BlobStore::new(config).unwrap();
    let error = store.get("org_a/att_1").await.unwrap_err();
    assert!(matches!(error, BlobError::Unavailable(_)), "{error:?}");
}

// ---------------------------------------------------------------------------------------------
// An independent SigV4 query-string check (AWS "Authenticating Requests: Using Query Parameters")
// ---------------------------------------------------------------------------------------------

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn sigv4_query_signature_is_valid(url: &str, secret: &str) -> bool {
    let url = reqwest::Url::parse(url).unwrap();
    let query = url.query().unwrap();
    // The canonical query is every parameter but the signature, sorted, kept as encoded.
    let mut params: Vec<&str> = query.split('&').filter(|p| !p.starts_with("X-Amz-Signature=")).collect();
    params.sort_unstable();
    let param = |name: &str| query.split('&').find_map(|p| p.strip_prefix(&format!("{name}="))).unwrap();
    assert_eq!(param("X-Amz-SignedHeaders"), "host", "this check signs the host header only");

    let host = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let canonical_request = format!("GET\n{}\n{}\nhost:{host}\n\nhost\nUNSIGNED-PAYLOAD", url.path(), params.join("&"));
    let date_time = param("X-Amz-Date");
    let scope = param("X-Amz-Credential").split_once("%2F").unwrap().1.replace("%2F", "/");
    let string_to_sign =
        format!("AWS4-HMAC-SHA256\n{date_time}\n{scope}\n{}", hex::encode(Sha256::digest(canonical_request)));

    let [date, region, service, terminator] = scope.split('/').collect::<Vec<_>>().try_into().unwrap();
    assert_eq!((region, service, terminator), (REGION, "s3", "aws4_request"));
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), date);
    for part in [region, service, terminator] {
        key = hmac(&key, part);
    }
    hex::encode(hmac(&key, &string_to_sign)) == param("X-Amz-Signature")
}

/// Changes one hex digit of the signature.
fn tamper_signature(url: &str) -> String {
    let (head, signature) = url.split_once("X-Amz-Signature=").unwrap();
    let mut chars: Vec<char> = signature.chars().collect();
    chars[0] = if chars[0] == '0' { '1' } else { '0' };
    format!("{head}X-Amz-Signature={}", chars.into_iter().collect::<String>())
}
