//! Dependency direction: `domain ← ports ← app ← adapters ← integrations ← http ← server`; the
//! typed client (`compliance-client`) depends on none of them.
//!
//! The inner crates must not reach diesel or actix-web, not even through another crate; adapters
//! must not reach each other; delivery (`http`) reaches no adapter. `cargo tree -p PACKAGE -i
//! DEPENDENCY` prints the paths from PACKAGE to DEPENDENCY (dev-dependencies included: a test may
//! not cross a layer either); when DEPENDENCY is not in PACKAGE's graph it exits non-zero with
//! "package ID specification `DEPENDENCY` did not match any packages". The same error comes for a
//! misspelt name, so positive controls prove that every name checked here is found where it must be.

use anyhow::{Result, bail};

use crate::cmd::{capture, capture_ok, cargo, display};

/// The crates that implement ports against the outside world. None may depend on another: what
/// two of them share lives in a helper that implements no port (`compliance-redis`).
const ADAPTERS: &[&str] = &[
    "compliance-store",
    "compliance-blobs",
    "compliance-chat",
    "compliance-credentials",
    "compliance-devices",
    "compliance-browser",
    "compliance-ratelimit",
    "compliance-oidc",
    "compliance-llm",
    "compliance-webhooks",
];

/// (package, dependencies it must not have, not even through another crate). Besides these, every
/// adapter is forbidden every other adapter (see [`check_dependency_direction`]).
const FORBIDDEN: &[(&str, &[&str])] = &[
    // the inner crates reach no Redis client either, not even through the adapters' helper
    ("compliance-domain", &["diesel", "actix-web", "diesel-async", "compliance-redis"]),
    ("compliance-ports", &["diesel", "actix-web", "compliance-redis"]),
    // use cases never name an adapter: the server wires them as trait objects
    ("compliance-app", &["diesel", "actix-web", "compliance-redis"]),
    ("compliance-app", ADAPTERS),
    // adapters depend on ports, never on the database layer or delivery
    ("compliance-blobs", &["diesel", "actix-web"]),
    ("compliance-chat", &["diesel", "actix-web"]),
    ("compliance-store", &["actix-web"]),
    ("compliance-credentials", &["diesel", "actix-web"]),
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
    ("compliance-embedded", &["actix-web", "compliance-http", "compliance-integrations"]),
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
            "compliance-integrations",
            "compliance-redis",
        ],
    ),
    ("compliance-client", ADAPTERS),
    // integration use cases reach storage through the ports only
    ("compliance-integrations", &["diesel", "actix-web", "compliance-store", "compliance-redis"]),
    // delivery reaches every adapter through the ports; credentials, which it does reach through
    // integrations, is in FORBIDDEN_DIRECT
    (
        "compliance-http",
        &[
            "diesel",
            "compliance-store",
            "compliance-blobs",
            "compliance-chat",
            "compliance-devices",
            "compliance-browser",
            "compliance-ratelimit",
            "compliance-redis",
            "compliance-oidc",
            "compliance-llm",
            "compliance-webhooks",
        ],
    ),
];

/// (package, dependencies it must not name itself; it may reach them through another crate).
/// `http` renders integrations' views, made of credentials' types that integrations re-exports.
const FORBIDDEN_DIRECT: &[(&str, &[&str])] = &[("compliance-http", &["compliance-credentials"])];

/// (package, dependency it must have): the proof that the checks above can fail.
const REQUIRED: &[(&str, &str)] = &[
    ("compliance-store", "diesel"),
    ("compliance-store", "diesel-async"),
    ("compliance-http", "actix-web"),
    ("compliance-integrations", "compliance-credentials"),
    // through integrations: why http's rule on credentials is a direct one
    ("compliance-http", "compliance-credentials"),
    ("compliance-chat", "compliance-redis"),
    ("compliance-ratelimit", "compliance-redis"),
    // the facade wires the store: proof that its actix-web check looks at a real graph
    ("compliance-embedded", "compliance-store"),
    // the client's graph is a real one: its HTTP library is found
    ("compliance-client", "reqwest"),
];

/// (package, dependency it must name itself): the proof that the direct check can fail.
const REQUIRED_DIRECT: &[(&str, &str)] =
    &[("compliance-integrations", "compliance-credentials"), ("compliance-http", "compliance-integrations")];

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
    for (package, dependencies) in FORBIDDEN_DIRECT {
        let direct = direct_dependencies(package)?;
        for dependency in *dependencies {
            if direct.iter().any(|name| name == dependency) {
                bail!("{package} must not depend on {dependency} itself, but its Cargo.toml names it");
            }
            println!("ok: {package} does not name {dependency} itself");
        }
    }
    for (package, dependency) in REQUIRED {
        require_present(package, dependency)?;
    }
    for adapter in ADAPTERS {
        require_present(WIRING, adapter)?;
    }
    for (package, dependency) in REQUIRED_DIRECT {
        if !direct_dependencies(package)?.iter().any(|name| name == dependency) {
            bail!(
                "{package} should name {dependency} itself but cargo tree --depth 1 does not list it: \
                 the direct check would pass for the wrong reason"
            );
        }
        println!("ok: {package} names {dependency} itself (the direct check can see it)");
    }
    Ok(())
}

/// The names of the packages `package` depends on itself (normal, build and dev).
fn direct_dependencies(package: &str) -> Result<Vec<String>> {
    let mut command = cargo()?;
    command.args(["tree", "--locked", "--color", "never", "-p", package, "--depth", "1", "--prefix", "none"]);
    command.args(["--format", "{p}"]);
    let output = capture_ok(&mut command)?;
    Ok(direct_names(&String::from_utf8_lossy(&output.stdout)))
}

/// `cargo tree --depth 1 --prefix none --format {p}` lists the package itself first, then one
/// `name version [(source)] [(*)]` line per dependency.
fn direct_names(tree: &str) -> Vec<String> {
    tree.lines().skip(1).filter_map(|line| line.split_whitespace().next()).map(str::to_owned).collect()
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
    fn direct_names_skip_the_package_itself() {
        let tree = "compliance-chat v0.1.0 (/w/crates/chat)\nasync-trait v0.1.92 (proc-macro)\n\
                    compliance-redis v0.1.0 (/w/crates/redis)\nredis v1.8.1\nredis v1.8.1 (*)\n";
        assert_eq!(direct_names(tree), ["async-trait", "compliance-redis", "redis", "redis"]);
        assert!(direct_names("compliance-domain v0.1.0 (/w/crates/domain)\n").is_empty());
    }

    #[test]
    fn every_adapter_is_forbidden_http_directly_or_not() {
        let forbidden = |package: &str, dependency: &str| {
            FORBIDDEN
                .iter()
                .chain(FORBIDDEN_DIRECT)
                .any(|(p, dependencies)| *p == package && dependencies.contains(&dependency))
        };
        for adapter in ADAPTERS {
            assert!(forbidden("compliance-http", adapter), "http → {adapter} is not checked");
            assert!(forbidden("compliance-app", adapter), "app → {adapter} is not checked");
        }
    }
}
