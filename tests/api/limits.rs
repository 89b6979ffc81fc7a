//! Rate limits, timeouts and size limits (docs/operations.md, "Rate limiting" and "Timeouts and
//! limits").

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::{api_key, get_from, get_with};
use crate::harness::{Backend, Env, PATIENCE, TestServer, poll_every, random_hex};

api_tests!(
    a_caller_over_its_burst_gets_429_with_retry_after with SMALL_BURST,
    probes_and_metrics_are_never_limited with SMALL_BURST,
    invented_keys_share_their_address_bucket with SMALL_BURST,
    anonymous_ipv6_callers_share_their_64s_bucket with BEHIND_A_PROXY,
    long_urls_and_headers_are_refused_and_the_server_keeps_serving,
    a_slow_request_head_times_out with SLOW_HEAD,
    oversized_bodies_are_refused_without_being_read with LINGER,
);

const SMALL_BURST: Env = &[("RATE_LIMIT_PER_SECOND", "1"), ("RATE_LIMIT_BURST", "3")];
/// [`SMALL_BURST`], with the client address taken from the proxy's `X-Forwarded-For`.
const BEHIND_A_PROXY: Env =
    &[("RATE_LIMIT_PER_SECOND", "1"), ("RATE_LIMIT_BURST", "3"), ("RATE_LIMIT_TRUST_FORWARDED", "true")];
const SLOW_HEAD: Env = &[("HTTP_REQUEST_TIMEOUT_SECONDS", "1")];
/// After refusing a body, the server reads on for at most this long (a lingering close), then closes.
const LINGER: Env = &[("HTTP_DISCONNECT_TIMEOUT_SECONDS", "1")];

/// Asserts a 429 problem with an integer `Retry-After` of at least 1; returns the seconds.
async fn assert_limited(response: reqwest::Response) -> u64 {
    assert_eq!(response.status(), 429, "{response:?}");
    let retry_after = response.headers().get("retry-after").expect("Retry-After").to_str().unwrap().to_owned();
    let seconds: u64 =
        retry_after.parse().unwrap_or_else(|_| panic!("Retry-After `{retry_after}` is not whole seconds"));
    assert!(seconds >= 1, "{seconds}");
    let id = response.headers().get("x-request-id").expect("X-Request-Id").to_str().unwrap().to_owned();
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("application/problem+json"), "{content_type}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "/problems/rate-limited", "{body}");
    assert_eq!(body["status"], 429, "{body}");
    assert!(body["title"].is_string() && body["detail"].is_string(), "{body}");
    assert_eq!(body["requestId"], id.as_str(), "{body}");
    seconds
}

/// The address tests connect from, and another one: a client address whose bucket nothing else
/// drew on.
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
const OTHER_ADDRESS: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// Sends GET /v1/risks with `headers` from the address `from` until it is answered 429 (checked
/// with [`assert_limited`]): the burst of 3 passes at once, and a token a second may come back
/// meanwhile on a slow machine. Returns the statuses before the 429 and the `Retry-After` seconds.
async fn until_limited(base: &str, from: IpAddr, headers: &[(&str, &str)]) -> (Vec<u16>, u64) {
    let mut passed = Vec::new();
    for _ in 0..20 {
        let response = get_from(from, base, "/v1/risks", headers).await;
        if response.status() == 429 {
            assert!(passed.len() >= 3, "limited after {passed:?}, within the burst of 3");
            return (passed, assert_limited(response).await);
        }
        passed.push(response.status().as_u16());
    }
    panic!("20 requests passed a limit of 1/s with a burst of 3: {passed:?}");
}

/// An IPv6 client holds a whole /64 and can send each request from a fresh address of it: an
/// anonymous caller (sign-in attempts, invented keys) is charged to its /64's bucket.
async fn anonymous_ipv6_callers_share_their_64s_bucket(server: &TestServer) {
    let base = server.base_url();
    let mut passed = Vec::new();
    let mut limited = None;
    for n in 1..=20 {
        let address = format!("2001:db8:42:7::{n:x}");
        let response = get_from(LOOPBACK, base, "/v1/risks", &[("X-Forwarded-For", &address)]).await;
        if response.status() == 429 {
            limited = Some(response);
            break;
        }
        passed.push(response.status().as_u16());
    }
    let limited = limited.unwrap_or_else(|| panic!("20 addresses of one /64 each passed: {passed:?}"));
    assert!(passed.len() >= 3 && passed.iter().all(|status| *status == 401), "{passed:?}");
    assert_limited(limited).await;
    // The next /64 has a bucket of its own.
    let other = get_from(LOOPBACK, base, "/v1/risks", &[("X-Forwarded-For", "2001:db8:42:8::1")]).await;
    assert_eq!(other.status(), 401);
}

