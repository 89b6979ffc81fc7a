//! The audit log's seal delay under load: how long each entry a write case committed waited for
//! the sequencer to give it its place in the tree (`sealed_at - created_at`), read from the store
//! after the case's run.

use std::process::Command;

use anyhow::{Context, Result};

use crate::cmd::stdout_of;
use crate::postgres;
use crate::service::Store;

/// The delays of one case's entries, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SealDelay {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub entries: usize,
}

/// When `organization`'s newest entry was created, as the store keeps it: a run's entries are
/// those created after it.
pub fn newest_entry(store: &Store, organization: &str) -> Result<String> {
    let sql = format!(
        "SELECT COALESCE(CAST(max(created_at) AS TEXT), '1970-01-01 00:00:00') FROM audit_entries \
         WHERE organization_id = '{organization}'"
    );
    Ok(query(store, &sql)?.trim().to_owned())
}

/// The seal delays of `organization`'s entries created after `since` (see [`newest_entry`]);
/// `None` when there are none.
pub fn measure(store: &Store, organization: &str, since: &str) -> Result<Option<SealDelay>> {
    let filter = format!("organization_id = '{organization}' AND sealed_at IS NOT NULL AND created_at > '{since}'");
    let delay = match store {
        Store::Postgres { .. } => "extract(epoch FROM sealed_at - created_at) * 1000",
        Store::Sqlite(_) => "(julianday(sealed_at) - julianday(created_at)) * 86400000.0",
    };
    let text = query(store, &format!("SELECT {delay} FROM audit_entries WHERE {filter}"))?;
    let mut delays = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.trim().parse::<f64>().with_context(|| format!("a seal delay of {line:?}")))
        .collect::<Result<Vec<f64>>>()?;
    Ok(of(&mut delays))
}

/// `sql`'s rows on either backend, one per line, fields separated by `|`.
pub(super) fn query(store: &Store, sql: &str) -> Result<String> {
    match store {
        Store::Postgres { url, .. } => postgres::query(url, sql),
        Store::Sqlite(url) => stdout_of(Command::new("sqlite3").arg(url.trim_start_matches("sqlite://")).arg(sql)),
    }
}

/// The percentiles of `delays` (nearest rank).
fn of(delays: &mut [f64]) -> Option<SealDelay> {
    delays.sort_by(f64::total_cmp);
    let rank = |p: f64| delays[((p * delays.len() as f64).ceil() as usize).clamp(1, delays.len()) - 1];
    let max_ms = *delays.last()?;
    Some(SealDelay { p50_ms: rank(0.50), p99_ms: rank(0.99), max_ms, entries: delays.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut delays: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        assert_eq!(of(&mut delays), Some(SealDelay { p50_ms: 50.0, p99_ms: 99.0, max_ms: 100.0, entries: 100 }));
        assert_eq!(of(&mut []), None);
    }
}
