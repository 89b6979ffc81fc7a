//! The large-list cases (issue: lists people can work with, fast at a million rows): one
//! organization with 100,000 risks among the million, and on it a filtered list, a search and a
//! sorted page, each as the ratio of its p50 to the same request on the seeded organization of 100
//! risks; then the export of all 100,000 as rows per second and the exporting server's peak RSS.
//!
//! The rows are written by SQL (generate_series / a recursive CTE), not through the API. Every
//! list is read from a server that keeps no list pages (`LIST_CACHE_MIB=0`), so that both sides
//! of a ratio read the database.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::measure::rss_mib;
use super::wrk::{self, Traffic};
use crate::cmd::capture_ok;
use crate::postgres;
use crate::service::Server;

/// Risks of the large organization.
pub const LARGE_RISKS: u64 = 100_000;
/// Connections of the ratio cases: enough to keep both cores busy.
const CONNECTIONS: u32 = 8;
/// One risk in this many of the large organization mentions the searched word, so a search finds
/// 100 of them, as many as on the seeded organization (whose every risk mentions it).
const SEARCH_EVERY: u64 = 1_000;
/// The seeded risks' text (`seed::RISK_TEXT`) says "vulnerabilities"; the last word is a prefix.
const SEARCH_WORD: &str = "vulnerab";

/// The filtered list's page: as many rows as the seeded organization has `open` risks assigned to
/// its owner (every third of its risks, all assigned to the owner), so that both sides of the ratio
/// answer a full page of the same size. With `limit=100` the seeded organization answered its 34
/// matches and the large one 100, and the ratio (1.88× on PostgreSQL) measured the answer's
/// size: the large organization's page of 35 took no longer than the seeded one's 34.
const FILTERED_LIMIT: usize = super::seed::RISKS / 3;

/// One ratio case: its name and its request, given the owner's member id.
pub struct Query {
    pub name: &'static str,
    path: fn(&str) -> String,
}

impl Query {
    pub fn path(&self, member: &str) -> String {
        (self.path)(member)
    }
}

pub const QUERIES: [Query; 3] = [
    Query {
        name: "large: filtered list (status + assigneeId)",
        path: |member| format!("/v1/risks?status=open&assigneeId={member}&limit={FILTERED_LIMIT}"),
    },
    Query { name: "large: search (q=)", path: |_| format!("/v1/risks?q={SEARCH_WORD}&limit=100") },
    Query { name: "large: sorted page (sort=title)", path: |_| "/v1/risks?sort=title&limit=100".to_owned() },
];

/// The name of the export case.
pub const EXPORT: &str = "large: export of 100,000 risks";

/// The p50 of `path` at [`CONNECTIONS`] connections for `duration`, after a warm-up.
pub fn p50_ms(
    script_dir: &Path,
    slug: &str,
    server: &Server,
    key: &str,
    path: &str,
    duration: Duration,
) -> Result<f64> {
    let script = script_dir.join(format!("{slug}.lua"));
    std::fs::write(&script, Traffic::Get { path }.script()).context("cannot write the wrk script")?;
    wrk::run(&script, &server.base_url, key, CONNECTIONS, Duration::from_secs(2))?;
    let load = wrk::run(&script, &server.base_url, key, CONNECTIONS, duration)?;
    if load.failures > 0 {
        bail!("{path}: {} requests failed", load.failures);
    }
    Ok(load.latency_ms)
}

/// `LARGE_RISKS` risks in organization `org`: a third `open`, half assigned to `member` (so the
/// filtered list matches a sixth), titles in no particular order, one in [`SEARCH_EVERY`] saying
/// "vulnerabilities".
pub fn grow_postgres(database_url: &str, org: &str, member: &str) -> Result<()> {
    let sql = format!(
        "INSERT INTO risks (id, organization_id, title, description, category, status, likelihood, impact, \
           residual_likelihood, residual_impact, treatment_strategy, assignee_id, created_at, updated_at) \
         SELECT 'rsk_' || lpad(to_hex(n + 1000000000), 32, 'f'), '{org}', \
           'Risk ' || md5(n::text), \
           CASE WHEN n % {SEARCH_EVERY} = 0 THEN 'Known vulnerabilities in a service.' ELSE 'Made for the large case.' END, \
           'technology', (ARRAY['open', 'pending', 'closed'])[1 + n % 3], 'possible', 'moderate', \
           'unlikely', 'minor', 'mitigate', CASE WHEN n % 2 = 0 THEN '{member}' END, \
           now() - n * interval '1 millisecond', now() \
         FROM generate_series(1, {LARGE_RISKS}) n;"
    );
    postgres::execute(database_url, &sql)?;
    settle_postgres(database_url, "risks")
}

