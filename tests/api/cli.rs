//! The operator CLI (`compliance-server admin …`), which the tests use to set up data.

use serde_json::Value;
use tokio::process::Command;

use crate::harness::BIN;

/// `compliance-server admin` on one database.
#[derive(Debug, Clone)]
pub struct Admin {
    database_url: String,
}

impl Admin {
    pub fn new(database_url: &str) -> Self {
        Self { database_url: database_url.to_owned() }
    }

    /// Runs `admin ARGS…`: the JSON object printed on stdout, or the stderr of a failed run.
    pub async fn try_run(&self, args: &[&str]) -> Result<Value, String> {
        let output = Command::new(BIN)
            .arg("admin")
            .args(args)
            .env("DATABASE_URL", &self.database_url)
            .env("RUST_LOG", "warn")
            .env("LOG_FORMAT", "json")
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|err| format!("cannot run {BIN}: {err}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(format!("exit {}: {}", output.status, stderr.trim()));
        }
        match serde_json::from_str::<Value>(stdout.trim()) {
            Ok(value) if value.is_object() => Ok(value),
            _ => Err(format!("stdout is not one JSON object: {stdout:?} (stderr: {stderr})")),
        }
    }

    /// Runs `admin ARGS…` and fails the test unless it succeeds.
    pub async fn run(&self, args: &[&str]) -> Value {
        match self.try_run(args).await {
            Ok(value) => value,
            Err(err) => panic!("`compliance-server admin {}` failed: {err}", args.join(" ")),
        }
    }

    pub async fn create_org(&self, name: &str, slug: &str) -> Value {
        self.run(&["create-org", "--name", name, "--slug", slug]).await
    }

    pub async fn create_user(&self, email: &str, name: &str) -> Value {
        self.run(&["create-user", "--email", email, "--name", name]).await
    }

    pub async fn add_member(&self, org_id: &str, user_id: &str, role: &str) -> Value {
        self.run(&["add-member", "--org", org_id, "--user", user_id, "--role", role]).await
    }

    pub async fn create_api_key(&self, org_id: &str, created_by: &str) -> Value {
        let args = ["create-api-key", "--org", org_id, "--created-by", created_by, "--name", "tests"];
        self.run(&args).await
    }

    pub async fn revoke_api_key(&self, key_id: &str) -> Value {
        self.run(&["revoke-api-key", "--id", key_id]).await
    }

    pub async fn create_session(&self, user_id: &str) -> Value {
        self.run(&["create-session", "--user", user_id]).await
    }
}
