//! What the tests need besides Rust and PostgreSQL (`postgres::provide`), set up by `cargo xtask ci` before it builds
//! anything, so that the README's one command works on a fresh machine:
//! - Debian packages (Chromium and chromedriver for the browser tests, poppler-utils' `pdftotext`
//!   to read the text of PDFs the service prints, Redis), installed with apt-get when xtask runs
//!   as root, and Redis started on its standard port when nothing answers there;
//! - pinned PyPI packages (schemathesis, standardwebhooks, moto, compliance-trestle) in a virtual environment of their
//!   own under `target/tools/venv`, whatever the machine's Python already holds;
//! - the npm package `oidc-provider` in tests/oidc (`npm ci`, pinned by its lock file).
//!
//! What is missing and cannot be installed here is listed in one message, with how to install it,
//! before anything is built.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::cmd::{self, workspace_root};
use crate::service::target_dir;

/// A Debian package the tests need, found by one file it installs.
struct DebianPackage {
    package: &'static str,
    file: &'static str,
    needed_by: &'static str,
}

const DEBIAN: &[DebianPackage] = &[
    DebianPackage { package: "chromium", file: "/usr/bin/chromium", needed_by: "the browser tests" },
    DebianPackage { package: "chromium-driver", file: "/usr/bin/chromedriver", needed_by: "the browser tests" },
    DebianPackage { package: "poppler-utils", file: "/usr/bin/pdftotext", needed_by: "reading PDFs' text (pdftotext)" },
    // The server the tests need when no DATABASE_URL answers: step 8 of `ci` starts a throwaway
    // cluster from its binaries (xtask/src/postgres.rs).
    DebianPackage {
        package: "postgresql",
        file: "/usr/bin/pg_ctlcluster",
        needed_by: "the PostgreSQL tests and the bench (initdb, pg_ctl, pgbench)",
    },
    // diesel_cli links libpq: `cargo xtask schema` installs it to print schema.rs (step 9 of `ci`).
    DebianPackage { package: "libpq-dev", file: "/usr/include/postgresql/libpq-fe.h", needed_by: "diesel_cli" },
    DebianPackage {
        package: "redis-server",
        file: "/usr/bin/redis-server",
        needed_by: "the chat and rate limit tests",
    },
];

/// Where the tests look for Redis (`REDIS_URL`'s default in them).
const REDIS_ADDRESS: &str = "127.0.0.1:6379";
const REDIS_SOCKET: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 6379);

/// The PyPI packages, pinned: `(requirement, distribution, version)`. schemathesis's version
/// decides which cases a seed generates, so a CI failure reproduces only with the same one.
const PYPI: &[(&str, &str, &str)] = &[
    ("schemathesis==4.32.5", "schemathesis", "4.32.5"),
    ("standardwebhooks==1.1.0", "standardwebhooks", "1.1.0"),
    // NIST OSCAL models: tests/oscal/make_catalog.py builds the catalog tests/api/frameworks.rs imports.
    ("compliance-trestle==5.2.0", "compliance-trestle", "5.2.0"),
    ("moto[server]==5.2.1", "moto", "5.2.1"),
    // An independent RFC 9162 implementation: tests/audit_proofs.py checks the audit log's roots
    // and proofs with it (tests/api/audit_proofs.rs). Ed25519 there is `cryptography`'s (moto's).
    ("pymerkle==6.1.0", "pymerkle", "6.1.0"),
    ("cryptography==51.0.1", "cryptography", "51.0.1"),
];

/// The tools the tests run, once set up: commands started with [`Tools::path`] as their `PATH`
/// find the virtual environment's `python3`, `schemathesis` and `moto_server` first.
pub struct Tools {
    venv_bin: PathBuf,
}

impl Tools {
    /// A program of the virtual environment (`schemathesis`).
    pub fn program(&self, name: &str) -> PathBuf {
        self.venv_bin.join(name)
    }

    /// `PATH` with the virtual environment's programs first.
    pub fn path(&self) -> OsString {
        let rest = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(self.venv_bin.clone()).chain(std::env::split_paths(&rest));
        std::env::join_paths(dirs).unwrap_or(rest)
    }
}

