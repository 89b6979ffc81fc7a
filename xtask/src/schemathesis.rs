//! Contract tests: schemathesis against a running `compliance-server`, once on SQLite and once on
//! PostgreSQL, each on a fresh database with one organization, its owner and an API key.
//!
//! The settings schemathesis reads from a file live in `schemathesis.toml` at the workspace root
//! (with the reason for each); the run-specific ones (address, key, seed, reports) are flags here.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::cmd::{self, capture, capture_ok, cargo, display, workspace_root};
use crate::postgres::{self, Database};

/// The version CI installs (`.ci/run`); another one may generate other cases from the same seed.
const VERSION: &str = "4.32.5";
/// A fixed seed: a failure found in CI is found again locally.
const SEED: &str = "42";
/// Test cases per operation and phase. With ~60 operations this keeps one backend's run within
/// about five minutes on two cores (see docs/testing.md).
const MAX_EXAMPLES: &str = "15";
/// Concurrent schemathesis workers: two cores, shared with the server.
const WORKERS: &str = "2";
/// Per request; the slowest legitimate requests (attachments, the document itself) take well under it.
const REQUEST_TIMEOUT_SECONDS: &str = "10";
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
const POLL_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// `cargo xtask schemathesis`: builds the dev binary, provides PostgreSQL, runs both backends.
pub fn run_standalone() -> Result<()> {
    cmd::run(cargo()?.args(["build", "--locked", "-p", "compliance-server"]))?;
    let database = postgres::provide()?;
    let outcome = run(&database);
    drop(database);
    outcome
}

/// Both backends with the dev binary the tests built (no second build profile); the first failure
/// is reported after both ran, so that one run shows the failures of both.
pub fn run(database: &Database) -> Result<()> {
    check_installed()?;
    let binary = server_binary()?;
    let sqlite = run_backend(&binary, Backend::Sqlite, database);
    let postgres = run_backend(&binary, Backend::Postgres, database);
    match (sqlite, postgres) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(error), Ok(())) => Err(error.context("schemathesis on SQLite failed")),
        (Ok(()), Err(error)) => Err(error.context("schemathesis on PostgreSQL failed")),
        (Err(sqlite), Err(postgres)) => {
            Err(postgres.context(format!("schemathesis failed on both backends; on SQLite: {sqlite:#}")))
        }
    }
}

fn check_installed() -> Result<()> {
    let output = capture(Command::new("schemathesis").arg("--version"))
        .context(format!("schemathesis is not installed: python3 -m pip install schemathesis=={VERSION}"))?;
    let version = String::from_utf8_lossy(&output.stdout);
    if !version.contains(VERSION) {
        println!("warning: CI uses schemathesis {VERSION}, this is {}", version.trim());
    }
    Ok(())
}

fn target_dir() -> Result<PathBuf> {
    Ok(match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root()?.join("target"),
    })
}

fn server_binary() -> Result<PathBuf> {
    let binary = target_dir()?.join("debug").join("compliance-server");
    if !binary.is_file() {
        bail!("{} is missing: run `cargo build -p compliance-server` first", binary.display());
    }
    Ok(binary)
}

fn run_backend(binary: &Path, backend: Backend, database: &Database) -> Result<()> {
    println!("\n--> schemathesis on {}", backend.name());
    let started = Instant::now();
    let reports = target_dir()?.join("schemathesis").join(backend.name());
    if reports.exists() {
        fs::remove_dir_all(&reports).with_context(|| format!("cannot empty {}", reports.display()))?;
    }
    fs::create_dir_all(&reports).with_context(|| format!("cannot create {}", reports.display()))?;
    let scratch = Scratch::create()?;
    let store = match backend {
        Backend::Sqlite => Store::Sqlite(format!("sqlite://{}", scratch.0.join("compliance.db").display())),
        Backend::Postgres => Store::postgres(&database.admin_url())?,
    };
    let tenant = Tenant::create(binary, store.url())?;
    let server = Server::start(binary, store.url(), &scratch.0, &reports.join("server.log"))?;
    let outcome = create_task(&server.address, &tenant.api_key)
        .and_then(|task_id| schemathesis(&server.base_url, &tenant, &task_id, &reports));
    let log = reports.join("server.log");
    drop(server);
    drop(store);
    println!("schemathesis on {} took {:.0?}", backend.name(), started.elapsed());
    outcome.with_context(|| format!("reports in {}, the server's log in {}", reports.display(), log.display()))
}

