//! Configuration from the environment, checked at start-up.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use compliance_store::DatabaseUrl;

/// The SQLite file used when `DATABASE_URL` is not set.
const DEFAULT_DB_FILE: &str = "compliance.db";

#[derive(Debug)]
pub struct Config {
    pub database: DatabaseUrl,
    pub listen: SocketAddr,
    pub json_logs: bool,
}

impl Config {
    pub fn from_env() -> anyhow::Result<Self> {
        let data_dir = PathBuf::from(var("DATA_DIR")?.unwrap_or_else(|| "./data".into()));
        let database = match var("DATABASE_URL")? {
            Some(url) => DatabaseUrl::parse(&url)?,
            None => DatabaseUrl::Sqlite(data_dir.join(DEFAULT_DB_FILE)),
        };
        let listen_text = var("LISTEN_ADDR")?.unwrap_or_else(|| "127.0.0.1:8080".into());
        let listen = listen_text
            .parse()
            .with_context(|| format!("LISTEN_ADDR `{listen_text}` is not an address such as 127.0.0.1:8080"))?;
        let json_logs = match var("LOG_FORMAT")?.as_deref() {
            None | Some("pretty") => false,
            Some("json") => true,
            Some(other) => bail!("LOG_FORMAT `{other}` is neither pretty nor json"),
        };
        Ok(Self { database, listen, json_logs })
    }
}

/// `NAME` from the environment, or the contents of the file named by `NAME_FILE` (for secrets).
fn var(name: &str) -> anyhow::Result<Option<String>> {
    if let Ok(value) = std::env::var(name) {
        return Ok(Some(value));
    }
    match std::env::var(format!("{name}_FILE")) {
        Ok(path) => std::fs::read_to_string(&path)
            .map(|text| Some(text.trim_end().to_owned()))
            .with_context(|| format!("cannot read {name}_FILE {path}")),
        Err(_) => Ok(None),
    }
}

/// Logs go to stderr so that admin commands keep stdout for their JSON.
pub fn init_logging(config: &Config) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if config.json_logs {
        builder.json().init();
    } else {
        builder.init();
    }
}
