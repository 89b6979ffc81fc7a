//! The scale case's data: `rows` more risks spread evenly over 1,000 new organizations, written
//! by SQL straight into the database (a million requests would take the bench's whole budget).
//! The seeded organizations keep their 100 risks; their list must not slow down.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::cmd::capture_ok;
use crate::postgres;

pub const ORGANIZATIONS: u64 = 1_000;

/// Ids are the prefix and 32 hex digits, which the id alphabet accepts.
pub fn grow_postgres(database_url: &str, rows: u64) -> Result<()> {
    let sql = format!(
        "INSERT INTO organizations (id, name, slug, onboarding_completed, has_access, \
           is_device_manager_setup_completed, created_at) \
         SELECT 'org_' || lpad(to_hex(o), 32, '0'), 'Scale ' || o, 'scale-' || o, true, true, false, now() \
         FROM generate_series(1, {ORGANIZATIONS}) o; \
         INSERT INTO risks (id, organization_id, title, description, category, status, likelihood, impact, \
           residual_likelihood, residual_impact, treatment_strategy, created_at, updated_at) \
         SELECT 'rsk_' || lpad(to_hex(n), 32, '0'), 'org_' || lpad(to_hex(1 + n % {ORGANIZATIONS}), 32, '0'), \
           'Risk ' || n, 'Made for the scale case.', 'technology', 'open', 'possible', 'moderate', \
           'unlikely', 'minor', 'mitigate', now() - n * interval '1 millisecond', now() \
         FROM generate_series(1, {rows}) n;"
    );
    postgres::execute(database_url, &sql)?;
    super::large::settle_postgres(database_url, "organizations, risks")
}

/// The growth is one transaction of ~490 MB, written by another process while the server runs, so
/// it stays in the WAL: until a write of the server's restarts the WAL, every page its readers
/// miss in their cache is looked up through ~30 WAL-index hash tables. The bench's list at 100
/// risks ran 1.54× slower so (p50 7.40 against 4.81 ms) although the index is right; 4,000 of its
/// queries from `sqlite3`, 20 connections: 0.84 s with that WAL, 0.61 s after this checkpoint.
/// A quiet database gets there by itself: SQLite restarts the WAL at the first write after a
/// complete checkpoint.
pub fn grow_sqlite(path: &Path, rows: u64) -> Result<()> {
    let sql = format!(
        "PRAGMA busy_timeout = 10000; BEGIN; \
         WITH RECURSIVE o(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM o WHERE n < {ORGANIZATIONS}) \
         INSERT INTO organizations (id, name, slug, onboarding_completed, has_access, \
           is_device_manager_setup_completed, created_at) \
         SELECT 'org_' || printf('%032x', n), 'Scale ' || n, 'scale-' || n, 1, 1, 0, \
           strftime('%Y-%m-%d %H:%M:%f', 'now') FROM o; \
         WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < {rows}) \
         INSERT INTO risks (id, organization_id, title, description, category, status, likelihood, impact, \
           residual_likelihood, residual_impact, treatment_strategy, created_at, updated_at) \
         SELECT 'rsk_' || printf('%032x', n), 'org_' || printf('%032x', 1 + n % {ORGANIZATIONS}), \
           'Risk ' || n, 'Made for the scale case.', 'technology', 'open', 'possible', 'moderate', \
           'unlikely', 'minor', 'mitigate', strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || (n / 1000.0) || ' seconds'), \
           strftime('%Y-%m-%d %H:%M:%f', 'now') FROM r; \
         COMMIT; ANALYZE; PRAGMA wal_checkpoint(TRUNCATE);"
    );
    capture_ok(Command::new("sqlite3").arg(path).arg(sql))?;
    Ok(())
}