/// A task through the API (the admin CLI makes no records): automations must name a real task.
fn create_task(address: &str, api_key: &str) -> Result<String> {
    let body = r#"{"title":"Schemathesis"}"#;
    let request = format!(
        "POST /v1/tasks HTTP/1.1\r\nHost: {address}\r\nX-API-Key: {api_key}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(address).context("cannot connect to compliance-server")?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(request.as_bytes())?;
    let mut response = String::new();
    stream.read_to_string(&mut response).context("no answer to POST /v1/tasks")?;
    if !response.starts_with("HTTP/1.1 201") {
        bail!("POST /v1/tasks failed: {response}");
    }
    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    json_string(body, "id")
}

fn schemathesis(base_url: &str, tenant: &Tenant, task_id: &str, reports: &Path) -> Result<()> {
    let root = workspace_root()?;
    let mut command = Command::new("schemathesis");
    command.current_dir(&root).arg("--config-file").arg(root.join("schemathesis.toml"));
    command.args(["--no-color", "run", &format!("{base_url}/openapi.json")]);
    command.args(["--checks", "all", "--mode", "all", "--seed", SEED, "--max-examples", MAX_EXAMPLES]);
    command.args(["--workers", WORKERS, "--request-timeout", REQUEST_TIMEOUT_SECONDS]);
    command.args(["--report", "junit,ndjson"]).arg("--report-dir").arg(reports);
    command.arg("--report-junit-path").arg(reports.join("junit.xml"));
    command.arg("--report-ndjson-path").arg(reports.join("events.ndjson"));
    // The key is passed by header (shown in the echoed command line below as a placeholder);
    // the config file names the organization through ${SCHEMATHESIS_ORG_ID}.
    command.env("SCHEMATHESIS_ORG_ID", &tenant.organization_id);
    command.env("SCHEMATHESIS_MEMBER_ID", &tenant.member_id);
    command.env("SCHEMATHESIS_USER_ID", &tenant.user_id);
    command.env("SCHEMATHESIS_TASK_ID", task_id);
    command.env("SCHEMATHESIS_BASE_URL", base_url);
    let shown = format!("{} -H \"X-API-Key: …\"", display(&command));
    command.args(["-H", &format!("X-API-Key: {}", tenant.api_key)]);
    println!("$ {shown}");
    let status = command.status().context("could not start schemathesis")?;
    if !status.success() {
        bail!("schemathesis found failures ({status})");
    }
    Ok(())
}

/// A directory for the SQLite file, the blobs and the server's data dir; removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn create() -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("xtask-schemathesis-{}-{}", std::process::id(), nanos()));
        fs::create_dir_all(dir.join("blobs")).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(error) = fs::remove_dir_all(&self.0) {
            let _ = writeln!(io::stderr(), "xtask: warning: could not remove {}: {error}", self.0.display());
        }
    }
}

fn nanos() -> u32 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0)
}

/// The server's database: a SQLite file in the scratch dir, or a PostgreSQL database created for
/// this run and dropped afterwards.
enum Store {
    Sqlite(String),
    Postgres { admin_url: String, name: String, url: String },
}

impl Store {
    fn postgres(admin_url: &str) -> Result<Self> {
        let name = format!("schemathesis_{}_{}", std::process::id(), nanos());
        postgres::execute(admin_url, &format!("CREATE DATABASE \"{name}\""))?;
        let url = postgres::with_database(admin_url, &name);
        Ok(Store::Postgres { admin_url: admin_url.to_owned(), name, url })
    }

