//! Request ids, the access log and `/metrics` (docs/operations.md, "Request ids and logs" and
//! "Metrics").

use serde_json::Value;

use crate::client::{fresh_api_key, get};
use crate::harness::{Backend, Env, PATIENCE, TestServer, poll_until};

api_tests!(
    a_request_id_is_echoed_generated_or_replaced,
    errors_carry_the_request_id,
    the_access_log_names_the_route_not_the_path with ACCESS_LOG,
    metrics_count_requests_by_route_and_show_the_pools,
    the_pool_size_is_configurable with POOL_OF_SEVEN,
);

const POOL_OF_SEVEN: Env = &[("DATABASE_POOL_SIZE", "7")];

/// Access lines are logged at INFO (the harness sets `RUST_LOG=warn`).
const ACCESS_LOG: Env = &[("RUST_LOG", "info")];

const REQUEST_ID: &str = "x-request-id";

fn request_id(response: &reqwest::Response) -> String {
    let id = response.headers().get(REQUEST_ID).unwrap_or_else(|| panic!("no X-Request-Id in {response:?}"));
    id.to_str().unwrap().to_owned()
}

fn is_generated(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
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
    let key = fresh_api_key(server).await;
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

/// The WARN and ERROR lines the server logged after its stderr was `from` bytes long (see
/// [`TestServer::stderr`]), once one of them says `message` (or, if none does within
/// [`PATIENCE`], then): whatever span each was logged in, or none.
async fn warnings_since(server: &TestServer, from: usize, message: &str) -> Vec<Value> {
    let warnings = || {
        let stderr = server.stderr();
        let since = String::from_utf8_lossy(stderr.as_bytes().get(from..).unwrap_or_default()).into_owned();
        since
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| line["level"] == "WARN" || line["level"] == "ERROR")
            .collect::<Vec<_>>()
    };
    // Lines reach the pipe a moment after they are written.
    let said = poll_until(PATIENCE, || {
        let lines = warnings();
        async move { lines.iter().any(|line| line["fields"]["message"] == message).then_some(lines) }
    });
    match said.await {
        Some(lines) => lines,
        None => warnings(),
    }
}

/// Whether `line` was logged in the span of the request with the id `id`: its current span or
/// one of the spans it is in.
fn logged_in_request(line: &Value, id: &str) -> bool {
    line["span"]["request_id"] == id
        || line["spans"].as_array().is_some_and(|spans| spans.iter().any(|span| span["request_id"] == id))
}

