//! `cargo xtask bench`: the API under load beside PostgreSQL's own speed at the same work.
//!
//! One run seeds two organizations per backend, starts the release server, and for each case
//! drives it with wrk from a separate process between two pgbench runs of the one SQL statement
//! the case needs at the same connection count, so each result is a ratio taken at that moment
//! on this machine. Figures go to the terminal and to `target/bench/` (JSON and an SVG chart); the
//! last line says whether every target was met. README.md ("Benchmark") explains the figures.

mod adoption;
mod aws_checks;
mod check_report;
mod fake_fleet;
mod large;
mod measure;
mod pgbench;
mod receiver;
mod report;
mod scale;
mod seal;
mod seed;
mod steal;
mod sweep;
mod webhooks;
mod wrk;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::cmd::{self, cargo, stdout_of};
use crate::postgres;
use crate::service::{Request, Scratch, Server, Store, target_dir};
use check_report::CheckCases;
use measure::{Load, Served, major_faults, rss_and_anonymous_mib, rss_mib};
use report::{Kind, LIST_P99_MS, Row, ServerFigures};
use steal::{Steal, StealWatch};
use wrk::Traffic;

pub const HELP: &str = "\
Usage: cargo xtask bench [--db postgres|sqlite|both] [--seconds N] [--scale-rows N] [--case TEXT]
                         [--server PATH]

Builds the release server, provides PostgreSQL as `ci` does (DATABASE_URL or a throwaway
cluster), seeds two organizations (50 members, 100 risks, 100 vendors, 100 context entries,
20 rich-text policies each), then per case: wrk against the API (after a warm-up) between two
pgbench runs of the case's SQL at the same connection count, compared with their mean. Then the
scale case: N more risks (default 1,000,000) over 1,000 organizations, and the 100-risk list again.
Then `webhook delivery`: two instances on a database of their own deliver 2,000 changes to 10
endpoints of a local receiver, then again while one endpoint answers 500 for 10 s. Last, the
check cases, each on a database of its own: `aws checks over moto` (one run of every AWS check
over a moto holding 1,000 IAM users and 500 buckets: time, requests, memory, CPU against moto's)
and `check sweep` (1,000 FleetDM connections scheduled at once on two instances: runs/s, bounds).
Then `framework adoption`: 20 new organizations each adopt SOC 2 with the control library, then
ISO 27001 (each adoption's time, RSS above idle; goals reported, not targets).
  --db          which backends serve the API (default both; pgbench always uses PostgreSQL)
  --seconds     length of each measured run (default 10; the warm-up is 2 s)
  --scale-rows  rows the scale case adds (default 1000000; 0 skips the scale case)
  --case        only the cases whose name contains TEXT (e.g. `policies`, `PATCH`); the
                database grows only when a scale case is among them
  --server      a compliance-server binary to measure instead of building this checkout's
                (a copy of an earlier build: two builds compared in the same hour)
Needs wrk (apt-get install wrk), pgbench and, for SQLite, sqlite3 (installed with apt-get
when missing and running as root). Output: a table, target/bench/bench.json,
target/bench/bench.svg, and a summary line; exits 1 when a target is missed.";

const WARM_UP: Duration = Duration::from_secs(2);
/// Runs of one measurement at most, while the hypervisor disturbs them (see [`steal`]).
const ATTEMPTS: u32 = 3;
/// The pause before running a disturbed measurement again: the host's throttling came in bursts
/// of about a minute.
const REST_BEFORE_AGAIN: Duration = Duration::from_secs(20);
const STARTUP_POLL: Duration = Duration::from_millis(1);
/// Starts of the seeded server, whose median is its start-up time.
const STARTS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

/// A backend is written by its name in the figures' JSON.
impl serde::Serialize for Backend {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Sqlite => "sqlite",
        }
    }
}

struct Options {
    backends: Vec<Backend>,
    duration: Duration,
    scale_rows: u64,
    /// Only the cases whose name contains this.
    only: Option<String>,
    /// The server to measure; `None` builds this checkout's.
    server: Option<PathBuf>,
}

