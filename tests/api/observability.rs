//! Request ids, the access log and `/metrics` (docs/operations.md, "Request ids and logs" and
//! "Metrics").

use serde_json::Value;

use crate::harness::{Backend, Env, TestServer};

api_tests!(
    a_request_id_is_echoed_generated_or_replaced,
    errors_carry_the_request_id,
    the_access_log_names_the_route_not_the_path with ACCESS_LOG,
    metrics_count_requests_by_route_and_show_the_pools,
);

/// Access lines are logged at INFO (the harness sets `RUST_LOG=warn`).
const ACCESS_LOG: Env = &[("RUST_LOG", "info")];

const REQUEST_ID: &str = "x-request-id";

async fn get(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(format!("{}{path}", server.base_url()));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap_or_else(|err| panic!("GET {path}: {err}"))
}

fn request_id(response: &reqwest::Response) -> String {
    let id = response.headers().get(REQUEST_ID).unwrap_or_else(|| panic!("no X-Request-Id in {response:?}"));
    id.to_str().unwrap().to_owned()
}

fn is_generated(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A fresh API key of a fresh organization.
async fn api_key(server: &TestServer) -> String {
    let tenant = server.tenant().await;
    let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
    key["key"].as_str().unwrap().to_owned()
}

async fn a_request_id_is_echoed_generated_or_replaced(server: &TestServer) {
    let echoed = get(server, "/health", &[(REQUEST_ID, "client-id_1.2")]).await;
    assert_eq!(echoed.status(), 200);
    assert_eq!(request_id(&echoed), "client-id_1.2");
    let longest = "a".repeat(128);
    assert_eq!(request_id(&get(server, "/health", &[(REQUEST_ID, &longest)]).await), longest);

    let first = request_id(&get(server, "/health", &[]).await);
    let second = request_id(&get(server, "/health", &[]).await);
    assert!(is_generated(&first) && is_generated(&second), "{first} / {second}");
    assert_ne!(first, second);

    for bad in ["has space", "slash/inside", "quote\"d", &"a".repeat(129), "{json}"] {
        let id = request_id(&get(server, "/health", &[(REQUEST_ID, bad)]).await);
        assert!(is_generated(&id), "`{bad}` was answered with {id}");
    }
}

async fn errors_carry_the_request_id(server: &TestServer) {
    // 404 of an unmatched path, 405 of a known one, 401 and a 404 from a route.
    let key = api_key(server).await;
    let http = reqwest::Client::new();
    let base = server.base_url();
    let requests = [
        (http.get(format!("{base}/no/such/route")), 404),
        (http.delete(format!("{base}/health")), 405),
        (http.get(format!("{base}/v1/risks")), 401),
        (http.get(format!("{base}/v1/risks/rsk_unknown")).header("X-API-Key", &key), 404),
    ];
    for (index, (request, status)) in requests.into_iter().enumerate() {
        let sent = format!("errors-{index}");
        let response = request.header(REQUEST_ID, &sent).send().await.unwrap();
        assert_eq!(response.status(), status);
        assert_eq!(request_id(&response), sent);
        let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("application/problem+json"), "{content_type}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["requestId"], sent.as_str(), "{body}");
        assert_eq!(body["status"], status, "{body}");
    }
    // A generated id is in the body too.
    let response = get(server, "/nowhere", &[]).await;
    let id = request_id(&response);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["requestId"], id.as_str());
}

/// The JSON log lines of the server so far.
fn log_lines(server: &TestServer) -> Vec<Value> {
    server.stderr().lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

async fn the_access_log_names_the_route_not_the_path(server: &TestServer) {
    let key = api_key(server).await;
    let response = get(
        server,
        "/v1/risks/rsk_secretlookingid?code=oauth-code-must-not-be-logged",
        &[("X-API-Key", &key), (REQUEST_ID, "access-log-test")],
    )
    .await;
    assert_eq!(response.status(), 404);
    get(server, "/not/a/route/rsk_other", &[(REQUEST_ID, "access-log-unmatched")]).await;

    // The line is written after the response; give it a moment to reach the pipe.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let find = |id: &str| {
        log_lines(server).into_iter().find(|line| line["target"] == "access" && line["fields"]["request_id"] == id)
    };
    while find("access-log-unmatched").is_none() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let line = find("access-log-test").unwrap_or_else(|| panic!("no access line; stderr:\n{}", server.stderr()));
    assert_eq!(line["level"], "INFO", "{line}");
    let fields = &line["fields"];
    assert_eq!(fields["method"], "GET", "{line}");
    assert_eq!(fields["route"], "/v1/risks/{id}", "{line}");
    assert_eq!(fields["status"], 404, "{line}");
    assert!(fields["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{line}");
    let unmatched = find("access-log-unmatched").unwrap();
    assert_eq!(unmatched["fields"]["route"], "unmatched", "{unmatched}");

    // Every line logged while serving the request carries its id (the authentication ran in its span).
    let stderr = server.stderr();
    for secret in ["oauth-code-must-not-be-logged", "rsk_secretlookingid", "rsk_other", key.as_str()] {
        assert!(!stderr.contains(secret), "`{secret}` is in the log:\n{stderr}");
    }
    for line in log_lines(server) {
        let in_request = line["spans"].as_array().is_some_and(|spans| spans.iter().any(|s| s["name"] == "request"));
        if in_request {
            assert!(line["span"]["request_id"].is_string() || line["spans"][0]["request_id"].is_string(), "{line}");
        }
    }
}

/// The value of one sample line, e.g. `http_requests_total{route="/health",method="GET",status="200"}`.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn metrics(server: &TestServer) -> String {
    let response = get(server, "/metrics", &[]).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    response.text().await.unwrap()
}

