//! The retry policy against a scripted server: which answers are retried, after how long, and how
//! many requests the server sees. (tests/api/typed_client.rs retries against the real service.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant, SystemTime};

use compliance_client::types::{NewRisk, RiskCategory};
use compliance_client::{Auth, Client, ListRisksQuery, RetryPolicy};
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn problem(status: u16, kind: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "application/problem+json")
        .insert_header("x-request-id", "req-1")
        .set_body_raw(
            json!({"type": format!("/problems/{kind}"), "title": kind, "status": status, "detail": "try later",
                   "requestId": "req-1"})
            .to_string(),
            "application/problem+json",
        )
}

fn empty_list() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({"data": [], "count": 0, "authType": "api-key",
        "authenticatedUser": {"id": "usr_x", "email": "a@example.test"}}))
}

fn client(server: &MockServer, policy: RetryPolicy) -> Client {
    Client::builder(&server.uri(), Auth::api_key("cpk_test")).retry(policy).build().unwrap()
}

/// Answers the first `failures` requests with `failure`, then `success`.
async fn script(server: &MockServer, verb: &str, failures: u64, failure: ResponseTemplate, success: ResponseTemplate) {
    Mock::given(method(verb))
        .and(header("x-api-key", "cpk_test"))
        .respond_with(failure)
        .up_to_n_times(failures)
        .mount(server)
        .await;
    Mock::given(method(verb)).respond_with(success).mount(server).await;
}

#[tokio::test]
async fn a_get_is_retried_after_503_waiting_its_retry_after_http_date() {
    let server = MockServer::start().await;
    // an HTTP-date has whole seconds: two seconds ahead is at least one second of wait
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    script(&server, "GET", 1, problem(503, "unavailable").insert_header("retry-after", date.as_str()), empty_list())
        .await;
    let started = Instant::now();
    let list = client(&server, RetryPolicy::default()).list_risks(&ListRisksQuery::default()).await.unwrap();
    assert_eq!(list.count, 0);
    assert!(started.elapsed() >= Duration::from_secs(1), "retried after {:?}", started.elapsed());
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn attempts_are_bounded_and_the_last_problem_is_returned() {
    let server = MockServer::start().await;
    script(&server, "GET", 10, problem(429, "rate-limited").insert_header("retry-after", "0"), empty_list()).await;
    let policy = RetryPolicy { max_attempts: 3, ..RetryPolicy::default() };
    let error = client(&server, policy).list_risks(&ListRisksQuery::default()).await.unwrap_err();
    let problem = error.api().expect("a problem");
    assert_eq!((problem.status, problem.kind(), problem.retry_after), (429, "rate-limited", Some(Duration::ZERO)));
    assert_eq!(problem.request_id.as_deref(), Some("req-1"));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_post_is_retried_after_429_but_not_after_503() {
    let new = NewRisk::new(RiskCategory::Technology, "d".into(), "t".into());
    let created = ResponseTemplate::new(201).set_body_json(json!({"id": "rsk_x"}));

    let limited = MockServer::start().await;
    script(&limited, "POST", 1, problem(429, "rate-limited").insert_header("retry-after", "0"), created.clone()).await;
    // the created body is not a whole risk: decoding fails, after the retry reached the handler
    let error = client(&limited, RetryPolicy::default()).create_risk(&new).await.unwrap_err();
    assert!(matches!(error, compliance_client::Error::Decode { status: 201, .. }), "{error:?}");
    assert_eq!(limited.received_requests().await.unwrap().len(), 2, "the 429 was retried");

    let unavailable = MockServer::start().await;
    script(&unavailable, "POST", 1, problem(503, "unavailable").insert_header("retry-after", "0"), created).await;
    let error = client(&unavailable, RetryPolicy::default()).create_risk(&new).await.unwrap_err();
    assert_eq!(error.status(), Some(503));
    assert_eq!(
        unavailable.received_requests().await.unwrap().len(),
        1,
        "a create that may have committed is not repeated"
    );
}

#[tokio::test]
async fn a_retry_after_beyond_max_wait_ends_the_call_at_once() {
    let server = MockServer::start().await;
    script(&server, "GET", 1, problem(503, "unavailable").insert_header("retry-after", "3600"), empty_list()).await;
    let error = client(&server, RetryPolicy::default()).list_risks(&ListRisksQuery::default()).await.unwrap_err();
    assert_eq!(error.api().unwrap().retry_after, Some(Duration::from_secs(3600)));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn an_error_that_is_not_a_problem_becomes_about_blank() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/risks"))
        .respond_with(ResponseTemplate::new(502).set_body_raw("<html>bad gateway</html>", "text/html"))
        .mount(&server)
        .await;
    let error = client(&server, RetryPolicy::never()).list_risks(&ListRisksQuery::default()).await.unwrap_err();
    let problem = error.api().unwrap();
    assert_eq!(
        (problem.status, problem.problem_type.as_str(), problem.title.as_str()),
        (502, "about:blank", "Bad Gateway")
    );
    assert_eq!(problem.detail, "<html>bad gateway</html>");
}
