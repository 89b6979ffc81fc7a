//! PostgreSQL's own speed at each case: pgbench running the one statement the case needs, with
//! prepared statements, at the same number of connections.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::measure::Load;
use crate::cmd::capture_ok;
use crate::postgres;

/// A pgbench script: `:org` is the organization the case works on (`-D org=…`).
pub fn select_newest_first(table: &str) -> String {
    format!("SELECT * FROM {table} WHERE organization_id = :org ORDER BY created_at DESC, id DESC;\n")
}

pub fn select_active_people() -> String {
    "SELECT * FROM members JOIN users ON users.id = members.user_id \
     WHERE members.organization_id = :org AND members.is_active \
     ORDER BY members.created_at DESC, members.id DESC;\n"
        .to_owned()
}

/// Updates one of `ids`, drawn at random per transaction (pgbench variables are numbers, so the
/// ids are written into an `\if` chain), as `PATCH /v1/risks/{id}` with the bench's body does:
/// it sets the title and the status, and returns the row, which the API answers with.
pub fn update_random_risk(ids: &[String]) -> String {
    let mut script = format!("\\set i random(0, {})\n", ids.len().saturating_sub(1));
    for (n, id) in ids.iter().enumerate() {
        let keyword = if n == 0 { "\\if" } else { "\\elif" };
        let _ = writeln!(script, "{keyword} :i = {n}");
        let _ = writeln!(
            script,
            "UPDATE risks SET title = 'Patched by the benchmark', status = 'pending', updated_at = now() \
             WHERE organization_id = :org AND id = '{id}' RETURNING *;"
        );
    }
    script.push_str("\\endif\n");
    script
}

pub fn insert_context_entry() -> String {
    "INSERT INTO context_entries (id, organization_id, question, answer, tags, created_at, updated_at) \
     VALUES ('ctx_' || replace(gen_random_uuid()::text, '-', ''), :org, 'Benchmark question?', \
     'Benchmark answer.', '[\"bench\"]', now(), now());\n"
        .to_owned()
}

/// Everything one `PATCH /v1/risks/{id}` of the bench sends PostgreSQL, as one pgbench
/// transaction script: the caller's access generation (the authentication cache's check), then
/// the write's transaction: the risk locked and read, updated, its audit entry queued. How fast
/// PostgreSQL alone does the request's own work, with no HTTP, no server and one round trip per
/// statement, as the server sends them: on a machine the server shares with PostgreSQL, the most
/// the API could reach.
pub fn patch_risk_statements(ids: &[String]) -> String {
    let mut script = format!("\\set i random(0, {})\n", ids.len().saturating_sub(1));
    for (n, id) in ids.iter().enumerate() {
        let keyword = if n == 0 { "\\if" } else { "\\elif" };
        let _ = writeln!(script, "{keyword} :i = {n}");
        script.push_str(ACCESS_GENERATION);
        script.push_str("BEGIN;\n");
        let _ = writeln!(script, "SELECT * FROM risks WHERE organization_id = :org AND id = '{id}' FOR UPDATE;");
        let _ = writeln!(
            script,
            "UPDATE risks SET title = 'Patched by the benchmark', status = 'pending', updated_at = now() \
             WHERE organization_id = :org AND id = '{id}' RETURNING *;"
        );
        script.push_str(&queue_audit_entry("risk.updated", "risk", id));
        script.push_str("COMMIT;\n");
    }
    script.push_str("\\endif\n");
    script
}

/// Everything one `POST /v1/context` of the bench sends PostgreSQL, as [`patch_risk_statements`]
/// is for its `PATCH`: the access generation, then the entry and its audit entry in one
/// transaction.
pub fn post_context_statements() -> String {
    format!(
        "{ACCESS_GENERATION}BEGIN;\n{}{}COMMIT;\n",
        insert_context_entry(),
        queue_audit_entry("context.created", "context", "ctx_00000000000000000000000000000000")
    )
}

/// The read every authenticated request makes (see the store's `generations.rs`).
const ACCESS_GENERATION: &str =
    "SELECT generation FROM list_generations WHERE organization_id = :org AND list = 'access';\n";

/// Queues an audit entry the size of the API's (its `data` is the rendered record, about 700
/// bytes), well formed, so that the API's sequencer seals it as it seals the API's.
fn queue_audit_entry(action: &str, resource_type: &str, resource_id: &str) -> String {
    format!(
        "INSERT INTO audit_entries (id, organization_id, actor_type, actor_id, action, resource_type, \
         resource_id, changes, data, request_id, created_at) VALUES \
         ('aud_' || replace(gen_random_uuid()::text, '-', ''), :org, 'apiKey', 'pgbench', '{action}', \
         '{resource_type}', '{resource_id}', '{{\"title\":{{\"from\":\"Risk\",\"to\":\"Patched\"}}}}', \
         '{{\"pgbench\":\"' || repeat('x', 680) || '\"}}', 'pgbench', now());\n"
    )
}

