//! `crates/store/src/schema.rs` is what `diesel print-schema` prints from the PostgreSQL
//! migrations, with `crates/store/src/schema.patch` applied (both named in `diesel.toml`). `cargo
//! xtask schema` writes it; `--check` (step 9 of `ci`) fails when the file differs, so a migration
//! and the schema the store is compiled against cannot drift apart unnoticed.
//!
//! diesel_cli is pinned and installed under `target/tools/diesel-cli` (PostgreSQL only, linked to
//! Debian's libpq, which `cargo xtask tools` installs).

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cmd::{self, capture_ok, cargo, workspace_root};
use crate::postgres::{self, Database};
use crate::service::{Store, target_dir};

/// The diesel_cli the schema is printed with; its output decides the file byte for byte.
const DIESEL_CLI_VERSION: &str = "2.3.14";
const SCHEMA: &str = "crates/store/src/schema.rs";

pub const HELP: &str = "\
Usage: cargo xtask schema [--check]

Applies the PostgreSQL migrations (migrations/postgres) to a fresh database with diesel_cli and
writes crates/store/src/schema.rs as `diesel print-schema` prints it with diesel.toml (which
applies crates/store/src/schema.patch). --check: write nothing, fail when the file differs.
diesel_cli is installed under target/tools/diesel-cli when missing. PostgreSQL as `ci` finds it.
To change what the patch does, edit schema.rs by hand and make the patch again:
  diesel print-schema --database-url URL > /tmp/raw.rs   (with patch_file removed from diesel.toml)
  diff -u --label a/crates/store/src/schema.rs --label b/crates/store/src/schema.rs /tmp/raw.rs \\
    crates/store/src/schema.rs > crates/store/src/schema.patch";

/// `cargo xtask schema [--check]` on its own: provides PostgreSQL first.
pub fn run_standalone(check_only: bool) -> Result<()> {
    let database = postgres::provide()?;
    let outcome = if check_only { check(&database) } else { write(&database) };
    drop(database);
    outcome
}

/// Fails when `schema.rs` is not what diesel prints from the migrations.
pub fn check(database: &Database) -> Result<()> {
    let printed = print(database)?;
    let path = workspace_root()?.join(SCHEMA);
    let on_disk = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    if printed == on_disk {
        println!("{SCHEMA} is diesel's print of the PostgreSQL migrations");
        return Ok(());
    }
    bail!(
        "{SCHEMA} differs from `diesel print-schema` of the PostgreSQL migrations (with {}):\n{}\n\
         run `cargo xtask schema` to write it, and change crates/store/src/schema.patch if the \
         difference is meant (see `cargo xtask schema --help`)",
        "diesel.toml",
        first_difference(&on_disk, &printed)
    )
}

fn write(database: &Database) -> Result<()> {
    let printed = print(database)?;
    let path = workspace_root()?.join(SCHEMA);
    fs::write(&path, printed).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {SCHEMA}");
    Ok(())
}

/// The migrations applied to a fresh database, and the schema printed from it.
fn print(database: &Database) -> Result<String> {
    let diesel = diesel_cli()?;
    let root = workspace_root()?;
    let store = Store::postgres(&database.admin_url(), "schema")?;
    // The migrations alone, with no print_schema section: diesel would rewrite schema.rs after
    // running them.
    let no_print = target_dir()?.join("tools").join("diesel-migrations-only.toml");
    fs::write(&no_print, "").with_context(|| format!("cannot write {}", no_print.display()))?;
    cmd::run(
        Command::new(&diesel)
            .current_dir(&root)
            .args(["migration", "run", "--migration-dir", "migrations/postgres", "--config-file"])
            .arg(&no_print)
            .args(["--database-url", store.url()]),
    )?;
    let output = capture_ok(Command::new(&diesel).current_dir(&root).args([
        "print-schema",
        "--config-file",
        "diesel.toml",
        "--database-url",
        store.url(),
    ]))?;
    String::from_utf8(output.stdout).context("diesel print-schema printed something that is not UTF-8")
}

/// The pinned diesel_cli, installed when missing.
fn diesel_cli() -> Result<PathBuf> {
    let root = target_dir()?.join("tools").join("diesel-cli");
    let program = root.join("bin").join("diesel");
    let installed = Command::new(&program)
        .arg("--version")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).contains(DIESEL_CLI_VERSION));
    if !installed {
        println!("installing diesel_cli {DIESEL_CLI_VERSION} (PostgreSQL only) into {}", root.display());
        // `--debug`: unoptimised, it builds in half the time (about 40 s against 85 s on two idle
        // cores), and it runs twice per check.
        cmd::run(
            cargo()?
                .args(["install", "diesel_cli", "--version", DIESEL_CLI_VERSION, "--locked", "--force", "--debug"])
                .args(["--no-default-features", "--features", "postgres", "--root"])
                .arg(&root),
        )?;
    }
    Ok(program)
}

/// The first line where the two texts differ, with its number, for the error message.
fn first_difference(on_disk: &str, printed: &str) -> String {
    let (mut disk_lines, mut printed_lines) = (on_disk.lines(), printed.lines());
    for number in 1.. {
        match (disk_lines.next(), printed_lines.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (None, None) => break,
            (a, b) => {
                return format!(
                    "  line {number}\n    in the file:   {}\n    diesel prints: {}",
                    a.unwrap_or("(end of file)"),
                    b.unwrap_or("(end of output)")
                );
            }
        }
    }
    "  (only line endings differ)".to_owned()
}

#[cfg(test)]
mod tests {
    use super::first_difference;

    #[test]
    fn names_the_first_line_that_differs() {
        let found = first_difference("a\nb\nc\n", "a\nB\nc\n");
        assert!(found.contains("line 2") && found.contains("in the file:   b") && found.contains("diesel prints: B"));
        assert!(first_difference("a\n", "a\nextra\n").contains("(end of file)"));
    }
}
