//! Request counters and latency histograms in the Prometheus text format (version 0.0.4).
//!
//! Labels are bounded: the route is a matched pattern or `unmatched`, the method one of the
//! standard ones or `OTHER`, the status a number.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use actix_web::http::Method;
use compliance_ports::PoolStatus;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Use cases answered 503 because a store (the database, or Redis for chat) was unavailable.
/// Process-wide, because errors are converted where no request state is at hand.
static STORE_UNAVAILABLE: AtomicU64 = AtomicU64::new(0);

/// Counts one [`compliance_app::AppError::Unavailable`].
pub(crate) fn count_store_unavailable() {
    STORE_UNAVAILABLE.fetch_add(1, Ordering::Relaxed);
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Labels {
    route: String,
    method: &'static str,
    status: u16,
}

#[derive(Debug, Default)]
struct Series {
    count: AtomicU64,
    sum_micros: AtomicU64,
    /// Non-cumulative: `buckets[i]` counts latencies in (BUCKETS[i-1], BUCKETS[i]].
    buckets: [AtomicU64; BUCKETS.len()],
}

#[derive(Debug, Default)]
pub(crate) struct Metrics {
    series: RwLock<HashMap<Labels, Arc<Series>>>,
    limiter_errors: AtomicU64,
}

impl Metrics {
    pub(crate) fn observe(&self, route: &str, method: &Method, status: u16, elapsed: Duration) {
        let labels = Labels { route: route.to_owned(), method: method_label(method), status };
        let known = self.series.read().ok().and_then(|series| series.get(&labels).cloned());
        let series = match known {
            Some(series) => series,
            None => match self.series.write() {
                Ok(mut series) => Arc::clone(series.entry(labels).or_default()),
                Err(_) => return,
            },
        };
        series.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        series.sum_micros.fetch_add(micros, Ordering::Relaxed);
        let seconds = elapsed.as_secs_f64();
        if let Some(bucket) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            series.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn count_limiter_error(&self) {
        self.limiter_errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn render(&self, pools: &[PoolStatus]) -> String {
        let series: BTreeMap<Labels, Arc<Series>> = self
            .series
            .read()
            .map(|series| series.iter().map(|(labels, series)| (labels.clone(), Arc::clone(series))).collect())
            .unwrap_or_default();
        let mut out = String::with_capacity(1024 + series.len() * 1500);
        header(&mut out, "http_requests_total", "counter", "Requests answered, by matched route, method and status.");
        for (labels, series) in &series {
            let _ =
                writeln!(out, "http_requests_total{{{}}} {}", labels.render(), series.count.load(Ordering::Relaxed));
        }
        header(
            &mut out,
            "http_request_duration_seconds",
            "histogram",
            "Time from the request's head to its response, by matched route, method and status.",
        );
        for (labels, series) in &series {
            let labels = labels.render();
            let mut cumulative = 0;
            for (bound, bucket) in BUCKETS.iter().zip(&series.buckets) {
                cumulative += bucket.load(Ordering::Relaxed);
                let _ = writeln!(out, "http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
            }
            let count = series.count.load(Ordering::Relaxed);
            let sum = series.sum_micros.load(Ordering::Relaxed) as f64 / 1_000_000.0;
            let _ = writeln!(out, "http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {count}");
            let _ = writeln!(out, "http_request_duration_seconds_sum{{{labels}}} {sum}");
            let _ = writeln!(out, "http_request_duration_seconds_count{{{labels}}} {count}");
        }
        type Gauge = (&'static str, &'static str, fn(&PoolStatus) -> usize);
        let gauges: [Gauge; 5] = [
            ("db_pool_max_connections", "The most connections the pool may open.", |p| p.max_size),
            ("db_pool_connections", "Connections open now, idle or in use.", |p| p.size),
            ("db_pool_connections_idle", "Open connections ready to be taken.", |p| p.available),
            ("db_pool_connections_in_use", "Connections taken by requests now.", |p| {
                p.size.saturating_sub(p.available)
            }),
            ("db_pool_waiting", "Requests waiting for a connection now.", |p| p.waiting),
        ];
        for (name, help, value) in gauges {
            header(&mut out, name, "gauge", help);
            for pool in pools {
                let _ = writeln!(out, "{name}{{pool=\"{}\"}} {}", escape(pool.name), value(pool));
            }
        }
        header(
            &mut out,
            "store_unavailable_errors_total",
            "counter",
            "Requests answered 503 because a store (the database, or Redis for chat) was unavailable: pool \
             timeouts, refused or lost connections.",
        );
        let _ = writeln!(out, "store_unavailable_errors_total {}", STORE_UNAVAILABLE.load(Ordering::Relaxed));
        header(
            &mut out,
            "rate_limiter_errors_total",
            "counter",
            "Requests let through unlimited because the rate limiter (Redis) failed.",
        );
        let _ = writeln!(out, "rate_limiter_errors_total {}", self.limiter_errors.load(Ordering::Relaxed));
        header(
            &mut out,
            "webhook_delivery_attempts_total",
            "counter",
            "Webhook deliveries this instance attempted, by outcome: succeeded (a 2xx), retrying, failed (given up).",
        );
        let attempts = &compliance_app::DELIVERY_ATTEMPTS;
        for (outcome, count) in
            [("succeeded", &attempts.succeeded), ("retrying", &attempts.retrying), ("failed", &attempts.failed)]
        {
            let _ = writeln!(
                out,
                "webhook_delivery_attempts_total{{outcome=\"{outcome}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        out
    }
}

impl Labels {
    fn render(&self) -> String {
        format!("route=\"{}\",method=\"{}\",status=\"{}\"", escape(&self.route), self.method, self.status)
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A client can send any method token; only the standard ones become labels of their own.
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
        Method::TRACE,
        Method::CONNECT,
    ];
    KNOWN.iter().find(|known| *known == method).map_or("OTHER", |known| known.as_str())
}

/// Label values escape backslash, double quote and line feed.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn counts_and_buckets_are_cumulative() {
        let metrics = Metrics::default();
        metrics.observe("/v1/risks/{id}", &Method::GET, 200, Duration::from_millis(3));
        metrics.observe("/v1/risks/{id}", &Method::GET, 200, Duration::from_millis(30));
        metrics.observe("unmatched", &Method::from_bytes(b"BREW").unwrap(), 404, Duration::from_secs(20));
        let pools = [PoolStatus { name: "main", max_size: 8, size: 3, available: 1, waiting: 0 }];
        let text = metrics.render(&pools);
        let labels = r#"route="/v1/risks/{id}",method="GET",status="200""#;
        assert!(text.contains(&format!("http_requests_total{{{labels}}} 2\n")), "{text}");
        assert!(text.contains(&format!("http_request_duration_seconds_bucket{{{labels},le=\"0.001\"}} 0\n")));
        assert!(text.contains(&format!("http_request_duration_seconds_bucket{{{labels},le=\"0.005\"}} 1\n")));
        assert!(text.contains(&format!("http_request_duration_seconds_bucket{{{labels},le=\"0.05\"}} 2\n")));
        assert!(text.contains(&format!("http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} 2\n")));
        assert!(text.contains(&format!("http_request_duration_seconds_count{{{labels}}} 2\n")));
        assert!(text.contains(
            r#"http_request_duration_seconds_bucket{route="unmatched",method="OTHER",status="404",le="10"} 0"#
        ));
        assert!(text.contains("db_pool_connections_in_use{pool=\"main\"} 2\n"), "{text}");
        assert!(text.contains("# TYPE http_request_duration_seconds histogram\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