/// One `INSERT` of `rows` risks, the statement a bulk create of `rows` risks does in the least
/// work (the API adds an audit entry per risk, in the same transaction). The rows come from
/// `generate_series`, not a `VALUES` list: pgbench's prepared mode binds each `:org` as a parameter
/// of its own, and allows 255.
pub fn insert_risks(rows: usize) -> String {
    format!(
        "INSERT INTO risks (id, organization_id, title, description, category, status, likelihood, impact, \
         residual_likelihood, residual_impact, treatment_strategy, created_at, updated_at) \
         SELECT 'rsk_' || replace(gen_random_uuid()::text, '-', ''), :org, 'Bulk risk ' || n, \
         'Created by the benchmark.', 'other', 'open', 'very_unlikely', 'insignificant', 'very_unlikely', \
         'insignificant', 'accept', now(), now() FROM generate_series(0, {last}) n;\n",
        last = rows.saturating_sub(1)
    )
}

/// Runs `script` for `duration` on `clients` connections.
pub fn run(script: &Path, database_url: &str, organization: &str, clients: u32, duration: Duration) -> Result<Load> {
    let mut command = Command::new(postgres::client_tool("pgbench")?);
    command
        .args(["-n", "-M", "prepared", "-c", &clients.to_string(), "-j", &clients.min(2).to_string()])
        .args(["-T", &duration.as_secs().to_string(), "-D", &format!("org={organization}")])
        .arg("-f")
        .arg(script)
        .arg(database_url);
    let output = capture_ok(&mut command)?;
    parse(&String::from_utf8_lossy(&output.stdout))
}

fn parse(output: &str) -> Result<Load> {
    let value = |prefix: &str| -> Option<f64> {
        let line = output.lines().find_map(|line| line.trim().strip_prefix(prefix))?;
        line.split_whitespace().next()?.parse().ok()
    };
    let per_second = value("tps = ").with_context(|| format!("no tps in pgbench's output:\n{output}"))?;
    let average = value("latency average = ").context("no average latency in pgbench's output")?;
    let failed = value("number of failed transactions: ").unwrap_or(0.0);
    Ok(Load { per_second, latency_ms: average, p99_ms: None, max_ms: None, failures: failed as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pgbench_output() -> Result<()> {
        let output = "number of transactions actually processed: 120000\n\
                      number of failed transactions: 0 (0.000%)\nlatency average = 2.667 ms\n\
                      initial connection time = 12.3 ms\ntps = 11996.5 (without initial connection time)\n";
        let load = parse(output)?;
        assert_eq!(load.per_second, 11996.5);
        assert_eq!(load.latency_ms, 2.667);
        assert_eq!(load.failures, 0);
        Ok(())
    }

    #[test]
    fn the_bulk_insert_is_one_statement_of_every_row() {
        let script = insert_risks(3);
        assert_eq!(script.lines().count(), 1, "{script}");
        assert_eq!(script.matches(":org").count(), 1, "pgbench binds at most 255 parameters: {script}");
        assert!(
            script.starts_with("INSERT INTO risks (") && script.ends_with("generate_series(0, 2) n;\n"),
            "{script}"
        );
    }

    #[test]
    fn a_requests_statements_are_one_transaction_after_the_access_read() {
        let script = patch_risk_statements(&["rsk_a".to_owned(), "rsk_b".to_owned()]);
        let branch: Vec<&str> = script.lines().skip_while(|line| *line != "\\elif :i = 1").skip(1).take(6).collect();
        assert!(branch[0].starts_with("SELECT generation FROM list_generations"), "{script}");
        assert_eq!(branch[1], "BEGIN;");
        assert!(branch[2].ends_with("id = 'rsk_b' FOR UPDATE;"), "{script}");
        assert!(branch[3].starts_with("UPDATE risks SET") && branch[3].contains("'rsk_b'"), "{script}");
        assert!(branch[4].starts_with("INSERT INTO audit_entries") && branch[4].contains("'risk', 'rsk_b'"));
        assert_eq!(branch[5], "COMMIT;");
        let context = post_context_statements();
        assert_eq!(context.lines().count(), 5, "{context}");
        assert!(context.contains("INSERT INTO context_entries") && context.ends_with("COMMIT;\n"));
    }

    #[test]
    fn updates_draw_from_every_id() {
        let script = update_random_risk(&["rsk_a".to_owned(), "rsk_b".to_owned()]);
        assert!(script.starts_with("\\set i random(0, 1)\n\\if :i = 0\n"), "{script}");
        assert!(
            script.contains("\\elif :i = 1\nUPDATE risks") && script.contains("id = 'rsk_b' RETURNING *;"),
            "{script}"
        );
        assert!(script.ends_with("\\endif\n"));
    }
}