    fn url(&self) -> &str {
        match self {
            Store::Sqlite(url) | Store::Postgres { url, .. } => url,
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Store::Postgres { admin_url, name, .. } = self
            && let Err(error) =
                postgres::execute(admin_url, &format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        {
            let _ = writeln!(io::stderr(), "xtask: warning: could not drop database {name}: {error:#}");
        }
    }
}

/// One organization with an owner and an API key, made with the admin CLI.
struct Tenant {
    organization_id: String,
    /// The owner's membership (`mem_…`), for member references in bodies.
    member_id: String,
    /// The owner's user (`usr_…`), for user references in bodies.
    user_id: String,
    api_key: String,
}

impl Tenant {
    fn create(binary: &Path, database_url: &str) -> Result<Self> {
        let admin = |args: &[&str]| -> Result<String> {
            let mut command = Command::new(binary);
            command.arg("admin").args(args).env("DATABASE_URL", database_url).env("RUST_LOG", "warn");
            let output = capture_ok(&mut command)?;
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        };
        let org = admin(&["create-org", "--name", "Schemathesis", "--slug", "schemathesis"])?;
        let organization_id = json_string(&org, "id")?;
        let user = admin(&["create-user", "--email", "owner@schemathesis.test", "--name", "Owner"])?;
        let user_id = json_string(&user, "id")?;
        let member = admin(&["add-member", "--org", &organization_id, "--user", &user_id, "--role", "owner"])?;
        let member_id = json_string(&member, "id")?;
        let key =
            admin(&["create-api-key", "--org", &organization_id, "--created-by", &user_id, "--name", "schemathesis"])?;
        let api_key = json_string(&key, "key")?;
        println!("organization {organization_id}, owner {user_id} (member {member_id}), an API key");
        Ok(Self { organization_id, member_id, user_id, api_key })
    }
}

/// The value of `"field":"…"` in one-line JSON whose ids and keys need no escapes.
fn json_string(json: &str, field: &str) -> Result<String> {
    let marker = format!("\"{field}\":\"");
    let start = json.find(&marker).map(|at| at + marker.len());
    let value = start.and_then(|start| json[start..].split('"').next());
    value.map(str::to_owned).with_context(|| format!("no string `{field}` in the admin CLI's output: {json}"))
}

/// `compliance-server serve` on a free port; killed on drop.
struct Server {
    child: Child,
    address: String,
    base_url: String,
}

impl Server {
    fn start(binary: &Path, database_url: &str, scratch: &Path, log: &Path) -> Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).context("no free port")?.port();
        let address = format!("127.0.0.1:{port}");
        let base_url = format!("http://{address}");
        let log_file = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .env("DATABASE_URL", database_url)
            .env("LISTEN_ADDR", &address)
            .env("PUBLIC_URL", &base_url)
            .env("DATA_DIR", scratch.join("data"))
            .env("BLOB_DIR", scratch.join("blobs"))
            // schemathesis sends thousands of requests a minute from one address and key
            .env("RATE_LIMIT_PER_SECOND", "0")
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        println!("$ {}", display(&command));
        let child = command.spawn().context("could not start compliance-server")?;
        let mut server = Self { child, address, base_url };
        server.wait_until_healthy(log)?;
        Ok(server)
    }

    fn wait_until_healthy(&mut self, log: &Path) -> Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                let log = fs::read_to_string(log).unwrap_or_default();
                bail!("compliance-server exited at start ({status}):\n{log}");
            }
            if health_ok(&self.address) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("compliance-server did not answer GET /health within {STARTUP_TIMEOUT:?}");
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /health` answered 200.
fn health_ok(address: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = [0u8; 12];
    stream.read_exact(&mut response).is_ok() && response.starts_with(b"HTTP/1.1 200")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_of_the_admin_output() -> Result<()> {
        let output = r#"{"createdAt":"2026-01-01T00:00:00Z","id":"apk_1","key":"cpk_2","name":"x"}"#;
        assert_eq!(json_string(output, "id")?, "apk_1");
        assert_eq!(json_string(output, "key")?, "cpk_2");
        assert!(json_string(output, "missing").is_err());
        Ok(())
    }
}