impl Options {
    fn parse(args: &[&str]) -> Result<Self> {
        let mut options = Options {
            backends: vec![Backend::Postgres, Backend::Sqlite],
            duration: Duration::from_secs(10),
            scale_rows: 1_000_000,
            only: None,
            server: None,
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args.next().with_context(|| format!("{flag} needs a value\n\n{HELP}"))?;
            match *flag {
                "--db" => {
                    options.backends = match *value {
                        "postgres" => vec![Backend::Postgres],
                        "sqlite" => vec![Backend::Sqlite],
                        "both" => vec![Backend::Postgres, Backend::Sqlite],
                        other => bail!("--db {other}: expected postgres, sqlite or both"),
                    }
                }
                "--seconds" => {
                    let seconds: u64 =
                        value.parse().ok().filter(|s| *s > 0).context("--seconds needs a whole number ≥ 1")?;
                    options.duration = Duration::from_secs(seconds);
                }
                "--scale-rows" => options.scale_rows = value.parse().context("--scale-rows needs a whole number")?,
                "--case" => options.only = Some((*value).to_owned()),
                "--server" => options.server = Some(PathBuf::from(value)),
                other => bail!("unknown option {other}\n\n{HELP}"),
            }
        }
        Ok(options)
    }

    fn selects(&self, case: &Case) -> bool {
        self.only.as_ref().is_none_or(|text| case.name.contains(text.as_str()))
    }

    /// Whether the webhook delivery case is asked for.
    fn selects_webhooks(&self) -> bool {
        self.selects_named(webhooks::NAME)
    }

    /// Whether the case called `name` (one not in [`cases`]) is asked for.
    fn selects_named(&self, name: &str) -> bool {
        self.only.as_ref().is_none_or(|text| name.contains(text.as_str()))
    }

    /// Whether any of the large cases (`large::QUERIES`, `large::EXPORT`) is asked for.
    fn selects_large(&self) -> bool {
        let names = large::QUERIES.iter().map(|query| query.name).chain([large::EXPORT]);
        self.only.as_ref().is_none_or(|text| names.into_iter().any(|name| name.contains(text.as_str())))
    }
}

