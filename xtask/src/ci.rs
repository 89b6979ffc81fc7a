//! `cargo xtask ci`: the whole CI run, in order, stopping at the first failure.

use anyhow::{Context, Result};

use crate::cmd::{self, capture, cargo};
use crate::{deps, openapi, postgres, schemathesis};

const STEPS: usize = 8;

pub fn run() -> Result<()> {
    step(1, "formatting", check_formatting)?;
    step(2, "clippy", run_clippy)?;
    step(3, "dependency direction", deps::check_dependency_direction)?;
    step(4, "OpenAPI document", openapi::check)?;
    step(5, "test fixtures (npm oidc-provider, PyPI standardwebhooks)", || {
        install_oidc_fixture()?;
        install_webhook_receiver()
    })?;
    let database = step(6, "PostgreSQL", postgres::provide)?;
    let tests = step(7, "tests", || run_tests(&database.admin_url()));
    // after the tests, which built target/debug/compliance-server
    let contract = tests.and_then(|()| step(8, "schemathesis (contract tests)", || schemathesis::run(&database)));
    drop(database); // stops and removes a throwaway cluster, also when a step failed
    contract?;
    println!("\nxtask ci: all {STEPS} steps passed");
    Ok(())
}

fn step<T>(number: usize, name: &str, action: impl FnOnce() -> Result<T>) -> Result<T> {
    println!("\n==> [{number}/{STEPS}] {name}");
    action().with_context(|| format!("step {number}/{STEPS} ({name}) failed"))
}

fn check_formatting() -> Result<()> {
    cmd::run(cargo()?.args(["fmt", "--all", "--", "--check"]))
        .context("formatting check failed (for unformatted code, run `cargo fmt --all`)")
}

fn run_clippy() -> Result<()> {
    cmd::run(cargo()?.args(["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]))
}

/// The sign-in tests run the npm package `oidc-provider` (pinned in tests/oidc/package-lock.json)
/// as a real OpenID provider: `npm ci` installs it when tests/oidc/node_modules is missing.
fn install_oidc_fixture() -> Result<()> {
    let dir = crate::cmd::workspace_root()?.join("tests/oidc");
    if dir.join("node_modules/oidc-provider").is_dir() {
        println!("tests/oidc/node_modules is installed");
        return Ok(());
    }
    let mut npm = std::process::Command::new("npm");
    npm.args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir);
    cmd::run(&mut npm).context("`npm ci` in tests/oidc failed (Node.js 20 and npm are needed for the sign-in tests)")
}

/// The version of the Standard Webhooks reference library the webhook tests verify signatures with
/// (tests/webhook_receiver.py); `.ci/run` installs the same one.
const STANDARDWEBHOOKS_VERSION: &str = "1.1.0";

/// The webhook tests' receiver verifies every delivery with the PyPI package `standardwebhooks`:
/// `python3 -m pip install standardwebhooks==1.1.0` when it is missing or another version.
fn install_webhook_receiver() -> Result<()> {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import importlib.metadata as m; print(m.version('standardwebhooks'))"])
        .output();
    if let Ok(output) = &probe
        && String::from_utf8_lossy(&output.stdout).trim() == STANDARDWEBHOOKS_VERSION
    {
        println!("standardwebhooks {STANDARDWEBHOOKS_VERSION} is installed");
        return Ok(());
    }
    let mut pip = std::process::Command::new("python3");
    pip.args(["-m", "pip", "install", "--quiet", &format!("standardwebhooks=={STANDARDWEBHOOKS_VERSION}")]);
    cmd::run(&mut pip).context("installing standardwebhooks from PyPI failed (the webhook tests need it)")
}

/// Doctests first, so that the last lines a CI log shows are the main runner's summary.
fn run_tests(database_url: &str) -> Result<()> {
    cmd::run(cargo()?.args(["test", "--workspace", "--doc", "--locked"]).env("DATABASE_URL", database_url))?;
    if nextest_available()? {
        cmd::run(cargo()?.args(["nextest", "run", "--workspace", "--locked"]).env("DATABASE_URL", database_url))
    } else {
        println!("cargo-nextest not installed: using cargo test (`cargo install cargo-nextest --locked` is faster)");
        cmd::run(cargo()?.args(["test", "--workspace", "--all-targets", "--locked"]).env("DATABASE_URL", database_url))
    }
}

fn nextest_available() -> Result<bool> {
    Ok(capture(cargo()?.args(["nextest", "--version"]))?.status.success())
}
