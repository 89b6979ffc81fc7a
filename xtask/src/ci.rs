//! `cargo xtask ci`: the whole CI run, in order, stopping at the first failure.

use anyhow::{Context, Result};

use crate::cmd::{self, capture, cargo};
use crate::{deps, openapi, postgres, schemathesis};

const STEPS: usize = 7;

pub fn run() -> Result<()> {
    step(1, "formatting", check_formatting)?;
    step(2, "clippy", run_clippy)?;
    step(3, "dependency direction", deps::check_dependency_direction)?;
    step(4, "OpenAPI document", openapi::check)?;
    let database = step(5, "PostgreSQL", postgres::provide)?;
    let tests = step(6, "tests", || run_tests(&database.admin_url()));
    // after the tests, which built target/debug/compliance-server
    let contract = tests.and_then(|()| step(7, "schemathesis (contract tests)", || schemathesis::run(&database)));
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
