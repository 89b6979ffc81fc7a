//! Running child processes: echo the command, run it, turn a failure into an error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};

/// The workspace root (the parent of the xtask package).
pub fn workspace_root() -> Result<PathBuf> {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).context("xtask has no parent directory")
}

/// `cargo` (the one that started xtask, when known), run in the workspace root, without the
/// variables `cargo run` set for xtask itself (`CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, …). Build
/// scripts such as ring's rerun when those change, so with them every build started here would
/// rebuild ring and the ~20 crates above it, and the next `cargo test` from a shell again.
pub fn cargo() -> Result<Command> {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(program);
    command.current_dir(workspace_root()?);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_for_xtask = ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CRATE_", "CARGO_BIN_", "CARGO_PRIMARY_"]
            .iter()
            .any(|prefix| name.starts_with(prefix));
        if set_for_xtask {
            command.env_remove(name.as_ref());
        }
    }
    Ok(command)
}

/// Prints the command, runs it with the terminal as its output, fails when it fails.
pub fn run(command: &mut Command) -> Result<()> {
    let shown = display(command);
    println!("$ {shown}");
    let status = command.status().with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("`{shown}` failed ({status})");
    }
    Ok(())
}

/// Runs the command with its output captured; the caller judges the exit status.
pub fn capture(command: &mut Command) -> Result<Output> {
    command.output().with_context(|| format!("could not start `{}`", display(command)))
}

/// Runs the command with its output captured; fails, showing the output, when it fails.
pub fn capture_ok(command: &mut Command) -> Result<Output> {
    let output = capture(command)?;
    if !output.status.success() {
        bail!(
            "`{}` failed ({})\n{}{}",
            display(command),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output)
}

/// Trimmed standard output of a successful command.
pub fn stdout_of(command: &mut Command) -> Result<String> {
    let output = capture_ok(command)?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// `NAME=value program args…`, with the program shown by file name and passwords in URLs hidden.
pub fn display(command: &Command) -> String {
    let envs = command.get_envs().filter_map(|(name, value)| {
        value.map(|v| format!("{}={}", name.to_string_lossy(), redact(&v.to_string_lossy())))
    });
    let program =
        Path::new(command.get_program()).file_name().unwrap_or(command.get_program()).to_string_lossy().into_owned();
    let args = command.get_args().map(|arg| quote(&arg.to_string_lossy()));
    envs.chain([program]).chain(args).collect::<Vec<_>>().join(" ")
}

fn quote(arg: &str) -> String {
    if arg.is_empty() || arg.contains(char::is_whitespace) { format!("\"{arg}\"") } else { arg.to_owned() }
}

/// Hides the password of a `scheme://user:password@host` URL.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_owned(),
    }
}
