//! The bench's output: a table on the terminal, `bench.json`, `bench.svg`, and the summary line
//! that checks every target.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::Backend;
use super::check_report::CheckCases;
use super::measure::{Load, Served};
use super::steal::Steal;
use super::webhooks::{self, Figures as Deliveries};

// The targets (issue 8), in one place.
const LIST_RATIO: f64 = 0.8;
const WRITE_RATIO: f64 = 0.6;
pub(super) const LIST_P99_MS: f64 = 10.0;
const PEAK_RSS_MIB: f64 = 40.0;
const IDLE_RSS_MIB: f64 = 20.0;
const STARTUP: Duration = Duration::from_millis(100);
/// Webhook deliveries per second and instance, every one signed (issue 51).
const DELIVERIES_PER_INSTANCE: f64 = 1_000.0;
/// The healthy endpoints' rate during another's outage, beside their rate without one.
const OUTAGE_RATE_RATIO: f64 = 0.8;
const SCALE_LATENCY_RATIO: f64 = 1.5;
/// The connection count whose p99 is held to [`LIST_P99_MS`].
const P99_CONNECTIONS: u32 = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    List,
    Write,
    /// The risks list again after the database grew by a million rows.
    Scale,
    /// The risks list from a server that keeps no list pages (`LIST_CACHE_MIB=0`): every request
    /// reads the rows. For comparison; only its non-2xx count is a target.
    Uncached,
    /// [`Kind::Uncached`] after the scale growth: with it, the scale target is checked on the
    /// database path too.
    UncachedScale,
    /// Many rows per request (`POST /v1/risks/bulk` of 500 creates, beside one multi-row
    /// `INSERT`): its figure is rows/s. Issue 28 sets it no target; only its non-2xx count is one.
    Bulk,
}

pub struct Row {
    pub case: String,
    pub kind: Kind,
    pub backend: Backend,
    pub connections: u32,
    pub api: Load,
    /// The mean of the two pgbench runs around the API's.
    pub pgbench: Load,
    /// Writes: pgbench running every statement one request sends (after the two runs above).
    pub statements: Option<Load>,
    /// The two runs' rates: before the API, after it.
    pub pgbench_runs: [f64; 2],
    /// Fewer than `connections` when PostgreSQL allows fewer.
    pub pgbench_clients: u32,
    /// The server's peak resident set so far (`VmHWM` once the case has run): which case raised it.
    pub peak_rss_mib: f64,
    /// The server's own count of the requests of the API's run, and of the slow ones.
    pub served: Served,
    /// Pages the machine read back from disk during the API's run (see `measure::major_faults`).
    pub major_faults: u64,
    /// What the hypervisor took during the API's kept run, and how many runs were made of it.
    pub steal: Steal,
    pub attempts: u32,
    /// Runs made of each pgbench measurement (more than one when the hypervisor disturbed one).
    pub pgbench_attempts: [u32; 2],
    /// Rows one request and one pgbench transaction write: rows/s is the rate times this.
    pub rows_per_request: u32,
    /// How long the run's audit entries waited to be sealed (write cases).
    pub seal_delay: Option<super::seal::SealDelay>,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.api.per_second / self.pgbench.per_second
    }

    /// The API's rate to PostgreSQL's running the request's own statements: what the server
    /// adds over the SQL it must send. Not a target; it shows how far the one-statement ratio
    /// could go on this machine.
    fn statements_ratio(&self) -> Option<f64> {
        self.statements.map(|statements| self.api.per_second / statements.per_second)
    }

    fn ratio_target(&self) -> f64 {
        if self.kind == Kind::Write { WRITE_RATIO } else { LIST_RATIO }
    }

    fn label(&self) -> String {
        format!("{} @{} {}", self.case, self.connections, self.backend.name())
    }
}

