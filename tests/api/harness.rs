//! One `compliance-server serve` per test, on a fresh SQLite file or a fresh PostgreSQL database.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

use crate::cli::Admin;
use crate::client::{Auth, Client};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_compliance-server");

const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// How long a test waits for something the server does on its own time (a log line reaching the
/// pipe, a background task): generous, so that a loaded machine does not fail the test.
pub const PATIENCE: Duration = Duration::from_secs(20);
/// How long the stderr pipe of an exited process may take to close (a grandchild holding it would
/// keep it open; the server starts none that does).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Calls `probe` every 20 ms until it answers `Some`, for at most `within`; `None` if it never did.
/// The caller fails the test with what it knows then.
pub async fn poll_until<T, Fut>(within: Duration, probe: impl FnMut() -> Fut) -> Option<T>
where
    Fut: Future<Output = Option<T>>,
{
    poll_every(POLL_INTERVAL, within, probe).await
}

/// [`poll_until`] with another interval, for probes that cost the server work.
pub async fn poll_every<T, Fut>(interval: Duration, within: Duration, mut probe: impl FnMut() -> Fut) -> Option<T>
where
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = probe().await {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(interval).await;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Extra environment variables for one test's server, e.g. `&[("CHAT_MAX_MESSAGES", "3")]`.
pub type Env = &'static [(&'static str, &'static str)];

/// Runs one test body against a server on `backend`, then tears the server and its database down,
/// whether the body passed or panicked.
pub async fn run<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(Arc<TestServer>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    run_with_env(backend, &[], test).await;
}

/// [`run`] with a server started with the extra environment variables `env`.
pub async fn run_with_env<F, Fut>(backend: Backend, env: Env, test: F)
where
    F: FnOnce(Arc<TestServer>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let env = env.iter().map(|&(name, value)| (name.to_owned(), value.to_owned())).collect();
    run_with_owned_env(backend, env, test).await;
}

/// [`run_with_env`] with environment variables computed at run time (a directory, a port).
pub async fn run_with_owned_env<F, Fut>(backend: Backend, env: Vec<(String, String)>, test: F)
where
    F: FnOnce(Arc<TestServer>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let server = TestServer::start(Database::create(backend).await, &env).await;
    run_server(server, test).await;
}

/// [`run_with_owned_env`] on PostgreSQL at `admin_url` (such as a test's own
/// [`crate::cluster::Cluster`]): the test's database is created there and is not dropped
/// afterwards (it goes away with that server).
pub async fn run_on_postgres_at<F, Fut>(admin_url: &str, env: Vec<(String, String)>, test: F)
where
    F: FnOnce(Arc<TestServer>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let name = format!("t_{}", random_hex(12));
    admin_execute(admin_url, &format!("CREATE DATABASE \"{name}\"")).await;
    let server = TestServer::start(Database::Kept { url: with_database(admin_url, &name) }, &env).await;
    run_server(server, test).await;
}

async fn run_server<F, Fut>(server: TestServer, test: F)
where
    F: FnOnce(Arc<TestServer>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let server = Arc::new(server);
    let outcome = tokio::spawn(test(Arc::clone(&server))).await;
    let Ok(server) = Arc::try_unwrap(server) else {
        panic!("the test body kept a reference to its TestServer");
    };
    if outcome.is_err() {
        eprintln!("--- server stderr ---\n{}", server.stderr());
    }
    server.shutdown().await;
    if let Err(err) = outcome {
        match err.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(err) => panic!("test task failed: {err}"),
        }
    }
}

/// A running server with its own database.
#[derive(Debug)]
pub struct TestServer {
    base_url: String,
    http: reqwest::Client,
    admin: Admin,
    /// Behind a lock so that a test holding `&TestServer` can wait for the process to exit.
    child: tokio::sync::Mutex<Child>,
    pid: u32,
    stderr: StderrLog,
    database: Database,
    /// Holds `blobs/` (the server's `BLOB_DIR`) and `data/` (its `DATA_DIR`, where the vault key
    /// file is generated); removed on drop.
    scratch: TempDir,
}