async fn a_caller_over_its_burst_gets_429_with_retry_after(server: &TestServer) {
    let base = server.base_url();
    let tenant = server.tenant().await;
    let first = api_key(server, &tenant.org_id, &tenant.owner.id).await;
    let second = api_key(server, &tenant.org_id, &tenant.owner.id).await;
    let (passed, wait) = until_limited(base, LOOPBACK, &[("X-API-Key", &first)]).await;
    assert!(passed.iter().all(|status| *status == 200), "{passed:?}");
    assert_eq!(wait, 1, "one token a second");

    // Another key and a session have buckets of their own, once they have worked once (their first
    // request is charged to the client address).
    assert_eq!(get_with(base, "/v1/risks", &[("X-API-Key", &second)]).await.status(), 200);
    let session = server.admin().create_session(&tenant.owner.id).await;
    let cookie = format!("session_token={}", session["token"].as_str().unwrap());
    let (passed, _) =
        until_limited(base, LOOPBACK, &[("Cookie", &cookie), ("X-Organization-Id", &tenant.org_id)]).await;
    assert!(passed.iter().all(|status| *status == 200), "{passed:?}");
    // Anonymous callers are charged to their address: from one whose bucket those three first
    // requests did not draw on, the whole burst passes, then 429.
    let (passed, _) = until_limited(base, OTHER_ADDRESS, &[]).await;
    assert!(passed.iter().all(|status| *status == 401), "{passed:?}");
    // An unknown key is charged to the address too: limited before any lookup (at most a token
    // that came back meanwhile on a slow machine lets one through).
    let invented = format!("cpk_{}", random_hex(16));
    let mut response = get_from(OTHER_ADDRESS, base, "/v1/risks", &[("X-API-Key", &invented)]).await;
    if response.status() == 401 {
        response = get_from(OTHER_ADDRESS, base, "/v1/risks", &[("X-API-Key", &invented)]).await;
    }
    assert_limited(response).await;

    // The key's bucket refills: refused until then (each refusal counted below), then served.
    let refused_meanwhile = AtomicUsize::new(0);
    let (key, refused) = (first.as_str(), &refused_meanwhile);
    let refilled = poll_every(Duration::from_millis(100), PATIENCE, || async move {
        let status = get_with(base, "/v1/risks", &[("X-API-Key", key)]).await.status();
        if status == 429 {
            refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(status)
    });
    assert_eq!(refilled.await, Some(reqwest::StatusCode::OK), "the bucket did not refill within {PATIENCE:?}");

    let metrics = get_with(base, "/metrics", &[]).await.text().await.unwrap();
    let limited = 4 + refused_meanwhile.load(Ordering::Relaxed);
    let series = format!(r#"http_requests_total{{route="/v1/risks",method="GET",status="429"}} {limited}"#);
    assert!(metrics.contains(&format!("{series}\n")), "{metrics}");
    let stderr = server.stop().await;
    for secret in [&first, &second, &invented] {
        assert!(!stderr.contains(secret.as_str()), "a key is in the log:\n{stderr}");
    }
}

/// A client sending a new invented key with every request gets no bucket per key: they all share
/// its address's bucket, and are refused after the burst without a lookup.
async fn invented_keys_share_their_address_bucket(server: &TestServer) {
    let base = server.base_url();
    let tenant = server.tenant().await;
    let key = api_key(server, &tenant.org_id, &tenant.owner.id).await;
    // A working key: its first request is charged to the address, later ones to its own bucket.
    assert_eq!(get_with(base, "/v1/risks", &[("X-API-Key", &key)]).await.status(), 200);
    let mut statuses = Vec::new();
    let limited = loop {
        let invented = format!("cpk_{}", random_hex(16));
        let response = get_with(base, "/v1/risks", &[("X-API-Key", &invented)]).await;
        if response.status() == 429 {
            break response;
        }
        statuses.push(response.status().as_u16());
        assert!(statuses.len() < 10, "10 invented keys passed a burst of 3: {statuses:?}");
    };
    assert!(statuses.iter().all(|status| *status == 401), "{statuses:?}");
    assert_limited(limited).await;
    // Session cookies likewise.
    let cookie = format!("session_token=cps_{}", random_hex(16));
    assert_limited(get_with(base, "/v1/risks", &[("Cookie", &cookie)]).await).await;
    // The working key keeps its own bucket.
    assert_eq!(get_with(base, "/v1/risks", &[("X-API-Key", &key)]).await.status(), 200);
}

async fn probes_and_metrics_are_never_limited(server: &TestServer) {
    let base = server.base_url();
    until_limited(base, LOOPBACK, &[]).await;
    for _ in 0..10 {
        for path in ["/health", "/ready", "/metrics"] {
            assert_eq!(get_with(base, path, &[]).await.status(), 200, "{path}");
        }
    }
}

/// How [`exchange`] sends a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// The head declares the length.
    Declared,
    /// 64 KiB chunks.
    Chunked,
}

/// Sends `head` and then `body_bytes` bytes of body (`0` bytes: none) from another thread, reads
/// the response head, and closes the connection. Returns the response head, whether the server
/// closed the connection (the writer failed) within 5 s of answering, and how long the answer took.
async fn exchange(server: &TestServer, head: String, body_bytes: usize) -> (String, bool, Duration) {
    exchange_framed(server, head, body_bytes, Framing::Declared).await
}

async fn exchange_framed(
    server: &TestServer,
    head: String,
    body_bytes: usize,
    framing: Framing,
) -> (String, bool, Duration) {
    let address = server.base_url().trim_start_matches("http://").to_owned();
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut stream = TcpStream::connect(&address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let sent = Arc::new(AtomicUsize::new(0));
        let mut writer = stream.try_clone().unwrap();
        let counter = Arc::clone(&sent);
        let data = vec![b'x'; 64 * 1024];
        let chunk = match framing {
            Framing::Declared => data,
            Framing::Chunked => [format!("{:x}\r\n", data.len()).into_bytes(), data, b"\r\n".to_vec()].concat(),
        };
        let payload = 64 * 1024;
        let body_writer = std::thread::spawn(move || {
            if writer.write_all(head.as_bytes()).is_err() {
                return;
            }
            let mut left = body_bytes;
            while left > 0 {
                let n = if framing == Framing::Chunked { chunk.len() } else { left.min(chunk.len()) };
                if writer.write_all(&chunk[..n]).is_err() {
                    return;
                }
                counter.fetch_add(payload.min(left), Ordering::Relaxed);
                left = left.saturating_sub(payload);
            }
        });
        let mut response = Vec::new();
        let mut buf = [0u8; 4096];
        while !response.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => response.extend_from_slice(&buf[..n]),
            }
        }
        let elapsed = started.elapsed();
        // The server either closes the connection (the writer fails) or reads on.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !body_writer.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let closed = body_writer.is_finished() && sent.load(Ordering::Relaxed) < body_bytes;
        let _ = stream.shutdown(Shutdown::Both);
        let _ = body_writer.join();
        (String::from_utf8_lossy(&response).into_owned(), closed, elapsed)
    })
    .await
    .unwrap()
}

