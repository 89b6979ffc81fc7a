//! Dependency direction: `domain ← ports ← app ← adapters ← http ← server`.
//!
//! The inner crates must not reach diesel or actix-web, not even through another crate. `cargo tree
//! -p PACKAGE -i DEPENDENCY` prints the paths from PACKAGE to DEPENDENCY; when DEPENDENCY is not in
//! PACKAGE's graph it exits non-zero with "package ID specification `DEPENDENCY` did not match any
//! packages". The same error comes for a misspelt name, so positive controls prove that every name
//! checked here is found where it must be.

use anyhow::{Result, bail};

use crate::cmd::{capture, cargo, display};

/// (package, dependencies it must not have)
const FORBIDDEN: &[(&str, &[&str])] = &[
    ("compliance-domain", &["diesel", "actix-web", "diesel-async"]),
    ("compliance-ports", &["diesel", "actix-web"]),
    ("compliance-app", &["diesel", "actix-web"]),
    // adapters depend on ports, never on each other, the database layer or delivery
    ("compliance-blobs", &["diesel", "actix-web", "compliance-store", "compliance-chat"]),
    ("compliance-chat", &["diesel", "actix-web", "compliance-store", "compliance-blobs"]),
    ("compliance-store", &["actix-web", "compliance-blobs", "compliance-chat"]),
    ("compliance-credentials", &["diesel", "actix-web", "compliance-store"]),
    ("compliance-devices", &["diesel", "actix-web", "compliance-store", "compliance-blobs", "compliance-browser"]),
    ("compliance-browser", &["diesel", "actix-web", "compliance-store", "compliance-blobs", "compliance-devices"]),
    ("compliance-ratelimit", &["diesel", "actix-web", "compliance-store", "compliance-chat", "compliance-blobs"]),
    // integration use cases reach storage through the ports only
    ("compliance-integrations", &["diesel", "actix-web", "compliance-store"]),
];

/// (package, dependency it must have): the proof that the check above can fail.
const REQUIRED: &[(&str, &str)] =
    &[("compliance-store", "diesel"), ("compliance-store", "diesel-async"), ("compliance-http", "actix-web")];

const NOT_IN_GRAPH: &str = "did not match any packages";

#[derive(Debug)]
enum Presence {
    /// Found: how the package reaches it (the inverted tree).
    Present(String),
    Absent,
}

pub fn check_dependency_direction() -> Result<()> {
    for (package, dependencies) in FORBIDDEN {
        for dependency in *dependencies {
            require_absent(package, dependency)?;
        }
    }
    for (package, dependency) in REQUIRED {
        require_present(package, dependency)?;
    }
    Ok(())
}

fn require_absent(package: &str, dependency: &str) -> Result<()> {
    match presence(package, dependency)? {
        Presence::Absent => {
            println!("ok: {package} does not depend on {dependency}");
            Ok(())
        }
        Presence::Present(paths) => {
            bail!("{package} must not depend on {dependency}, but it does:\n{paths}")
        }
    }
}

fn require_present(package: &str, dependency: &str) -> Result<()> {
    match presence(package, dependency)? {
        Presence::Present(_) => {
            println!("ok: {package} depends on {dependency} (the check can see it)");
            Ok(())
        }
        Presence::Absent => bail!(
            "{package} should depend on {dependency} but cargo tree does not find it: \
             the dependency-direction check would pass for the wrong reason"
        ),
    }
}

fn presence(package: &str, dependency: &str) -> Result<Presence> {
    let mut command = cargo()?;
    command.args(["tree", "--locked", "--color", "never", "-p", package, "-i", dependency]);
    let output = capture(&mut command)?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.success() && !stdout.trim().is_empty() {
        Ok(Presence::Present(stdout.into_owned()))
    } else if !output.status.success() && stderr.contains(NOT_IN_GRAPH) {
        Ok(Presence::Absent)
    } else {
        bail!("`{}` gave an unexpected answer ({}):\n{stdout}{stderr}", display(&command), output.status)
    }
}