async fn the_access_log_names_the_route_not_the_path(server: &TestServer) {
    let key = fresh_api_key(server).await;
    let response = get(
        server,
        "/v1/risks/rsk_secretlookingid?code=oauth-code-must-not-be-logged",
        &[("X-API-Key", &key), (REQUEST_ID, "access-log-test")],
    )
    .await;
    assert_eq!(response.status(), 404);
    get(server, "/not/a/route/rsk_other", &[(REQUEST_ID, "access-log-unmatched")]).await;

    // The lines are written after the responses; wait for both to reach the pipe.
    let find = |id: &str| {
        log_lines(server).into_iter().find(|line| line["target"] == "access" && line["fields"]["request_id"] == id)
    };
    let both = poll_until(PATIENCE, || std::future::ready(find("access-log-test").zip(find("access-log-unmatched"))));
    let (line, unmatched) = both.await.unwrap_or_else(|| panic!("no access lines; stderr:\n{}", server.stderr()));
    assert_eq!(line["level"], "INFO", "{line}");
    let fields = &line["fields"];
    assert_eq!(fields["method"], "GET", "{line}");
    assert_eq!(fields["route"], "/v1/risks/{id}", "{line}");
    assert_eq!(fields["status"], 404, "{line}");
    assert!(fields["latency_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{line}");
    assert_eq!(unmatched["fields"]["route"], "unmatched", "{unmatched}");

    // That the other lines of a request carry its id is tested where a request logs a warning:
    // a_warning_during_a_request_carries_its_id, a_use_case_warning_carries_the_request_id.
    let stderr = server.stop().await;
    for secret in ["oauth-code-must-not-be-logged", "rsk_secretlookingid", "rsk_other", key.as_str()] {
        assert!(!stderr.contains(secret), "`{secret}` is in the log:\n{stderr}");
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
    let key = fresh_api_key(server).await;
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

/// `DATABASE_POOL_SIZE` sizes PostgreSQL's pool and SQLite's readers (the writer stays one).
async fn the_pool_size_is_configurable(server: &TestServer) {
    let text = metrics(server).await;
    let max = |pool: &str| sample(&text, &format!("db_pool_max_connections{{pool=\"{pool}\"}}"));
    match max("main") {
        Some(postgres) => assert_eq!(postgres, 7.0, "{text}"),
        None => assert_eq!((max("readers"), max("writer")), (Some(7.0), Some(1.0)), "{text}"),
    }
}

/// A warning logged while a request is served (the database is gone) carries the request's id,
/// and the 503 is counted. PostgreSQL only: the harness can take only its database away.
#[tokio::test]
async fn a_warning_during_a_request_carries_its_id() {
    crate::harness::run(Backend::Postgres, |server| async move {
        let key = fresh_api_key(&server).await;
        server.cut_database().await;
        let from = server.stderr().len();
        let response = get(&server, "/v1/risks", &[("X-API-Key", &key), (REQUEST_ID, "outage-request")]).await;
        assert_eq!(response.status(), 503);
        assert_eq!(request_id(&response), "outage-request");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["requestId"], "outage-request", "{body}");

        // Picked by what they say, not by their span: one logged outside the request's span is
        // looked at too. (Background tasks, such as the automation worker, warn about the outage
        // in no request: they are not picked.)
        let warnings = warnings_since(&server, from, "store unavailable").await;
        let unavailable: Vec<&Value> =
            warnings.iter().filter(|line| line["fields"]["message"] == "store unavailable").collect();
        assert!(!unavailable.is_empty(), "no `store unavailable` warning:\n{}", server.stderr());
        for line in unavailable {
            assert_eq!(line["level"], "WARN", "{line}");
            assert!(logged_in_request(line, "outage-request"), "without the request's id: {line}");
        }
        let text = metrics(&server).await;
        assert!(sample(&text, "store_unavailable_errors_total").is_some_and(|n| n >= 1.0), "{text}");
        assert!(sample(&text, r#"http_requests_total{route="/v1/risks",method="GET",status="503"}"#).is_some());
    })
    .await;
}

/// A warning logged by a use case, which runs as a task on another runtime than the request
/// (crates/http/src/state.rs), carries the request's id too; so does every other warning of the
/// request. Here authentication cannot record that the key was used (a trigger refuses the
/// write), which it logs and goes on. PostgreSQL only: the trigger is plpgsql.
#[tokio::test]
async fn a_use_case_warning_carries_the_request_id() {
    crate::harness::run(Backend::Postgres, |server| async move {
        let key = fresh_api_key(&server).await;
        server
            .execute_sql(
                "CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN RAISE EXCEPTION 'the test refuses this write'; END $$; \
                 CREATE TRIGGER refuse_write BEFORE UPDATE ON api_keys \
                 FOR EACH ROW EXECUTE FUNCTION refuse_write();",
            )
            .await;
        let from = server.stderr().len();
        let response = get(&server, "/v1/risks", &[("X-API-Key", &key), (REQUEST_ID, "use-case-warning")]).await;
        assert_eq!(response.status(), 200, "a failed `lastUsedAt` write must not turn the request away");
        assert_eq!(request_id(&response), "use-case-warning");

        // Every WARN and ERROR line since the request was sent, whatever its span: nothing else
        // runs meanwhile that could warn.
        let warnings = warnings_since(&server, from, "could not record API key use").await;
        assert!(
            warnings.iter().any(|line| line["fields"]["message"] == "could not record API key use"),
            "no warning about the refused write:\n{}",
            server.stderr()
        );
        for line in &warnings {
            assert!(logged_in_request(line, "use-case-warning"), "without the request's id: {line}");
        }
        assert!(!server.stop().await.contains(&key), "the key is in the log");
    })
    .await;
}