pub fn run(args: &[&str]) -> Result<()> {
    let options = Options::parse(args)?;
    if let Some(text) = &options.only
        && !cases().iter().chain(&scale_cases(options.scale_rows)).any(|case| options.selects(case))
        && !options.selects_large()
        && !options.selects_webhooks()
        && !options.selects_named(sweep::NAME)
        && !options.selects_named(aws_checks::NAME)
        && !options.selects_named(adoption::NAME)
    {
        bail!("--case {text}: no case's name contains it");
    }
    ensure_installed("wrk", "wrk")?;
    if options.backends.contains(&Backend::Sqlite) {
        ensure_installed("sqlite3", "sqlite3")?;
    }
    postgres::client_tool("pgbench")?;
    let binary = match &options.server {
        Some(binary) => binary.canonicalize().with_context(|| format!("--server {}", binary.display()))?,
        None => {
            cmd::run(cargo()?.args(["build", "--release", "--locked", "-p", "compliance-server"]))?;
            target_dir()?.join("release").join("compliance-server")
        }
    };
    let out = target_dir()?.join("bench");
    fs::create_dir_all(out.join("scripts")).with_context(|| format!("cannot create {}", out.display()))?;
    let database = postgres::provide()?;
    let scratch = Scratch::create("bench")?;

    // PostgreSQL is always seeded: pgbench measures it whichever backend serves the API.
    println!("\n==> seeding");
    let postgres =
        Fixture::start(&binary, Backend::Postgres, Store::postgres(&database.admin_url(), "bench")?, &scratch, &out)?;
    let sqlite = if options.backends.contains(&Backend::Sqlite) {
        Some(Fixture::start(&binary, Backend::Sqlite, Store::sqlite(&scratch), &scratch, &out)?)
    } else {
        None
    };
    let pgbench_clients_max = pgbench_clients_max(postgres.store.url())?;

    // The fixtures whose API is measured.
    let measured: Vec<&Fixture> =
        [&postgres].into_iter().chain(sqlite.as_ref()).filter(|f| options.backends.contains(&f.backend)).collect();
    let mut bench = Bench { options: &options, out: &out, pgbench_clients_max, rows: Vec::new() };
    for case in cases().iter().filter(|case| options.selects(case)) {
        bench.case(case, &measured, &postgres)?;
    }
    let scale_cases: Vec<Case> =
        scale_cases(options.scale_rows).into_iter().filter(|case| options.selects(case)).collect();
    let large = options.scale_rows > 0 && options.selects_large();
    // The large cases' small side: the same requests on the seeded organization, before growth.
    let small: Vec<Vec<f64>> = match large {
        true => measured.iter().map(|fixture| fixture.large_p50s(&options, &out, None)).collect::<Result<_>>()?,
        false => Vec::new(),
    };
    if options.scale_rows > 0 && (!scale_cases.is_empty() || large) {
        // One organization of the million holds 100,000 risks (the large cases'); 1,000 share the rest.
        let large_rows = large::LARGE_RISKS.min(options.scale_rows);
        let spread = options.scale_rows - if large { large_rows } else { 0 };
        println!("\n==> scale: {} more risks over {} organizations", spread, scale::ORGANIZATIONS);
        scale::grow_postgres(postgres.store.url(), spread)?;
        if sqlite.is_some() {
            scale::grow_sqlite(&scratch.0.join("compliance.db"), spread)?;
        }
        for case in &scale_cases {
            bench.case(case, &measured, &postgres)?;
        }
    }
    if large {
        let mut report = Vec::new();
        for (fixture, small) in measured.iter().zip(&small) {
            report.push(fixture.large_cases(&options, &out, small, &scratch)?);
        }
        let text = serde_json::to_string_pretty(&report).context("cannot write the large cases' figures")?;
        fs::write(out.join("large.json"), text).context("cannot write target/bench/large.json")?;
    }

    let mut deliveries = Vec::new();
    if options.selects_webhooks() {
        for fixture in &measured {
            // A database of its own: the instances would deliver the other cases' events too.
            let store = own_database(fixture.backend, &database, &scratch, "webhooks")?;
            deliveries.push(webhooks::run(&binary, fixture.backend, &store, &scratch.0, &out)?);
        }
    }

    let mut check_cases = CheckCases::default();
    if options.selects_named(aws_checks::NAME) {
        // One moto, seeded once, for every backend.
        let moto = aws_checks::Moto::start(&scratch.0)?;
        for fixture in &measured {
            let store = own_database(fixture.backend, &database, &scratch, "aws_checks")?;
            check_cases.aws.push(aws_checks::run(&binary, fixture.backend, &store, &moto, &scratch.0, &out)?);
        }
    }
    if options.selects_named(sweep::NAME) {
        for fixture in &measured {
            let store = own_database(fixture.backend, &database, &scratch, "sweep")?;
            check_cases.sweep.push(sweep::run(&binary, fixture.backend, &store, &scratch.0, &out)?);
        }
    }
    if options.selects_named(adoption::NAME) {
        for fixture in &measured {
            // A database and a server of its own: idle and peak RSS are the adoptions' alone.
            let store = own_database(fixture.backend, &database, &scratch, "adoption")?;
            check_cases.adoption.push(adoption::run(&binary, fixture.backend, &store, &scratch.0, &out)?);
        }
    }

    let servers = measured.iter().map(|fixture| fixture.figures()).collect::<Result<Vec<_>>>()?;
    report::finish(&bench.rows, &servers, &deliveries, &check_cases, &options.backends, options.scale_rows, &out)
}

/// A database of the case `name`'s own on `backend`, for cases whose instances' workers would
/// take up the other cases' work (their events to deliver, their connections to check).
fn own_database(backend: Backend, database: &postgres::Database, scratch: &Scratch, name: &str) -> Result<Store> {
    Ok(match backend {
        Backend::Postgres => Store::postgres(&database.admin_url(), &format!("bench_{name}"))?,
        Backend::Sqlite => Store::Sqlite(format!("sqlite://{}", scratch.0.join(format!("{name}.db")).display())),
    })
}

/// Installs a Debian package when its program is missing and we may (root with apt-get).
fn ensure_installed(program: &str, package: &str) -> Result<()> {
    if Command::new(program).arg("--version").output().is_ok() {
        return Ok(());
    }
    let root = stdout_of(Command::new("id").arg("-u")).is_ok_and(|uid| uid == "0");
    if !root {
        bail!("{program} is not installed: apt-get install {package}");
    }
    println!("{program} is missing: installing Debian's {package}");
    let install = || {
        cmd::run(
            Command::new("apt-get").args(["install", "-y", "-q", package]).env("DEBIAN_FRONTEND", "noninteractive"),
        )
    };
    // A fresh machine may have no package lists yet.
    install().or_else(|_| cmd::run(Command::new("apt-get").args(["update", "-q"])).and_then(|()| install()))
}