pub struct ServerFigures {
    pub backend: Backend,
    pub startup: Duration,
    pub idle_rss_mib: f64,
    /// Of the idle RSS, the anonymous part (heap, stacks): what the workers cost, without the
    /// program's code pages.
    pub idle_anonymous_rss_mib: f64,
    pub peak_rss_mib: f64,
}

/// One target check: what it is, whether it held, and the figure that decided.
#[derive(Debug, Serialize)]
pub(super) struct Check {
    pub(super) target: String,
    pub(super) met: bool,
    pub(super) figure: String,
}

pub fn finish(
    rows: &[Row],
    servers: &[ServerFigures],
    deliveries: &[Deliveries],
    check_cases: &CheckCases,
    backends: &[Backend],
    scale_rows: u64,
    out: &Path,
) -> Result<()> {
    let mut checks = checks(rows, servers, backends);
    checks.extend(deliveries.iter().flat_map(delivery_checks));
    checks.extend(check_cases.targets());
    let mut table = table(rows, servers);
    table.push_str(&delivery_table(deliveries));
    table.push_str(&check_cases.table());
    println!("\n{table}");
    fs::write(out.join("bench.txt"), &table).context("cannot write bench.txt")?;
    fs::write(out.join("bench.json"), json(rows, servers, deliveries, check_cases, &checks, scale_rows)?)
        .context("cannot write bench.json")?;
    fs::write(out.join("bench.svg"), svg(rows)).context("cannot write bench.svg")?;
    println!("written: {0}/bench.txt, {0}/bench.json, {0}/bench.svg", out.display());
    let missed: Vec<&Check> = checks.iter().filter(|check| !check.met).collect();
    for check in &missed {
        println!("missed: {} ({})", check.target, check.figure);
    }
    let verdict = if missed.is_empty() { "PASS" } else { "FAIL" };
    println!("bench summary: {} of {} targets met — {verdict}", checks.len() - missed.len(), checks.len());
    if !missed.is_empty() {
        bail!("{} target(s) missed", missed.len());
    }
    Ok(())
}

fn checks(rows: &[Row], servers: &[ServerFigures], backends: &[Backend]) -> Vec<Check> {
    let mut checks = Vec::new();
    for row in rows {
        // The uncached and bulk rows are there for comparison: only their non-2xx count is a target.
        if !matches!(row.kind, Kind::Uncached | Kind::UncachedScale | Kind::Bulk) {
            let target = row.ratio_target();
            checks.push(Check {
                target: format!("{}: req/s ≥ {target}× pgbench", row.label()),
                met: row.ratio() >= target,
                figure: format!("{:.2}×", row.ratio()),
            });
        }
        if matches!(row.kind, Kind::List | Kind::Scale) && row.connections == P99_CONNECTIONS {
            let p99 = row.api.p99_ms.unwrap_or(f64::INFINITY);
            checks.push(Check {
                target: format!("{}: p99 ≤ {LIST_P99_MS} ms", row.label()),
                met: p99 <= LIST_P99_MS,
                figure: format!("{p99:.2} ms"),
            });
        }
        checks.push(Check {
            target: format!("{}: no non-2xx", row.label()),
            met: row.api.failures == 0,
            figure: format!("{} failed", row.api.failures),
        });
    }
    for backend in backends {
        let find = |kind| {
            let risks = |r: &&Row| r.case.starts_with("GET /v1/risks") && r.connections == P99_CONNECTIONS;
            rows.iter().filter(risks).find(|r| r.backend == *backend && r.kind == kind)
        };
        for (small, large, how) in [(Kind::List, Kind::Scale, ""), (Kind::Uncached, Kind::UncachedScale, " uncached")] {
            if let (Some(small), Some(large)) = (find(small), find(large)) {
                let ratio = large.api.latency_ms / small.api.latency_ms;
                checks.push(Check {
                    target: format!("{}: scale p50{how} ≤ {SCALE_LATENCY_RATIO}× small database", backend.name()),
                    met: ratio <= SCALE_LATENCY_RATIO,
                    figure: format!("{:.2} ms vs {:.2} ms = {ratio:.2}×", large.api.latency_ms, small.api.latency_ms),
                });
            }
        }
    }
    for server in servers {
        let name = server.backend.name();
        checks.push(Check {
            target: format!("{name}: peak RSS ≤ {PEAK_RSS_MIB} MiB"),
            met: server.peak_rss_mib <= PEAK_RSS_MIB,
            figure: format!("{:.1} MiB", server.peak_rss_mib),
        });
        checks.push(Check {
            target: format!("{name}: idle RSS ≤ {IDLE_RSS_MIB} MiB"),
            met: server.idle_rss_mib <= IDLE_RSS_MIB,
            figure: format!("{:.1} MiB ({:.1} anonymous)", server.idle_rss_mib, server.idle_anonymous_rss_mib),
        });
        checks.push(Check {
            target: format!("{name}: start-up ≤ {} ms", STARTUP.as_millis()),
            met: server.startup <= STARTUP,
            figure: format!("{:.1} ms", millis(server.startup)),
        });
    }
    checks
}