fn status_of(response_head: &str) -> u16 {
    response_head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response_head:?}"))
}

async fn assert_still_serving(server: &TestServer) {
    assert_eq!(get_with(server.base_url(), "/health", &[]).await.status(), 200);
}

async fn long_urls_and_headers_are_refused_and_the_server_keeps_serving(server: &TestServer) {
    let base = server.base_url();
    // Over our limits (8 KiB of URL, 32 KiB of headers): problem bodies.
    let long_query = format!("/health?pad={}", "a".repeat(9 * 1024));
    let response = get_with(base, &long_query, &[]).await;
    assert_eq!(response.status(), 414);
    assert!(response.headers().contains_key("x-request-id"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "/problems/uri-too-long", "{body}");
    assert!(body["requestId"].is_string(), "{body}");
    let long_path = format!("/v1/risks/{}", "r".repeat(9 * 1024));
    assert_eq!(get_with(base, &long_path, &[]).await.status(), 414);

    let pad = "p".repeat(40 * 1024);
    let response = get_with(base, "/health", &[("X-Pad", &pad)]).await;
    assert_eq!(response.status(), 431);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "/problems/headers-too-large", "{body}");
    assert_eq!(body["status"], 431, "{body}");
    let many: Vec<(String, String)> = (0..60).map(|i| (format!("X-Many-{i}"), "v".repeat(700))).collect();
    let mut request = reqwest::Client::new().get(format!("{base}/health"));
    for (name, value) in &many {
        request = request.header(name, value);
    }
    assert_eq!(request.send().await.unwrap().status(), 431);
    assert_still_serving(server).await;

    // Over actix's own limits (a 128 KiB head, or more than 96 headers): an empty 431, and the
    // connection is closed.
    let huge = format!("GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n", "h".repeat(200 * 1024));
    let (head, _, _) = exchange(server, huge, 0).await;
    assert_eq!(status_of(&head), 431, "{head}");
    let too_many: String = (0..120).map(|i| format!("X-H{i}: v\r\n")).collect();
    let (head, _, _) = exchange(server, format!("GET /health HTTP/1.1\r\nHost: x\r\n{too_many}\r\n"), 0).await;
    assert_eq!(status_of(&head), 431, "{head}");
    let huge_url = format!("GET /health?{} HTTP/1.1\r\nHost: x\r\n\r\n", "u".repeat(200 * 1024));
    let (head, _, _) = exchange(server, huge_url, 0).await;
    assert_eq!(status_of(&head), 431, "{head}");
    assert_still_serving(server).await;
}