impl TestServer {
    async fn start(database: Database, env: &[(String, String)]) -> Self {
        let scratch = TempDir::new();
        let blob_dir = scratch.path().join("blobs");
        std::fs::create_dir_all(&blob_dir).expect("create BLOB_DIR");
        let spawned = serve_command(database.url(), &blob_dir, &scratch.path().join("data"), env).spawn();
        let mut child = match spawned {
            Ok(child) if child.id().is_some() => child,
            Ok(_) => {
                database.drop().await;
                panic!("{BIN} exited at once");
            }
            Err(err) => {
                database.drop().await;
                panic!("cannot start {BIN}: {err}");
            }
        };
        let stderr = capture_stderr(&mut child);
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("reqwest client");
        let pid = child.id().unwrap_or_default();
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let started = wait_until_serving(&mut child, &stderr, &http, deadline).await;
        let child = tokio::sync::Mutex::new(child);
        let server = Self {
            base_url: String::new(),
            http,
            admin: Admin::new(database.url()),
            child,
            pid,
            stderr,
            database,
            scratch,
        };
        match started {
            Ok(base_url) => Self { base_url, ..server },
            Err(why) => server.fail_start(&why).await,
        }
    }

    async fn fail_start(mut self, why: &str) -> ! {
        let _ = self.child.get_mut().kill().await;
        self.stderr.drained().await;
        let stderr = self.stderr();
        self.database.drop().await;
        panic!("{why}; server stderr:\n{stderr}");
    }

    async fn shutdown(mut self) {
        let _ = self.child.get_mut().kill().await;
        self.database.drop().await;
        drop(self.scratch);
    }

    /// The server's `BLOB_DIR`, where the filesystem blob store keeps `ORG_ID/ATTACHMENT_ID`.
    pub fn blob_dir(&self) -> PathBuf {
        self.scratch.path().join("blobs")
    }