/// Installs what is missing, or fails with one message listing what could not be installed.
pub fn ensure() -> Result<Tools> {
    let mut problems = Vec::new();
    install_debian_packages(&mut problems);
    if let Err(error) = ensure_redis() {
        problems.push(format!("Redis on {REDIS_ADDRESS}: {error:#}"));
    }
    let tools = match install_python_packages() {
        Ok(tools) => Some(tools),
        Err(error) => {
            problems.push(format!(
                "the PyPI packages {} in target/tools/venv: {error:#} (needs python3 with its venv module: \
                 `apt-get install -y python3-venv`)",
                PYPI.iter().map(|(requirement, ..)| *requirement).collect::<Vec<_>>().join(", ")
            ));
            None
        }
    };
    if let Err(error) = install_oidc_fixture() {
        problems.push(format!(
            "the npm package oidc-provider in tests/oidc: {error:#} (needs Node.js 20 and npm: \
             `apt-get install -y nodejs npm`, then `npm ci` in tests/oidc)"
        ));
    }
    match (tools, problems.is_empty()) {
        (Some(tools), true) => Ok(tools),
        _ => bail!(
            "the tests need tools this machine lacks and xtask could not install:\n  - {}",
            problems.join("\n  - ")
        ),
    }
}

fn install_debian_packages(problems: &mut Vec<String>) {
    let missing: Vec<&DebianPackage> = DEBIAN.iter().filter(|p| !Path::new(p.file).exists()).collect();
    if missing.is_empty() {
        println!("Debian packages: {} installed", DEBIAN.iter().map(|p| p.package).collect::<Vec<_>>().join(", "));
        return;
    }
    let names: Vec<&str> = missing.iter().map(|p| p.package).collect();
    let why: Vec<String> = missing.iter().map(|p| format!("{} ({})", p.package, p.needed_by)).collect();
    println!("missing Debian packages: {}", why.join(", "));
    let installed = is_root() && {
        let update = cmd::run(Command::new("apt-get").args(["update", "-qq"]));
        let mut install = Command::new("apt-get");
        install.args(["install", "-y", "-qq"]).args(&names).env("DEBIAN_FRONTEND", "noninteractive");
        update.and_then(|()| cmd::run(&mut install)).is_ok()
    };
    let still_missing: Vec<&str> = missing.iter().filter(|p| !Path::new(p.file).exists()).map(|p| p.package).collect();
    if !installed || !still_missing.is_empty() {
        problems.push(format!(
            "Debian packages {} (as root: `apt-get install -y {}`)",
            why.join(", "),
            still_missing.join(" ")
        ));
    }
}

/// Redis answering on [`REDIS_ADDRESS`], started (keeping nothing on disk) when it does not.
fn ensure_redis() -> Result<()> {
    if redis_answers() {
        println!("Redis answers on {REDIS_ADDRESS}");
        return Ok(());
    }
    println!("starting Redis on {REDIS_ADDRESS}");
    let mut start = Command::new("redis-server");
    start.args(["--daemonize", "yes", "--bind", "127.0.0.1", "--port", "6379", "--save", "", "--appendonly", "no"]);
    cmd::run(&mut start)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if redis_answers() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("redis-server started but does not answer PING within 10 s")
}

fn redis_answers() -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&REDIS_SOCKET, Duration::from_secs(1)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok() && stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

/// Whether xtask runs as root, so that apt-get may install packages.
fn is_root() -> bool {
    cmd::stdout_of(Command::new("id").arg("-u")).is_ok_and(|uid| uid.trim() == "0")
}

/// The virtual environment with every pinned package at its version, made or completed.
fn install_python_packages() -> Result<Tools> {
    let venv = target_dir()?.join("tools").join("venv");
    let venv_bin = venv.join("bin");
    let python = venv_bin.join("python3");
    if !python.exists() {
        println!("creating the Python environment of the tests: {}", venv.display());
        cmd::run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    let missing: Vec<&str> = PYPI
        .iter()
        .filter(|(_, distribution, version)| installed_version(&python, distribution).as_deref() != Some(*version))
        .map(|(requirement, ..)| *requirement)
        .collect();
    if missing.is_empty() {
        println!("PyPI packages: {} installed in {}", PYPI.len(), venv.display());
    } else {
        println!("installing into {}: {}", venv.display(), missing.join(" "));
        cmd::run(
            Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
                .args(&missing),
        )?;
    }
    Ok(Tools { venv_bin })
}

fn installed_version(python: &Path, distribution: &str) -> Option<String> {
    let script = format!("import importlib.metadata as m; print(m.version('{distribution}'))");
    let output = Command::new(python).args(["-c", &script]).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The sign-in tests run the npm package `oidc-provider` (pinned in tests/oidc/package-lock.json)
/// as a real OpenID provider.
fn install_oidc_fixture() -> Result<()> {
    let dir = workspace_root()?.join("tests/oidc");
    if dir.join("node_modules/oidc-provider").is_dir() {
        println!("npm: tests/oidc/node_modules is installed");
        return Ok(());
    }
    cmd::run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir))
}