async fn a_slow_request_head_times_out(server: &TestServer) {
    let (head, _, elapsed) = exchange(server, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ".into(), 0).await;
    assert_eq!(status_of(&head), 408, "{head}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_still_serving(server).await;
}

async fn oversized_bodies_are_refused_without_being_read(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = api_key(server, &tenant.org_id, &tenant.owner.id).await;
    let base = server.base_url();

    // A JSON route: over 1 MiB is 413, declared or not.
    let big = serde_json::json!({"title": "x".repeat(1024 * 1024 + 10)}).to_string();
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/risks"))
        .header("X-API-Key", &key)
        .header("Content-Type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "/problems/payload-too-large", "{body}");
    assert!(body["requestId"].is_string(), "{body}");

    // A terabyte: the server must close the connection long before.
    let declared = 1 << 40;
    let post = format!(
        "POST /v1/risks HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\n\
         Content-Length: {declared}\r\n\r\n"
    );
    let (head, closed, _) = exchange(server, post, declared).await;
    assert_eq!(status_of(&head), 413, "{head}");
    assert!(closed, "the server read on after refusing the body");

    let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "y".repeat(64 * 1024));
    let chunked: String = format!(
        "POST /v1/risks HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n{}",
        chunk.repeat(20)
    );
    let (head, _, _) = exchange(server, chunked, 0).await;
    assert_eq!(status_of(&head), 413, "{head}");

    // Routes that take no body answer without reading it: a declared length or endless chunks.
    for method in ["DELETE", "GET"] {
        let request = format!(
            "{method} /v1/risks/rsk_none HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n"
        );
        let (head, closed, _) = exchange_framed(server, request, declared, Framing::Chunked).await;
        let status = status_of(&head);
        assert!((400..500).contains(&status), "{method}: {head}");
        assert!(closed, "{method}: the server read on after answering");
    }
    for method in ["DELETE", "GET"] {
        let request = format!(
            "{method} /v1/risks/rsk_none HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nContent-Type: application/json\r\n\
             Content-Length: {declared}\r\n\r\n"
        );
        let (head, closed, _) = exchange(server, request, declared).await;
        let status = status_of(&head);
        assert!((400..500).contains(&status), "{method}: {head}");
        assert!(closed, "{method}: the server read on after answering");
    }
    assert_still_serving(server).await;
    assert_eq!(get_with(base, "/v1/risks", &[("X-API-Key", &key)]).await.status(), 200);
}

/// Two instances with `REDIS_URL` count a caller's requests in one bucket.
#[tokio::test]
async fn redis_buckets_are_shared_by_instances() {
    // Its own Redis database, so that no other test's buckets mix with these.
    let env: Vec<(String, String)> =
        [("REDIS_URL", "redis://127.0.0.1:6379/7"), ("RATE_LIMIT_PER_SECOND", "1"), ("RATE_LIMIT_BURST", "4")]
            .iter()
            .map(|&(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
    let sibling_env = env.clone();
    crate::harness::run_with_owned_env(Backend::Postgres, env, |server| async move {
        let sibling = server.start_sibling(&sibling_env).await;
        let tenant = server.tenant().await;
        let key = api_key(&server, &tenant.org_id, &tenant.owner.id).await;
        let headers = [("X-API-Key", key.as_str())];
        // Alternating between the instances: with a bucket each, 8 requests would pass.
        let mut passed = 0;
        let limited = loop {
            let base = if passed % 2 == 0 { server.base_url() } else { sibling.base_url() };
            let response = get_with(base, "/v1/risks", &headers).await;
            if response.status() == 429 {
                break response;
            }
            assert_eq!(response.status(), 200);
            passed += 1;
            assert!(passed < 8, "8 requests passed: the instances do not share the bucket");
        };
        assert!(passed >= 4, "limited after {passed}, within the burst of 4");
        assert_limited(limited).await;
        // Another key is not affected.
        let other = api_key(&server, &tenant.org_id, &tenant.owner.id).await;
        assert_eq!(get_with(sibling.base_url(), "/v1/risks", &[("X-API-Key", &other)]).await.status(), 200);
    })
    .await;
}
