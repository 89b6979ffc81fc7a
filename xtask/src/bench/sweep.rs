//! The check sweep: [`CONNECTIONS`] organizations, each with its devices connected (the
//! `fleetdm` provider, which needs no credential) and a label in a local FleetDM
//! ([`FakeFleet`]), are scheduled at once when [`INSTANCES`] server instances start on one
//! database, as a daily schedule would find them.
//!
//! What it measures: runs per second from the first run queued to the last finished, the
//! instances' peak RSS. What it checks: every connection has exactly one run in the period, each
//! finished without an `error` result, and the provider never held more hosts requests at once
//! than the instances' bound (`CHECK_RUNS_PER_PROVIDER` each).
//!
//! The organizations and their owner's memberships are written by SQL (1,000 organizations
//! through the admin CLI would take minutes); the connections are made through the API, as a
//! connection's sealed (empty) credentials are.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::Backend;
use super::fake_fleet::{FakeFleet, USER_EMAIL};
use super::measure::rss_mib;
use super::seal;
use crate::service::{Request, Server, Store, admin, json_string};

/// The case's name, as `--case` selects it.
pub const NAME: &str = "check sweep";
pub const CONNECTIONS: usize = 1_000;
pub const INSTANCES: usize = 2;
/// Runs at once per instance (`CHECK_RUN_CONCURRENCY`), and of one provider: all of them are
/// FleetDM's here, so the second is the bound.
const CONCURRENCY: &str = "4";
const PER_PROVIDER: usize = 2;
const DEADLINE: Duration = Duration::from_secs(600);
const POLL: Duration = Duration::from_millis(100);
const CONNECT: &str = r#"{"providerSlug":"fleetdm","credentials":{}}"#;

/// One backend's figures.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub backend: Backend,
    pub runs: usize,
    /// From the first run queued to the last finished.
    pub seconds: f64,
    pub per_second: f64,
    /// The most hosts requests the provider held at once, and the bound the instances promise.
    pub most_in_flight: usize,
    pub bound: usize,
    /// The larger of the instances' peak resident sets.
    pub peak_rss_mib: f64,
    /// What broke a bound or left a connection without exactly one good run; empty when nothing did.
    pub problems: Vec<String>,
}

