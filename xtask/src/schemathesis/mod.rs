//! Contract tests: schemathesis against a running `compliance-server`, once on SQLite and once on
//! PostgreSQL, each on a fresh database with one organization, its owner and an API key.
//!
//! The settings schemathesis reads from a file live in `schemathesis.toml` at the workspace root
//! (with the reason for each); the run-specific ones (address, key, seed, reports) are flags here.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use crate::cmd::{self, cargo, display, workspace_root};
use crate::postgres::{self, Database};
use crate::provision::{self, Tools};
use crate::service::{Request, Scratch, Server, Store, Tenant, json_string, target_dir};

mod reach;
mod seed;

/// A fixed seed: a failure found in CI is found again locally.
const SEED: &str = "42";
/// Test cases per operation and phase. With 153 operations whose requests reach their handlers,
/// one backend's run took 528 s on two loaded cores (see docs/testing.md).
const MAX_EXAMPLES: &str = "15";
/// One worker. Workers are threads, and CPython 3.11.7 (this machine's) races when two threads run
/// `ast.parse` at once, which hypothesis does to describe lambdas: CI failed with "SystemError: AST
/// constructor recursion depth mismatch" (CPython gh-106905). Threads share the GIL, so a second
/// worker bought little anyway.
const WORKERS: &str = "1";
/// Per request; the slowest legitimate requests (attachments, the document itself) take well under it.
const REQUEST_TIMEOUT_SECONDS: &str = "10";
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
    let tools = provision::ensure()?;
    // The same selection as the other steps (`--workspace --all-targets`): building one package
    // alone unifies its dependencies' features differently and compiles hundreds of them again.
    cmd::run(cargo()?.args(["build", "--workspace", "--all-targets", "--locked"]))?;
    let database = postgres::provide()?;
    let outcome = run(&database, &tools);
    drop(database);
    outcome
}

/// Both backends with the dev binary the tests built (no second build profile), at the same time:
/// each run is one single-threaded Python process (see [`WORKERS`]), so on two cores the pair
/// takes about as long as the slower one, where one after the other took the sum (528 s + 281 s).
/// Each run's output goes to its reports directory and is printed whole when it ends, so the two
/// do not interleave. The first failure is reported after both ran, so that one run shows the
/// failures of both.
pub fn run(database: &Database, tools: &Tools) -> Result<()> {
    let binary = server_binary()?;
    let (sqlite, postgres) = std::thread::scope(|scope| {
        let sqlite = scope.spawn(|| run_backend(&binary, Backend::Sqlite, database, tools));
        let postgres = run_backend(&binary, Backend::Postgres, database, tools);
        let sqlite = sqlite.join().unwrap_or_else(|_| Err(anyhow!("the run on SQLite panicked")));
        (sqlite, postgres)
    });
    match (sqlite, postgres) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(error), Ok(())) => Err(error.context("schemathesis on SQLite failed")),
        (Ok(()), Err(error)) => Err(error.context("schemathesis on PostgreSQL failed")),
        (Err(sqlite), Err(postgres)) => {
            Err(postgres.context(format!("schemathesis failed on both backends; on SQLite: {sqlite:#}")))
        }
    }
}

fn server_binary() -> Result<PathBuf> {
    let binary = target_dir()?.join("debug").join("compliance-server");
    if !binary.is_file() {
        bail!("{} is missing: run `cargo build --workspace --all-targets` first", binary.display());
    }
    Ok(binary)
}

fn run_backend(binary: &Path, backend: Backend, database: &Database, tools: &Tools) -> Result<()> {
    let name = backend.name();
    println!("\n--> [{name}] schemathesis starts");
    let started = Instant::now();
    let reports = target_dir()?.join("schemathesis").join(backend.name());
    if reports.exists() {
        fs::remove_dir_all(&reports).with_context(|| format!("cannot empty {}", reports.display()))?;
    }
    fs::create_dir_all(&reports).with_context(|| format!("cannot create {}", reports.display()))?;
    let scratch = Scratch::create("schemathesis")?;
    let store = match backend {
        Backend::Sqlite => Store::sqlite(&scratch),
        Backend::Postgres => Store::postgres(&database.admin_url(), "schemathesis")?,
    };
    let tenant = Tenant::create(binary, store.url(), "schemathesis")?;
    println!(
        "[{name}] organization {}, owner {} (member {}), an API key",
        tenant.organization_id, tenant.user_id, tenant.member_id
    );
    let log = reports.join("server.log");
    let mut server = Server::spawn(binary, store.url(), &scratch.0, &log, &[])?;
    server.wait_until_ok(&Request::get("/health"), POLL_INTERVAL, &log)?;
    let outcome = create_task(&server.address, &tenant.api_key).and_then(|task_id| {
        let seeded = seed::seed(binary, store.url(), &server.address, &tenant, &task_id)?;
        let before = request_counts(&server.address)?;
        let found = schemathesis(name, &server.base_url, &tenant, &task_id, &seeded, &reports, tools);
        // Reached or not is reported even when schemathesis failed: it tells what the run tested.
        match (found, reached_handlers(&server.address, &before)) {
            (Ok(()), reached) => reached,
            (Err(found), Ok(())) => Err(found),
            (Err(found), Err(reached)) => Err(found.context(format!("{reached:#}"))),
        }
    });
    drop(server);
    drop(store);
    println!("[{name}] schemathesis took {:.0?}", started.elapsed());
    outcome.with_context(|| format!("reports in {}, the server's log in {}", reports.display(), log.display()))
}

