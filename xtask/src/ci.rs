//! `cargo xtask ci`: the whole CI run, in order, stopping at the first failure.

use std::process::Command;

use anyhow::{Context, Result};

use crate::cmd::{self, capture, cargo};
use crate::provision::{self, Tools};
use crate::{client, deps, docs, openapi, postgres, schemathesis};

const STEPS: usize = 9;

pub fn run() -> Result<()> {
    // Before anything is built: a machine that lacks a tool learns it at once, and all of them.
    let tools = step(1, "tools the tests need (Debian, PyPI, npm)", provision::ensure)?;
    step(2, "formatting", check_formatting)?;
    step(3, "clippy", run_clippy)?;
    step(4, "dependency direction", deps::check_dependency_direction)?;
    step(5, "OpenAPI document and the client generated from it", || openapi::check().and_then(|()| client::check()))?;
    step(6, "API documentation (rustdoc)", docs::check)?;
    let database = step(7, "PostgreSQL", postgres::provide)?;
    let tests = step(8, "tests", || run_tests(&database.admin_url(), &tools));
    // after the tests, which built target/debug/compliance-server
    let contract =
        tests.and_then(|()| step(9, "schemathesis (contract tests)", || schemathesis::run(&database, &tools)));
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
/// The tests find the tools' `python3` and `moto_server` first on their `PATH`.
fn run_tests(database_url: &str, tools: &Tools) -> Result<()> {
    let with_env = |command: &mut Command| {
        command.env("DATABASE_URL", database_url).env("PATH", tools.path());
    };
    let mut doctests = cargo()?;
    doctests.args(["test", "--workspace", "--doc", "--locked"]);
    with_env(&mut doctests);
    cmd::run(&mut doctests)?;
    let mut tests = cargo()?;
    if nextest_available()? {
        tests.args(["nextest", "run", "--workspace", "--locked"]);
    } else {
        println!("cargo-nextest not installed: using cargo test (`cargo install cargo-nextest --locked` is faster)");
        tests.args(["test", "--workspace", "--all-targets", "--locked"]);
    }
    with_env(&mut tests);
    cmd::run(&mut tests)
}

fn nextest_available() -> Result<bool> {
    Ok(capture(cargo()?.args(["nextest", "--version"]))?.status.success())
}
