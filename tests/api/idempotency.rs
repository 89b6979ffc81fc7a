//! `Idempotency-Key` (docs/api.md, "Idempotency keys"): a retried write is applied once, its
//! answer replayed byte for byte; a reused key, a request still running, and a change whose
//! answer was lost are refused with problems; keys are per caller (within an organization) and expire.

use serde_json::{Value, json};

use crate::client::{Client, Response};
use crate::harness::{PATIENCE, TestServer, poll_until, random_hex};

api_tests!(
    a_create_retried_after_the_client_hung_up_creates_one_record,
    concurrent_identical_requests_create_one_record,
    the_same_key_for_another_request_is_422,
    a_replay_is_byte_identical_and_marked,
    keys_are_per_organization,
    a_malformed_key_is_400_naming_the_header,
    expired_keys_are_pruned_by_the_job with &[("IDEMPOTENCY_PRUNE_MILLIS", "100"), ("RUST_LOG", "info")],
    a_change_applied_without_a_kept_answer_is_never_run_again,
    a_request_in_flight_blocks_its_repeat_until_its_lease_runs_out,
    an_answer_that_shows_a_secret_once_is_not_kept,
    a_bulk_request_with_a_key_is_applied_once,
    creating_an_organization_runs_as_if_no_key_was_sent,
    a_keyed_body_is_read_up_to_its_routes_own_limit,
    a_key_is_its_callers_own_and_a_refusal_is_not_kept,
);

const HEADER: &str = "Idempotency-Key";
const REPLAYED: &str = "Idempotent-Replayed";

fn risk(title: &str) -> Value {
    json!({"title": title, "description": "Unencrypted disks.", "category": "technology"})
}

fn fresh_key() -> String {
    format!("key-{}", random_hex(8))
}

async fn risk_count(client: &Client) -> u64 {
    client.get("/v1/risks").await.ok(200)["count"].as_u64().unwrap()
}

fn replayed(response: &Response) -> bool {
    response.header(REPLAYED).as_deref() == Some("true")
}

/// A problem of `status` whose `type` is `/problems/{kind}`.
#[track_caller]
fn problem(response: Response, status: u16, kind: &str) -> Value {
    assert_eq!(response.status, status, "{}: {}", response.request(), response.body);
    assert!(response.content_type.starts_with("application/problem+json"), "{}", response.content_type);
    assert_eq!(response.body["type"], format!("/problems/{kind}"), "{}", response.body);
    assert!(response.body["detail"].is_string(), "{}", response.body);
    response.body
}

async fn a_create_retried_after_the_client_hung_up_creates_one_record(server: &TestServer) {
    use tokio::io::AsyncWriteExt;
    let tenant = server.tenant().await;
    let key = fresh_key();
    let body = risk("Sent once, then the line dropped").to_string();
    let head = format!(
        "POST /v1/risks HTTP/1.1\r\nHost: test\r\nX-API-Key: {}\r\n{HEADER}: {key}\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n",
        tenant.api.api_key().unwrap(),
        body.len()
    );
    let addr = server.base_url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
    // The client gives up right after sending: it never reads an answer.
    stream.shutdown().await.unwrap();
    drop(stream);

    // Its retry: until the first request is done, a repeat is refused as in flight (409).
    let retrying = tenant.api.with_header(HEADER, &key);
    let retried = poll_until(PATIENCE, || async {
        let response = retrying.raw(reqwest::Method::POST, "/v1/risks", Some("application/json"), &body).await;
        (response.status != 409).then_some(response)
    })
    .await
    .expect("the retry was still refused as in flight after the deadline");
    assert_eq!(retried.status, 201, "{}", retried.body);
    // Whichever ran, the other did not: once the risk exists, every repeat is a replay of it.
    let again = retrying.raw(reqwest::Method::POST, "/v1/risks", Some("application/json"), &body).await;
    assert_eq!(again.status, 201);
    assert!(replayed(&again), "a repeat after the answer was kept is a replay");
    assert_eq!(again.bytes, retried.bytes);
    assert_eq!(risk_count(&tenant.api).await, 1, "the change was applied once");
    let listed = tenant.api.get("/v1/risks").await.ok(200);
    assert_eq!(listed["data"][0]["id"], retried.body["id"]);
}