/// pgbench may open at most what PostgreSQL allows beside the servers' pools and reserved slots.
fn pgbench_clients_max(database_url: &str) -> Result<u32> {
    let allowed = postgres::query(
        database_url,
        "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int",
    )?;
    let allowed: u32 = allowed.trim().parse().with_context(|| format!("max_connections: {allowed}"))?;
    Ok(allowed.saturating_sub(20).max(1))
}

/// Which seeded organization a case works on: reads on the first, writes on the second, so that
/// the rows the writes add never reach a list case.
#[derive(Clone, Copy)]
enum Tenant {
    Reads,
    Writes,
}

struct Case {
    name: String,
    kind: Kind,
    connections: u32,
    tenant: Tenant,
    traffic: fn(&Fixture) -> Traffic<'_>,
    /// The pgbench script, from the PostgreSQL fixture (for the ids it names).
    sql: fn(&Fixture) -> String,
    /// Writes: every statement one request sends, as one pgbench script (see
    /// `pgbench::patch_risk_statements`): the most the API could reach on this machine.
    statements: Option<fn(&Fixture) -> String>,
    /// Empty: the fixture's server answers. Else a server started for the case with this
    /// environment, on the same database.
    env: &'static [(&'static str, &'static str)],
    /// Rows one request (and one pgbench transaction) writes or reads: 1 but for the bulk case,
    /// whose rows/s are its req/s (or tps) times this. The ratio to pgbench is the same either way.
    rows_per_request: u32,
}

/// The environment of a server that keeps no list pages, so that every list reads its rows.
const UNCACHED: &[(&str, &str)] = &[("LIST_CACHE_MIB", "0")];

/// Risks per request of the bulk case: the most one bulk request may hold.
const BULK_ROWS: u32 = 500;

/// `{"operations": [{"op": "create", "body": {…}}, …]}` of [`BULK_ROWS`] risks.
static BULK_BODY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let operations: Vec<String> = (0..BULK_ROWS)
        .map(|n| {
            format!(
                r#"{{"op":"create","body":{{"title":"Bulk risk {n}","description":"Created by the benchmark.","category":"other"}}}}"#
            )
        })
        .collect();
    format!(r#"{{"operations":[{}]}}"#, operations.join(","))
});

const PATCH_BODY: &str = r#"{"title":"Patched by the benchmark","status":"pending"}"#;
const POST_BODY: &str = r#"{"question":"Benchmark question?","answer":"Benchmark answer.","tags":["bench"]}"#;

fn cases() -> Vec<Case> {
    let list = |name: &str, connections, traffic, sql| Case {
        name: name.to_owned(),
        kind: Kind::List,
        connections,
        tenant: Tenant::Reads,
        traffic,
        sql,
        statements: None,
        env: &[],
        rows_per_request: 1,
    };
    vec![
        list("GET /v1/risks", 32, |_| Traffic::Get { path: "/v1/risks" }, |_| pgbench::select_newest_first("risks")),
        list(
            "GET /v1/vendors",
            32,
            |_| Traffic::Get { path: "/v1/vendors" },
            |_| pgbench::select_newest_first("vendors"),
        ),
        list("GET /v1/people", 32, |_| Traffic::Get { path: "/v1/people" }, |_| pgbench::select_active_people()),
        list(
            "GET /v1/context",
            32,
            |_| Traffic::Get { path: "/v1/context" },
            |_| pgbench::select_newest_first("context_entries"),
        ),
        list(
            "GET /v1/policies",
            32,
            |_| Traffic::Get { path: "/v1/policies" },
            |_| pgbench::select_newest_first("policies"),
        ),
        list("GET /v1/risks", 1, |_| Traffic::Get { path: "/v1/risks" }, |_| pgbench::select_newest_first("risks")),
        list("GET /v1/risks", 128, |_| Traffic::Get { path: "/v1/risks" }, |_| pgbench::select_newest_first("risks")),
        uncached_risks(Kind::Uncached, "GET /v1/risks, uncached".to_owned()),
        Case {
            name: "PATCH /v1/risks/{id}".to_owned(),
            kind: Kind::Write,
            connections: 32,
            tenant: Tenant::Writes,
            traffic: |f| Traffic::Patch { prefix: "/v1/risks/", ids: &f.writes.risk_ids, body: PATCH_BODY },
            sql: |f| pgbench::update_random_risk(&f.writes.risk_ids),
            statements: Some(|f| pgbench::patch_risk_statements(&f.writes.risk_ids)),
            env: &[],
            rows_per_request: 1,
        },
        Case {
            name: format!("POST /v1/risks/bulk, {BULK_ROWS} creates"),
            kind: Kind::Bulk,
            connections: 4,
            tenant: Tenant::Writes,
            traffic: |_| Traffic::Post { path: "/v1/risks/bulk", body: &BULK_BODY },
            sql: |_| pgbench::insert_risks(BULK_ROWS as usize),
            statements: None,
            env: &[],
            rows_per_request: BULK_ROWS,
        },
        Case {
            name: "POST /v1/context".to_owned(),
            kind: Kind::Write,
            connections: 32,
            tenant: Tenant::Writes,
            traffic: |_| Traffic::Post { path: "/v1/context", body: POST_BODY },
            sql: |_| pgbench::insert_context_entry(),
            statements: Some(|_| pgbench::post_context_statements()),
            env: &[],
            rows_per_request: 1,
        },
    ]
}

