//! A `compliance-server` for a task to talk to: its database (a SQLite file or a fresh PostgreSQL
//! database), a tenant made with the admin CLI, the running server, and a minimal HTTP client.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use crate::cmd::{capture_ok, display, workspace_root};
use crate::postgres;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// `$CARGO_TARGET_DIR`, else `target/` in the workspace.
pub fn target_dir() -> Result<PathBuf> {
    Ok(match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root()?.join("target"),
    })
}

/// A directory for the SQLite file, the blobs and the server's data dir; removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn create(task: &str) -> Result<Self> {
        let dir = std::env::temp_dir().join(format!("xtask-{task}-{}-{}", std::process::id(), nanos()));
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
pub enum Store {
    Sqlite(String),
    Postgres { admin_url: String, name: String, url: String },
}

impl Store {
    pub fn sqlite(scratch: &Scratch) -> Self {
        Store::Sqlite(format!("sqlite://{}", scratch.0.join("compliance.db").display()))
    }

    pub fn postgres(admin_url: &str, task: &str) -> Result<Self> {
        let name = format!("{task}_{}_{}", std::process::id(), nanos());
        postgres::execute(admin_url, &format!("CREATE DATABASE \"{name}\""))?;
        let url = postgres::with_database(admin_url, &name);
        Ok(Store::Postgres { admin_url: admin_url.to_owned(), name, url })
    }

    pub fn url(&self) -> &str {
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

/// The admin CLI of `binary` on `database_url`; its standard output (one JSON object).
pub fn admin(binary: &Path, database_url: &str, args: &[&str]) -> Result<String> {
    let mut command = Command::new(binary);
    command.arg("admin").args(args).env("DATABASE_URL", database_url).env("RUST_LOG", "warn");
    let output = capture_ok(&mut command)?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// One organization with an owner and an API key, made with the admin CLI.
pub struct Tenant {
    pub organization_id: String,
    /// The owner's membership (`mem_…`), for member references in bodies.
    pub member_id: String,
    /// The owner's user (`usr_…`), for user references in bodies.
    pub user_id: String,
    pub api_key: String,
}

impl Tenant {
    /// `name` also makes the slug and the owner's address, so it must be a lowercase word.
    pub fn create(binary: &Path, database_url: &str, name: &str) -> Result<Self> {
        let admin = |args: &[&str]| admin(binary, database_url, args);
        let org = admin(&["create-org", "--name", name, "--slug", name])?;
        let organization_id = json_string(&org, "id")?;
        let email = format!("owner@{name}.test");
        let user = admin(&["create-user", "--email", &email, "--name", "Owner"])?;
        let user_id = json_string(&user, "id")?;
        let member = admin(&["add-member", "--org", &organization_id, "--user", &user_id, "--role", "owner"])?;
        let member_id = json_string(&member, "id")?;
        let key = admin(&["create-api-key", "--org", &organization_id, "--created-by", &user_id, "--name", name])?;
        let api_key = json_string(&key, "key")?;
        Ok(Self { organization_id, member_id, user_id, api_key })
    }
}

/// The string `field` of a JSON object: the admin CLI's output, an API response.
pub fn json_string(json: &str, field: &str) -> Result<String> {
    let object: serde_json::Value = serde_json::from_str(json).with_context(|| format!("not JSON: {json:.500}"))?;
    let value = object.get(field).and_then(serde_json::Value::as_str);
    value.map(str::to_owned).with_context(|| format!("no string `{field}` in {json}"))
}

/// `compliance-server serve` on a port the system picks; killed on drop.
pub struct Server {
    pub child: Child,
    /// `host:port`, and `http://host:port`: empty until [`Server::wait_until_ok`] has read them
    /// from the server's `listening on` log line.
    pub address: String,
    pub base_url: String,
}

impl Server {
    /// Starts the server with rate limiting off and JSON logs at `warn` into `log`; `env` adds
    /// to (or overrides) that environment.
    pub fn spawn(binary: &Path, database_url: &str, scratch: &Path, log: &Path, env: &[(&str, &str)]) -> Result<Self> {
        let log_file = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let mut command = Command::new(binary);
        command
            .arg("serve")
            .env("DATABASE_URL", database_url)
            // Port 0: a port picked here and released for the server could be taken in between.
            .env("LISTEN_ADDR", "127.0.0.1:0")
            .env("DATA_DIR", scratch.join("data"))
            .env("BLOB_DIR", scratch.join("blobs"))
            // the tasks send thousands of requests a second from one address and key
            .env("RATE_LIMIT_PER_SECOND", "0")
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "warn,compliance_server::serve=info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        println!("$ {}", display(&command));
        let child = command.spawn().context("could not start compliance-server")?;
        Ok(Self { child, address: String::new(), base_url: String::new() })
    }

    /// Reads where the server listens from its log, then polls `request` there every `interval`
    /// until it answers 200; fails when the server exits or [`STARTUP_TIMEOUT`] passes.
    pub fn wait_until_ok(&mut self, request: &Request, interval: Duration, log: &Path) -> Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                let log = fs::read_to_string(log).unwrap_or_default();
                bail!("compliance-server exited at start ({status}):\n{log}");
            }
            if self.address.is_empty()
                && let Some(base_url) = announced_url(&fs::read_to_string(log).unwrap_or_default())
            {
                self.address = base_url.trim_start_matches("http://").to_owned();
                self.base_url = base_url;
            }
            if !self.address.is_empty() && request.send(&self.address).is_ok_and(|response| response.status == 200) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "compliance-server did not answer {} {} within {STARTUP_TIMEOUT:?}",
                    request.method,
                    request.path
                );
            }
            std::thread::sleep(interval);
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// The first address of the server's JSON `listening on http://…` line, if it has logged it.
fn announced_url(log: &str) -> Option<String> {
    log.lines().find_map(|line| {
        let entry: serde_json::Value = serde_json::from_str(line).ok()?;
        let addresses = entry["fields"]["message"].as_str()?.strip_prefix("listening on ")?;
        addresses.split(", ").next().map(str::to_owned)
    })
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on its own connection (`Connection: close`), enough for set-up work.
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub api_key: Option<&'a str>,
    /// A session token, sent as the `session_token` cookie.
    pub session: Option<&'a str>,
    /// The organization a session acts in, sent as `X-Organization-Id`.
    pub organization: Option<&'a str>,
    pub body: Option<&'a str>,
}

pub struct Response {
    pub status: u16,
    pub body: String,
}

impl<'a> Request<'a> {
    pub fn get(path: &'a str) -> Self {
        Self { method: "GET", path, api_key: None, session: None, organization: None, body: None }
    }

