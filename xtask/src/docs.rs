//! `cargo xtask docs`: the workspace's API documentation, built as CI builds it.

use anyhow::{Context, Result};

use crate::cmd::{self, cargo};

/// Every workspace crate's own documentation (`--no-deps`) with rustdoc's warnings as errors:
/// broken and private intra-doc links, bad code blocks, and `missing_docs` on the crates that
/// turn it on. It writes to the workspace's one target directory (`target/doc`), as every other
/// step does, so nothing is built twice: `--examples` (the embedding example) makes cargo resolve
/// features with the dev-dependencies, as clippy's `--all-targets` did, so rustdoc reads the
/// dependencies clippy checked instead of checking some 50 of them again with other features.
pub fn check() -> Result<()> {
    let mut doc = cargo()?;
    doc.args(["doc", "--workspace", "--no-deps", "--lib", "--bins", "--examples", "--locked"])
        .env("RUSTDOCFLAGS", "-D warnings -D rustdoc::broken_intra_doc_links -D rustdoc::private_intra_doc_links");
    cmd::run(&mut doc).context("rustdoc warned (run `cargo xtask docs` to see them alone)")
}
