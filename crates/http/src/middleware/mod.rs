//! What every request goes through before its route: a request id, size limits, the rate limit,
//! metrics and the access log.
//!
//! Wrap the whole application, default service included, with
//! `App::new().app_data(web::Data::new(operations)).wrap(from_fn(compliance_http::middleware::guard))`.

mod hold;
pub(crate) mod idempotency;
mod limiter;
mod metrics;
mod patterns;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, ResponseError, web};
use compliance_ports::{PoolMetrics, RateDecision, RateLimiter};
use tracing::Instrument;

pub use idempotency::{IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER, idempotency};
pub(crate) use metrics::{Metrics, count_store_unavailable};

use crate::ApiError;

/// The header that carries a request's id, in both directions.
pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");
/// The longest request id accepted from a client.
const REQUEST_ID_MAX: usize = 128;
/// The route label of a request no route matches.
const UNMATCHED: &str = "unmatched";
/// Paths that are never rate limited: probes and scrapers must always get through.
pub(crate) const EXEMPT: [&str; 3] = ["/health", "/ready", "/metrics"];
/// A failing rate limiter is reported at most this often.
const WARN_EVERY_SECONDS: u64 = 10;

/// Limits of a request's head that this service enforces (actix refuses heads over 128 KiB itself).
#[derive(Debug, Clone, Copy)]
pub struct HeadLimits {
    /// Longest path and query, in bytes: 414 over.
    pub max_url_bytes: usize,
    /// Most bytes of all header names and values together: 431 over.
    pub max_header_bytes: usize,
}

impl Default for HeadLimits {
    fn default() -> Self {
        Self { max_url_bytes: 8 * 1024, max_header_bytes: 32 * 1024 }
    }
}

/// The state of [`guard`]: metrics, the pools to report, the rate limiter and the head limits.
pub struct Operations {
    metrics: Metrics,
    pools: Option<Arc<dyn PoolMetrics>>,
    limiter: Option<Arc<dyn RateLimiter>>,
    /// Credentials seen to work, charged to their own bucket; any other request to its address's.
    known: limiter::KnownCredentials,
    /// Key anonymous callers on `Forwarded` / `X-Forwarded-For` instead of the peer address.
    trust_forwarded: bool,
    head: HeadLimits,
    /// When (seconds since start) a failing rate limiter was last reported.
    last_warning: AtomicU64,
    started: Instant,
    routes: patterns::RoutePatterns,
}

impl Operations {
    pub fn new(head: HeadLimits) -> Self {
        Self {
            metrics: Metrics::default(),
            pools: None,
            limiter: None,
            known: limiter::KnownCredentials::default(),
            trust_forwarded: false,
            head,
            last_warning: AtomicU64::new(0),
            started: Instant::now(),
            routes: patterns::RoutePatterns::new(crate::route_table().iter().map(|(_, path)| path.as_str())),
        }
    }

    /// Reports these pools in `/metrics`.
    #[must_use]
    pub fn with_pools(mut self, pools: Arc<dyn PoolMetrics>) -> Self {
        self.pools = Some(pools);
        self
    }

    /// Limits every caller's request rate with `limiter`; `trust_forwarded` keys anonymous callers
    /// on the client address a reverse proxy reports instead of the proxy's own.
    #[must_use]
    pub fn with_rate_limiter(mut self, limiter: Arc<dyn RateLimiter>, trust_forwarded: bool) -> Self {
        self.limiter = Some(limiter);
        self.trust_forwarded = trust_forwarded;
        self
    }

    /// The Prometheus text exposition of every metric.
    pub fn render_metrics(&self) -> String {
        let pools = self.pools.as_ref().map(|pools| pools.pool_status()).unwrap_or_default();
        self.metrics.render(&pools)
    }

