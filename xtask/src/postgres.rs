//! The PostgreSQL server the tests run against: the one `DATABASE_URL` names, or a throwaway
//! cluster started from the local PostgreSQL binaries (stopped and removed when dropped).

use std::ffi::OsStr;
use std::io::{self, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use std::{env, fs};

use anyhow::{Context, Result, bail};

use crate::cmd::{capture, capture_ok, display, redact, stdout_of};

const DEBIAN_INSTALL_ROOT: &str = "/usr/lib/postgresql";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
const START_ATTEMPTS: usize = 3;

const POSTGRES_REQUIRED: &str = "\
PostgreSQL is required: the tests run every store suite on PostgreSQL as well as on SQLite.
Provide it in one of two ways:
  - set DATABASE_URL=postgres://USER[:PASSWORD]@HOST:PORT/postgres (a role that may CREATE DATABASE;
    each test creates its own database), e.g. `docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:16`
    and DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres
  - or install the server binaries (Debian/Ubuntu: `apt-get install postgresql`; elsewhere put
    `initdb` and `pg_ctl` on PATH) and xtask starts a throwaway cluster by itself";

/// Where the tests find PostgreSQL.
#[derive(Debug)]
pub enum Database {
    /// Given by `DATABASE_URL`; left as it is.
    External { url: String },
    /// Started here; stopped and removed on drop.
    Throwaway(Cluster),
}

impl Database {
    /// A URL with the right to create databases (the tests create one per test from it).
    pub fn admin_url(&self) -> String {
        match self {
            Database::External { url } => url.clone(),
            Database::Throwaway(cluster) => cluster.admin_url(),
        }
    }
}

pub fn provide() -> Result<Database> {
    if let Some(url) = postgres_url_from_env()? {
        check_answers(&url)?;
        println!("using DATABASE_URL={}", redact(&url));
        return Ok(Database::External { url });
    }
    let Some(bin_dir) = find_bin_dir() else {
        bail!("{POSTGRES_REQUIRED}");
    };
    println!("no postgres:// DATABASE_URL: starting a throwaway cluster from {}", bin_dir.display());
    let cluster = Cluster::start(bin_dir)?;
    println!("PostgreSQL is up: DATABASE_URL={}", cluster.admin_url());
    Ok(Database::Throwaway(cluster))
}

/// Runs one SQL statement with `psql` (from PATH, else from the local PostgreSQL binaries).
pub fn execute(url: &str, sql: &str) -> Result<()> {
    let mut command = Command::new(client_tool("psql")?);
    command.args(["-w", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql]).env("PGCONNECT_TIMEOUT", "5");
    capture_ok(&mut command)?;
    Ok(())
}

/// The rows `psql` prints for one query, unaligned and without headers.
pub fn query(url: &str, sql: &str) -> Result<String> {
    let mut command = Command::new(client_tool("psql")?);
    command.args(["-w", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql]).env("PGCONNECT_TIMEOUT", "5");
    stdout_of(&mut command)
}

/// A PostgreSQL client program (`psql`, `pgbench`) from PATH, else from the local binaries.
pub fn client_tool(name: &str) -> Result<PathBuf> {
    if bin_dir_has(&env::var_os("PATH").unwrap_or_default(), name) {
        Ok(PathBuf::from(name))
    } else {
        find_bin_dir().map(|dir| dir.join(name)).with_context(|| format!("{name} is not installed"))
    }
}

fn bin_dir_has(path: &OsStr, program: &str) -> bool {
    env::split_paths(path).any(|dir| dir.join(program).is_file())
}

/// The URL with its database name replaced by `name` (query parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, format!("?{query}")),
        None => (rest, String::new()),
    };
    let authority = rest.split('/').next().unwrap_or_default();
    format!("{scheme}://{authority}/{name}{query}")
}

fn postgres_url_from_env() -> Result<Option<String>> {
    let Some(value) = env::var_os("DATABASE_URL") else {
        return Ok(None);
    };
    let url = value.into_string().ok().context("DATABASE_URL is not valid UTF-8")?;
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Some(url))
    } else {
        println!("DATABASE_URL is not a postgres:// URL ({}): not using it for PostgreSQL", redact(&url));
        Ok(None)
    }
}

