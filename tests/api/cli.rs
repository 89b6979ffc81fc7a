//! The operator CLI (`compliance-server admin …`), which the tests use to set up data.

use serde_json::Value;
use tokio::process::Command;

use crate::harness::BIN;

/// `compliance-server admin` on one database.
#[derive(Debug, Clone)]
pub struct Admin {
    database_url: String,
    /// More environment for the command (`FLEET_URL`, `FLEET_TOKEN`).
    env: Vec<(String, String)>,
}

impl Admin {
    pub fn new(database_url: &str) -> Self {
        Self { database_url: database_url.to_owned(), env: Vec::new() }
    }

    /// The same commands with `name=value` in their environment.
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Runs `admin ARGS…`: the JSON object printed on stdout, or the stderr of a failed run.
    pub async fn try_run(&self, args: &[&str]) -> Result<Value, String> {
        let output = Command::new(BIN)
            .arg("admin")
            .args(args)
            .env("DATABASE_URL", &self.database_url)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
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

    /// `set-device-label`: the organization's label, or with `member` that member's; `None` clears it.
    pub async fn try_set_device_label(
        &self,
        org_id: &str,
        member: Option<&str>,
        label: Option<i64>,
    ) -> Result<Value, String> {
        let label = label.map(|label| label.to_string());
        let mut args = vec!["set-device-label", "--org", org_id];
        if let Some(member) = member {
            args.extend(["--member", member]);
        }
        match &label {
            Some(label) => args.extend(["--label", label]),
            None => args.push("--clear"),
        }
        self.try_run(&args).await
    }

    pub async fn create_session(&self, user_id: &str) -> Value {
        self.run(&["create-session", "--user", user_id]).await
    }
}

api_tests!(
    bootstrap_makes_an_organization_owner_and_working_key_then_reuses_them,
    bootstrap_reuses_an_existing_user_and_refuses_bad_input,
    list_orgs_and_list_api_keys_never_show_a_key,
    create_api_key_narrows_a_key_to_its_scopes,
    the_first_start_says_how_to_bootstrap with &[("RUST_LOG", "info")],
    on_port_0_the_public_url_names_the_port_chosen,
    a_public_url_set_is_kept_on_port_0 with &[("PUBLIC_URL", "https://compliance.example.test/")],
);

use serde_json::json;

use crate::client::Auth;
use crate::harness::TestServer;

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_else(|| panic!("no string at {pointer} in {value}"))
}

async fn bootstrap(server: &TestServer, org: &str, email: &str, name: &str) -> Value {
    server.admin().run(&["bootstrap", "--org", org, "--email", email, "--name", name]).await
}