/// The server's request counters (`/metrics`) by route, method and status.
fn request_counts(address: &str) -> Result<reach::Counts> {
    reach::parse_metrics(&Request::get("/metrics").expect(address, 200)?)
}

/// Fails when an operation outside the listed ones never reached its handler during the run (see
/// `reach`): requests that all end at authentication or for want of data test no handler.
fn reached_handlers(address: &str, before: &reach::Counts) -> Result<()> {
    let counts = reach::since(&request_counts(address)?, before);
    let document: Value = serde_json::from_str(&Request::get("/openapi.json").expect(address, 200)?)
        .context("the served /openapi.json is not JSON")?;
    reach::Reach::new(&document, &counts)?.check()
}

/// A task through the API (the admin CLI makes no records): automations must name a real task.
fn create_task(address: &str, api_key: &str) -> Result<String> {
    let body = Request::post("/v1/tasks", r#"{"title":"Schemathesis"}"#).with_key(api_key).expect(address, 201)?;
    json_string(&body, "id")
}

fn schemathesis(
    backend: &str,
    base_url: &str,
    tenant: &Tenant,
    task_id: &str,
    seeded: &seed::Seed,
    reports: &Path,
    tools: &Tools,
) -> Result<()> {
    let root = workspace_root()?;
    let mut command = Command::new(tools.program("schemathesis"));
    command.current_dir(&root).arg("--config-file").arg(root.join("schemathesis.toml"));
    command.args(["--no-color", "run", &format!("{base_url}/openapi.json")]);
    command.args(["--checks", "all", "--mode", "all", "--seed", SEED, "--max-examples", MAX_EXAMPLES]);
    command.args(["--workers", WORKERS, "--request-timeout", REQUEST_TIMEOUT_SECONDS]);
    command.args(["--report", "junit,ndjson"]).arg("--report-dir").arg(reports);
    command.arg("--report-junit-path").arg(reports.join("junit.xml"));
    command.arg("--report-ndjson-path").arg(reports.join("events.ndjson"));
    // The config file's authentication section reads the key and its organization from these, and
    // the hooks the session; the key and the session are set after the command line is echoed, so
    // neither is printed.
    command.env("SCHEMATHESIS_ORG_ID", &tenant.organization_id);
    command.env("SCHEMATHESIS_MEMBER_ID", &tenant.member_id);
    command.env("SCHEMATHESIS_USER_ID", &tenant.user_id);
    command.env("SCHEMATHESIS_TASK_ID", task_id);
    command.env("SCHEMATHESIS_BASE_URL", base_url);
    command.envs(seeded.variables.iter().map(|(name, value)| (name, value)));
    // Positive cases go without a made-up list cursor or idempotency key, with the real references
    // to data, and the session-only operations with the session (see the file).
    command.env("SCHEMATHESIS_HOOKS", root.join("tests").join("schemathesis").join("hooks.py"));
    let shown = display(&command);
    command.env("SCHEMATHESIS_API_KEY", &tenant.api_key);
    command.env("SCHEMATHESIS_SESSION", &seeded.session);
    let output_path = reports.join("output.txt");
    let output = fs::File::create(&output_path).with_context(|| format!("cannot create {}", output_path.display()))?;
    command.stdout(output.try_clone()?).stderr(output);
    let status = command.status().context("could not start schemathesis")?;
    let printed = fs::read_to_string(&output_path).unwrap_or_default();
    // One write, under stdout's lock: the other backend's run prints in between, not within.
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "\n--> [{backend}] $ {shown}\n{printed}")?;
    drop(stdout);
    if !status.success() {
        bail!("schemathesis found failures ({status})");
    }
    Ok(())
}