/// A TCP connect to the URL's host and port: the server answers, or a clear error.
fn check_answers(url: &str) -> Result<()> {
    let (host, port) = host_and_port(url)?;
    let addresses: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .with_context(|| format!("DATABASE_URL names host `{host}`, which does not resolve"))?
        .collect();
    let mut last_error = None;
    for address in &addresses {
        match TcpStream::connect_timeout(address, CONNECT_TIMEOUT) {
            Ok(_) => return Ok(()),
            Err(error) => last_error = Some(error),
        }
    }
    let reason = last_error.map_or_else(|| "no address".to_owned(), |e| e.to_string());
    bail!(
        "DATABASE_URL={} does not answer at {host}:{port} ({reason}); start that server, \
         or unset DATABASE_URL to let xtask start a throwaway cluster",
        redact(url)
    )
}

/// Host and port of `postgres://[user[:password]@]host[:port][/db][?params]` (port 5432 by default).
fn host_and_port(url: &str) -> Result<(String, u16)> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host_port)| host_port);
    let (host, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').context("DATABASE_URL: unclosed `[` in host")?;
        (host, after.strip_prefix(':'))
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    let port = match port {
        Some(port) => port.parse().with_context(|| format!("DATABASE_URL: bad port `{port}`"))?,
        None => 5432,
    };
    let host = if host.is_empty() { "localhost" } else { host };
    Ok((host.to_owned(), port))
}

/// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `pg_ctl`, else a PATH entry
/// holding both.
fn find_bin_dir() -> Option<PathBuf> {
    newest_debian_bin_dir().or_else(bin_dir_on_path)
}

fn newest_debian_bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(Vec<u32>, PathBuf)> = fs::read_dir(DEBIAN_INSTALL_ROOT)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let version = parse_version(entry.file_name().to_str()?)?;
            let bin = entry.path().join("bin");
            has_server_tools(&bin).then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// `"15"` → `[15]`, `"9.6"` → `[9, 6]`; anything else is not a version directory.
fn parse_version(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

fn bin_dir_on_path() -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?).find(|dir| has_server_tools(dir))
}

fn has_server_tools(dir: &Path) -> bool {
    dir.join("initdb").is_file() && dir.join("pg_ctl").is_file()
}

/// A PostgreSQL cluster in a temporary directory, on a free port of 127.0.0.1, with trust auth for
/// the superuser `postgres`. Dropping it stops the server and removes the directory.
#[derive(Debug)]
pub struct Cluster {
    bin_dir: PathBuf,
    /// Holds `data/`, `server.log` and the unix socket.
    dir: PathBuf,
    port: u16,
    /// initdb refuses to run as root: then everything runs as `postgres` through runuser.
    as_postgres_user: bool,
}

impl Cluster {
    fn start(bin_dir: PathBuf) -> Result<Cluster> {
        let as_postgres_user = running_as_root()?;
        let dir = create_temp_dir(as_postgres_user)?;
        // From here on, dropping `cluster` cleans up, whatever fails next.
        let mut cluster = Cluster { bin_dir, dir, port: 0, as_postgres_user };
        cluster.init_data_dir()?;
        cluster.start_server()?;
        Ok(cluster)
    }

    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    fn init_data_dir(&self) -> Result<()> {
        let mut initdb = self.tool("initdb");
        initdb.arg("-D").arg(self.data_dir());
        initdb.args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale", "--no-sync"]);
        println!("$ {}", display(&initdb));
        capture_ok(&mut initdb).context("initdb failed")?;
        Ok(())
    }

    /// `pg_ctl -w start` on a free port; a port taken between choosing and binding is retried.
    fn start_server(&mut self) -> Result<()> {
        for attempt in 1..=START_ATTEMPTS {
            self.port = free_port()?;
            let mut pg_ctl = self.pg_ctl_start();
            println!("$ {}", display(&pg_ctl));
            let output = capture(&mut pg_ctl)?;
            if output.status.success() {
                return Ok(());
            }
            println!("pg_ctl start failed on port {} (attempt {attempt}/{START_ATTEMPTS})", self.port);
        }
        let log = fs::read_to_string(self.log_file()).unwrap_or_default();
        bail!("could not start the throwaway PostgreSQL; its log:\n{log}")
    }