/// The scale case: as served, then from a server that keeps no list pages (which shows whether
/// the indexes hold up; the kept pages would hide it).
fn scale_cases(rows: u64) -> [Case; 2] {
    let name = format!("GET /v1/risks, +{} rows", report::thousands(rows));
    [
        Case {
            name: name.clone(),
            kind: Kind::Scale,
            connections: 32,
            tenant: Tenant::Reads,
            traffic: |_| Traffic::Get { path: "/v1/risks" },
            sql: |_| pgbench::select_newest_first("risks"),
            statements: None,
            env: &[],
            rows_per_request: 1,
        },
        uncached_risks(Kind::UncachedScale, format!("{name}, uncached")),
    ]
}

/// The risks list from a server that keeps no list pages: the database path, for comparison.
fn uncached_risks(kind: Kind, name: String) -> Case {
    Case {
        name,
        kind,
        connections: 32,
        tenant: Tenant::Reads,
        traffic: |_| Traffic::Get { path: "/v1/risks" },
        sql: |_| pgbench::select_newest_first("risks"),
        statements: None,
        env: UNCACHED,
        rows_per_request: 1,
    }
}

struct Bench<'a> {
    options: &'a Options,
    out: &'a Path,
    pgbench_clients_max: u32,
    rows: Vec<Row>,
}