    pub fn post(path: &'a str, body: &'a str) -> Self {
        Self { method: "POST", path, api_key: None, session: None, organization: None, body: Some(body) }
    }

    pub fn put(path: &'a str, body: &'a str) -> Self {
        Self { method: "PUT", path, api_key: None, session: None, organization: None, body: Some(body) }
    }

    pub fn with_key(self, api_key: &'a str) -> Self {
        Self { api_key: Some(api_key), ..self }
    }

    pub fn with_session(self, token: &'a str) -> Self {
        Self { session: Some(token), ..self }
    }

    pub fn with_organization(self, organization: &'a str) -> Self {
        Self { organization: Some(organization), ..self }
    }

    pub fn send(&self, address: &str) -> Result<Response> {
        let mut head = format!("{} {} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n", self.method, self.path);
        if let Some(key) = self.api_key {
            head.push_str(&format!("X-API-Key: {key}\r\n"));
        }
        if let Some(token) = self.session {
            head.push_str(&format!("Cookie: session_token={token}\r\n"));
        }
        if let Some(organization) = self.organization {
            head.push_str(&format!("X-Organization-Id: {organization}\r\n"));
        }
        if let Some(body) = self.body {
            head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut stream = TcpStream::connect(address)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.write_all(head.as_bytes())?;
        stream.write_all(self.body.unwrap_or_default().as_bytes())?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let status = response.get(9..12).and_then(|code| code.parse().ok());
        let Some(status) = status.filter(|_| response.starts_with("HTTP/1.1 ")) else {
            bail!("not an HTTP response to {} {}: {response:.200}", self.method, self.path);
        };
        let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_owned();
        Ok(Response { status, body })
    }

    /// Sends and fails unless the answer is 2xx; the body.
    pub fn expect_success(&self, address: &str) -> Result<String> {
        let response = self.send(address)?;
        if !(200..300).contains(&response.status) {
            bail!("{} {} answered {}: {:.500}", self.method, self.path, response.status, response.body);
        }
        Ok(response.body)
    }

    /// Sends and fails unless the answer has `status`; the body.
    pub fn expect(&self, address: &str, status: u16) -> Result<String> {
        let response = self.send(address)?;
        if response.status != status {
            bail!("{} {} answered {}: {:.500}", self.method, self.path, response.status, response.body);
        }
        Ok(response.body)
    }
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
        assert!(json_string(r#"{"id":1}"#, "id").is_err(), "a number is no string");
        assert!(json_string("created apk_1", "id").is_err(), "not JSON");
        Ok(())
    }
}
