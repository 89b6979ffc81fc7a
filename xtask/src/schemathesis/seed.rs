//! The records the contract run's operations need to find: without them every request to, say,
//! `GET /v1/browser/automations/{automationId}` ends at 404 and tests no handler. Each is made
//! through the API (or the admin CLI, for sessions) before the run, and handed to schemathesis as
//! an environment variable that `schemathesis.toml` names in an operation's `parameters` (path
//! ids) or `tests/schemathesis/hooks.py` reads (the session).
//!
//! An operation that deletes gets a record of its own, so that the run's other operations still
//! find theirs whatever order they run in.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::service::{Request, Tenant, admin};

/// The environment variables for schemathesis, `(name, value)`; none holds a secret but
/// `SCHEMATHESIS_SESSION`, which the caller keeps out of what it prints.
pub struct Seed {
    pub variables: Vec<(&'static str, String)>,
    pub session: String,
}

pub fn seed(binary: &Path, database_url: &str, address: &str, tenant: &Tenant, task_id: &str) -> Result<Seed> {
    let api = Api { address, key: &tenant.api_key };
    let mut variables = Vec::new();

    let kept = api.post("/v1/comments", &comment(task_id, &tenant.user_id, true))?;
    let attachment = kept["attachments"][0]["id"].as_str().context("the comment has no attachment id")?.to_owned();
    variables.push(("SCHEMATHESIS_COMMENT_ID", id_of(&kept)?));
    variables.push(("SCHEMATHESIS_ATTACHMENT_ID", attachment));
    variables.push((
        "SCHEMATHESIS_COMMENT_TO_DELETE",
        id_of(&api.post("/v1/comments", &comment(task_id, &tenant.user_id, false))?)?,
    ));

    let kept = id_of(&api.post("/v1/browser/automations", &automation(task_id))?)?;
    for name in ["KEPT", "DELETED"] {
        api.put(&format!("/v1/browser/automations/{kept}/secrets/{name}"), &json!({"value": "not a secret"}))?;
    }
    variables.push(("SCHEMATHESIS_AUTOMATION_ID", kept));
    let doomed = id_of(&api.post("/v1/browser/automations", &automation(task_id))?)?;
    variables.push(("SCHEMATHESIS_AUTOMATION_TO_DELETE", doomed));

    let policy = json!({"name": "Contract run", "status": "published", "content": []});
    variables.push(("SCHEMATHESIS_POLICY_ID", id_of(&api.post("/v1/policies", &policy)?)?));

    let control = id_of(&api.post("/v1/controls", &json!({"name": "Contract run"}))?)?;
    api.post(&format!("/v1/controls/{control}/evidence-sources"), &json!({"sourceId": task_id}))?;
    variables.push(("SCHEMATHESIS_CONTROL_ID", control));

    // Two sessions of the owner: the run's, and one for `deleteSession` to end.
    let session = session_token(binary, database_url, &tenant.user_id)?;
    let doomed = session_token(binary, database_url, &tenant.user_id)?;
    let sessions = Request::get("/v1/sessions").with_session(&doomed).expect(address, 200)?;
    let sessions: Value = serde_json::from_str(&sessions).context("GET /v1/sessions is not JSON")?;
    let doomed_id = sessions["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["current"] == true)
        .and_then(|s| s["id"].as_str())
        .context("GET /v1/sessions names no current session")?;
    variables.push(("SCHEMATHESIS_SESSION_TO_DELETE", doomed_id.to_owned()));
    Ok(Seed { variables, session })
}

/// A comment on the task, with a small attachment when `attached`.
fn comment(task_id: &str, user_id: &str, attached: bool) -> Value {
    let mut comment = json!({
        "entityType": "task", "entityId": task_id, "content": "Seeded for the contract run.", "userId": user_id,
    });
    if attached {
        // "contract run" in base64.
        comment["attachments"] =
            json!([{"fileName": "seed.txt", "fileType": "text/plain", "fileData": "Y29udHJhY3QgcnVu"}]);
    }
    comment
}

/// An automation on a page nobody serves: a run it starts fails, which is the handler's answer.
fn automation(task_id: &str) -> Value {
    json!({
        "taskId": task_id, "name": "Contract run", "targetUrl": "https://example.com/",
        "instruction": "Take a screenshot of the page.",
    })
}

fn session_token(binary: &Path, database_url: &str, user_id: &str) -> Result<String> {
    let output = admin(binary, database_url, &["create-session", "--user", user_id])?;
    crate::service::json_string(&output, "token")
}

fn id_of(record: &Value) -> Result<String> {
    record["id"].as_str().map(str::to_owned).with_context(|| format!("no id in {record}"))
}

/// Set-up requests with the tenant's API key, each of which must succeed.
struct Api<'a> {
    address: &'a str,
    key: &'a str,
}

impl Api<'_> {
    fn post(&self, path: &str, body: &Value) -> Result<Value> {
        let body = body.to_string();
        let answer = Request::post(path, &body).with_key(self.key).expect_success(self.address)?;
        serde_json::from_str(&answer).with_context(|| format!("POST {path} answered no JSON"))
    }

    fn put(&self, path: &str, body: &Value) -> Result<()> {
        let body = body.to_string();
        Request::put(path, &body).with_key(self.key).expect_success(self.address).map(drop)
    }
}