/// The case on `store`, a database of its own (the instances' workers would run any other
/// connection's checks too).
pub fn run(binary: &Path, backend: Backend, store: &Store, scratch: &Path, out: &Path) -> Result<Figures> {
    println!("\n==> {NAME}: {CONNECTIONS} connections scheduled at once, {INSTANCES} instances ({})", backend.name());
    let fleet = FakeFleet::start()?;
    let fleet_env = [("FLEET_URL", fleet.url.as_str()), ("FLEET_TOKEN", "sweep-token")];
    // One data directory: the instances must share the vault key that sealed the credentials.
    let data = scratch.join("sweep");
    connect_all(binary, backend, store, &data, out, &fleet_env)?;

    let per_provider = PER_PROVIDER.to_string();
    let env = [
        fleet_env[0],
        fleet_env[1],
        ("CHECK_RUN_CONCURRENCY", CONCURRENCY),
        ("CHECK_RUNS_PER_PROVIDER", per_provider.as_str()),
        ("CHECK_FREQUENCY_HOURS", "24"),
    ];
    let mut servers = Vec::new();
    for n in 0..INSTANCES {
        let log = out.join(format!("{}-sweep-{n}-server.log", backend.name()));
        let mut server = Server::spawn(binary, store.url(), &data, &log, &env)?;
        server.wait_until_ok(&Request::get("/health"), POLL, &log)?;
        servers.push(server);
    }
    let started = Instant::now();
    while count(store, "SELECT count(*) FROM check_runs WHERE status IN ('finished', 'failed')")? < CONNECTIONS {
        if started.elapsed() > DEADLINE {
            bail!("{NAME}: the runs did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(POLL);
    }
    let peaks = servers.iter().map(|s| rss_mib(s.pid()).map(|(_, peak)| peak)).collect::<Result<Vec<f64>>>()?;
    drop(servers);
    let seconds = span_seconds(store)?;
    let bound = INSTANCES * PER_PROVIDER;
    let figures = Figures {
        backend,
        runs: CONNECTIONS,
        seconds,
        per_second: CONNECTIONS as f64 / seconds.max(f64::EPSILON),
        most_in_flight: fleet.most_in_flight(),
        bound,
        peak_rss_mib: peaks.iter().copied().fold(0.0, f64::max),
        problems: problems(store, &fleet, bound)?,
    };
    println!(
        "    {} runs in {:.2} s = {:.1} runs/s; at most {} hosts requests at once (bound {}); peak RSS by instance \
         {peaks:.1?} MiB; {}",
        figures.runs,
        figures.seconds,
        figures.per_second,
        figures.most_in_flight,
        figures.bound,
        if figures.problems.is_empty() {
            "one good run per connection".to_owned()
        } else {
            figures.problems.join("; ")
        },
    );
    Ok(figures)
}

/// Makes the organizations (by SQL) and their connections (through the API of a server that
/// schedules nothing).
fn connect_all(
    binary: &Path,
    backend: Backend,
    store: &Store,
    data: &Path,
    out: &Path,
    fleet_env: &[(&str, &str)],
) -> Result<()> {
    let log = out.join(format!("{}-sweep-setup-server.log", backend.name()));
    let env: Vec<(&str, &str)> = fleet_env.iter().copied().chain([("CHECK_FREQUENCY_HOURS", "0")]).collect();
    let mut setup = Server::spawn(binary, store.url(), data, &log, &env)?;
    setup.wait_until_ok(&Request::get("/health"), POLL, &log)?;
    let user = admin(binary, store.url(), &["create-user", "--email", USER_EMAIL, "--name", "Sweep owner"])?;
    let user = json_string(&user, "id")?;
    seal::query(store, &seed_sql(store, &user))?;
    let session = json_string(&admin(binary, store.url(), &["create-session", "--user", &user])?, "token")?;
    let made = Instant::now();
    for n in 1..=CONNECTIONS {
        let org = organization_id(n);
        let connect = Request::post("/v1/integrations/connections", CONNECT).with_session(&session);
        connect.with_organization(&org).expect(&setup.address, 201).with_context(|| format!("connecting {org}"))?;
    }
    println!("    {CONNECTIONS} connections made in {:.1} s", made.elapsed().as_secs_f64());
    Ok(())
}

/// `org_` and 32 hex digits, as [`seed_sql`] makes them.
fn organization_id(n: usize) -> String {
    format!("org_{n:032x}")
}

/// The organizations `1..=CONNECTIONS`, organization `n` holding FleetDM label `n`, each with
/// `user` as its owner.
fn seed_sql(store: &Store, user: &str) -> String {
    let rows = |hex: &str, now: &str| {
        format!(
            "INSERT INTO organizations (id, name, slug, onboarding_completed, has_access, device_manager_label_id, \
               is_device_manager_setup_completed, created_at) \
             SELECT 'org_' || {hex}, 'Sweep ' || n, 'sweep-' || n, true, true, n, true, {now} FROM n; \
             INSERT INTO members (id, organization_id, user_id, role, department, is_active, created_at) \
             SELECT 'mem_' || {hex}, 'org_' || {hex}, '{user}', 'owner', 'none', true, {now} FROM n;"
        )
    };
    match store {
        Store::Postgres { .. } => format!(
            "CREATE TEMP TABLE n AS SELECT generate_series(1, {CONNECTIONS}) AS n; {}",
            rows("lpad(to_hex(n), 32, '0')", "now()")
        ),
        Store::Sqlite(_) => format!(
            "PRAGMA busy_timeout = 10000; BEGIN; \
             CREATE TEMP TABLE n AS WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {CONNECTIONS}) \
             SELECT n FROM s; {} COMMIT;",
            rows("printf('%032x', n)", "strftime('%Y-%m-%d %H:%M:%f', 'now')")
        ),
    }
}

fn count(store: &Store, sql: &str) -> Result<usize> {
    let text = seal::query(store, sql)?;
    text.trim().parse().with_context(|| format!("{sql}: {text}"))
}

/// Seconds from the first run queued to the last finished.
fn span_seconds(store: &Store) -> Result<f64> {
    let sql = match store {
        Store::Postgres { .. } => "SELECT extract(epoch FROM max(finished_at) - min(queued_at)) FROM check_runs",
        Store::Sqlite(_) => "SELECT (julianday(max(finished_at)) - julianday(min(queued_at))) * 86400 FROM check_runs",
    };
    let text = seal::query(store, sql)?;
    text.trim().parse().with_context(|| format!("{sql}: {text}"))
}

/// Every broken promise: a run that failed or could not read, a connection without exactly one
/// run, the provider asked more than the bound at once or not once per run.
fn problems(store: &Store, fleet: &FakeFleet, bound: usize) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let failed = count(store, "SELECT count(*) FROM check_runs WHERE status <> 'finished'")?;
    if failed > 0 {
        problems.push(format!("{failed} runs did not finish"));
    }
    let unread = count(store, "SELECT count(*) FROM check_runs WHERE errors > 0")?;
    if unread > 0 {
        problems.push(format!("{unread} runs have error results"));
    }
    let not_once = count(
        store,
        "SELECT count(*) FROM (SELECT c.id FROM connections c LEFT JOIN check_runs r ON r.connection_id = c.id \
         GROUP BY c.id HAVING count(r.id) <> 1) AS odd",
    )?;
    if not_once > 0 {
        problems.push(format!("{not_once} connections do not have exactly one run"));
    }
    if fleet.most_in_flight() > bound {
        problems.push(format!("{} hosts requests at once, above the bound of {bound}", fleet.most_in_flight()));
    }
    // Each run asks for its label, then for its one page of hosts.
    if fleet.requests() != 2 * CONNECTIONS {
        problems.push(format!("{} requests to FleetDM, not {}", fleet.requests(), 2 * CONNECTIONS));
    }
    Ok(problems)
}
