//! `docs/openapi.json`: the committed copy of the document the server generates.

use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cmd::{self, capture_ok, cargo, workspace_root};
use crate::service::target_dir;

const COMMITTED: &str = "docs/openapi.json";

/// The document as the server prints it (`compliance-server openapi`), from the binary built as
/// the tests build it. `cargo run -p compliance-server` would resolve features without the other
/// crates' dev-dependencies (tokio's `test-util`, …) and build some 60 crates a second time.
fn generated() -> Result<String> {
    cmd::run(cargo()?.args(["build", "--workspace", "--all-targets", "--locked"]))?;
    let binary = target_dir()?.join("debug").join("compliance-server");
    let output = capture_ok(Command::new(&binary).arg("openapi"))?;
    String::from_utf8(output.stdout).context("the document is not UTF-8")
}

/// Writes the generated document to `docs/openapi.json`.
pub fn write() -> Result<()> {
    let path = workspace_root()?.join(COMMITTED);
    std::fs::write(&path, generated()?).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {COMMITTED}");
    Ok(())
}

/// Fails when `docs/openapi.json` is not what the code generates.
pub fn check() -> Result<()> {
    let path = workspace_root()?.join(COMMITTED);
    let committed = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let generated = generated()?;
    if committed != generated {
        let shorter = committed.lines().count().min(generated.lines().count());
        let line = committed.lines().zip(generated.lines()).position(|(a, b)| a != b).unwrap_or(shorter) + 1;
        bail!("{COMMITTED} is stale (first difference near line {line}); run `cargo xtask openapi` and commit it");
    }
    println!("ok: {COMMITTED} is the document the code generates");
    Ok(())
}