async fn bootstrap_makes_an_organization_owner_and_working_key_then_reuses_them(server: &TestServer) {
    let first = bootstrap(server, "Acme Corp", "Ada@Acme.test", "Ada").await;
    assert_eq!(first["created"], json!({"organization": true, "user": true, "member": true, "apiKey": true}));
    assert!(text(&first, "/organization/id").starts_with("org_"), "{first}");
    assert_eq!(first["organization"]["slug"], "acme-corp");
    assert_eq!(first["user"]["email"], "ada@acme.test", "the address is normalised: {first}");
    assert_eq!(first["member"]["role"], "owner");
    assert_eq!(first["member"]["userId"], first["user"]["id"]);
    assert_eq!(first["member"]["organizationId"], first["organization"]["id"]);
    assert_eq!(first["apiKey"]["organizationId"], first["organization"]["id"]);
    assert_eq!(first["apiKey"]["createdBy"], first["user"]["id"]);
    assert_eq!(first["apiKey"]["name"], "bootstrap");

    // The printed key works at once, as the organization's owner.
    let org_id = text(&first, "/organization/id");
    let api = server.client(Auth::ApiKey(text(&first, "/apiKey/key").to_owned()), Some(org_id));
    let risks = api.get("/v1/risks").await.ok(200);
    assert_eq!(risks["data"], json!([]));
    api.post("/v1/risks", json!({"title": "t", "description": "d", "category": "other"})).await.ok(201);

    // Each record it made wrote its entry, by the operator.
    let log = api.get("/v1/audit-log").await.ok(200);
    let mut actions: Vec<&str> =
        log["data"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    actions.reverse();
    assert_eq!(actions, ["organization.created", "member.created", "apiKey.created", "risk.created"], "{log}");
    assert_eq!(log["data"][3]["actor"], json!({"type": "system", "id": "admin"}));

    // Again: the same organization, user and membership, and a second, different key.
    let second = bootstrap(server, "Acme Corp", "ada@acme.test", "Someone Else").await;
    assert_eq!(second["created"], json!({"organization": false, "user": false, "member": false, "apiKey": true}));
    for record in ["organization", "user", "member"] {
        assert_eq!(second[record]["id"], first[record]["id"], "{record}: {second}");
    }
    assert_eq!(second["user"]["name"], "Ada", "an existing user is kept as it is");
    assert_ne!(second["apiKey"]["id"], first["apiKey"]["id"]);
    assert_ne!(second["apiKey"]["key"], first["apiKey"]["key"]);
    let again = server.client(Auth::ApiKey(text(&second, "/apiKey/key").to_owned()), Some(org_id));
    assert_eq!(again.get("/v1/risks").await.ok(200)["data"].as_array().unwrap().len(), 1);
    let listed = server.admin().run(&["list-orgs"]).await;
    assert_eq!(listed["organizations"].as_array().unwrap().len(), 1, "no second organization: {listed}");
    let people = api.get("/v1/people").await.ok(200);
    assert_eq!(people["data"].as_array().unwrap().len(), 1, "no second membership: {people}");
}

async fn bootstrap_reuses_an_existing_user_and_refuses_bad_input(server: &TestServer) {
    let user = server.admin().create_user("grace@acme.test", "Grace").await;
    let made = server
        .admin()
        .run(&[
            "bootstrap",
            "--org",
            "Hopper",
            "--slug",
            "hop",
            "--email",
            "grace@acme.test",
            "--name",
            "G",
            "--key-name",
            "ci",
        ])
        .await;
    assert_eq!(made["created"], json!({"organization": true, "user": false, "member": true, "apiKey": true}));
    assert_eq!(made["user"]["id"], user["id"]);
    assert_eq!(made["organization"]["slug"], "hop");
    assert_eq!(made["apiKey"]["name"], "ci");
    // The slug finds the organization whatever name is given.
    let other = bootstrap(server, "Renamed", "linus@acme.test", "Linus").await;
    assert_ne!(other["organization"]["id"], made["organization"]["id"]);
    let same = server
        .admin()
        .run(&["bootstrap", "--org", "Anything", "--slug", "hop", "--email", "linus@acme.test", "--name", "L"])
        .await;
    assert_eq!(same["organization"]["id"], made["organization"]["id"]);
    assert_eq!(same["created"], json!({"organization": false, "user": false, "member": true, "apiKey": true}));

    let refused: [(&[&str], &str); 4] = [
        (&["--org", "Acme", "--email", "not-an-address", "--name", "A"], "email"),
        (&["--org", "", "--email", "a@acme.test", "--name", "A"], "name"),
        (&["--org", "Acme", "--email", "b@acme.test", "--name", ""], "name"),
        (&["--org", "Acme", "--email", "c@acme.test", "--name", "C", "--key-name", ""], "key-name"),
    ];
    for (args, names) in refused {
        let mut all = vec!["bootstrap"];
        all.extend(args);
        let err = server.admin().try_run(&all).await.expect_err("bad input must fail");
        assert!(err.contains(names), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line on stderr: {err}");
    }
    // A namesake organization is not joined by accident: its derived slug is taken, and the
    // user is not its member, so only an explicit --slug may make them its owner.
    let namesake = server
        .admin()
        .try_run(&["bootstrap", "--org", "Renamed", "--email", "eve@acme.test", "--name", "Eve"])
        .await
        .expect_err("another customer of the same name must not join the first");
    assert!(namesake.contains("--slug renamed"), "{namesake}");
    let listed = server.admin().run(&["list-orgs"]).await;
    assert_eq!(listed["organizations"].as_array().unwrap().len(), 2, "a refused run makes nothing: {listed}");
    let users =
        server.admin().try_run(&["bootstrap", "--org", "Eve's", "--email", "eve@acme.test", "--name", "Eve"]).await;
    assert_eq!(users.expect("a new organization")["created"]["user"], true, "the refused run made no user");
}

async fn list_orgs_and_list_api_keys_never_show_a_key(server: &TestServer) {
    let empty = server.admin().run(&["list-orgs"]).await;
    assert_eq!(empty, json!({"organizations": []}));
    let first = bootstrap(server, "First", "one@acme.test", "One").await;
    let second = bootstrap(server, "Second", "two@acme.test", "Two").await;
    let listed = server.admin().run(&["list-orgs"]).await;
    let ids: Vec<&Value> = listed["organizations"].as_array().unwrap().iter().map(|o| &o["id"]).collect();
    assert_eq!(ids, [&first["organization"]["id"], &second["organization"]["id"]], "oldest first: {listed}");
    assert_eq!(listed["organizations"][0]["slug"], "first");

    let org = text(&first, "/organization/id");
    let user = text(&first, "/user/id");
    let extra = server.admin().create_api_key(org, user).await;
    server.admin().revoke_api_key(text(&extra, "/id")).await;
    let keys = server.admin().run(&["list-api-keys", "--org", org]).await;
    let listed = keys["apiKeys"].as_array().unwrap();
    let ids: Vec<&Value> = listed.iter().map(|k| &k["id"]).collect();
    assert_eq!(ids, [&extra["id"], &first["apiKey"]["id"]], "newest first, the revoked one too: {keys}");
    assert!(listed[0]["revokedAt"].is_string(), "{keys}");
    assert!(listed[1]["revokedAt"].is_null(), "{keys}");
    assert_eq!(listed[1]["createdBy"], user);
    assert!(listed[1]["scopes"].as_array().is_some_and(|s| !s.is_empty()), "{keys}");
    let printed = keys.to_string();
    for secret in [text(&first, "/apiKey/key"), text(&extra, "/key")] {
        assert!(!printed.contains(secret), "a key's text is never listed: {printed}");
    }
    assert!(!printed.contains("keyHash") && !printed.contains("\"key\""), "{printed}");
    // The other organization's keys are not in this list.
    assert!(!printed.contains(text(&second, "/apiKey/id")), "{printed}");

    let err = server.admin().try_run(&["list-api-keys", "--org", "org_00000000000000000000000000000000"]).await;
    assert!(err.expect_err("an unknown organization").contains("not found"));
    let err = server.admin().try_run(&["list-api-keys", "--org", "nope"]).await;
    assert!(err.expect_err("a malformed id").contains("--org"));
}

async fn create_api_key_narrows_a_key_to_its_scopes(server: &TestServer) {
    let first = bootstrap(server, "Acme", "ada@acme.test", "Ada").await;
    let (org, user) = (text(&first, "/organization/id"), text(&first, "/user/id"));
    let args = ["create-api-key", "--org", org, "--created-by", user, "--scopes", "risks:read,vendors:read"];
    let narrow = server.admin().run(&args).await;
    assert_eq!(narrow["scopes"], json!(["risks:read", "vendors:read"]), "{narrow}");
    let client = server.client(Auth::ApiKey(text(&narrow, "/key").to_owned()), None);
    assert_eq!(client.get("/v1/risks").await.status, 200);
    let refused = client.post("/v1/risks", json!({"title": "T", "description": "D", "category": "technology"})).await;
    assert_eq!(refused.status, 403, "a read-only key may not write: {}", refused.body);
    assert_eq!(client.get("/v1/policies").await.status, 403, "a scope it was not given");

    for (scopes, named) in [("risks:read,nope", "unknown scope `nope`"), ("", "--scopes")] {
        let args = ["create-api-key", "--org", org, "--created-by", user, "--scopes", scopes];
        let err = server.admin().try_run(&args).await.expect_err("bad scopes");
        assert!(err.contains(named), "{err}");
    }
    // Nothing half-made: the refused runs issued no key.
    let keys = server.admin().run(&["list-api-keys", "--org", org]).await;
    assert_eq!(keys["apiKeys"].as_array().unwrap().len(), 2, "{keys}");
}

async fn the_first_start_says_how_to_bootstrap(server: &TestServer) {
    server.stderr_containing("listening on").await;
    assert!(server.stderr().contains("admin bootstrap --org"), "{}", server.stderr());
    bootstrap(server, "Acme", "ada@acme.test", "Ada").await;
    // A start with an organization says nothing of it.
    let sibling = server.start_sibling(&[("RUST_LOG".to_owned(), "info".to_owned())]).await;
    let said = crate::harness::poll_until(crate::harness::PATIENCE, || async {
        let stderr = sibling.stderr();
        stderr.contains("listening on").then_some(stderr)
    })
    .await
    .expect("the second server logs `listening on`");
    assert!(!said.contains("admin bootstrap"), "{said}");
}

/// The OAuth callback GitHub's app must be registered with, as the providers list shows it.
async fn github_callback(server: &TestServer) -> String {
    let tenant = server.tenant().await;
    let providers = tenant.api.get("/v1/integrations/providers").await.ok(200);
    let github = providers["data"].as_array().unwrap().iter().find(|p| p["slug"] == "github").unwrap().clone();
    text(&github, "/oauth/callbackUrl").to_owned()
}

// The harness starts every server with LISTEN_ADDR=127.0.0.1:0 and no PUBLIC_URL.
async fn on_port_0_the_public_url_names_the_port_chosen(server: &TestServer) {
    let port = server.base_url().rsplit(':').next().unwrap().parse::<u16>().expect("a port in the base URL");
    assert_ne!(port, 0, "the `listening on` line names the port the system chose");
    assert_eq!(github_callback(server).await, format!("{}/v1/integrations/oauth/callback", server.base_url()));
}

async fn a_public_url_set_is_kept_on_port_0(server: &TestServer) {
    assert_eq!(github_callback(server).await, "https://compliance.example.test/v1/integrations/oauth/callback");
}