    /// Refuses a request before its route runs: a head over the limits, or a caller over its rate.
    /// A request let through returns the digest of the credential it carries, if rate limits
    /// apply to it: its answer tells whether the credential is valid.
    async fn refusal(&self, req: &ServiceRequest) -> Result<Option<String>, ApiError> {
        let url = req.uri().path_and_query().map_or(0, |target| target.as_str().len());
        if url > self.head.max_url_bytes {
            return Err(ApiError::uri_too_long(self.head.max_url_bytes));
        }
        if header_bytes(req.headers()) > self.head.max_header_bytes {
            return Err(ApiError::headers_too_large(self.head.max_header_bytes));
        }
        let Some(limiter) = self.limiter.as_ref() else { return Ok(None) };
        // Exempt routes do not check credentials: their answers must not teach that one works.
        if EXEMPT.contains(&req.path()) {
            return Ok(None);
        }
        let caller = limiter::RateKeys::of(req, self.trust_forwarded);
        match limiter.take(caller.bucket(&self.known)).await {
            Ok(RateDecision::Allowed) => Ok(caller.credential),
            Ok(RateDecision::Limited { retry_after }) => Err(ApiError::rate_limited(retry_after)),
            Err(error) => {
                // Fail open: an unreachable limiter must not take the service down with it.
                self.metrics.count_limiter_error();
                let now = self.started.elapsed().as_secs() + WARN_EVERY_SECONDS;
                let last = self.last_warning.load(Ordering::Relaxed);
                if now >= last + WARN_EVERY_SECONDS
                    && self.last_warning.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
                {
                    tracing::warn!(reason = %error, "rate limiter unavailable: requests pass unlimited");
                }
                Ok(caller.credential)
            }
        }
    }

    /// Learns whether `credential` works: it does once the route's authentication accepted it;
    /// a 401 means it does not (any more). Other answers say nothing: public routes (and paths no
    /// route matches) never check credentials.
    fn learn(&self, credential: &str, authenticated: bool, status: u16) {
        if authenticated {
            self.known.learn(credential);
        } else if status == 401 {
            self.known.forget(credential);
        }
    }
}

/// The request's id, for the caller's audit entries (see `auth::Authenticated`).
#[derive(Debug, Clone)]
pub(crate) struct RequestId(pub String);