impl Bench<'_> {
    /// The API on each fixture, between two pgbench runs of the case's SQL whose mean is the
    /// PostgreSQL figure: pgbench's own rate moves by up to 2× from minute to minute on two shared
    /// cores, and the runs on either side of the API's take out the drift over the case.
    fn case(&mut self, case: &Case, fixtures: &[&Fixture], postgres: &Fixture) -> Result<()> {
        let slug = report::slug(&case.name, case.connections);
        println!("\n==> {} at {} connections", case.name, case.connections);
        let sql_path = self.out.join("scripts").join(format!("{slug}.sql"));
        fs::write(&sql_path, (case.sql)(postgres)).context("cannot write the pgbench script")?;
        let clients = case.connections.min(self.pgbench_clients_max);
        let organization = &postgres.tenant(case.tenant).id;
        let before = self.pgbench(&sql_path, postgres.store.url(), organization, clients)?;
        let mut api = Vec::new();
        for fixture in fixtures {
            let started_for_the_case = match case.env {
                [] => None,
                env => Some(fixture.another_server(env, &slug)?),
            };
            let server = started_for_the_case.as_ref().unwrap_or(&fixture.server);
            let since = seal::newest_entry(&fixture.store, &fixture.tenant(case.tenant).id)?;
            let run = self.api(case, fixture, server, &slug)?;
            let (_, peak_rss_mib) = rss_mib(server.pid())?;
            let seal_delay = match case.kind {
                Kind::Write | Kind::Bulk => {
                    let delay = seal::measure(&fixture.store, &fixture.tenant(case.tenant).id, &since)?;
                    if let Some(d) = delay {
                        println!(
                            "    {}: seal delay p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} entries)",
                            fixture.backend.name(),
                            d.p50_ms,
                            d.p99_ms,
                            d.max_ms,
                            d.entries
                        );
                    }
                    delay
                }
                _ => None,
            };
            api.push((fixture.backend, run, peak_rss_mib, seal_delay));
        }
        let after = self.pgbench(&sql_path, postgres.store.url(), organization, clients)?;
        let sql = Load::mean(&before.value, &after.value);
        println!(
            "    pgbench: {:.0} tps ({clients} clients; {:.0} before the API, {:.0} after)",
            sql.per_second, before.value.per_second, after.value.per_second
        );
        let statements = match case.statements {
            Some(script) => {
                let path = self.out.join("scripts").join(format!("{slug}-statements.sql"));
                fs::write(&path, script(postgres)).context("cannot write the pgbench script")?;
                let run = self.pgbench(&path, postgres.store.url(), organization, clients)?.value;
                println!("    pgbench, every statement of a request: {:.0} tps", run.per_second);
                Some(run)
            }
            None => None,
        };
        if case.rows_per_request > 1 {
            println!("    pgbench: {:.0} rows/s", sql.per_second * f64::from(case.rows_per_request));
        }
        for (backend, run, peak_rss_mib, seal_delay) in api {
            let ApiRun { load, served, major_faults } = run.value;
            self.rows.push(Row {
                case: case.name.clone(),
                kind: case.kind,
                backend,
                connections: case.connections,
                api: load,
                pgbench: sql,
                statements,
                pgbench_runs: [before.value.per_second, after.value.per_second],
                pgbench_attempts: [before.attempts, after.attempts],
                pgbench_clients: clients,
                peak_rss_mib,
                served,
                major_faults,
                steal: run.steal,
                attempts: run.attempts,
                rows_per_request: case.rows_per_request,
                seal_delay,
            });
        }
        Ok(())
    }

    /// The measured run, with the server's own count and the machine's major page faults.
    fn api(&self, case: &Case, fixture: &Fixture, server: &Server, slug: &str) -> Result<Measured<ApiRun>> {
        let script = self.out.join("scripts").join(format!("{slug}-{}.lua", fixture.backend.name()));
        fs::write(&script, (case.traffic)(fixture).script()).context("cannot write the wrk script")?;
        let key = &fixture.tenant(case.tenant).api_key;
        let url = &server.base_url;
        wrk::run(&script, url, key, case.connections, WARM_UP)?;
        let run = undisturbed(fixture.backend.name(), self.options.duration, || {
            let served_before = served_by(server)?;
            let faults_before = major_faults()?;
            let load = wrk::run(&script, url, key, case.connections, self.options.duration)?;
            let major_faults = major_faults()?.saturating_sub(faults_before);
            let served = served_by(server)?.since(served_before);
            Ok(ApiRun { load, served, major_faults })
        })?;
        let ApiRun { load, served, major_faults } = &run.value;
        if case.rows_per_request > 1 {
            println!(
                "    {}: {:.0} rows/s ({} per request)",
                fixture.backend.name(),
                load.per_second * f64::from(case.rows_per_request),
                case.rows_per_request
            );
        }
        println!(
            "    {}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, {} failed; \
             the server took over {LIST_P99_MS} ms on {} of {}; {major_faults} major page faults; {}",
            fixture.backend.name(),
            load.per_second,
            load.latency_ms,
            load.p99_ms.unwrap_or_default(),
            load.max_ms.unwrap_or_default(),
            load.failures,
            served.slow,
            served.requests,
            run.steal_summary(),
        );
        Ok(run)
    }

    fn pgbench(&self, script: &Path, url: &str, organization: &str, clients: u32) -> Result<Measured<Load>> {
        pgbench::run(script, url, organization, clients, WARM_UP)?;
        let duration = self.options.duration;
        undisturbed("pgbench", duration, || pgbench::run(script, url, organization, clients, duration))
    }
}

/// A measurement, what the hypervisor took during it, and how many runs were made of it.
struct Measured<T> {
    value: T,
    steal: Steal,
    attempts: u32,
}

impl<T> Measured<T> {
    fn steal_summary(&self) -> String {
        let again = match self.attempts {
            1 => String::new(),
            n => format!(" (run {n} times)"),
        };
        format!("{}{again}", self.steal)
    }
}

