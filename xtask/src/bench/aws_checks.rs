//! The AWS checks case: every AWS check of one connection, run once against moto (a local AWS)
//! holding [`USERS`] IAM users and [`BUCKETS`] S3 buckets.
//!
//! What it measures: the run's time from asking for it to seeing it done, the requests moto
//! received meanwhile, the server's resident set at idle (the connection made) and at its peak
//! during the run, and the CPU time the server and moto each spent in it. The goals: at most
//! [`RSS_ABOVE_IDLE_GOAL_MIB`] above idle, and a run whose time is moto's, not ours. How: moto's
//! own WSGI app behind a middleware that counts its requests (a Python script in the venv that
//! `cargo xtask tools` makes), seeded once with boto3 and shared by the backends; the peak is
//! `VmHWM`, reset just before the run through `/proc/PID/clear_refs`; CPU is `utime + stime`.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::Backend;
use super::measure::{reset_peak, rss_mib};
use super::report::thousands;
use crate::cmd::{capture_ok, stdout_of};
use crate::service::{Request, Server, Store, Tenant, json_string, target_dir};

/// The case's name, as `--case` selects it.
pub const NAME: &str = "aws checks over moto";
pub const USERS: usize = 1_000;
pub const BUCKETS: usize = 500;
/// The goal: the server's resident set during a run at most this much above its idle one.
pub const RSS_ABOVE_IDLE_GOAL_MIB: f64 = 40.0;
/// A run that takes longer has failed.
const RUN_DEADLINE: Duration = Duration::from_secs(30 * 60);
/// How long moto may take to start answering.
const MOTO_START: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(50);
/// Nothing scheduled: the one run is the one asked for; and room for a slow moto.
const ENV: &[(&str, &str)] = &[("CHECK_FREQUENCY_HOURS", "0"), ("CHECK_RUN_TIMEOUT_SECONDS", "1800")];
/// The path the counting middleware answers itself, with the requests moto has received.
const COUNT_PATH: &str = "/__bench/requests";

/// One backend's figures.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub backend: Backend,
    /// From asking for the run to seeing it finished (polled every 50 ms).
    pub run_seconds: f64,
    /// The run's passed, failed, errors and not applicable, added up.
    pub results: u64,
    /// Requests moto received during the run.
    pub requests: u64,
    pub idle_rss_mib: f64,
    pub peak_rss_mib: f64,
    pub rss_above_idle_mib: f64,
    pub server_cpu_seconds: f64,
    pub moto_cpu_seconds: f64,
    /// A failed run, an empty one, a peak that could not be reset; empty when none.
    pub problems: Vec<String>,
}

/// moto serving on a port it picked, seeded once and reused for every backend; killed on drop.
pub struct Moto {
    child: Child,
    /// `127.0.0.1:PORT`; empty until moto said it.
    address: String,
}

