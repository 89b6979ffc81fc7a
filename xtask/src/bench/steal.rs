//! Time the hypervisor took from this machine's CPUs while a run went on ("steal" in
//! `/proc/stat`), and whether it disturbed the run too much to judge.
//!
//! On a shared virtual machine the host sometimes takes every vCPU away at once, for tens or
//! hundreds of milliseconds; seen on the bench's machine during long sustained load. Every request
//! in flight then waits, whichever process serves it, and wrk's latencies (corrected for
//! coordinated omission, see `wrk.rs`) count the wait as many slow requests. Such a run says
//! nothing about the server's p99, and PostgreSQL's or the API's rate drops with it.

use std::fmt;
use std::fs;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};

use super::report::LIST_P99_MS;

/// How often the watch reads `/proc/stat`: a stall shows as one jump, since the watch cannot run
/// while the machine is stalled.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// `/proc/stat` counts in USER_HZ, which Linux fixes at 100 on the architectures we run on.
const MS_PER_TICK: f64 = 10.0;

/// What counts of a stall: the part beyond the list cases' p99 target.
const STALL_GRACE_MS: f64 = LIST_P99_MS;

/// A run is disturbed when its stalls, beyond [`STALL_GRACE_MS`] each, add up to more than this
/// share of it. With wrk's correction, all connections stalled for 10 ms + 1 % of the run make
/// 1 % of its requests slower than 10 ms: enough on its own to decide the p99 target.
const STALLS_SHARE: f64 = 0.01;

/// Or when the host took more than this share of the machine in all. It then throttles each
/// vCPU in turn for a few ms at a time, which the sampler, running on the other one, does not see
/// as a stall of the machine; in such a run (8 % taken) a list's p99 was 16 ms, and 3 ms in the
/// runs around it (under 3 % taken).
const STOLEN_SHARE: f64 = 0.05;

/// What the hypervisor took during one run, in milliseconds of the whole machine (the steal of
/// all CPUs divided by their number).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Steal {
    pub stolen_ms: f64,
    /// The stalls of the whole machine, each beyond [`STALL_GRACE_MS`], added up.
    pub stalls_ms: f64,
}

impl Steal {
    /// Whether a run of `duration` with this steal is no fair measure.
    pub fn disturbs(&self, duration: Duration) -> bool {
        self.weight() > duration.as_secs_f64() * 1000.0
    }

    /// Whether this run was disturbed less than `other`.
    pub fn less_than(&self, other: &Steal) -> bool {
        self.weight() < other.weight()
    }

    /// The shortest run (in ms) this steal would not disturb.
    fn weight(&self) -> f64 {
        (self.stalls_ms / STALLS_SHARE).max(self.stolen_ms / STOLEN_SHARE)
    }

    /// Adds one sample's steal (all CPUs, in ms) to the run's.
    fn add(&mut self, stolen_ms_all_cpus: f64, cpus: f64) {
        let machine_ms = stolen_ms_all_cpus / cpus;
        self.stolen_ms += machine_ms;
        self.stalls_ms += (machine_ms - STALL_GRACE_MS).max(0.0);
    }
}

impl fmt::Display for Steal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the hypervisor took {:.0} ms of the machine, stalls {:.0} ms", self.stolen_ms, self.stalls_ms)
    }
}

/// Watches steal from a thread of its own until stopped.
pub struct StealWatch {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<Steal>>,
}

impl StealWatch {
    pub fn start() -> Result<Self> {
        let mut last = read_proc_stat()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let mut steal = Steal::default();
            while !stopped.load(Ordering::Relaxed) {
                thread::sleep(SAMPLE_EVERY);
                let now = read_proc_stat()?;
                steal.add((now.steal_ticks.saturating_sub(last.steal_ticks)) as f64 * MS_PER_TICK, now.cpus);
                last = now;
            }
            Ok(steal)
        });
        Ok(Self { stop, thread })
    }

    pub fn stop(self) -> Result<Steal> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().map_err(|_| anyhow!("the steal watch panicked"))?
    }
}

struct ProcStat {
    steal_ticks: u64,
    cpus: f64,
}

fn read_proc_stat() -> Result<ProcStat> {
    parse_proc_stat(&fs::read_to_string("/proc/stat").context("cannot read /proc/stat")?)
}

/// The machine's steal (the eighth figure of the `cpu` line) and its number of CPUs.
fn parse_proc_stat(stat: &str) -> Result<ProcStat> {
    let total = stat.lines().find(|line| line.starts_with("cpu ")).context("no cpu line in /proc/stat")?;
    let steal_ticks =
        total.split_whitespace().nth(8).and_then(|steal| steal.parse().ok()).context("no steal in /proc/stat")?;
    let cpus = stat.lines().filter(|line| line.starts_with("cpu") && !line.starts_with("cpu ")).count();
    Ok(ProcStat { steal_ticks, cpus: cpus.max(1) as f64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_machines_steal_and_cpus() -> Result<()> {
        let stat = "cpu  16114 0 4423 48029 586 0 157 2033 0 0\n\
                    cpu0 7837 0 1840 24920 75 0 17 982 0 0\n\
                    cpu1 8276 0 2582 23108 510 0 139 1051 0 0\nintr 1 2 3\n";
        let parsed = parse_proc_stat(stat)?;
        assert_eq!((parsed.steal_ticks, parsed.cpus), (2033, 2.0));
        assert!(read_proc_stat()?.cpus >= 1.0);
        Ok(())
    }

    #[test]
    fn only_whole_machine_stalls_beyond_the_grace_disturb_a_run() {
        let ten_seconds = Duration::from_secs(10);
        let mut steal = Steal::default();
        // one CPU of two taken for 10 ms at a time, 80 times: 400 ms of the machine, never all of it
        for _ in 0..80 {
            steal.add(10.0, 2.0);
        }
        assert_eq!(steal.stolen_ms, 400.0);
        assert_eq!(steal.stalls_ms, 0.0);
        assert!(!steal.disturbs(ten_seconds));
        // both CPUs taken for 100 ms: 90 ms beyond the grace, under 1 % of 10 s
        steal.add(200.0, 2.0);
        assert_eq!(steal.stalls_ms, 90.0);
        assert!(!steal.disturbs(ten_seconds));
        // and again for 30 ms: 110 ms in all
        let mut stalled = steal;
        stalled.add(60.0, 2.0);
        assert!(stalled.disturbs(ten_seconds), "{stalled:?}");
        // or one CPU at a time, 20 more times: over 5 % of the machine taken in all
        for _ in 0..20 {
            steal.add(10.0, 2.0);
        }
        assert_eq!((steal.stolen_ms, steal.stalls_ms), (600.0, 90.0));
        assert!(steal.disturbs(ten_seconds), "{steal:?}");
        assert!(Steal::default().less_than(&steal) && !steal.less_than(&stalled));
    }
}