/// Runs `measure` again while the hypervisor's stalls disturb it (see [`steal`]), at most
/// [`ATTEMPTS`] times, and keeps the least disturbed run. Whether to run again depends only on the
/// machine, never on the figures measured.
fn undisturbed<T>(what: &str, duration: Duration, mut measure: impl FnMut() -> Result<T>) -> Result<Measured<T>> {
    let mut best: Option<(T, Steal)> = None;
    let mut attempts = 0;
    while attempts < ATTEMPTS {
        attempts += 1;
        let watch = StealWatch::start()?;
        let value = measure()?;
        let steal = watch.stop()?;
        let disturbed = steal.disturbs(duration);
        if best.as_ref().is_none_or(|(_, least)| steal.less_than(least)) {
            best = Some((value, steal));
        }
        if !disturbed {
            break;
        }
        println!(
            "    {what}: {steal} in that run; {}",
            if attempts < ATTEMPTS { "running it again" } else { "keeping the least disturbed run" }
        );
        if attempts < ATTEMPTS {
            std::thread::sleep(REST_BEFORE_AGAIN);
        }
    }
    let (value, steal) = best.context("no run was measured")?;
    Ok(Measured { value, steal, attempts })
}

/// What the server has answered so far, by its own `/metrics`.
fn served_by(server: &Server) -> Result<Served> {
    Ok(Served::parse(&Request::get("/metrics").expect(&server.address, 200)?))
}

/// One measured API run.
struct ApiRun {
    load: Load,
    /// The server's own count of what it answered in the run.
    served: Served,
    /// Pages the machine read back from disk during the run.
    major_faults: u64,
}

/// A backend's database, seeded, and its server restarted on it (migrations already applied).
struct Fixture {
    backend: Backend,
    store: Store,
    server: Server,
    /// The server's program and scratch directory, and where its log goes.
    binary: PathBuf,
    data: PathBuf,
    out: PathBuf,
    reads: seed::Organization,
    writes: seed::Organization,
    startup: Duration,
    idle_rss_mib: f64,
    idle_anonymous_rss_mib: f64,
}

impl Fixture {
    fn start(binary: &Path, backend: Backend, store: Store, scratch: &Scratch, out: &Path) -> Result<Self> {
        let log = out.join(format!("{}-server.log", backend.name()));
        let data = scratch.0.join(backend.name());
        let mut server = Server::spawn(binary, store.url(), &data, &log, &[])?;
        server.wait_until_ok(&Request::get("/health"), Duration::from_millis(50), &log)?;
        let address = server.address.clone();
        let reads = seed::organization(binary, store.url(), &address, &format!("{}-reads", backend.name()))?;
        let writes = seed::organization(binary, store.url(), &address, &format!("{}-writes", backend.name()))?;
        println!("{}: seeded {} and {}", backend.name(), reads.id, writes.id);
        drop(server);

        // The median of a few starts: one start lasts ~25 ms, which one stall of the host doubles.
        let first_risks = Request::get("/v1/risks").with_key(&reads.api_key);
        let mut starts = Vec::new();
        let mut server = None;
        for _ in 0..STARTS {
            drop(server.take());
            let started = Instant::now();
            let mut started_server = Server::spawn(binary, store.url(), &data, &log, &[])?;
            started_server.wait_until_ok(&first_risks, STARTUP_POLL, &log)?;
            starts.push(started.elapsed());
            server = Some(started_server);
        }
        let server = server.context("the server was never started")?;
        starts.sort();
        let startup = starts[starts.len() / 2];
        std::thread::sleep(Duration::from_secs(1));
        let (idle_rss_mib, idle_anonymous_rss_mib) = rss_and_anonymous_mib(server.pid())?;
        println!(
            "{}: first answer {startup:.1?} after start (median of {starts:.1?}), {idle_rss_mib:.1} MiB idle \
             ({idle_anonymous_rss_mib:.1} MiB anonymous)",
            backend.name()
        );
        Ok(Self {
            backend,
            store,
            server,
            binary: binary.to_owned(),
            data,
            out: out.to_owned(),
            reads,
            writes,
            startup,
            idle_rss_mib,
            idle_anonymous_rss_mib,
        })
    }

    /// A second server on this fixture's database, with `env`, answering the risks list.
    fn another_server(&self, env: &[(&str, &str)], slug: &str) -> Result<Server> {
        let log = self.out.join(format!("{}-{slug}-server.log", self.backend.name()));
        let mut server = Server::spawn(&self.binary, self.store.url(), &self.data.join(slug), &log, env)?;
        server.wait_until_ok(&Request::get("/v1/risks").with_key(&self.reads.api_key), STARTUP_POLL, &log)?;
        Ok(server)
    }