async fn concurrent_identical_requests_create_one_record(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = tenant.api.with_header(HEADER, &fresh_key());
    let mut requests = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let client = client.clone();
        requests.spawn(async move { client.post("/v1/risks", risk("Raced")).await });
    }
    let answers = requests.join_all().await;
    let created: Vec<&Response> = answers.iter().filter(|a| a.status == 201).collect();
    for answer in &answers {
        assert!(matches!(answer.status, 201 | 409), "{}: {}", answer.status, answer.body);
        if answer.status == 409 {
            assert_eq!(answer.body["type"], "/problems/idempotency-in-flight", "{}", answer.body);
            assert!(answer.retry_after.is_some(), "a 409 in flight says when to retry");
        }
    }
    assert!(!created.is_empty(), "one of them ran");
    assert_eq!(created.iter().filter(|a| !replayed(a)).count(), 1, "exactly one ran, the others replayed");
    assert!(created.iter().all(|a| a.bytes == created[0].bytes), "every 201 is the same answer");
    assert_eq!(risk_count(&tenant.api).await, 1);
}

async fn the_same_key_for_another_request_is_422(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = fresh_key();
    let first = tenant.api.with_header(HEADER, &key).post("/v1/risks", risk("First")).await.ok(201);
    let other_body = tenant.api.with_header(HEADER, &key).post("/v1/risks", risk("Second")).await;
    let refused = problem(other_body, 422, "idempotency-key-reused");
    assert!(refused["detail"].as_str().unwrap().contains("Idempotency-Key"), "{refused}");
    assert_eq!(risk_count(&tenant.api).await, 1);
    // The key is scoped to its route: the same key on another operation is a new request.
    let path = format!("/v1/risks/{}", first["id"].as_str().unwrap());
    let patched = tenant.api.with_header(HEADER, &key).patch(&path, json!({"title": "Renamed"})).await;
    assert!(!replayed(&patched));
    assert_eq!(patched.ok(200)["title"], "Renamed");
}

async fn a_replay_is_byte_identical_and_marked(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = tenant.api.with_header(HEADER, &fresh_key());
    let first = client.post("/v1/risks", risk("Replayed")).await;
    assert_eq!(first.status, 201);
    assert!(first.header(REPLAYED).is_none(), "the first answer is no replay");
    let repeat = client.post("/v1/risks", risk("Replayed")).await;
    assert_eq!(repeat.status, 201);
    assert!(replayed(&repeat));
    assert_eq!(repeat.bytes, first.bytes, "byte for byte");
    assert_eq!(repeat.content_type, first.content_type);
    assert!(first.header("ETag").is_some(), "a create answers its tag");
    assert_eq!(repeat.header("ETag"), first.header("ETag"), "the replay keeps the first answer's ETag");
    assert_ne!(repeat.header("X-Request-Id"), first.header("X-Request-Id"), "the repeat is a request of its own");

    // A 4xx is an outcome too: replayed, the first request's id in its body included.
    let invalid = tenant.api.with_header(HEADER, &fresh_key());
    let refused = invalid.post("/v1/risks", json!({"title": "no category"})).await;
    assert_eq!(refused.status, 400);
    let again = invalid.post("/v1/risks", json!({"title": "no category"})).await;
    assert!(replayed(&again));
    assert_eq!(again.bytes, refused.bytes);
    assert_eq!(again.body["requestId"], refused.header("X-Request-Id").unwrap().as_str());

    // A DELETE retried after it was applied answers what it answered, not 404.
    let path = format!("/v1/risks/{}", first.body["id"].as_str().unwrap());
    let deleting = tenant.api.with_header(HEADER, &fresh_key());
    let deleted = deleting.delete(&path).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let repeat = deleting.delete(&path).await;
    assert_eq!((repeat.status, replayed(&repeat)), (200, true));
    assert_eq!(repeat.bytes, deleted.bytes);
    assert_eq!(tenant.api.delete(&path).await.status, 404, "without the key, a delete of a deleted risk is 404");
}

async fn keys_are_per_organization(server: &TestServer) {
    let (a, b) = (server.tenant().await, server.tenant().await);
    let key = fresh_key();
    let in_a = a.api.with_header(HEADER, &key).post("/v1/risks", risk("Same")).await;
    let in_b = b.api.with_header(HEADER, &key).post("/v1/risks", risk("Same")).await;
    assert_eq!((in_a.status, in_b.status), (201, 201));
    assert!(!replayed(&in_b), "B's key is B's own: nothing of A's is replayed");
    assert_ne!(in_a.body["id"], in_b.body["id"]);
    assert_eq!(in_b.body["organizationId"], b.org_id.as_str());
    assert_eq!((risk_count(&a.api).await, risk_count(&b.api).await), (1, 1));
}