/// The middleware: gives the request an id (the client's `X-Request-Id` when well-formed), runs it
/// in a span carrying that id, refuses it when over a limit, and then answers the id in
/// `X-Request-Id` and in every problem body, counts it in the metrics and writes its access log line.
pub async fn guard(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(operations) = req.app_data::<web::Data<Operations>>().cloned() else {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    };
    let started = Instant::now();
    let id = request_id(req.headers());
    actix_web::HttpMessage::extensions_mut(&req).insert(RequestId(id.clone()));
    let method = req.method().clone();
    // The matched pattern (`/v1/risks/{id}`), never the raw path: no ids or secrets, bounded labels.
    let route = operations.routes.of(req.path());
    let held = hold::HeldPayload::hold(&mut req);
    // A write that succeeds queued audit entries: the sequencer seals them at once.
    let written = matches!(method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE)
        .then(|| req.app_data::<web::Data<crate::AppState>>().cloned())
        .flatten();
    // An error-level span is enabled whatever the log filter lets through, so even a warning
    // logged under `RUST_LOG=warn` carries the request id.
    let span = tracing::error_span!("request", request_id = %id);
    let mut credential = None;
    let outcome = async {
        match operations.refusal(&req).await {
            Err(refusal) => Ok(req.into_response(refusal.error_response())),
            Ok(tried) => {
                credential = tried;
                next.call(req).await.map(ServiceResponse::map_into_boxed_body)
            }
        }
    }
    .instrument(span)
    .await;
    let route = route.unwrap_or(UNMATCHED);
    let response = match outcome {
        Ok(response) => response,
        // Routes answer their errors themselves; an error here comes from a middleware. A
        // `ServiceResponse` needs the request, which is gone (routing needs it unshared, so no
        // clone can be kept), so the error carries its answer, with the request id like any other,
        // and actix sends that.
        Err(error) => {
            let status = error.as_response_error().status_code().as_u16();
            operations.metrics.observe(route, &method, status, started.elapsed());
            log_access(&id, &method, route, status, started.elapsed());
            let answer = decorated(error.error_response(), &id);
            return Err(actix_web::error::InternalError::from_response(error, answer).into());
        }
    };
    if let Some(credential) = credential {
        let authenticated =
            actix_web::HttpMessage::extensions(response.request()).contains::<crate::auth::CredentialAccepted>();
        operations.learn(&credential, authenticated, response.status().as_u16());
    }
    // A replayed answer is sent as it was first sent, its problem's `requestId` included.
    let mut response = match response.headers().contains_key(REPLAYED_HEADER) {
        true => response,
        false => with_request_id(response, &id),
    };
    if let Some(held) = held {
        response = response.map_body(|_, body| held.into_body(body));
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    let status = response.status().as_u16();
    if let Some(state) = written
        && status < 400
    {
        state.audit_written();
    }
    let elapsed = started.elapsed();
    operations.metrics.observe(route, &method, status, elapsed);
    log_access(&id, &method, route, status, elapsed);
    Ok(response)
}

/// One line per request; never the query string (OAuth callbacks carry codes) nor a header.
fn log_access(id: &str, method: &actix_web::http::Method, route: &str, status: u16, elapsed: Duration) {
    let latency_ms = (elapsed.as_secs_f64() * 1_000_000.0).round() / 1000.0;
    tracing::info!(target: "access", request_id = %id, method = %method, route = %route, status, latency_ms, "request");
}

/// The client's id when it is 1 to 128 characters of `A-Z a-z 0-9 . _ -`, else a new random one.
fn request_id(headers: &HeaderMap) -> String {
    let given = headers.get(&REQUEST_ID_HEADER).and_then(|value| value.to_str().ok()).filter(|id| {
        (1..=REQUEST_ID_MAX).contains(&id.len())
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    });
    match given {
        Some(id) => id.to_owned(),
        None => hex::encode(rand::random::<[u8; 16]>()),
    }
}

fn header_bytes(headers: &HeaderMap) -> usize {
    headers.iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum()
}

/// Adds `requestId` to a problem body; other responses pass untouched (and unread).
fn with_request_id(response: ServiceResponse<BoxBody>, id: &str) -> ServiceResponse<BoxBody> {
    let (request, response) = response.into_parts();
    ServiceResponse::new(request, problem_with_request_id(response, id))
}

/// An answer built outside a `ServiceResponse`, decorated as [`guard`] decorates every response:
/// `requestId` in a problem body, and the `X-Request-Id` header.
fn decorated(response: HttpResponse, id: &str) -> HttpResponse {
    let mut response = problem_with_request_id(response, id);
    if let Ok(value) = HeaderValue::from_str(id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

fn problem_with_request_id(response: HttpResponse, id: &str) -> HttpResponse {
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/problem+json"));
    if !is_problem {
        return response;
    }
    let (head, body) = response.into_parts();
    // Problem bodies are built in memory; a streamed one would not be read here.
    let bytes = match body.try_into_bytes() {
        Ok(bytes) => bytes,
        Err(body) => return head.set_body(body),
    };
    let bytes = match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&bytes) {
        Ok(mut problem) => {
            problem.insert("requestId".into(), id.into());
            serde_json::to_vec(&problem).map_or(bytes, Into::into)
        }
        Err(_) => bytes,
    };
    head.set_body(bytes).map_into_boxed_body()
}

/// `GET /metrics`: no authentication; keep it off the public internet (see docs/operations.md).
pub(crate) async fn metrics(operations: Option<web::Data<Operations>>) -> HttpResponse {
    match operations {
        Some(operations) => HttpResponse::Ok()
            .insert_header((header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8")))
            .body(operations.render_metrics()),
        None => ApiError::not_found("route").error_response(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn headers(id: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(REQUEST_ID_HEADER, HeaderValue::from_str(id).unwrap());
        headers
    }

    struct Broken;

    #[async_trait::async_trait]
    impl RateLimiter for Broken {
        async fn take(&self, _: &str) -> Result<RateDecision, compliance_ports::RepoError> {
            Err(compliance_ports::RepoError::Unavailable("Redis is away".into()))
        }
    }

    /// `burst` requests per key, then none: refills belong to the adapters' own tests. A double
    /// rather than a dev-dependency on the adapter crate, so that `http` depends on no adapter at
    /// all (`cargo tree`, which the dependency check reads, counts dev-dependencies).
    struct Buckets {
        burst: u32,
        taken: std::sync::Mutex<std::collections::HashMap<String, u32>>,
    }

    impl Buckets {
        fn new(burst: u32) -> Self {
            Self { burst, taken: std::sync::Mutex::default() }
        }
    }

    #[async_trait::async_trait]
    impl RateLimiter for Buckets {
        async fn take(&self, key: &str) -> Result<RateDecision, compliance_ports::RepoError> {
            let mut taken = self.taken.lock().unwrap();
            let taken = taken.entry(key.to_owned()).or_default();
            if *taken < self.burst {
                *taken += 1;
                Ok(RateDecision::Allowed)
            } else {
                Ok(RateDecision::Limited { retry_after: Duration::from_millis(1400) })
            }
        }
    }

    /// A ping route behind [`guard`], with `limiter`.
    macro_rules! app {
        ($limiter:expr) => {{
            let limiter: Arc<dyn RateLimiter> = $limiter;
            let operations = web::Data::new(Operations::new(HeadLimits::default()).with_rate_limiter(limiter, false));
            actix_web::test::init_service(
                actix_web::App::new()
                    .app_data(operations)
                    .route("/v1/ping", web::get().to(|| async { HttpResponse::Ok().finish() }))
                    .route("/metrics", web::get().to(metrics))
                    .wrap(actix_web::middleware::from_fn(guard)),
            )
            .await
        }};
    }

    fn ping() -> actix_web::test::TestRequest {
        actix_web::test::TestRequest::get().uri("/v1/ping").insert_header(("X-API-Key", "cpk_k"))
    }

    #[actix_web::test]
    async fn a_failing_limiter_lets_requests_through() {
        let app = app!(Arc::new(Broken));
        for _ in 0..3 {
            let response = actix_web::test::call_service(&app, ping().to_request()).await;
            assert_eq!(response.status(), 200);
        }
        let metrics = actix_web::test::TestRequest::get().uri("/metrics").to_request();
        let text = actix_web::test::call_and_read_body(&app, metrics).await;
        let text = String::from_utf8_lossy(&text);
        assert!(text.contains("rate_limiter_errors_total 3\n"), "{text}");
    }

    #[actix_web::test]
    async fn an_empty_bucket_answers_429_with_retry_after() {
        let app = app!(Arc::new(Buckets::new(1)));
        let anonymous = || actix_web::test::TestRequest::get().uri("/v1/ping").to_request();
        assert_eq!(actix_web::test::call_service(&app, anonymous()).await.status(), 200);
        let response = actix_web::test::call_service(&app, anonymous()).await;
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "2", "1.4 s: whole seconds, rounded up");
        let id = response.headers().get(&REQUEST_ID_HEADER).unwrap().to_str().unwrap().to_owned();
        let body: serde_json::Value = actix_web::test::read_body_json(response).await;
        assert_eq!(body["type"], "/problems/rate-limited");
        assert_eq!(body["requestId"], id.as_str());
    }

    #[actix_web::test]
    async fn invented_keys_share_the_address_bucket_and_valid_ones_get_their_own() {
        let limiter: Arc<dyn RateLimiter> = Arc::new(Buckets::new(2));
        let operations = web::Data::new(Operations::new(HeadLimits::default()).with_rate_limiter(limiter, false));
        let app = actix_web::test::init_service(
            actix_web::App::new()
                .app_data(operations)
                .route(
                    "/v1/ping",
                    // As the Authenticated extractor does: a good key marks the request authenticated.
                    web::get().to(|req: actix_web::HttpRequest| async move {
                        match req.headers().get("X-API-Key") {
                            Some(key) if key == "cpk_good" => {
                                actix_web::HttpMessage::extensions_mut(&req).insert(crate::auth::CredentialAccepted);
                                HttpResponse::Ok().finish()
                            }
                            _ => HttpResponse::Unauthorized().finish(),
                        }
                    }),
                )
                .wrap(actix_web::middleware::from_fn(guard)),
        )
        .await;
        let call = |key: &str| {
            actix_web::test::TestRequest::get()
                .uri("/v1/ping")
                .insert_header(("X-API-Key", key.to_owned()))
                .peer_addr("10.0.0.1:4000".parse().unwrap())
                .to_request()
        };
        // The good key's first request is charged to the address; then it has a bucket of its own.
        assert_eq!(actix_web::test::call_service(&app, call("cpk_good")).await.status(), 200);
        for _ in 0..2 {
            assert_eq!(actix_web::test::call_service(&app, call("cpk_good")).await.status(), 200);
        }
        assert_eq!(actix_web::test::call_service(&app, call("cpk_good")).await.status(), 429);
        // A fresh invented key per request: all charged to the address (one token left).
        assert_eq!(actix_web::test::call_service(&app, call("cpk_invented_1")).await.status(), 401);
        assert_eq!(actix_web::test::call_service(&app, call("cpk_invented_2")).await.status(), 429);
        assert_eq!(actix_web::test::call_service(&app, call("cpk_invented_3")).await.status(), 429);
    }

    #[actix_web::test]
    async fn an_error_from_a_middleware_is_answered_with_the_request_id() {
        let operations = web::Data::new(Operations::new(HeadLimits::default()));
        let app = actix_web::test::init_service(
            actix_web::App::new()
                .app_data(operations)
                .route("/v1/ping", web::get().to(|| async { HttpResponse::Ok().finish() }))
                .wrap(actix_web::middleware::from_fn(|_: ServiceRequest, _: Next<BoxBody>| async move {
                    Err::<ServiceResponse<BoxBody>, actix_web::Error>(ApiError::not_found("thing").into())
                }))
                .wrap(actix_web::middleware::from_fn(guard)),
        )
        .await;
        let request = actix_web::test::TestRequest::get()
            .uri("/v1/ping")
            .insert_header((REQUEST_ID_HEADER, "rid-1"))
            .to_request();
        let Err(error) = actix_web::test::try_call_service(&app, request).await else { panic!("not an error") };
        let response = error.error_response();
        assert_eq!(response.status(), 404);
        assert_eq!(response.headers().get(&REQUEST_ID_HEADER).unwrap(), "rid-1");
        let body = actix_web::body::to_bytes(response.into_body()).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["requestId"], "rid-1", "{body}");
    }

    #[test]
    fn a_well_formed_request_id_is_kept_and_others_replaced() {
        assert_eq!(request_id(&headers("abc-123_x.Y")), "abc-123_x.Y");
        let long = "a".repeat(REQUEST_ID_MAX);
        assert_eq!(request_id(&headers(&long)), long);
        for bad in ["", "a b", "a/b", "ünï", &"a".repeat(REQUEST_ID_MAX + 1), "x\"y"] {
            let Ok(value) = HeaderValue::from_bytes(bad.as_bytes()) else { continue };
            let mut map = HeaderMap::new();
            map.insert(REQUEST_ID_HEADER, value);
            let id = request_id(&map);
            assert_ne!(id, bad);
            assert_eq!(id.len(), 32, "{id}");
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        assert_ne!(request_id(&HeaderMap::new()), request_id(&HeaderMap::new()));
    }
}