    /// The p50 of each large query from a server that keeps no list pages: on the seeded
    /// organization (`large` is `None`), or on the large one.
    fn large_p50s(&self, options: &Options, out: &Path, large: Option<&crate::service::Tenant>) -> Result<Vec<f64>> {
        let side = if large.is_some() { "large" } else { "small" };
        // What the server's own upkeep does within SEARCH_MERGE_MILLIS of the seeding or growth,
        // done first so that it does not run during the measurement (as `VACUUM ANALYZE` does for
        // PostgreSQL's autovacuum after a growth).
        let merged = crate::service::admin(&self.binary, self.store.url(), &["merge-search-indexes"])?;
        println!("    {}: search indexes merged before the {side} side: {}", self.backend.name(), merged.trim());
        let server = self.another_server(UNCACHED, &format!("large-{side}"))?;
        let (key, member) = match large {
            Some(tenant) => (&tenant.api_key, &tenant.member_id),
            None => (&self.reads.api_key, &self.reads.member_id),
        };
        let scripts = out.join("scripts");
        let mut p50s = Vec::new();
        for (n, query) in large::QUERIES.iter().enumerate() {
            let slug = format!("large-{n}-{side}-{}", self.backend.name());
            let p50 = large::p50_ms(&scripts, &slug, &server, key, &query.path(member), options.duration)?;
            println!("    {}: {} on the {side} organization: p50 {p50:.2} ms", self.backend.name(), query.name);
            p50s.push(p50);
        }
        Ok(p50s)
    }

    /// The large organization on this fixture's database, its ratios to `small`, and its export.
    fn large_cases(
        &self,
        options: &Options,
        out: &Path,
        small: &[f64],
        scratch: &Scratch,
    ) -> Result<serde_json::Value> {
        let name = format!("{}-large", self.backend.name());
        let tenant = crate::service::Tenant::create(&self.binary, self.store.url(), &name)?;
        println!("\n==> large: {} risks in {} ({})", large::LARGE_RISKS, tenant.organization_id, self.backend.name());
        match self.backend {
            Backend::Postgres => large::grow_postgres(self.store.url(), &tenant.organization_id, &tenant.member_id)?,
            Backend::Sqlite => {
                large::grow_sqlite(&scratch.0.join("compliance.db"), &tenant.organization_id, &tenant.member_id)?
            }
        }
        let big = self.large_p50s(options, out, Some(&tenant))?;
        let mut cases = Vec::new();
        for ((query, small), big) in large::QUERIES.iter().zip(small).zip(&big) {
            let ratio = big / small.max(f64::EPSILON);
            println!(
                "    {}: {}: {ratio:.2}× the small database's p50 ({big:.2} / {small:.2} ms)",
                self.backend.name(),
                query.name
            );
            cases.push(serde_json::json!({"case": query.name, "p50_ms": big, "small_p50_ms": small, "ratio": ratio}));
        }
        // A server started for the export, so that its peak RSS is the export's.
        let server = self.another_server(&[], "large-export")?;
        let exported = large::export(&server, &tenant.api_key)?;
        println!(
            "    {}: {}: {} rows ({:.1} MiB) in {:.2} s = {:.0} rows/s; peak RSS {:.1} MiB",
            self.backend.name(),
            large::EXPORT,
            exported.rows,
            exported.bytes as f64 / 1048576.0,
            exported.seconds,
            exported.rows_per_second(),
            exported.peak_rss_mib
        );
        Ok(serde_json::json!({
            "backend": self.backend.name(),
            "cases": cases,
            "export": {
                "rows": exported.rows,
                "bytes": exported.bytes,
                "seconds": exported.seconds,
                "rows_per_second": exported.rows_per_second(),
                "peak_rss_mib": exported.peak_rss_mib,
            },
        }))
    }

    fn tenant(&self, tenant: Tenant) -> &seed::Organization {
        match tenant {
            Tenant::Reads => &self.reads,
            Tenant::Writes => &self.writes,
        }
    }

    fn figures(&self) -> Result<ServerFigures> {
        let (_, peak_rss_mib) = rss_mib(self.server.pid())?;
        Ok(ServerFigures {
            backend: self.backend,
            startup: self.startup,
            idle_rss_mib: self.idle_rss_mib,
            idle_anonymous_rss_mib: self.idle_anonymous_rss_mib,
            peak_rss_mib,
        })
    }
}
