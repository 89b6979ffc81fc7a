//! Developer tasks for the workspace, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! Few dependencies on purpose (anyhow, serde_json with serde's derive for the JSON it reads and
//! writes, and std): the tasks drive `cargo` and the PostgreSQL tools as child processes.

mod bench;
mod ci;
mod client;
mod cmd;
mod deps;
mod doc_paths;
mod docs;
mod openapi;
mod postgres;
mod provision;
mod schema;
mod schemathesis;
mod service;

use std::process::ExitCode;

use anyhow::{Result, bail};

const HELP: &str = "\
Usage: cargo xtask <COMMAND>

Commands:
  ci      the whole CI run: the tools the tests need, fmt check, clippy,
          dependency-direction checks, the OpenAPI document, rustdoc, PostgreSQL
          (DATABASE_URL or a throwaway cluster), every test, then the contract tests
  tools   install what the tests need besides Rust (as `ci` does first)
  doc-paths
          every repository path and link the Markdown quotes exists, every crate is on
          docs/architecture.md's map (step 3 of `ci`)
  deps    the dependency-direction checks alone (step 5 of `ci`)
  docs    the workspace's rustdoc with warnings as errors, alone (step 7 of `ci`)
  openapi write docs/openapi.json from the code (`--check`: fail when it is stale)
  client  write crates/client/src/generated.rs from docs/openapi.json (`--check`: fail
          when it is stale)
  schema  write crates/store/src/schema.rs as diesel print-schema prints it from the
          PostgreSQL migrations (`--check`: fail when it differs; step 9 of `ci`)
  schemathesis
          contract tests: schemathesis against a running server, on SQLite and PostgreSQL
  bench   the release server under load beside pgbench, on PostgreSQL and SQLite
  help    print this message (also -h, --help)

Run `cargo xtask <COMMAND> --help` for details.";

const CI_HELP: &str = "\
Usage: cargo xtask ci

Runs, in order, stopping at the first failure:
  1. the tools the tests need (`cargo xtask tools`): Debian's chromium, chromium-driver,
     poppler-utils, postgresql, libpq-dev and redis-server (apt-get, as root), Redis answering on
     127.0.0.1:6379, the pinned PyPI packages (schemathesis, standardwebhooks, moto) in
     target/tools/venv, `npm ci` in tests/oidc; what cannot be installed is listed in
     one message before anything is built
  2. cargo fmt --all -- --check
  3. the docs name what the tree holds (`cargo xtask doc-paths`): every repository path
     quoted in README.md and docs/**/*.md, and every relative link, exists; every crate
     under crates/ is on the map in docs/architecture.md
  4. cargo clippy --workspace --all-targets --locked -- -D warnings
  5. dependency direction (cargo tree -i, dev-dependencies included): domain, the
     credential model, ports and app reach neither diesel nor actix-web (nor, past
     domain, an HTTP or OAuth client), every use-case crate and http reach no adapter
     crate with no exception, no adapter reaches another, the typed client
     (compliance-client) reaches no server crate; with positive controls
  6. docs/openapi.json is the document the code generates (`cargo xtask openapi`), and
     crates/client/src/generated.rs is what that document generates (`cargo xtask client`)
  7. cargo doc --workspace --no-deps --locked with RUSTDOCFLAGS='-D warnings
     -D rustdoc::broken_intra_doc_links -D rustdoc::private_intra_doc_links'
     (`cargo xtask docs`): no rustdoc warning, no broken intra-doc link
  8. PostgreSQL: DATABASE_URL when it is a postgres:// URL that answers; otherwise a
     throwaway cluster from the newest /usr/lib/postgresql/*/bin (stopped and removed
     at the end); otherwise an error
  9. crates/store/src/schema.rs is what `diesel print-schema` prints from the
     PostgreSQL migrations with diesel.toml (`cargo xtask schema --check`; diesel_cli
     pinned, installed under target/tools/diesel-cli)
  10. cargo nextest run --workspace --locked plus cargo test --workspace --doc --locked
     (or cargo test --workspace --locked without nextest), with DATABASE_URL set to
     the PostgreSQL admin URL and target/tools/venv/bin first on PATH
  11. schemathesis (`cargo xtask schemathesis`): the dev binary the tests built serves a
     fresh database on each backend; schemathesis runs every check in positive and
     negative mode with a fixed seed (settings in schemathesis.toml, see docs/testing.md)";

const SCHEMATHESIS_HELP: &str = "\
Usage: cargo xtask schemathesis

Builds the dev binary (cargo build -p compliance-server), provides PostgreSQL as `ci`
does, then for SQLite and for PostgreSQL: a fresh database with one organization, its
owner and an API key (admin CLI), `compliance-server serve` on a free port, and
`schemathesis run …/openapi.json --checks all --mode all --seed 42` against it.
Reports (JUnit, NDJSON) and the server's log go to target/schemathesis/<backend>/.
Installs the tools first, as `ci` does (schemathesis 4.32.5 in target/tools/venv).";

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
        ["tools"] => provision::ensure().map(|_| ()),
        ["deps"] => deps::check_dependency_direction(),
        ["docs"] => docs::check(),
        ["doc-paths"] => doc_paths::check(),
        ["openapi"] => openapi::write(),
        ["openapi", "--check"] => openapi::check(),
        ["client"] => client::write(),
        ["client", "--check"] => client::check(),
        ["schema"] => schema::run_standalone(false),
        ["schema", "--check"] => schema::run_standalone(true),
        ["schema", "-h" | "--help"] | ["help", "schema"] => print_help(schema::HELP),
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