async fn a_malformed_key_is_400_naming_the_header(server: &TestServer) {
    let tenant = server.tenant().await;
    for bad in ["", "has space", "tab\there", &"k".repeat(256)] {
        let response = tenant.api.with_header(HEADER, bad).post("/v1/risks", risk("Never")).await;
        let body = response.invalid(HEADER);
        assert!(body["detail"].as_str().unwrap().starts_with(HEADER), "{body}");
    }
    // 255 visible characters are a key.
    let longest: String = (0..255_u8).map(|i| char::from(b'!' + i % 94)).collect();
    tenant.api.with_header(HEADER, &longest).post("/v1/risks", risk("Kept")).await.ok(201);
    assert_eq!(risk_count(&tenant.api).await, 1, "a refused request changed nothing");
}

async fn expired_keys_are_pruned_by_the_job(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = fresh_key();
    let client = tenant.api.with_header(HEADER, &key);
    client.post("/v1/risks", risk("Old")).await.ok(201);
    // 24 hours pass (IDEMPOTENCY_TTL_HOURS): behind the server's back.
    server.execute_sql("UPDATE idempotency_keys SET expires_at = '2000-01-01 00:00:00'").await;
    server.stderr_containing("expired idempotency keys deleted").await;
    // Forgotten: the same key with another body is a new request, not a reuse.
    let fresh = client.post("/v1/risks", risk("New")).await;
    assert!(!replayed(&fresh));
    assert_eq!(fresh.ok(201)["title"], "New");
}

/// The process dying after the change committed and before its answer was stored leaves the
/// reservation applied (marked in the change's own transaction) with no answer and its lease
/// running out. It cannot be killed at that instant from outside, so the test takes the stored
/// answer away and ends the lease in SQL, which leaves exactly that state.
async fn a_change_applied_without_a_kept_answer_is_never_run_again(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = tenant.api.with_header(HEADER, &fresh_key());
    let created = client.post("/v1/risks", risk("Applied once")).await.ok(201);
    server
        .execute_sql(
            "UPDATE idempotency_keys SET response_status = NULL, response_body = NULL, response_content_type = \
             NULL, response_location = NULL, locked_until = '2000-01-01 00:00:00'",
        )
        .await;
    let repeat = client.post("/v1/risks", risk("Applied once")).await;
    let refused = problem(repeat, 409, "idempotency-response-not-kept");
    let detail = refused["detail"].as_str().unwrap();
    assert!(detail.contains(&format!("risk {}", created["id"].as_str().unwrap())), "names the risk: {detail}");
    assert_eq!(risk_count(&tenant.api).await, 1, "never applied twice");
}

/// A reservation whose change never committed (the first attempt died before its commit) blocks
/// a repeat while its lease runs, then lets the retry run. Made in SQL from a kept one: no
/// answer, not applied, a lease in the future, then in the past.
async fn a_request_in_flight_blocks_its_repeat_until_its_lease_runs_out(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = tenant.api.with_header(HEADER, &fresh_key());
    client.post("/v1/risks", risk("Died before commit")).await.ok(201);
    let unanswered = "UPDATE idempotency_keys SET response_status = NULL, response_body = NULL, applied_at = NULL, \
                      resource_type = NULL, resource_id = NULL, locked_until =";
    server.execute_sql(&format!("{unanswered} '2999-01-01 00:00:00'")).await;
    let waiting = client.post("/v1/risks", risk("Died before commit")).await;
    assert!(waiting.retry_after.as_deref().is_some_and(|s| s.parse::<u64>().is_ok()), "{:?}", waiting.retry_after);
    problem(waiting, 409, "idempotency-in-flight");
    server.execute_sql(&format!("{unanswered} '2000-01-01 00:00:00'")).await;
    let retried = client.post("/v1/risks", risk("Died before commit")).await;
    assert!(!replayed(&retried), "the retry ran");
    assert_eq!(retried.ok(201)["title"], "Died before commit");
    let kept = client.post("/v1/risks", risk("Died before commit")).await;
    assert!(replayed(&kept));
}

async fn an_answer_that_shows_a_secret_once_is_not_kept(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = tenant.session.with_header(HEADER, &fresh_key());
    let created = client.post("/v1/api-keys", json!({"name": "ci", "scopes": ["*"]})).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let secret = created.body["key"].as_str().unwrap().to_owned();
    let repeat = client.post("/v1/api-keys", json!({"name": "ci", "scopes": ["*"]})).await;
    let raw = String::from_utf8_lossy(&repeat.bytes).into_owned();
    let refused = problem(repeat, 409, "idempotency-response-not-kept");
    assert!(!raw.contains(&secret), "the key is shown once: {raw}");
    let id = created.body["id"].as_str().unwrap();
    assert!(refused["detail"].as_str().unwrap().contains(id), "names the key made: {refused}");
    let keys = tenant.session.get("/v1/api-keys").await.ok(200);
    assert_eq!(keys["count"], 2, "the tenant's own key and the one made once: {keys}");
}