    fn pg_ctl_start(&self) -> Command {
        let options = format!("-p {} -k {} -h 127.0.0.1 -F -c max_connections=200", self.port, self.dir.display());
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl.arg("-D").arg(self.data_dir()).arg("-l").arg(self.log_file());
        pg_ctl.args(["-w", "-t", "60", "-o", &options, "start"]);
        pg_ctl
    }

    /// Runs from `drop`: writes with `writeln!`, which cannot panic on a closed stdout.
    fn stop_server(&self) -> Result<()> {
        if !self.data_dir().join("postmaster.pid").exists() {
            return Ok(());
        }
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl.arg("-D").arg(self.data_dir()).args(["-m", "fast", "-w", "stop"]);
        let _ = writeln!(io::stdout(), "$ {}", display(&pg_ctl));
        capture_ok(&mut pg_ctl)?;
        Ok(())
    }

    /// A PostgreSQL program, run as `postgres` when we are root, in the cluster's directory (the
    /// `postgres` user may not be allowed into the current one).
    fn tool(&self, name: &str) -> Command {
        let program = self.bin_dir.join(name);
        let mut command = if self.as_postgres_user {
            let mut runuser = Command::new("runuser");
            runuser.args([OsStr::new("-u"), OsStr::new("postgres"), OsStr::new("--"), program.as_os_str()]);
            runuser
        } else {
            Command::new(program)
        };
        command.current_dir(&self.dir);
        command
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // not println!: it panics when stdout is gone, and a panic in drop aborts before cleaning up
        let _ = writeln!(io::stdout(), "\n==> stopping the throwaway PostgreSQL");
        if let Err(error) = self.stop_server() {
            let _ = writeln!(
                io::stderr(),
                "xtask: warning: could not stop PostgreSQL in {}: {error:#}",
                self.dir.display()
            );
            return; // keep the directory: a running server still uses it
        }
        if let Err(error) = fs::remove_dir_all(&self.dir) {
            let _ = writeln!(io::stderr(), "xtask: warning: could not remove {}: {error}", self.dir.display());
        }
    }
}

fn running_as_root() -> Result<bool> {
    Ok(stdout_of(Command::new("id").arg("-u"))? == "0")
}

/// A fresh directory under the system temp dir; owned by `postgres` when we run as root.
fn create_temp_dir(for_postgres_user: bool) -> Result<PathBuf> {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let dir = env::temp_dir().join(format!("xtask-pg-{}-{nanos}", std::process::id()));
    fs::create_dir(&dir).with_context(|| format!("could not create {}", dir.display()))?;
    if for_postgres_user {
        let chown = capture_ok(Command::new("chown").arg("postgres:").arg(&dir));
        if let Err(error) = chown {
            let _ = fs::remove_dir(&dir);
            return Err(error)
                .context("running as root: initdb refuses root, and the user `postgres` to run it as is missing");
        }
    }
    Ok(dir)
}

/// A port that was free a moment ago (the OS picks it; the listener closes at once).
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("could not find a free port")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_of_common_urls() -> Result<()> {
        assert_eq!(host_and_port("postgres://postgres@127.0.0.1:5432/postgres")?, ("127.0.0.1".into(), 5432));
        assert_eq!(host_and_port("postgres://u:p@db.example:6000/x?sslmode=require")?, ("db.example".into(), 6000));
        assert_eq!(host_and_port("postgresql://u@[::1]:5433/x")?, ("::1".into(), 5433));
        assert_eq!(host_and_port("postgres://u@db/x")?, ("db".into(), 5432));
        assert_eq!(host_and_port("postgres:///x")?, ("localhost".into(), 5432));
        assert!(host_and_port("postgres://u@db:notaport/x").is_err());
        Ok(())
    }

    #[test]
    fn database_names_are_replaced() {
        assert_eq!(with_database("postgres://u@h:1/postgres", "x"), "postgres://u@h:1/x");
        assert_eq!(with_database("postgres://u:p@h/db?sslmode=require", "x"), "postgres://u:p@h/x?sslmode=require");
        assert_eq!(with_database("postgres://u@h:1", "x"), "postgres://u@h:1/x");
    }

    #[test]
    fn versions_sort_numerically() {
        assert!(parse_version("10") > parse_version("9.6"));
        assert_eq!(parse_version("main"), None);
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("postgres://u:secret@h:1/db"), "postgres://u:***@h:1/db");
        assert_eq!(redact("postgres://u@h:1/db"), "postgres://u@h:1/db");
    }
}