/// The webhook delivery case's targets: the rate per instance, exactly once in order and signed
/// in both phases, the healthy endpoints' rate through another's outage, and peak RSS.
fn delivery_checks(figures: &Deliveries) -> Vec<Check> {
    let name = format!("{}: {}", figures.backend.name(), webhooks::NAME);
    let per_instance = figures.steady.per_second / webhooks::INSTANCES as f64;
    let kept = figures.outage.per_endpoint_per_second / figures.steady.per_endpoint_per_second.max(f64::EPSILON);
    // The outage phase checks every delivery of both phases: a problem of the first shows twice.
    let problems: std::collections::BTreeSet<&str> =
        figures.steady.problems.iter().chain(&figures.outage.problems).map(String::as_str).collect();
    vec![
        Check {
            target: format!("{name}: ≥ {DELIVERIES_PER_INSTANCE} deliveries/s per instance"),
            met: per_instance >= DELIVERIES_PER_INSTANCE,
            figure: format!("{per_instance:.0}/s"),
        },
        Check {
            target: format!("{name}: every delivery once, in order, signed"),
            met: problems.is_empty(),
            figure: match problems.is_empty() {
                true => "none missing".to_owned(),
                false => problems.into_iter().collect::<Vec<_>>().join("; "),
            },
        },
        Check {
            target: format!("{name}: healthy endpoints keep ≥ {OUTAGE_RATE_RATIO}× their rate through an outage"),
            met: kept >= OUTAGE_RATE_RATIO,
            figure: format!("{kept:.2}×"),
        },
        Check {
            target: format!("{name}: peak RSS ≤ {PEAK_RSS_MIB} MiB"),
            met: figures.peak_rss_mib <= PEAK_RSS_MIB,
            figure: format!("{:.1} MiB", figures.peak_rss_mib),
        },
    ]
}

