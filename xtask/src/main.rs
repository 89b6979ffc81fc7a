//! Developer tasks for the workspace, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! Few dependencies on purpose (anyhow, serde_json with serde's derive for the JSON it reads and
//! writes, and std): the tasks drive `cargo` and the PostgreSQL tools as child processes.

mod bench;
mod ci;
mod cmd;
mod deps;
mod openapi;
mod postgres;
mod schemathesis;
mod service;

use std::process::ExitCode;

use anyhow::{Result, bail};

const HELP: &str = "\
Usage: cargo xtask <COMMAND>

Commands:
  ci      the whole CI run: fmt check, clippy, dependency-direction checks,
          PostgreSQL (DATABASE_URL or a throwaway cluster), then every test
  openapi write docs/openapi.json from the code (`--check`: fail when it is stale)
  schemathesis
          contract tests: schemathesis against a running server, on SQLite and PostgreSQL
  bench   the release server under load beside pgbench, on PostgreSQL and SQLite
  help    print this message (also -h, --help)

Run `cargo xtask <COMMAND> --help` for details.";

const CI_HELP: &str = "\
Usage: cargo xtask ci

Runs, in order, stopping at the first failure:
  1. cargo fmt --all -- --check
  2. cargo clippy --workspace --all-targets --locked -- -D warnings
  3. dependency direction (cargo tree -i, dev-dependencies included): domain, ports
     and app reach neither diesel nor actix-web, app and http reach no adapter crate
     (http names credentials not even directly: it uses them through integrations),
     no adapter reaches another; with positive controls
  4. docs/openapi.json is the document the code generates (`cargo xtask openapi`)
  5. PostgreSQL: DATABASE_URL when it is a postgres:// URL that answers; otherwise a
     throwaway cluster from the newest /usr/lib/postgresql/*/bin (stopped and removed
     at the end); otherwise an error
  6. cargo nextest run --workspace --locked plus cargo test --workspace --doc --locked
     (or cargo test --workspace --locked without nextest), with DATABASE_URL set to
     the PostgreSQL admin URL
  7. schemathesis (`cargo xtask schemathesis`): the dev binary the tests built serves a
     fresh database on each backend; schemathesis runs every check in positive and
     negative mode with a fixed seed (settings in schemathesis.toml, see docs/testing.md)";

const SCHEMATHESIS_HELP: &str = "\
Usage: cargo xtask schemathesis

Builds the dev binary (cargo build -p compliance-server), provides PostgreSQL as `ci`
does, then for SQLite and for PostgreSQL: a fresh database with one organization, its
owner and an API key (admin CLI), `compliance-server serve` on a free port, and
`schemathesis run …/openapi.json --checks all --mode all --seed 42` against it.
Reports (JUnit, NDJSON) and the server's log go to target/schemathesis/<backend>/.
Needs schemathesis 4.32.5 (python3 -m pip install schemathesis==4.32.5).";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn dispatch(args: &[String]) -> Result<()> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] => bail!("no command given\n\n{HELP}"),
        ["help" | "-h" | "--help"] => print_help(HELP),
        ["bench", "-h" | "--help"] | ["help", "bench"] => print_help(bench::HELP),
        ["bench", options @ ..] => bench::run(options),
        ["ci"] => ci::run(),
        ["ci", "-h" | "--help"] | ["help", "ci"] => print_help(CI_HELP),
        ["openapi"] => openapi::write(),
        ["openapi", "--check"] => openapi::check(),
        ["schemathesis"] => schemathesis::run_standalone(),
        ["schemathesis", "-h" | "--help"] | ["help", "schemathesis"] => print_help(SCHEMATHESIS_HELP),
        ["ci", unexpected, ..] => bail!("unexpected argument `{unexpected}` for `ci`\n\n{CI_HELP}"),
        [unknown, ..] => bail!("unknown command `{unknown}`\n\n{HELP}"),
    }
}

fn print_help(text: &str) -> Result<()> {
    println!("{text}");
    Ok(())
}