    /// Every regular file under [`Self::blob_dir`], as `/`-separated paths relative to it, sorted.
    pub fn blob_files(&self) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap_or_else(|err| panic!("read {}: {err}", dir.display())) {
                let path = entry.expect("a directory entry").path();
                if path.is_dir() {
                    walk(root, &path, out);
                } else {
                    let relative = path.strip_prefix(root).expect("a path under BLOB_DIR");
                    out.push(
                        relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"),
                    );
                }
            }
        }
        let mut files = Vec::new();
        walk(&self.blob_dir(), &self.blob_dir(), &mut files);
        files.sort();
        files
    }

    /// Drops the PostgreSQL database under the running server, as an outage would take it away.
    pub async fn cut_database(&self) {
        match &self.database {
            Database::Postgres { admin_url, name, .. } => {
                admin_execute(admin_url, &format!("DROP DATABASE \"{name}\" WITH (FORCE)")).await;
            }
            Database::Sqlite { .. } | Database::Kept { .. } => {
                panic!("an outage can only be simulated on PostgreSQL from DATABASE_URL")
            }
        }
    }

    /// Runs `sql` on the server's own database, behind its back (a trigger that fails some
    /// writes, an audit entry edited). On SQLite through the `sqlite3` command-line shell.
    pub async fn execute_sql(&self, sql: &str) {
        match &self.database {
            Database::Postgres { url, .. } | Database::Kept { url } => admin_execute(url, sql).await,
            Database::Sqlite { url, .. } => {
                let path = url.strip_prefix("sqlite://").unwrap_or(url);
                let output = tokio::process::Command::new("sqlite3")
                    .args(["-cmd", ".timeout 5000", path, sql])
                    .output()
                    .await
                    .expect("the sqlite3 shell runs");
                assert!(output.status.success(), "sqlite3: {}", String::from_utf8_lossy(&output.stderr));
            }
        }
    }

    /// Runs `postgres` on a PostgreSQL database, or `sqlite` (through the `sqlite3` program, which
    /// waits for the server's writer) on a SQLite one: to write many rows fast, behind the API.
    pub async fn execute_sql_per_backend(&self, postgres: &str, sqlite: &str) {
        match &self.database {
            Database::Postgres { url, .. } | Database::Kept { url } => admin_execute(url, postgres).await,
            Database::Sqlite { dir, .. } => {
                let path = dir.path().join("test.db");
                let output = tokio::process::Command::new("sqlite3")
                    .arg(&path)
                    .arg(format!("PRAGMA busy_timeout = 10000; {sqlite}"))
                    .output()
                    .await
                    .expect("run sqlite3");
                assert!(output.status.success(), "sqlite3: {}", String::from_utf8_lossy(&output.stderr));
            }
        }
    }

    /// Everything the server wrote to stderr so far. A line written a moment ago may still be on
    /// its way through the pipe: wait for it with [`Self::stderr_containing`], or stop the server
    /// first ([`Self::stop`], [`Self::wait_exit`]).
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// The server's stderr once it contains `needle`; fails the test if it does not within
    /// [`PATIENCE`].
    pub async fn stderr_containing(&self, needle: &str) -> String {
        let found = poll_until(PATIENCE, || async {
            let stderr = self.stderr();
            stderr.contains(needle).then_some(stderr)
        })
        .await;
        found.unwrap_or_else(|| panic!("`{needle}` was not logged within {PATIENCE:?}; stderr:\n{}", self.stderr()))
    }

    /// Kills the server (as the teardown would) and returns all it wrote to stderr, once the pipe
    /// has closed: no line can still be on its way.
    pub async fn stop(&self) -> String {
        let _ = self.child.lock().await.kill().await;
        self.stderr.drained().await;
        self.stderr()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends SIGTERM to the server, as an orchestrator stopping it would.
    pub fn terminate(&self) {
        self.signal("TERM");
    }

    /// Sends the signal `name` (`TERM`, `INT`, …) to the server with `kill(1)`.
    pub fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.pid.to_string())
            .status()
            .unwrap_or_else(|err| panic!("cannot run kill: {err}"));
        assert!(status.success(), "kill -{name} {} failed: {status}", self.pid);
    }

    /// Waits for the server process to exit (after [`Self::terminate`]) and for its stderr pipe to
    /// close, so that [`Self::stderr`] then holds every line; returns how it ended. Fails the test
    /// if it is still running after `within`.
    pub async fn wait_exit(&self, within: Duration) -> ExitStatus {
        let mut child = self.child.lock().await;
        let status = match tokio::time::timeout(within, child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(err)) => panic!("waiting for the server process: {err}"),
            Err(_) => panic!("the server was still running {within:?} after it was told to stop"),
        };
        self.stderr.drained().await;
        status
    }

    /// The operator CLI, on this server's database.
    pub fn admin(&self) -> &Admin {
        &self.admin
    }

    /// The address the server listens on and puts into the URLs it hands out (`PUBLIC_URL`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn client(&self, auth: Auth, org: Option<&str>) -> Client {
        Client::new(self.http.clone(), &self.base_url, auth, org)
    }

    /// A client sending no credentials.
    pub fn anonymous(&self) -> Client {
        self.client(Auth::Anonymous, None)
    }
}

/// A second `compliance-server serve` on the same database as a [`TestServer`], as another
/// instance of one deployment: it shares the first server's `BLOB_DIR` and `DATA_DIR` (the blob
/// store and the vault key every instance of a deployment shares) but owns neither them nor the
/// database. Killed on drop; its stderr is printed then if the test is panicking.
#[derive(Debug)]
pub struct Sibling {
    base_url: String,
    http: reqwest::Client,
    child: Child,
    stderr: StderrLog,
}

impl TestServer {
    /// Starts a [`Sibling`] of this server with the extra environment variables `env` (pass the
    /// same ones this server got) and waits until it answers `GET /health`.
    pub async fn start_sibling(&self, env: &[(String, String)]) -> Sibling {
        let data_dir = self.scratch.path().join("data");
        let mut child = serve_command(self.database.url(), &self.blob_dir(), &data_dir, env)
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start a second {BIN}: {err}"));
        let stderr = capture_stderr(&mut child);
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("reqwest client");
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        match wait_until_serving(&mut child, &stderr, &http, deadline).await {
            Ok(base_url) => Sibling { base_url, http, child, stderr },
            Err(why) => {
                let _ = child.kill().await;
                stderr.drained().await;
                panic!("the second server: {why}; its stderr:\n{}", stderr.text());
            }
        }
    }