fn delivery_table(deliveries: &[Deliveries]) -> String {
    if deliveries.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "
{} ({} instances, {} endpoints, {} deliveries a phase)
{:<8} {:>12} {:>14} {:>16} {:>16} {:>14} {:>9}
",
        webhooks::NAME,
        webhooks::INSTANCES,
        webhooks::ENDPOINTS,
        thousands((webhooks::EVENTS * webhooks::ENDPOINTS) as u64),
        "backend",
        "deliveries/s",
        "per instance",
        "by instance",
        "outage: others",
        "caught up s",
        "peak MiB",
    );
    for figures in deliveries {
        let by_instance = figures.steady.per_instance.iter().map(u64::to_string).collect::<Vec<_>>().join("/");
        let _ = writeln!(
            text,
            "{:<8} {:>12.0} {:>14.0} {:>16} {:>13.0}/s {:>14.2} {:>9.1}",
            figures.backend.name(),
            figures.steady.per_second,
            figures.steady.per_second / webhooks::INSTANCES as f64,
            by_instance,
            figures.outage.per_endpoint_per_second * (webhooks::ENDPOINTS - 1) as f64,
            figures.outage.caught_up_after_s.unwrap_or_default(),
            figures.peak_rss_mib,
        );
    }
    text
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn table(rows: &[Row], servers: &[ServerFigures]) -> String {
    // as wide as the longest case name, so that the columns line up
    let width = rows.iter().map(|row| row.case.chars().count()).max().unwrap_or(0).max("case".len());
    let mut text = format!(
        "{:<width$} {:>5} {:<8} {:>9} {:>8} {:>8} {:>7} {:>11} {:>7} {:>9} {:>10} {:>10}\n",
        "case",
        "conns",
        "backend",
        "req/s",
        "p50 ms",
        "p99 ms",
        "non-2xx",
        "pgbench tps",
        "ratio",
        "peak MiB",
        "seal p99",
        "its SQL"
    );
    for row in rows {
        let clients = if row.pgbench_clients < row.connections {
            format!(" (pgbench at {})", row.pgbench_clients)
        } else {
            String::new()
        };
        let _ = writeln!(
            text,
            "{:<width$} {:>5} {:<8} {:>9.0} {:>8.2} {:>8.2} {:>7} {:>11.0} {:>6.2}× {:>9.1} {:>10} {:>10}{clients}",
            row.case,
            row.connections,
            row.backend.name(),
            row.api.per_second,
            row.api.latency_ms,
            row.api.p99_ms.unwrap_or_default(),
            row.api.failures,
            row.pgbench.per_second,
            row.ratio(),
            row.peak_rss_mib,
            row.seal_delay.map_or_else(String::new, |d| format!("{:.1} ms", d.p99_ms)),
            row.statements_ratio().map_or_else(String::new, |ratio| format!("{ratio:.2}×")),
        );
    }
    let _ = writeln!(
        text,
        "\n{:<8} {:>12} {:>14} {:>16} {:>14}",
        "backend", "start-up ms", "idle RSS MiB", "of it anon MiB", "peak RSS MiB"
    );
    for server in servers {
        let _ = writeln!(
            text,
            "{:<8} {:>12.1} {:>14.1} {:>16.1} {:>14.1}",
            server.backend.name(),
            millis(server.startup),
            server.idle_rss_mib,
            server.idle_anonymous_rss_mib,
            server.peak_rss_mib
        );
    }
    text
}

/// `bench.json`: one object per case, per server and per target check. Figures keep the decimals
/// the table shows (rates 0.1, times 0.001 ms), so runs compare without float noise.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BenchJson<'a> {
    generated_at: u64,
    scale_rows: u64,
    cases: Vec<CaseJson<'a>>,
    servers: Vec<ServerJson>,
    webhook_delivery: &'a [Deliveries],
    check_cases: &'a CheckCases,
    adoption_cases: &'a [super::adoption::Figures],
    targets: &'a [Check],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CaseJson<'a> {
    case: &'a str,
    kind: String,
    backend: &'static str,
    connections: u32,
    requests_per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    #[serde(rename = "non2xx")]
    non_2xx: u64,
    pgbench_tps: f64,
    /// Rows written per second: `requestsPerSecond` (or `pgbenchTps`) times the rows of one.
    rows_per_second: f64,
    pgbench_rows_per_second: f64,
    pgbench_tps_runs: [f64; 2],
    pgbench_clients: u32,
    pgbench_latency_average_ms: f64,
    ratio: f64,
    peak_rss_mib: f64,
    server_requests: u64,
    server_slow: u64,
    major_faults: u64,
    /// Whole milliseconds: integers in the file, as they always were.
    stolen_ms: i64,
    stalls_ms: i64,
    attempts: u32,
    pgbench_attempts: [u32; 2],
    /// How long the run's audit entries waited to be sealed (write cases).
    #[serde(skip_serializing_if = "Option::is_none")]
    seal_delay_ms: Option<SealJson>,
    /// Writes: pgbench running every statement of one request, and the API's rate to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    statements_tps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    statements_ratio: Option<f64>,
}