impl Moto {
    /// Starts moto, waits until it answers, then seeds it (and says how long that took).
    pub fn start(scratch: &Path) -> Result<Self> {
        let python = target_dir()?.join("tools/venv/bin/python");
        if !python.exists() {
            bail!("no {}: `cargo xtask tools` makes the venv with moto and boto3", python.display());
        }
        let script = scratch.join("moto_counted.py");
        fs::write(&script, SERVER_PY).with_context(|| format!("cannot write {}", script.display()))?;
        let log = scratch.join("moto.log");
        let stderr = File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        let mut command = Command::new(&python);
        command.arg(&script).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr);
        let mut child = command.spawn().context("could not start moto")?;
        let stdout = child.stdout.take().context("moto's stdout")?;
        // From here on, an error kills moto (drop).
        let mut moto = Moto { child, address: String::new() };
        let port = announced_port(stdout).with_context(|| format!("moto's log: {}", log.display()))?;
        moto.address = format!("127.0.0.1:{port}");
        moto.wait_until_counting()?;
        moto.seed(&python, scratch)?;
        Ok(moto)
    }

    /// `http://127.0.0.1:PORT`, every AWS service's endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The requests moto has received so far (the seeding's too).
    pub fn requests(&self) -> Result<u64> {
        let count = Request::get(COUNT_PATH).expect(&self.address, 200)?;
        count.trim().parse().with_context(|| format!("moto's request count {count:?}"))
    }

    fn wait_until_counting(&mut self) -> Result<()> {
        let deadline = Instant::now() + MOTO_START;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("moto exited at start ({status})");
            }
            if self.requests().is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("moto did not answer {COUNT_PATH} on {} within {MOTO_START:?}", self.address);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn seed(&self, python: &Path, scratch: &Path) -> Result<()> {
        let script = scratch.join("moto_seed.py");
        fs::write(&script, SEED_PY).with_context(|| format!("cannot write {}", script.display()))?;
        let mut command = Command::new(python);
        command
            .arg(&script)
            .args([self.endpoint(), USERS.to_string(), BUCKETS.to_string()])
            .env("AWS_ACCESS_KEY_ID", "AKIABENCHSEEDBENCHSE")
            .env("AWS_SECRET_ACCESS_KEY", "bench")
            .env("AWS_DEFAULT_REGION", "us-east-1");
        let started = Instant::now();
        capture_ok(&mut command).context("seeding moto")?;
        println!(
            "    moto seeded with {} IAM users and {} buckets, its backends built, in {:.1} s ({} requests)",
            thousands(USERS as u64),
            thousands(BUCKETS as u64),
            started.elapsed().as_secs_f64(),
            thousands(self.requests()?)
        );
        Ok(())
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port moto prints on its first line; a thread reads its stdout to the end.
fn announced_port(stdout: ChildStdout) -> Result<u16> {
    let (announce, announced) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = announce.send(line);
        }
    });
    let line = announced.recv_timeout(MOTO_START).context("moto did not say its port")?;
    line.trim().parse().with_context(|| format!("moto's first line {line:?} is no port"))
}

/// The case on `store`, a database of its own, with the server's AWS checks pointed at `moto`.
pub fn run(binary: &Path, backend: Backend, store: &Store, moto: &Moto, scratch: &Path, out: &Path) -> Result<Figures> {
    let name = backend.name();
    println!("\n==> {NAME}: {} IAM users, {} buckets ({name})", thousands(USERS as u64), thousands(BUCKETS as u64));
    let log = out.join(format!("{name}-aws-checks-server.log"));
    let data = scratch.join(format!("aws-checks-{name}"));
    fs::create_dir_all(data.join("blobs")).with_context(|| format!("cannot create {}", data.display()))?;
    let endpoint = moto.endpoint();
    let env: Vec<(&str, &str)> =
        [("CHECKS_AWS_ENDPOINT_URL", endpoint.as_str())].into_iter().chain(ENV.iter().copied()).collect();
    let mut server = Server::spawn(binary, store.url(), &data, &log, &env)?;
    server.wait_until_ok(&Request::get("/health"), POLL, &log)?;
    let tenant = Tenant::create(binary, store.url(), "awschecks")?;
    let connection = connect_aws(&server, &tenant)?;
    let (figures, errors) = measure(backend, &server, &tenant, &connection, moto)?;
    print_summary(&figures, errors);
    Ok(figures)
}

