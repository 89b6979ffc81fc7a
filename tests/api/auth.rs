//! Authentication: API keys, sessions, the organization header, and the open probes.

use crate::checks::{assert_timestamp, missing_id, str_of};
use crate::client::Auth;
use crate::harness::{TestServer, poll_until};

api_tests!(
    health_and_ready_need_no_credentials,
    no_credentials_is_401_problem,
    unknown_api_key_is_401,
    revoked_api_key_is_401,
    unknown_session_is_401,
    expired_credentials_are_401,
    session_without_organization_header_is_400,
    session_for_an_organization_the_user_is_not_in_is_403,
    api_key_with_organization_header,
    api_key_of_a_deactivated_creator_is_401,
    api_key_wins_over_a_session_cookie,
);

/// Every authenticated list route, each of which answers 200 to its owner.
const ROUTES: [&str; 6] = ["/v1/context", "/v1/policies", "/v1/people", "/v1/vendors", "/v1/risks", "/v1/organization"];

async fn health_and_ready_need_no_credentials(server: &TestServer) {
    for path in ["/health", "/ready"] {
        let response = server.anonymous().get(path).await;
        assert_eq!(response.status, 200, "GET {path}: {}", response.body);
    }
}

async fn no_credentials_is_401_problem(server: &TestServer) {
    let anonymous = server.anonymous();
    for path in ROUTES {
        anonymous.get(path).await.problem(401);
    }
    anonymous.post("/v1/risks", serde_json::json!({})).await.problem(401);
}

async fn unknown_api_key_is_401(server: &TestServer) {
    let tenant = server.tenant().await;
    for key in [missing_id("cpk_"), "not-a-key".to_owned(), String::new()] {
        let client = server.client(Auth::ApiKey(key), None);
        client.get("/v1/risks").await.problem(401);
        // Naming a real organization does not help a bad key.
        client.with_org(Some(&tenant.org_id)).get("/v1/risks").await.problem(401);
    }
}

async fn revoked_api_key_is_401(server: &TestServer) {
    let tenant = server.tenant().await;
    tenant.api.get("/v1/risks").await.ok(200);
    let revoked = server.admin().revoke_api_key(&tenant.api_key_id).await;
    assert_eq!(revoked["id"], tenant.api_key_id.as_str());
    assert_timestamp(&revoked["revokedAt"]);
    // The CLI is another process: the server stops accepting the key when its cached
    // authentication expires (AUTH_CACHE_SECONDS, 1 s in the tests). The bound is tight on
    // purpose: under the default of 5 s the key would still work.
    let within = std::time::Duration::from_secs(3);
    let refused = poll_until(within, || async { (tenant.api.get("/v1/risks").await.status != 200).then_some(()) });
    assert!(refused.await.is_some(), "the revoked key still works after {within:?}");
    tenant.api.get("/v1/risks").await.problem(401);
    // The owner's session is unaffected.
    tenant.session.get("/v1/risks").await.ok(200);
}

async fn unknown_session_is_401(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = server.client(Auth::Session(missing_id("cps_")), Some(&tenant.org_id));
    client.get("/v1/risks").await.problem(401);
}

/// Expired credentials are 401. An API key made with `--expires-in-days 0` has expired when it is
/// made. A session made with `--ttl-hours 0` likewise would have; the CLI refuses that TTL today
/// (the shortest session lasts an hour, too long to wait for), so that case runs only if the CLI
/// accepts it, and otherwise is skipped with a note on stderr.
async fn expired_credentials_are_401(server: &TestServer) {
    let tenant = server.tenant().await;
    let (org, owner) = (tenant.org_id.as_str(), tenant.owner.id.as_str());
    for (days, status) in [("0", 401), ("1", 200)] {
        let args = ["create-api-key", "--org", org, "--created-by", owner, "--expires-in-days", days];
        let key = server.admin().run(&args).await;
        assert_timestamp(&key["expiresAt"]);
        let client = server.client(Auth::ApiKey(str_of(&key, "key").to_owned()), None);
        let response = client.get("/v1/risks").await;
        assert_eq!(response.status, status, "key expiring in {days} days: {}", response.body);
    }

    let args = ["create-session", "--user", owner, "--ttl-hours", "0"];
    match server.admin().try_run(&args).await {
        Ok(session) => {
            let client = server.client(Auth::Session(str_of(&session, "token").to_owned()), Some(org));
            client.get("/v1/risks").await.problem(401);
        }
        Err(err) => eprintln!("expired session case skipped: the CLI refuses --ttl-hours 0 ({err})"),
    }
}

async fn session_without_organization_header_is_400(server: &TestServer) {
    let tenant = server.tenant().await;
    let response = tenant.session.with_org(None).get("/v1/risks").await;
    response.problem(400);
}

async fn session_for_an_organization_the_user_is_not_in_is_403(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    for path in ROUTES {
        tenant.session.with_org(Some(&other.org_id)).get(path).await.problem(403);
    }
    // An organization that does not exist is answered the same way.
    let missing = missing_id("org_");
    tenant.session.with_org(Some(&missing)).get("/v1/risks").await.problem(403);
    // And the session still works for its own organization.
    tenant.session.get("/v1/risks").await.ok(200);
}

async fn api_key_with_organization_header(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let own = tenant.api.with_org(Some(&tenant.org_id)).get("/v1/organization").await.ok(200);
    assert_eq!(own["id"], tenant.org_id.as_str());
    for path in ROUTES {
        tenant.api.with_org(Some(&other.org_id)).get(path).await.problem(403);
    }
}

/// docs/api.md: a key works only while its creator is an active member of its organization.
async fn api_key_of_a_deactivated_creator_is_401(server: &TestServer) {
    let tenant = server.tenant().await;
    let (user, member) = server.member(&tenant, "admin").await;
    let key = server.admin().create_api_key(&tenant.org_id, &user.id).await;
    let client = server.client(Auth::ApiKey(str_of(&key, "key").to_owned()), None);
    client.get("/v1/risks").await.ok(200);
    let path = format!("/v1/people/{}", str_of(&member, "id"));
    tenant.api.patch(&path, serde_json::json!({"isActive": false})).await.ok(200);
    client.get("/v1/risks").await.problem(401);
}

/// docs/api.md: when both an API key and a session cookie are sent, the API key wins.
async fn api_key_wins_over_a_session_cookie(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
    let session = server.admin().create_session(&other.owner.id).await;
    let auth = Auth::Both { key: str_of(&key, "key").to_owned(), token: str_of(&session, "token").to_owned() };
    // No X-Organization-Id, which a session would need: the key decides.
    let list = server.client(auth.clone(), None).get("/v1/risks").await.ok(200);
    assert_eq!(list["authType"], "api-key");
    assert_eq!(list["authenticatedUser"]["id"], tenant.owner.id.as_str());
    // The session's organization is not the key's: 403, not the session's data.
    server.client(auth, Some(&other.org_id)).get("/v1/risks").await.problem(403);
}
