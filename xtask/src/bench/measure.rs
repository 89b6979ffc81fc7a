//! What a run measured, and the readings taken of the server process.

use std::fs;

use anyhow::{Context, Result};

use super::report::LIST_P99_MS;

/// One load run: API requests or pgbench transactions.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub per_second: f64,
    /// The median for the API (wrk); the average for pgbench, which reports no percentiles.
    pub latency_ms: f64,
    /// The API's 99th percentile; pgbench has none.
    pub p99_ms: Option<f64>,
    /// The API's slowest request; pgbench reports none.
    pub max_ms: Option<f64>,
    /// Non-2xx answers and socket errors (API), failed transactions (pgbench).
    pub failures: u64,
}

impl Load {
    /// Two runs of the same work taken as one: mean rate and latency, failures added up.
    pub fn mean(a: &Load, b: &Load) -> Load {
        Load {
            per_second: (a.per_second + b.per_second) / 2.0,
            latency_ms: (a.latency_ms + b.latency_ms) / 2.0,
            p99_ms: None,
            max_ms: None,
            failures: a.failures + b.failures,
        }
    }
}

/// The number `name` of a JSON object (wrk's summary line).
pub fn json_number(json: &str, name: &str) -> Option<f64> {
    serde_json::from_str::<serde_json::Value>(json).ok()?.get(name)?.as_f64()
}

/// The server's own count of the requests it answered, from its `/metrics`: how many, and how many
/// took longer than the list cases' p99 target from head to response. Beside wrk's p99 it tells a stall inside the
/// server from one outside it (the kernel, wrk, the scheduler).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Served {
    pub requests: u64,
    pub slow: u64,
}

impl Served {
    /// Sums every route's histogram but `/metrics`'s own (the scrapes).
    pub fn parse(metrics: &str) -> Served {
        let slow_bucket = format!(",le=\"{}\"}} ", LIST_P99_MS / 1000.0);
        let (mut requests, mut fast) = (0, 0);
        for line in metrics.lines().filter(|line| !line.contains("route=\"/metrics\"")) {
            let value = || line.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
            if line.starts_with("http_request_duration_seconds_count{") {
                requests += value();
            } else if line.starts_with("http_request_duration_seconds_bucket{") && line.contains(&slow_bucket) {
                fast += value();
            }
        }
        Served { requests, slow: requests.saturating_sub(fast) }
    }

    /// What was served between `earlier` and this reading.
    pub fn since(self, earlier: Served) -> Served {
        Served {
            requests: self.requests.saturating_sub(earlier.requests),
            slow: self.slow.saturating_sub(earlier.slow),
        }
    }
}

/// Major page faults on the whole machine so far (`pgmajfault` in /proc/vmstat): each is a page
/// read back from disk, a stall of milliseconds for the server, PostgreSQL or wrk, whichever
/// needed it. A machine that pages out memory unused for a while (DAMON's `pageout` scheme on
/// some virtual machines) takes them in the middle of a case.
pub fn major_faults() -> Result<u64> {
    let vmstat = fs::read_to_string("/proc/vmstat").context("cannot read /proc/vmstat")?;
    vmstat
        .lines()
        .find_map(|line| line.strip_prefix("pgmajfault "))
        .and_then(|count| count.trim().parse().ok())
        .context("no pgmajfault in /proc/vmstat")
}

/// The process's resident set now (`VmRSS`) and at its peak (`VmHWM`), in MiB.
/// Resets the process's peak resident set (`VmHWM`) to its resident set now ("5" to
/// `clear_refs`): a peak read after is the work's since, not the start-up's.
pub fn reset_peak(pid: u32) -> Result<()> {
    let path = format!("/proc/{pid}/clear_refs");
    fs::write(&path, "5").with_context(|| format!("cannot write {path}"))
}

pub fn rss_mib(pid: u32) -> Result<(f64, f64)> {
    let status = process_status(pid)?;
    Ok((status_mib(&status, "VmRSS:")?, status_mib(&status, "VmHWM:")?))
}

/// The process's resident set now (`VmRSS`) and its anonymous part (`RssAnon`: mostly heap and
/// stacks), in MiB, from one reading. The rest of `VmRSS` is file-backed, mostly the program's
/// own code pages, shared with the page cache.
pub fn rss_and_anonymous_mib(pid: u32) -> Result<(f64, f64)> {
    let status = process_status(pid)?;
    Ok((status_mib(&status, "VmRSS:")?, status_mib(&status, "RssAnon:")?))
}

fn process_status(pid: u32) -> Result<String> {
    fs::read_to_string(format!("/proc/{pid}/status")).context("cannot read the server's memory")
}

/// One `kB` field of `/proc/PID/status`, in MiB.
fn status_mib(status: &str, name: &str) -> Result<f64> {
    let line = status.lines().find(|line| line.starts_with(name)).with_context(|| format!("no {name}"))?;
    let kib: f64 = line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).context("bad kB value")?;
    Ok(kib / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_numbers_of_flat_json() {
        let line = r#"{"requests":1200,"duration_us":10000312,"p50_us":812}"#;
        assert_eq!(json_number(line, "requests"), Some(1200.0));
        assert_eq!(json_number(line, "p50_us"), Some(812.0));
        assert_eq!(json_number(line, "missing"), None);
        assert_eq!(json_number("BENCH {}", "requests"), None, "not JSON");
    }

    #[test]
    fn the_mean_of_two_runs_keeps_every_failure() {
        let run =
            |per_second, latency_ms, failures| Load { per_second, latency_ms, p99_ms: None, max_ms: None, failures };
        let mean = Load::mean(&run(9_000.0, 3.0, 1), &run(11_000.0, 2.0, 2));
        assert_eq!((mean.per_second, mean.latency_ms, mean.failures), (10_000.0, 2.5, 3));
    }

    #[test]
    fn counts_the_servers_slow_requests_but_not_the_scrapes() {
        let metrics = r#"# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{route="/v1/risks",method="GET",status="200",le="0.005"} 90
http_request_duration_seconds_bucket{route="/v1/risks",method="GET",status="200",le="0.01"} 97
http_request_duration_seconds_bucket{route="/v1/risks",method="GET",status="200",le="0.025"} 99
http_request_duration_seconds_count{route="/v1/risks",method="GET",status="200"} 100
http_request_duration_seconds_bucket{route="/v1/risks",method="GET",status="401",le="0.01"} 2
http_request_duration_seconds_count{route="/v1/risks",method="GET",status="401"} 2
http_request_duration_seconds_bucket{route="/metrics",method="GET",status="200",le="0.01"} 0
http_request_duration_seconds_count{route="/metrics",method="GET",status="200"} 5
"#;
        let served = Served::parse(metrics);
        assert_eq!(served, Served { requests: 102, slow: 3 });
        let earlier = Served { requests: 2, slow: 1 };
        assert_eq!(served.since(earlier), Served { requests: 100, slow: 2 });
    }

    #[test]
    fn counts_the_machines_major_faults() -> Result<()> {
        let before = major_faults()?;
        assert!(major_faults()? >= before);
        Ok(())
    }

    #[test]
    fn reads_its_own_memory() -> Result<()> {
        let (now, peak) = rss_mib(std::process::id())?;
        assert!(now > 0.0 && peak >= now, "{now} {peak}");
        let (resident, anonymous) = rss_and_anonymous_mib(std::process::id())?;
        assert!(anonymous > 0.0 && anonymous <= resident, "{anonymous} of {resident}");
        Ok(())
    }
}
