//! Dependency direction: `domain ← credentials (the credential model) ← ports ← app ← adapters ←
//! http ← server`; the typed client (`compliance-client`) depends on none of them.
//!
//! The inner crates must not reach diesel or actix-web, not even through another crate; adapters
//! must not reach each other; the use cases and delivery (`http`) reach no adapter, with no
//! exception. `cargo tree -p PACKAGE -i
//! DEPENDENCY` prints the paths from PACKAGE to DEPENDENCY (dev-dependencies included: a test may
//! not cross a layer either); when DEPENDENCY is not in PACKAGE's graph it exits non-zero with
//! "package ID specification `DEPENDENCY` did not match any packages". The same error comes for a
//! misspelt name, so positive controls prove that every name checked here is found where it must be.

use anyhow::{Result, bail};

use crate::cmd::{capture, cargo, display};

/// The crates that implement ports against the outside world. None may depend on another: what
/// two of them share lives in a helper that implements no port (`compliance-redis`).
const ADAPTERS: &[&str] = &[
    "compliance-store",
    "compliance-blobs",
    "compliance-chat",
    "compliance-provider-client",
    "compliance-checks",
    "compliance-vault",
    "compliance-devices",
    "compliance-browser",
    "compliance-ratelimit",
    "compliance-oidc",
    "compliance-llm",
    "compliance-webhooks",
];

/// The crates that hold use cases. Each is forbidden every adapter, with no exception: the server
/// wires adapters in as trait objects behind the ports.
const USE_CASES: &[&str] = &["compliance-app"];

/// (package, dependencies it must not have, not even through another crate). Besides these, every
/// adapter is forbidden every other adapter and every use-case crate every adapter (see
/// [`check_dependency_direction`]).
const FORBIDDEN: &[(&str, &[&str])] = &[
    // the inner crates reach no Redis client either, not even through the adapters' helper
    ("compliance-domain", &["diesel", "actix-web", "diesel-async", "compliance-redis"]),
    // the credential model is pure: no HTTP client, no OAuth client, no database
    ("compliance-credentials", &["diesel", "actix-web", "reqwest", "oauth2", "tokio", "compliance-redis"]),
    ("compliance-credentials", ADAPTERS),
    ("compliance-ports", &["diesel", "actix-web", "reqwest", "oauth2", "compliance-redis"]),
    ("compliance-ports", ADAPTERS),
    ("compliance-app", &["diesel", "actix-web", "reqwest", "oauth2", "compliance-redis"]),
    // adapters depend on ports, never on the database layer or delivery
    ("compliance-blobs", &["diesel", "actix-web"]),
    ("compliance-chat", &["diesel", "actix-web"]),
    ("compliance-store", &["actix-web"]),
    ("compliance-provider-client", &["diesel", "actix-web"]),
    ("compliance-checks", &["diesel", "actix-web"]),
    ("compliance-vault", &["diesel", "actix-web"]),
    ("compliance-devices", &["diesel", "actix-web"]),
    ("compliance-browser", &["diesel", "actix-web"]),
    ("compliance-ratelimit", &["diesel", "actix-web"]),
    ("compliance-oidc", &["diesel", "actix-web"]),
    ("compliance-llm", &["diesel", "actix-web"]),
    ("compliance-webhooks", &["diesel", "actix-web"]),
    // the adapters' shared Redis connection is a leaf below them
    ("compliance-redis", &["diesel", "actix-web"]),
    ("compliance-redis", ADAPTERS),
    // the wire types and the embedding facade carry no HTTP library: an embedder's graph has no
    // actix-web (docs/embedding.md)
    ("compliance-wire", &["diesel", "actix-web", "compliance-redis"]),
    ("compliance-wire", ADAPTERS),
    // nor an OAuth client: an embedding reaches no integration provider (`NoProviderClient`)
    (
        "compliance-embedded",
        &["actix-web", "compliance-http", "compliance-provider-client", "compliance-checks", "oauth2"],
    ),
    // the typed client is for API consumers: HTTP and serde, no server crate (it is generated
    // from docs/openapi.json, not built on the server's types)
    (
        "compliance-client",
        &[
            "diesel",
            "actix-web",
            "compliance-ports",
            "compliance-app",
            "compliance-http",
            "compliance-server",
            "compliance-embedded",
            "compliance-redis",
        ],
    ),
    ("compliance-client", ADAPTERS),
    // delivery reaches every adapter through the ports
    ("compliance-http", &["diesel", "compliance-redis", "reqwest", "oauth2"]),
    ("compliance-http", ADAPTERS),
];

/// (package, dependency it must have): the proof that the checks above can fail.
const REQUIRED: &[(&str, &str)] = &[
    ("compliance-store", "diesel"),
    ("compliance-store", "diesel-async"),
    ("compliance-http", "actix-web"),
    // the model is a real crate in the use cases' graph, and the adapters' HTTP and OAuth
    // clients are found where they are
    ("compliance-app", "compliance-credentials"),
    ("compliance-provider-client", "reqwest"),
    ("compliance-provider-client", "oauth2"),
    ("compliance-checks", "reqwest"),
    ("compliance-chat", "compliance-redis"),
    ("compliance-ratelimit", "compliance-redis"),
    // the facade wires the store: proof that its actix-web check looks at a real graph
    ("compliance-embedded", "compliance-store"),
    // the client's graph is a real one: its HTTP library is found
    ("compliance-client", "reqwest"),
];

/// The package that wires every adapter: each adapter's name must be found in its graph.
const WIRING: &str = "compliance-server";

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
    for package in ADAPTERS {
        for other in ADAPTERS.iter().filter(|other| *other != package) {
            require_absent(package, other)?;
        }
    }
    for package in USE_CASES {
        for adapter in ADAPTERS {
            require_absent(package, adapter)?;
        }
    }
    for (package, dependency) in REQUIRED {
        require_present(package, dependency)?;
    }
    for adapter in ADAPTERS {
        require_present(WIRING, adapter)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_is_forbidden_every_adapter() {
        let forbidden = |package: &str, dependency: &str| {
            FORBIDDEN.iter().any(|(p, dependencies)| *p == package && dependencies.contains(&dependency))
        };
        for adapter in ADAPTERS {
            assert!(forbidden("compliance-http", adapter), "http → {adapter} is not checked");
        }
    }
}