    /// Whether `GET /health` answers 200 now.
    pub async fn healthy(&self) -> bool {
        probe_health(&self.http, &self.base_url).await
    }
}

impl Sibling {
    /// The address it listens on and puts into the URLs it hands out (`PUBLIC_URL`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn client(&self, auth: Auth, org: Option<&str>) -> Client {
        Client::new(self.http.clone(), &self.base_url, auth, org)
    }

    /// Whether `GET /health` answers 200 now (and the process is still there).
    pub async fn healthy(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None)) && probe_health(&self.http, &self.base_url).await
    }

    /// Everything it wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.text()
    }
}

impl Drop for Sibling {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- second server stderr ---\n{}", self.stderr());
        }
        let _ = self.child.start_kill();
    }
}

/// Where nothing listens (the discard port): a request there is refused at once.
pub const CLOSED_PORT: &str = "http://127.0.0.1:9";

/// `compliance-server serve` on `database_url`, listening on a port the system picks (its
/// `listening on` line says which), with JSON logs at `warn` (and that line) on a piped stderr,
/// no rate limit, and then the extra environment `env`.
fn serve_command(database_url: &str, blob_dir: &Path, data_dir: &Path, env: &[(String, String)]) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("serve")
        .env("DATABASE_URL", database_url)
        // Port 0: the server holds its port from the moment it is chosen. A port picked here and
        // released for the server to take could be taken first by any other socket on the machine.
        .env("LISTEN_ADDR", "127.0.0.1:0")
        .env("BLOB_DIR", blob_dir)
        .env("DATA_DIR", data_dir)
        .env("LOG_FORMAT", "json")
        .env("RUST_LOG", "warn,compliance_server::serve=info")
        // Tests send bursts of requests; tests/api/limits.rs turns the rate limit on where it is tested.
        .env("RATE_LIMIT_PER_SECOND", "0")
        // Changes made by the admin CLI (another process) reach the server when its cached
        // credentials expire: one second keeps those tests short and the cache in use.
        .env("AUTH_CACHE_SECONDS", "1")
        // The tests run as root: Chromium without its sandbox, chosen explicitly (a test runs
        // without it, and one with a browser user).
        .env("AUTOMATION_BROWSER_NO_SANDBOX", "true")
        // No test reaches a provider's real API: the checks read a closed local port unless a
        // test points them at its own server, and nothing is scheduled unless a test asks.
        .env("CHECKS_GITHUB_API_URL", CLOSED_PORT)
        .env("CHECKS_GOOGLE_API_URL", CLOSED_PORT)
        .env("CHECKS_AWS_ENDPOINT_URL", CLOSED_PORT)
        .env("CHECK_FREQUENCY_HOURS", "0")
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Waits until `child` has said where it listens and answers `GET /health` there, and returns that
/// base URL (also its `PUBLIC_URL`, left to default to it); `Err` says why not by `deadline`.
async fn wait_until_serving(
    child: &mut Child,
    stderr: &StderrLog,
    http: &reqwest::Client,
    deadline: Instant,
) -> Result<String, String> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("the server exited with {status}"));
        }
        if let Some(base_url) = announced_url(&stderr.text())
            && probe_health(http, &base_url).await
        {
            return Ok(base_url);
        }
        if Instant::now() >= deadline {
            return Err(format!("no `listening on` line and 200 from GET /health within {STARTUP_TIMEOUT:?}"));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// The first address of the server's JSON `listening on http://…` line, if it has logged it.
fn announced_url(stderr: &str) -> Option<String> {
    stderr.lines().find_map(|line| {
        let entry: serde_json::Value = serde_json::from_str(line).ok()?;
        let addresses = entry["fields"]["message"].as_str()?.strip_prefix("listening on ")?;
        addresses.split(", ").next().map(str::to_owned)
    })
}

/// What a child process wrote to its piped stderr, collected by a background task.
#[derive(Debug)]
struct StderrLog {
    text: Arc<Mutex<String>>,
    /// Never sent on: the reader drops its sender at end of file, which ends `changed()`.
    open: tokio::sync::watch::Receiver<()>,
}

impl StderrLog {
    fn text(&self) -> String {
        self.text.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Waits until the pipe has closed (the process exited), so that every line is in; gives up
    /// after [`DRAIN_TIMEOUT`] (whatever arrived is still there to read).
    async fn drained(&self) {
        let mut open = self.open.clone();
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, async { while open.changed().await.is_ok() {} }).await;
    }
}

/// Collects what `child` writes to its piped stderr, in the background.
fn capture_stderr(child: &mut Child) -> StderrLog {
    let text = Arc::new(Mutex::new(String::new()));
    let (closed, open) = tokio::sync::watch::channel(());
    if let Some(mut pipe) = child.stderr.take() {
        let sink = Arc::clone(&text);
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
            drop(closed);
        });
    }
    StderrLog { text, open }
}