/// The run and the readings around it; with the run's `error` results.
fn measure(
    backend: Backend,
    server: &Server,
    tenant: &Tenant,
    connection: &str,
    moto: &Moto,
) -> Result<(Figures, u64)> {
    let mut problems = Vec::new();
    // Idle: the connection made, no run yet.
    let (idle_rss_mib, _) = rss_mib(server.pid())?;
    if let Err(error) = reset_peak(server.pid()) {
        problems.push(format!("could not reset the peak RSS ({error:#}): it is the peak since start"));
    }
    let (server_cpu, moto_cpu, requests) =
        (cpu_seconds(server.pid())?, cpu_seconds(moto.child.id())?, moto.requests()?);
    let started = Instant::now();
    let run = check_run(server, tenant, connection)?;
    let run_seconds = started.elapsed().as_secs_f64();
    let server_cpu_seconds = cpu_seconds(server.pid())? - server_cpu;
    let moto_cpu_seconds = cpu_seconds(moto.child.id())? - moto_cpu;
    let requests = moto.requests()?.saturating_sub(requests);
    let (_, peak_rss_mib) = rss_mib(server.pid())?;
    let count = |field: &str| run["counts"][field].as_u64().unwrap_or(0);
    let results = ["pass", "fail", "error", "notApplicable"].into_iter().map(count).sum();
    if run["status"] != "finished" {
        problems.push(format!("the run is {}: {}", run["status"], run["error"]));
    }
    if results == 0 {
        problems.push("the run has no results".to_owned());
    }
    let rss_above_idle_mib = peak_rss_mib - idle_rss_mib;
    let figures = Figures {
        backend,
        run_seconds,
        results,
        requests,
        idle_rss_mib,
        peak_rss_mib,
        rss_above_idle_mib,
        server_cpu_seconds,
        moto_cpu_seconds,
        problems,
    };
    Ok((figures, count("error")))
}

/// Connects AWS for the tenant (moto takes any credentials); the connection's id.
fn connect_aws(server: &Server, tenant: &Tenant) -> Result<String> {
    let credentials = serde_json::json!({
        "access_key_id": "AKIAIOSFODNN7EXAMPLE",
        "secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "region": "us-east-1",
    });
    let body = serde_json::json!({ "providerSlug": "aws", "credentials": credentials }).to_string();
    let created =
        Request::post("/v1/integrations/connections", &body).with_key(&tenant.api_key).expect(&server.address, 201)?;
    json_string(&created, "id")
}

/// Asks for a run of the connection's checks and polls it until it is finished or failed; the run.
fn check_run(server: &Server, tenant: &Tenant, connection: &str) -> Result<serde_json::Value> {
    let path = format!("/v1/integrations/connections/{connection}/checks/run");
    let queued = Request::post(&path, "{}").with_key(&tenant.api_key).expect(&server.address, 202)?;
    let path = format!("/v1/check-runs/{}", json_string(&queued, "id")?);
    let deadline = Instant::now() + RUN_DEADLINE;
    loop {
        let body = Request::get(&path).with_key(&tenant.api_key).expect(&server.address, 200)?;
        let run: serde_json::Value = serde_json::from_str(&body).with_context(|| format!("not JSON: {body:.500}"))?;
        if run["status"] == "finished" || run["status"] == "failed" {
            return Ok(run);
        }
        if Instant::now() > deadline {
            bail!("{NAME}: the run is still {} after {RUN_DEADLINE:?}", run["status"]);
        }
        std::thread::sleep(POLL);
    }
}

fn print_summary(figures: &Figures, errors: u64) {
    let ratio = if figures.moto_cpu_seconds > 0.0 {
        format!("{:.2}×", figures.server_cpu_seconds / figures.moto_cpu_seconds)
    } else {
        "moto used none".to_owned()
    };
    println!(
        "    {}: run {:.1} s, {} results ({} of outcome error), {} requests to moto; \
         our CPU {:.1} s against moto's {:.1} s ({ratio}); \
         RSS idle {:.1} MiB, peak {:.1} MiB ({:+.1}, goal ≤ {RSS_ABOVE_IDLE_GOAL_MIB:.0}){}",
        figures.backend.name(),
        figures.run_seconds,
        thousands(figures.results),
        thousands(errors),
        thousands(figures.requests),
        figures.server_cpu_seconds,
        figures.moto_cpu_seconds,
        figures.idle_rss_mib,
        figures.peak_rss_mib,
        figures.rss_above_idle_mib,
        if figures.problems.is_empty() { String::new() } else { format!("; {}", figures.problems.join("; ")) },
    );
}

/// The CPU time (user and system) the process has used so far, in seconds.
fn cpu_seconds(pid: u32) -> Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    let ticks = cpu_ticks(&stat).with_context(|| format!("no utime and stime in {path}: {stat:.200}"))?;
    Ok(ticks as f64 / clock_ticks_per_second())
}