/// A write case's seal delays, in milliseconds.
#[derive(Serialize)]
struct SealJson {
    p50: f64,
    p99: f64,
    max: f64,
    entries: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerJson {
    backend: &'static str,
    startup_ms: f64,
    idle_rss_mib: f64,
    idle_anonymous_rss_mib: f64,
    peak_rss_mib: f64,
}

fn json(
    rows: &[Row],
    servers: &[ServerFigures],
    deliveries: &[Deliveries],
    check_cases: &CheckCases,
    checks: &[Check],
    scale_rows: u64,
) -> Result<String> {
    let cases = rows
        .iter()
        .map(|row| CaseJson {
            case: &row.case,
            kind: format!("{:?}", row.kind),
            backend: row.backend.name(),
            connections: row.connections,
            requests_per_second: rounded(row.api.per_second, 1),
            p50_ms: rounded(row.api.latency_ms, 3),
            p99_ms: rounded(row.api.p99_ms.unwrap_or_default(), 3),
            max_ms: rounded(row.api.max_ms.unwrap_or_default(), 3),
            non_2xx: row.api.failures,
            pgbench_tps: rounded(row.pgbench.per_second, 1),
            rows_per_second: rounded(row.api.per_second * f64::from(row.rows_per_request), 1),
            pgbench_rows_per_second: rounded(row.pgbench.per_second * f64::from(row.rows_per_request), 1),
            pgbench_tps_runs: row.pgbench_runs.map(|tps| rounded(tps, 1)),
            pgbench_clients: row.pgbench_clients,
            pgbench_latency_average_ms: rounded(row.pgbench.latency_ms, 3),
            ratio: rounded(row.ratio(), 3),
            peak_rss_mib: rounded(row.peak_rss_mib, 2),
            server_requests: row.served.requests,
            server_slow: row.served.slow,
            major_faults: row.major_faults,
            stolen_ms: rounded(row.steal.stolen_ms, 0) as i64,
            stalls_ms: rounded(row.steal.stalls_ms, 0) as i64,
            attempts: row.attempts,
            pgbench_attempts: row.pgbench_attempts,
            seal_delay_ms: row.seal_delay.map(|d| SealJson {
                p50: rounded(d.p50_ms, 3),
                p99: rounded(d.p99_ms, 3),
                max: rounded(d.max_ms, 3),
                entries: d.entries,
            }),
            statements_tps: row.statements.map(|statements| rounded(statements.per_second, 1)),
            statements_ratio: row.statements_ratio().map(|ratio| rounded(ratio, 3)),
        })
        .collect();
    let servers = servers
        .iter()
        .map(|s| ServerJson {
            backend: s.backend.name(),
            startup_ms: rounded(millis(s.startup), 2),
            idle_rss_mib: rounded(s.idle_rss_mib, 2),
            idle_anonymous_rss_mib: rounded(s.idle_anonymous_rss_mib, 2),
            peak_rss_mib: rounded(s.peak_rss_mib, 2),
        })
        .collect();
    let generated_at = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let bench = BenchJson {
        generated_at,
        scale_rows,
        cases,
        servers,
        webhook_delivery: deliveries,
        check_cases,
        adoption_cases: &check_cases.adoption,
        targets: checks,
    };
    let mut text = serde_json::to_string_pretty(&bench).context("cannot serialise bench.json")?;
    text.push('\n');
    Ok(text)
}

/// `value` with `decimals` decimals, rounded as `format!` rounds.
fn rounded(value: f64, decimals: usize) -> f64 {
    format!("{value:.decimals$}").parse().unwrap_or(value)
}

/// Horizontal bars: each row's ratio to pgbench, with the two target lines.
fn svg(rows: &[Row]) -> String {
    const LEFT: f64 = 380.0;
    const WIDTH: f64 = 560.0;
    const ROW: f64 = 22.0;
    const TOP: f64 = 40.0;
    let max = rows.iter().map(Row::ratio).fold(1.0_f64, f64::max) * 1.1;
    let x = |ratio: f64| LEFT + ratio / max * WIDTH;
    let height = TOP + ROW * rows.len() as f64 + 30.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"14\">API req/s as a multiple of pgbench tps (same statement, same connections)</text>\n",
        LEFT + WIDTH + 60.0
    );
    for (n, row) in rows.iter().enumerate() {
        let y = TOP + ROW * n as f64;
        let colour = if row.backend == Backend::Postgres { "#336791" } else { "#6aa84f" };
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            LEFT - 6.0,
            y + 14.0,
            xml(&row.label())
        );
        let _ = writeln!(
            svg,
            "<rect x=\"{LEFT}\" y=\"{}\" width=\"{:.1}\" height=\"{}\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"{}\">{:.2}×</text>",
            y + 3.0,
            x(row.ratio()) - LEFT,
            ROW - 6.0,
            x(row.ratio()) + 4.0,
            y + 14.0,
            row.ratio()
        );
    }
    let bottom = TOP + ROW * rows.len() as f64;
    for (ratio, name) in [(WRITE_RATIO, "writes"), (LIST_RATIO, "lists")] {
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{TOP}\" x2=\"{0:.1}\" y2=\"{bottom}\" stroke=\"#c00\" stroke-dasharray=\"4 3\"/>\
             <text x=\"{0:.1}\" y=\"{1}\" fill=\"#c00\" text-anchor=\"middle\">{ratio}× {name}</text>",
            x(ratio),
            bottom + 16.0
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// `1000000` → `1,000,000`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A file name for a case: `GET /v1/risks` at 32 → `get-v1-risks-32`.
pub fn slug(case: &str, connections: u32) -> String {
    let words: Vec<String> = case
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    format!("{}-{connections}", words.join("-"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: Kind, connections: u32, api: f64, pgbench: f64, p99: f64) -> Row {
        Row {
            case: "GET /v1/risks".to_owned(),
            kind,
            backend: Backend::Postgres,
            connections,
            api: Load { per_second: api, latency_ms: 1.0, p99_ms: Some(p99), max_ms: Some(p99), failures: 0 },
            pgbench: Load { per_second: pgbench, latency_ms: 1.0, p99_ms: None, max_ms: None, failures: 0 },
            statements: None,
            pgbench_runs: [pgbench, pgbench],
            pgbench_clients: connections,
            peak_rss_mib: 30.0,
            served: Served::default(),
            major_faults: 0,
            steal: Steal::default(),
            attempts: 1,
            pgbench_attempts: [1, 1],
            seal_delay: None,
            rows_per_request: 1,
        }
    }

    #[test]
    fn checks_hold_each_kind_to_its_target() {
        let rows = [row(Kind::List, 32, 790.0, 1000.0, 3.0), row(Kind::Write, 32, 610.0, 1000.0, 50.0)];
        let checks = checks(&rows, &[], &[Backend::Postgres]);
        let missed: Vec<&str> = checks.iter().filter(|c| !c.met).map(|c| c.target.as_str()).collect();
        // the list misses 0.8×; the write meets 0.6× and its p99 is not held to 10 ms
        assert_eq!(missed, ["GET /v1/risks @32 postgres: req/s ≥ 0.8× pgbench"]);
    }

    #[test]
    fn uncached_rows_are_held_to_no_ratio_and_each_scale_row_to_its_own_small_row() {
        let latency = |mut row: Row, ms: f64| {
            row.api.latency_ms = ms;
            row
        };
        let rows = [
            latency(row(Kind::List, 32, 900.0, 1000.0, 3.0), 1.0),
            latency(row(Kind::Uncached, 32, 100.0, 1000.0, 50.0), 4.0),
            latency(row(Kind::Scale, 32, 900.0, 1000.0, 3.0), 1.2),
            latency(row(Kind::UncachedScale, 32, 100.0, 1000.0, 50.0), 7.0),
        ];
        let checks = checks(&rows, &[], &[Backend::Postgres]);
        let missed: Vec<&str> = checks.iter().filter(|c| !c.met).map(|c| c.target.as_str()).collect();
        assert_eq!(missed, ["postgres: scale p50 uncached ≤ 1.5× small database"], "7 ms against 4 ms");
        assert!(checks.iter().any(|c| c.met && c.target == "postgres: scale p50 ≤ 1.5× small database"));
    }

    #[test]
    fn the_table_lines_up_under_long_case_names() {
        let mut long = row(Kind::UncachedScale, 32, 1.0, 1.0, 1.0);
        long.case = "GET /v1/risks, +1,000,000 rows, uncached".to_owned();
        let text = table(&[row(Kind::List, 32, 1.0, 1.0, 1.0), long], &[]);
        let column = |line: &str| line.find(" conns").or_else(|| line.find("    32 "));
        let columns: Vec<_> = text.lines().take(3).map(column).collect();
        assert!(columns.iter().all(|c| c.is_some() && *c == columns[0]), "{text}");
    }

    #[test]
    fn bench_json_keeps_every_key_and_the_tables_decimals() -> Result<()> {
        let mut case = row(Kind::Write, 32, 1234.56, 1000.0, 2.0);
        case.case = r#"POST "quoted" \ case"#.to_owned();
        case.api.latency_ms = 0.12345;
        let server = ServerFigures {
            backend: Backend::Sqlite,
            startup: Duration::from_micros(12_340),
            idle_rss_mib: 10.0,
            idle_anonymous_rss_mib: 4.0,
            peak_rss_mib: 20.5,
        };
        let checks = checks(std::slice::from_ref(&case), std::slice::from_ref(&server), &[]);
        let bench: serde_json::Value =
            serde_json::from_str(&json(&[case], &[server], &[], &CheckCases::default(), &checks, 1_000_000)?)?;

        let mut keys: Vec<&str> =
            bench["cases"][0].as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        let mut expected = [
            "case",
            "kind",
            "backend",
            "connections",
            "requestsPerSecond",
            "p50Ms",
            "p99Ms",
            "maxMs",
            "non2xx",
            "pgbenchTps",
            "rowsPerSecond",
            "pgbenchRowsPerSecond",
            "pgbenchTpsRuns",
            "pgbenchClients",
            "pgbenchLatencyAverageMs",
            "ratio",
            "peakRssMib",
            "serverRequests",
            "serverSlow",
            "majorFaults",
            "stolenMs",
            "stallsMs",
            "attempts",
            "pgbenchAttempts",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);

        let case = &bench["cases"][0];
        assert_eq!(case["case"], r#"POST "quoted" \ case"#);
        assert_eq!(
            (&case["kind"], &case["backend"], &case["connections"]),
            (&"Write".into(), &"postgres".into(), &32.into())
        );
        assert_eq!(
            (&case["requestsPerSecond"], &case["p50Ms"], &case["ratio"]),
            (&1234.6.into(), &0.123.into(), &1.235.into())
        );
        assert_eq!(case["pgbenchTpsRuns"], serde_json::json!([1000.0, 1000.0]));
        assert!(case.get("statementsRatio").is_none(), "only a case measured so has it");
        assert_eq!(case["pgbenchAttempts"], serde_json::json!([1, 1]));
        assert_eq!(bench["scaleRows"], 1_000_000);
        assert_eq!(
            bench["servers"],
            serde_json::json!([{"backend": "sqlite", "startupMs": 12.34, "idleRssMib": 10.0, "idleAnonymousRssMib": 4.0, "peakRssMib": 20.5}])
        );
        let targets = bench["targets"].as_array().map(|targets| targets.len());
        assert_eq!(targets, Some(checks.len()));
        assert_eq!(bench["targets"][0]["target"], checks[0].target.as_str());
        assert_eq!(bench["targets"][0]["met"], checks[0].met);
        Ok(())
    }

    #[test]
    fn a_write_row_shows_its_rate_to_its_own_statements_and_is_held_to_none() -> Result<()> {
        let mut write = row(Kind::Write, 32, 1500.0, 5000.0, 2.0);
        write.statements = Some(Load { per_second: 2500.0, ..write.pgbench });
        let text = table(std::slice::from_ref(&write), &[]);
        assert!(text.lines().next().is_some_and(|header| header.ends_with("its SQL")), "{text}");
        assert!(text.lines().nth(1).is_some_and(|line| line.ends_with("0.60×")), "{text}");
        let checks = checks(std::slice::from_ref(&write), &[], &[Backend::Postgres]);
        assert!(checks.iter().all(|check| !check.figure.contains("0.60")), "not a target");
        let bench: serde_json::Value =
            serde_json::from_str(&json(&[write], &[], &[], &CheckCases::default(), &checks, 0)?)?;
        assert_eq!(
            (&bench["cases"][0]["statementsTps"], &bench["cases"][0]["statementsRatio"]),
            (&2500.0.into(), &0.6.into())
        );
        Ok(())
    }

    #[test]
    fn a_bulk_row_reports_rows_per_second_and_is_held_to_no_ratio() -> Result<()> {
        let mut bulk = row(Kind::Bulk, 4, 20.0, 100.0, 50.0);
        bulk.rows_per_request = 500;
        let checks = checks(std::slice::from_ref(&bulk), &[], &[]);
        assert!(checks.iter().all(|c| c.met && !c.target.contains("req/s")), "only non-2xx is a target");
        let bench: serde_json::Value =
            serde_json::from_str(&json(&[bulk], &[], &[], &CheckCases::default(), &checks, 0)?)?;
        let case = &bench["cases"][0];
        assert_eq!((&case["rowsPerSecond"], &case["pgbenchRowsPerSecond"]), (&10_000.0.into(), &50_000.0.into()));
        assert_eq!(case["ratio"], 0.2);
        Ok(())
    }

    #[test]
    fn the_delivery_case_is_held_to_its_rate_its_order_and_the_outage() {
        let phase = |per_second: f64, per_endpoint: f64, problems: &[&str]| webhooks::Phase {
            deliveries: 20_000,
            seconds: 20_000.0 / per_second,
            per_second,
            per_instance: vec![10_000, 10_000],
            per_endpoint_per_second: per_endpoint,
            caught_up_after_s: None,
            problems: problems.iter().map(|p| (*p).to_owned()).collect(),
        };
        let figures = |steady, outage| Deliveries { backend: Backend::Postgres, steady, outage, peak_rss_mib: 30.0 };
        let met = |figures: &Deliveries| delivery_checks(figures).iter().map(|c| c.met).collect::<Vec<_>>();
        assert_eq!(met(&figures(phase(2_400.0, 240.0, &[]), phase(2_000.0, 200.0, &[]))), [true; 4]);
        assert_eq!(
            met(&figures(phase(1_800.0, 180.0, &[]), phase(1_800.0, 120.0, &["endpoint 0: 2 taken, 1 made"]))),
            [false, false, false, true],
            "900/s per instance, a duplicate, and the healthy endpoints slowed to 0.67×"
        );
    }

    #[test]
    fn names_and_numbers_print_plainly() {
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(slug("PATCH /v1/risks/{id}", 32), "patch-v1-risks-id-32");
        assert!(svg(&[row(Kind::List, 1, 2.0, 1.0, 1.0)]).contains("2.00×"));
    }
}