async fn metrics_count_requests_by_route_and_show_the_pools(server: &TestServer) {
    const HEALTH: &str = r#"http_requests_total{route="/health",method="GET",status="200"}"#;
    let before = sample(&metrics(server).await, HEALTH).unwrap_or(0.0);
    for _ in 0..3 {
        assert_eq!(get(server, "/health", &[]).await.status(), 200);
    }
    let key = api_key(server).await;
    assert_eq!(get(server, "/v1/risks/rsk_notthere", &[("X-API-Key", &key)]).await.status(), 404);
    assert_eq!(get(server, "/secret-path-abc", &[]).await.status(), 404);

    let text = metrics(server).await;
    assert_eq!(sample(&text, HEALTH), Some(before + 3.0), "{text}");
    let risk = r#"route="/v1/risks/{id}",method="GET",status="404""#;
    assert_eq!(sample(&text, &format!("http_requests_total{{{risk}}}")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &format!("http_request_duration_seconds_count{{{risk}}}")), Some(1.0), "{text}");
    assert_eq!(sample(&text, &format!("http_request_duration_seconds_bucket{{{risk},le=\"+Inf\"}}")), Some(1.0));
    assert!(sample(&text, &format!("http_request_duration_seconds_sum{{{risk}}}")).is_some(), "{text}");
    assert!(
        sample(&text, r#"http_requests_total{route="unmatched",method="GET",status="404"}"#).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    for raw in ["rsk_notthere", "secret-path-abc", key.as_str()] {
        assert!(!text.contains(raw), "`{raw}` is a label:\n{text}");
    }
    assert!(text.contains("# TYPE http_request_duration_seconds histogram"), "{text}");

    // The pools: PostgreSQL has one, SQLite a writer and readers.
    let pools: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("db_pool_max_connections{pool=\""))
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(pools == ["main"] || pools == ["writer", "readers"], "{pools:?} in\n{text}");
    for pool in pools {
        for gauge in
            ["db_pool_connections", "db_pool_connections_idle", "db_pool_connections_in_use", "db_pool_waiting"]
        {
            assert!(sample(&text, &format!("{gauge}{{pool=\"{pool}\"}}")).is_some(), "{gauge} of {pool}:\n{text}");
        }
        assert!(sample(&text, &format!("db_pool_max_connections{{pool=\"{pool}\"}}")).is_some_and(|n| n >= 1.0));
    }
    assert!(sample(&text, "store_unavailable_errors_total").is_some(), "{text}");
}

/// A warning logged while a request is served (the database is gone) carries the request's id,
/// and the 503 is counted. PostgreSQL only: the harness can take only its database away.
#[tokio::test]
async fn a_warning_during_a_request_carries_its_id() {
    crate::harness::run(Backend::Postgres, |server| async move {
        let key = api_key(&server).await;
        server.cut_database().await;
        let response = get(&server, "/v1/risks", &[("X-API-Key", &key), (REQUEST_ID, "outage-request")]).await;
        assert_eq!(response.status(), 503);
        assert_eq!(request_id(&response), "outage-request");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["requestId"], "outage-request", "{body}");

        let warning = log_lines(&server)
            .into_iter()
            .find(|line| line["level"] == "WARN" && line["span"]["request_id"] == "outage-request");
        assert!(warning.is_some(), "no warning in the request's span:\n{}", server.stderr());
        let text = metrics(&server).await;
        assert!(sample(&text, "store_unavailable_errors_total").is_some_and(|n| n >= 1.0), "{text}");
        assert!(sample(&text, r#"http_requests_total{route="/v1/risks",method="GET",status="503"}"#).is_some());
    })
    .await;
}
