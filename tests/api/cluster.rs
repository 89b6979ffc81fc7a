//! A throwaway PostgreSQL server a test may stop and start again under a running service: initdb
//! into a temporary directory, `pg_ctl start` on a free port of 127.0.0.1, trust authentication
//! for `postgres`. The same recipe as `xtask/src/postgres.rs` (which starts the tests' shared
//! server when `DATABASE_URL` is unset); dropping it stops the server and removes the directory.
//!
//! Needs the PostgreSQL server binaries (`/usr/lib/postgresql/*/bin`, or `initdb` and `pg_ctl` on
//! `PATH`); without them the test fails saying so (CI installs them, see `.ci/run`).

use std::ffi::OsStr;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;

use tokio::process::Command;

use crate::harness::random_hex;

const DEBIAN_INSTALL_ROOT: &str = "/usr/lib/postgresql";

/// A PostgreSQL cluster of one test.
#[derive(Debug)]
pub struct Cluster {
    bin_dir: PathBuf,
    /// Holds `data/`, `server.log` and the unix socket.
    dir: PathBuf,
    port: u16,
    /// initdb refuses to run as root: then every tool runs as `postgres` through runuser.
    as_postgres_user: bool,
}

impl Cluster {
    /// Creates and starts a cluster; fails the test with a clear message when the PostgreSQL
    /// server binaries are missing.
    pub async fn start() -> Cluster {
        let bin_dir = find_bin_dir().unwrap_or_else(|| {
            panic!(
                "this test starts and stops its own PostgreSQL server and needs `initdb` and `pg_ctl`: \
                 install the server (Debian/Ubuntu: `apt-get install postgresql`, which puts them in \
                 {DEBIAN_INSTALL_ROOT}/VERSION/bin) or put them on PATH"
            )
        });
        let as_postgres_user = running_as_root().await;
        let dir = std::env::temp_dir().join(format!("compliance-api-pg-{}", random_hex(6)));
        std::fs::create_dir(&dir).unwrap_or_else(|err| panic!("create {}: {err}", dir.display()));
        // From here on, dropping `cluster` removes the directory, whatever fails next.
        let mut cluster = Cluster { bin_dir, dir, port: 0, as_postgres_user };
        if as_postgres_user {
            let mut chown = std::process::Command::new("chown");
            chown.arg("postgres:").arg(&cluster.dir);
            let output = run(chown.into()).await;
            assert!(
                output.status.success(),
                "running as root: initdb refuses root, and handing {} to the user `postgres` failed: {}",
                cluster.dir.display(),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let mut initdb = cluster.tool("initdb");
        initdb.arg("-D").arg(cluster.data_dir());
        initdb.args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale", "--no-sync"]);
        let output = run(initdb).await;
        assert!(output.status.success(), "initdb failed: {}", String::from_utf8_lossy(&output.stderr));
        // A port taken between choosing and binding is retried.
        for _ in 0..3 {
            cluster.port = free_port();
            if cluster.pg_ctl_start().await {
                return cluster;
            }
        }
        panic!("could not start the test's PostgreSQL; its log:\n{}", cluster.log());
    }

    /// The superuser's URL (database `postgres`).
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// `pg_ctl stop -m MODE`: `fast` (clients are told the server shuts down) or `immediate`
    /// (backends are killed, as in a crash); returns once the server is down.
    pub async fn stop(&self, mode: &str) {
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl.arg("-D").arg(self.data_dir()).args(["-m", mode, "-w", "-t", "60", "stop"]);
        let output = run(pg_ctl).await;
        assert!(
            output.status.success(),
            "pg_ctl stop failed: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.log()
        );
    }

    /// Starts the stopped server again, on the same port and data.
    pub async fn restart(&self) {
        assert!(self.pg_ctl_start().await, "could not start the test's PostgreSQL again; its log:\n{}", self.log());
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log_file()).unwrap_or_default()
    }

    async fn pg_ctl_start(&self) -> bool {
        let options = format!("-p {} -k {} -h 127.0.0.1 -F -c max_connections=100", self.port, self.dir.display());
        let mut pg_ctl = self.tool("pg_ctl");
        pg_ctl.arg("-D").arg(self.data_dir()).arg("-l").arg(self.log_file());
        pg_ctl.args(["-w", "-t", "60", "-o", &options, "start"]);
        run(pg_ctl).await.status.success()
    }

    /// A PostgreSQL program, run as `postgres` when we are root, in the cluster's directory (the
    /// `postgres` user may not be allowed into the current one).
    fn tool(&self, name: &str) -> Command {
        let program = self.bin_dir.join(name);
        let mut command = if self.as_postgres_user {
            let mut runuser = std::process::Command::new("runuser");
            runuser.args([OsStr::new("-u"), OsStr::new("postgres"), OsStr::new("--"), program.as_os_str()]);
            runuser
        } else {
            std::process::Command::new(program)
        };
        command.current_dir(&self.dir);
        command.into()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.data_dir().join("postmaster.pid").exists() {
            let mut pg_ctl = self.tool("pg_ctl").into_std();
            pg_ctl.arg("-D").arg(self.data_dir()).args(["-m", "immediate", "-w", "stop"]);
            if let Err(err) = pg_ctl.output() {
                let _ = writeln!(
                    std::io::stderr(),
                    "could not stop the test's PostgreSQL in {}: {err}",
                    self.dir.display()
                );
                return; // keep the directory: a running server still uses it
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn run(mut command: Command) -> Output {
    command.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let shown = format!("{:?}", command.as_std());
    command.output().await.unwrap_or_else(|err| panic!("cannot run {shown}: {err}"))
}

async fn running_as_root() -> bool {
    let mut id = std::process::Command::new("id");
    id.arg("-u");
    let output = run(id.into()).await;
    String::from_utf8_lossy(&output.stdout).trim() == "0"
}

/// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `pg_ctl`, else a PATH entry
/// holding both.
fn find_bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(DEBIAN_INSTALL_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version: Option<Vec<u32>> =
                entry.file_name().to_str()?.split('.').map(|part| part.parse().ok()).collect();
            let bin = entry.path().join("bin");
            has_server_tools(&bin).then_some((version?, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).or_else(|| {
        std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).find(|dir| has_server_tools(dir)))
    })
}

fn has_server_tools(dir: &Path) -> bool {
    dir.join("initdb").is_file() && dir.join("pg_ctl").is_file()
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}
