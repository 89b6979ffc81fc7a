//! `cargo xtask doc-paths`: docs that cannot drift from the tree. Every repository path the
//! project's Markdown quotes (`crates/store/src/audit.rs`, `store/src/db.rs` for a crate's file,
//! `crates/app/src/{risks,tasks}.rs`, a `*` pattern) and every relative link must exist, and every
//! workspace crate must be on the map in docs/architecture.md.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::cmd::workspace_root;

/// The map every crate must be on.
const MAP: &str = "docs/architecture.md";

pub fn check() -> Result<()> {
    let root = workspace_root()?;
    let mut problems = Vec::new();
    let crates = crate_dirs(&root)?;
    for doc in markdown_files(&root)? {
        let text = fs::read_to_string(&doc).with_context(|| format!("reading {}", doc.display()))?;
        let shown = doc.strip_prefix(&root).unwrap_or(&doc).display().to_string();
        for (line, quoted) in quoted_paths(&text, &crates) {
            if !expand(&quoted).iter().all(|path| exists(&root, &crates, path)) {
                problems.push(format!("{shown}:{line}: `{quoted}` is not in the repository"));
            }
        }
        for (line, target) in link_targets(&text) {
            let base = doc.parent().unwrap_or(&root);
            if !base.join(&target).exists() {
                problems.push(format!("{shown}:{line}: the link to {target} leads nowhere"));
            }
        }
    }
    let map = fs::read_to_string(root.join(MAP)).with_context(|| format!("reading {MAP}"))?;
    for name in &crates {
        if !map.contains(&format!("crates/{name}")) && !map.contains(&format!("compliance-{name}")) {
            problems.push(format!("{MAP}: the crate crates/{name} is not on the map"));
        }
    }
    if !problems.is_empty() {
        bail!("the docs name what the tree does not hold:\n  {}", problems.join("\n  "));
    }
    println!("doc-paths: every quoted path and link exists, every crate is on the map");
    Ok(())
}

/// README.md and every Markdown file under docs/.
fn markdown_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

fn crate_dirs(root: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(root.join("crates")).context("listing crates/")? {
        let entry = entry?;
        if entry.path().join("Cargo.toml").exists() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// The code spans of `text` that are repository paths, with their line numbers: no spaces, a
/// `/`, and a first part that is a top-level folder of the repository or a crate's folder (the
/// docs may quote `store/src/db.rs` for `crates/store/src/db.rs`).
fn quoted_paths(text: &str, crates: &[String]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        for (index, span) in line.split('`').enumerate() {
            // odd parts are inside backticks
            if index % 2 == 1 && looks_like_path(span, crates) {
                found.push((number + 1, span.trim_end_matches(['.', ',', ':']).to_owned()));
            }
        }
    }
    found
}

fn looks_like_path(span: &str, crates: &[String]) -> bool {
    const TOP: &[&str] = &["crates", "docs", "xtask", "tests", "migrations", "providers", "frameworks", ".ci"];
    let Some((first, rest)) = span.split_once('/') else { return false };
    let plain = span.chars().all(|c| c.is_ascii_alphanumeric() || "/_-.{},*".contains(c));
    plain && !rest.is_empty() && (TOP.contains(&first) || crates.iter().any(|name| name == first))
}

/// `a/{b,c}.rs` as `a/b.rs` and `a/c.rs` (one brace group).
fn expand(path: &str) -> Vec<String> {
    match (path.find('{'), path.find('}')) {
        (Some(open), Some(close)) if open < close => path[open + 1..close]
            .split(',')
            .map(|choice| format!("{}{}{}", &path[..open], choice, &path[close + 1..]))
            .collect(),
        _ => vec![path.to_owned()],
    }
}

fn exists(root: &Path, crates: &[String], path: &str) -> bool {
    let first = path.split('/').next().unwrap_or_default();
    let path = match crates.iter().any(|name| name == first) && !root.join(first).exists() {
        true => format!("crates/{path}"),
        false => path.to_owned(),
    };
    match path.split_once('*') {
        // a pattern: its folder exists
        Some((before, _)) => root.join(before.rsplit_once('/').map_or("", |(dir, _)| dir)).is_dir(),
        None => root.join(&path).exists(),
    }
}

/// The relative targets of Markdown links (`[text](target)`), without their `#anchor`.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split('#').next().unwrap_or_default().trim();
            let external = target.contains("://") || target.starts_with("mailto:");
            if !target.is_empty() && !external && !target.contains(' ') {
                found.push((number + 1, target.to_owned()));
            }
            rest = &after[end..];
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_told_from_other_code_spans() {
        let text =
            "See `crates/store/src/audit.rs`, `store/src/db.rs`, `GET /v1/risks`,\n`application/json` and `a/b`.";
        let crates = ["store".to_owned()];
        let paths: Vec<String> = quoted_paths(text, &crates).into_iter().map(|(_, path)| path).collect();
        assert_eq!(paths, ["crates/store/src/audit.rs", "store/src/db.rs"]);
        assert_eq!(expand("crates/app/src/{risks,tasks}.rs"), ["crates/app/src/risks.rs", "crates/app/src/tasks.rs"]);
        let links = link_targets("[a](decisions/x.md#why) [b](https://example.com) [c](#top)");
        assert_eq!(links, [(1, "decisions/x.md".to_owned())]);
    }
}