async fn a_bulk_request_with_a_key_is_applied_once(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = tenant.api.with_header(HEADER, &fresh_key());
    let body =
        json!({"operations": [{"op": "create", "body": risk("Bulk one")}, {"op": "create", "body": risk("Bulk two")}]});
    let first = client.post("/v1/risks/bulk", body.clone()).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let repeat = client.post("/v1/risks/bulk", body).await;
    assert!(replayed(&repeat), "{}", repeat.body);
    assert_eq!(repeat.bytes, first.bytes);
    assert_eq!(risk_count(&tenant.api).await, 2, "both operations applied once");
    // Each operation wrote its own entry, once.
    let entries = tenant.api.get("/v1/audit-log?limit=10").await.ok(200);
    let created = entries["data"].as_array().unwrap().iter().filter(|e| e["action"] == "risk.created").count();
    assert_eq!(created, 2, "{entries}");
}

async fn creating_an_organization_runs_as_if_no_key_was_sent(server: &TestServer) {
    let tenant = server.tenant().await;
    // A session naming its organization: the new organization is not that one, so the key is
    // not kept (docs/api.md); the slug makes the create safe to retry.
    let client = tenant.session.with_header(HEADER, &fresh_key());
    let slug = crate::tenant::unique("idem");
    let body = json!({"name": "Made once", "slug": slug});
    let first = client.post("/v1/organizations", body.clone()).await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert!(!replayed(&first));
    let repeat = client.post("/v1/organizations", body).await;
    assert_eq!(repeat.status, 409, "the slug is taken: {}", repeat.body);
    assert!(!replayed(&repeat), "not a replay: the route ran again");
}

async fn a_keyed_body_is_read_up_to_its_routes_own_limit(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = tenant.api.with_header(HEADER, &fresh_key());
    // 2 MiB to a 1 MiB route: refused before the key is reserved (the layer used to read up to the
    // largest limit of any route, ~33 MiB, then reserve the key and keep the route's 413).
    let oversized = risk(&"x".repeat(2 * 1024 * 1024)).to_string();
    let refused = client.raw(reqwest::Method::POST, "/v1/risks", Some("application/json"), &oversized).await;
    let refused = problem(refused, 413, "payload-too-large");
    assert!(refused["detail"].as_str().unwrap().contains(&(1024 * 1024).to_string()), "{refused}");
    // So the corrected request runs under the same key.
    let corrected = client.post("/v1/risks", risk("Fits")).await;
    assert_eq!((corrected.status, replayed(&corrected)), (201, false), "{}", corrected.body);

    // A route with a larger limit still takes its own size with a key: 2 MiB of OSCAL import is
    // read, and answered by the route (a malformed catalog, not a too-large body).
    let importing = tenant.api.with_header(HEADER, &fresh_key());
    let catalog = json!({"catalog": {"padding": "x".repeat(2 * 1024 * 1024)}}).to_string();
    let imported =
        importing.raw(reqwest::Method::POST, "/v1/frameworks/import", Some("application/json"), &catalog).await;
    assert_ne!(imported.status, 413, "{}", imported.body);
    assert!(imported.status < 500, "{}", imported.body);
}

async fn a_key_is_its_callers_own_and_a_refusal_is_not_kept(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = fresh_key();
    // Another member sends the key first (the squat): each caller's key is their own.
    let (admin, member) = server.member(&tenant, "admin").await;
    let admin_session = server.session(&admin.id, Some(&tenant.org_id)).await;
    admin_session.with_header(HEADER, &key).post("/v1/risks", risk("The admin's")).await.ok(201);
    for owner in [&tenant.api, &tenant.session] {
        let mine = owner.with_header(HEADER, &key).post("/v1/risks", risk("The owner's")).await;
        assert_eq!((mine.status, replayed(&mine)), (201, false), "{}", mine.body);
    }
    assert_eq!(risk_count(&tenant.api).await, 3);

    // A refused request is not kept: once the caller may, the same request runs under its key.
    let member_id = member["id"].as_str().unwrap();
    tenant.session.patch(&format!("/v1/people/{member_id}"), json!({"role": "auditor"})).await.ok(200);
    let refused_key = fresh_key();
    let as_admin = admin_session.with_header(HEADER, &refused_key);
    problem(as_admin.post("/v1/risks", risk("Later")).await, 403, "forbidden");
    tenant.session.patch(&format!("/v1/people/{member_id}"), json!({"role": "admin"})).await.ok(200);
    let allowed = as_admin.post("/v1/risks", risk("Later")).await;
    assert_eq!((allowed.status, replayed(&allowed)), (201, false), "{}", allowed.body);
}
