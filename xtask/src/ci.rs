//! `cargo xtask ci`: the whole CI run, in order, stopping at the first failure.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::cmd::{self, capture, cargo};
use crate::provision::{self, Tools};
use crate::{client, deps, doc_paths, docs, openapi, postgres, schema, schemathesis};

const STEPS: usize = 11;

pub fn run() -> Result<()> {
    let mut steps = Steps::default();
    let outcome = run_steps(&mut steps);
    // Last, where a CI log's tail shows it, on success and failure alike.
    steps.print_times();
    outcome
}

fn run_steps(steps: &mut Steps) -> Result<()> {
    // Before anything is built: a machine that lacks a tool learns it at once, and all of them.
    let tools = steps.run("tools the tests need (Debian, PyPI, npm)", provision::ensure)?;
    steps.run("formatting", check_formatting)?;
    steps.run("docs name what the tree holds", doc_paths::check)?;
    steps.run("clippy", run_clippy)?;
    steps.run("dependency direction", deps::check_dependency_direction)?;
    steps
        .run("OpenAPI document and the client generated from it", || openapi::check().and_then(|()| client::check()))?;
    steps.run("API documentation (rustdoc)", docs::check)?;
    let database = steps.run("PostgreSQL", postgres::provide)?;
    steps.run("schema.rs is diesel's print of the PostgreSQL migrations", || schema::check(&database))?;
    let tests = steps.run("tests", || run_tests(&database.admin_url(), &tools));
    // after the tests, which built target/debug/compliance-server
    let contract =
        tests.and_then(|()| steps.run("schemathesis (contract tests)", || schemathesis::run(&database, &tools)));
    drop(database); // stops and removes a throwaway cluster, also when a step failed
    contract?;
    println!("\nxtask ci: all {STEPS} steps passed");
    Ok(())
}

/// The steps run so far, numbered in order, with how long each took.
#[derive(Default)]
struct Steps {
    took: Vec<(String, Duration)>,
}

impl Steps {
    fn run<T>(&mut self, name: &str, action: impl FnOnce() -> Result<T>) -> Result<T> {
        let number = self.took.len() + 1;
        println!("\n==> [{number}/{STEPS}] {name}");
        let started = Instant::now();
        let outcome = action();
        self.took.push((name.to_owned(), started.elapsed()));
        outcome.with_context(|| format!("step {number}/{STEPS} ({name}) failed"))
    }

    fn print_times(&self) {
        println!("\nxtask ci: time per step");
        for (number, (name, took)) in self.took.iter().enumerate() {
            println!("  [{}/{STEPS}] {:>4} s  {name}", number + 1, took.as_secs());
        }
        let total: Duration = self.took.iter().map(|(_, took)| *took).sum();
        println!("  total {} s", total.as_secs());
    }
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