async fn probe_health(http: &reqwest::Client, base_url: &str) -> bool {
    let probe = http.get(format!("{base_url}/health")).timeout(Duration::from_secs(2)).send().await;
    probe.is_ok_and(|r| r.status() == 200)
}

/// A random lowercase hex string of `bytes` bytes.
pub fn random_hex(bytes: usize) -> String {
    (0..bytes).map(|_| format!("{:02x}", rand::random::<u8>())).collect()
}

#[derive(Debug)]
enum Database {
    Sqlite {
        dir: TempDir,
        url: String,
    },
    Postgres {
        admin_url: String,
        name: String,
        url: String,
    },
    /// A database the test's PostgreSQL server takes away with it: not dropped here.
    Kept {
        url: String,
    },
}

impl Database {
    async fn create(backend: Backend) -> Self {
        match backend {
            Backend::Sqlite => {
                let dir = TempDir::new();
                let url = format!("sqlite://{}", dir.path().join("test.db").display());
                Database::Sqlite { dir, url }
            }
            Backend::Postgres => {
                let admin_url = postgres_admin_url();
                let name = format!("t_{}", random_hex(12));
                admin_execute(&admin_url, &format!("CREATE DATABASE \"{name}\"")).await;
                let url = with_database(&admin_url, &name);
                Database::Postgres { admin_url, name, url }
            }
        }
    }

    fn url(&self) -> &str {
        match self {
            Database::Sqlite { url, .. } | Database::Postgres { url, .. } | Database::Kept { url } => url,
        }
    }

    async fn drop(self) {
        match self {
            Database::Sqlite { dir, .. } => drop(dir),
            Database::Postgres { admin_url, name, .. } => {
                let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
                admin_execute(&admin_url, &sql).await;
            }
            Database::Kept { .. } => {}
        }
    }
}

fn postgres_admin_url() -> String {
    match std::env::var("DATABASE_URL") {
        Ok(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => url,
        _ => panic!("set DATABASE_URL=postgres://… to run the PostgreSQL tests; `cargo xtask ci` does this"),
    }
}

async fn admin_execute(admin_url: &str, sql: &str) {
    let (client, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|err| panic!("cannot connect to PostgreSQL at DATABASE_URL: {err}"));
    let connection = tokio::spawn(connection);
    client.batch_execute(sql).await.unwrap_or_else(|err| panic!("`{sql}` failed: {err}"));
    drop(client);
    let _ = connection.await;
}

/// `url` with its database name replaced by `name` (query parameters kept).
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[authority_start..].find('/').map_or(base.len(), |i| authority_start + i);
    let mut out = format!("{}/{name}", &base[..authority_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// A directory under the system temp dir, removed on drop.
#[derive(Debug)]
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!("compliance-api-{}", random_hex(8)));
        std::fs::create_dir_all(&path).expect("create a temp dir");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn database_name_is_replaced() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "t_1"),
            "postgres://postgres@127.0.0.1:5432/t_1"
        );
        assert_eq!(with_database("postgres://h:1", "t_1"), "postgres://h:1/t_1");
        assert_eq!(
            with_database("postgresql://u:p@h/db?sslmode=disable", "t_1"),
            "postgresql://u:p@h/t_1?sslmode=disable"
        );
    }
}