/// `VACUUM ANALYZE` of `tables` (comma-separated) after a growth, as autovacuum would soon do on its own: until the
/// visibility map marks the new pages all-visible, an index-only scan (a filtered list's count)
/// still reads every heap page it covers, and the bench would measure a race with autovacuum.
/// Its own statement: `VACUUM` cannot run inside the transaction `psql -c` wraps statements in.
pub fn settle_postgres(database_url: &str, tables: &str) -> Result<()> {
    postgres::execute(database_url, &format!("VACUUM ANALYZE {tables}"))
}

/// [`grow_postgres`] on SQLite, then a checkpoint (see `scale::grow_sqlite`).
pub fn grow_sqlite(path: &Path, org: &str, member: &str) -> Result<()> {
    let sql = format!(
        "PRAGMA busy_timeout = 10000; BEGIN; \
         WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {LARGE_RISKS}) \
         INSERT INTO risks (id, organization_id, title, description, category, status, likelihood, impact, \
           residual_likelihood, residual_impact, treatment_strategy, assignee_id, created_at, updated_at) \
         SELECT 'rsk_' || printf('%032x', n + 1000000000), '{org}', \
           'Risk ' || printf('%08x', (n * 2654435761) % 4294967296), \
           CASE WHEN n % {SEARCH_EVERY} = 0 THEN 'Known vulnerabilities in a service.' ELSE 'Made for the large case.' END, \
           'technology', CASE n % 3 WHEN 0 THEN 'pending' WHEN 1 THEN 'open' ELSE 'closed' END, 'possible', 'moderate', \
           'unlikely', 'minor', 'mitigate', CASE WHEN n % 2 = 0 THEN '{member}' END, \
           strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (n / 1000.0) || ' seconds'), \
           strftime('%Y-%m-%d %H:%M:%f', 'now') FROM r; \
         COMMIT; ANALYZE; PRAGMA wal_checkpoint(TRUNCATE);"
    );
    capture_ok(Command::new("sqlite3").arg(path).arg(sql))?;
    Ok(())
}

/// What one export measured.
pub struct Exported {
    pub rows: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// The exporting server's peak resident memory (`VmHWM`), MiB: it was started for the export.
    pub peak_rss_mib: f64,
}

impl Exported {
    pub fn rows_per_second(&self) -> f64 {
        self.rows as f64 / self.seconds.max(f64::EPSILON)
    }
}

/// `GET /v1/risks/export?format=json` from `server`, read to the end as it arrives; the rows are
/// its lines (JSON Lines: a newline only ends a row).
pub fn export(server: &Server, key: &str) -> Result<Exported> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(&server.address)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let head = format!(
        "GET /v1/risks/export?format=json HTTP/1.1\r\nHost: {}\r\nX-API-Key: {key}\r\nConnection: close\r\n\r\n",
        server.address
    );
    stream.write_all(head.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let seconds = started.elapsed().as_secs_f64();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").context("no end of the response's head")?;
    let (head, body) = (String::from_utf8_lossy(&raw[..split]).into_owned(), &raw[split + 4..]);
    if !head.starts_with("HTTP/1.1 200") {
        bail!("the export answered {}", head.lines().next().unwrap_or_default());
    }
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body)? } else { body.to_vec() };
    let rows = body.iter().filter(|b| **b == b'\n').count() as u64;
    let (_, peak_rss_mib) = rss_mib(server.pid())?;
    Ok(Exported { rows, bytes: body.len() as u64, seconds, peak_rss_mib })
}

/// The body of a chunked transfer (RFC 9112, 7.1), without its framing.
fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>> {
    let mut body = Vec::with_capacity(raw.len());
    loop {
        let end = raw.windows(2).position(|w| w == b"\r\n").context("a chunk size without its line end")?;
        let size_text = std::str::from_utf8(&raw[..end])?.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).with_context(|| format!("chunk size {size_text:?}"))?;
        raw = &raw[end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = raw.get(..size).context("the response ended inside a chunk")?;
        body.extend_from_slice(chunk);
        raw = raw.get(size + 2..).context("a chunk without its line end")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_are_joined() -> Result<()> {
        assert_eq!(dechunk(b"3\r\nab\n\r\n2;x=y\r\ncd\r\n0\r\n\r\n")?, b"ab\ncd");
        assert!(dechunk(b"5\r\nab").is_err());
        Ok(())
    }
}