/// `utime + stime` (fields 14 and 15) of a `/proc/PID/stat` line. The command name (field 2)
/// may hold spaces and parentheses, so the fields are counted after its last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `fields[0]` is field 3 (the state).
    let utime: u64 = fields.get(14 - 3)?.parse().ok()?;
    let stime: u64 = fields.get(15 - 3)?.parse().ok()?;
    Some(utime + stime)
}

/// `getconf CLK_TCK`, asked once; 100 (Linux's usual) if that fails.
fn clock_ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        let asked = stdout_of(Command::new("getconf").arg("CLK_TCK")).ok();
        asked.and_then(|ticks| ticks.parse().ok()).filter(|ticks: &f64| *ticks > 0.0).unwrap_or(100.0)
    })
}

/// moto's own WSGI app as its `moto_server` builds it, behind a middleware that counts the
/// requests and answers `/__bench/requests` itself; prints the port it bound, then serves.
const SERVER_PY: &str = r#"
import logging, os, threading
from werkzeug.serving import make_server
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
moto = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()
count = 0

def app(environ, start_response):
    global count
    with lock:
        if environ.get("PATH_INFO") != "/__bench/requests":
            count += 1
            counted = None
        else:
            counted = str(count).encode()
    if counted is None:
        return moto(environ, start_response)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(counted)))])
    return [counted]

server = make_server("127.0.0.1", 0, app, threaded=True)
os.environ["MOTO_PORT"] = str(server.server_port)
print(server.server_port, flush=True)
server.serve_forever()
"#;

/// Seeds moto: `argv` is the endpoint, the users and the buckets. Every second user has a console
/// password, every fourth an access key; every third bucket default encryption.
const SEED_PY: &str = r#"
import sys
from concurrent.futures import ThreadPoolExecutor
import boto3
from botocore.config import Config

endpoint, users, buckets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
config = Config(s3={"addressing_style": "path"})
iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", config=config)
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=config)
ENCRYPTION = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}

def user(n):
    name = f"bench-user-{n:04d}"
    iam.create_user(UserName=name)
    if n % 2 == 0:
        iam.create_login_profile(UserName=name, Password="A-l0ng-passw0rd!")
    if n % 4 == 0:
        iam.create_access_key(UserName=name)

def bucket(n):
    name = f"bench-bucket-{n:04d}"
    s3.create_bucket(Bucket=name)
    if n % 3 == 0:
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration=ENCRYPTION)

# boto3's own work per request is about moto's: a few threads overlap the two.
with ThreadPoolExecutor(4) as pool:
    list(pool.map(user, range(1, users + 1)))
    list(pool.map(bucket, range(1, buckets + 1)))

# moto builds a service's backend for a region on its first request there, EC2's at a cost of
# seconds: every region's are built here (and the credential report), or the first backend
# measured would pay for them.
READS = {"ec2": ["describe_security_groups", "get_ebs_encryption_by_default", "describe_vpcs", "describe_flow_logs"],
         "config": ["describe_configuration_recorders"], "guardduty": ["list_detectors"], "kms": ["list_keys"],
         "rds": ["describe_db_instances", "describe_db_clusters"], "cloudtrail": ["describe_trails"]}
iam.generate_credential_report()
ec2 = boto3.client("ec2", endpoint_url=endpoint, region_name="us-east-1")
for region in [r["RegionName"] for r in ec2.describe_regions()["Regions"]]:
    for service, reads in READS.items():
        client = boto3.client(service, endpoint_url=endpoint, region_name=region)
        for read in reads:
            getattr(client, read)()
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_ticks_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (tokio (rt) w) S 1 4242 4242 0 -1 4194560 2210 0 0 0 731 89 0 0 20 0 9 0 123 456 789";
        assert_eq!(cpu_ticks(stat), Some(731 + 89));
        assert_eq!(cpu_ticks("4242 (short) S 1"), None, "too few fields");
        assert_eq!(cpu_ticks("no name"), None);
    }

    #[test]
    fn reads_its_own_cpu_time() -> Result<()> {
        let before = cpu_seconds(std::process::id())?;
        assert!(before >= 0.0 && cpu_seconds(std::process::id())? >= before);
        Ok(())
    }
}
