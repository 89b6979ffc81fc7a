//! A moto_server child process (an independent implementation of AWS's APIs) on a port it picks,
//! killed on drop, and fixtures made with boto3 (moto's own dependency) by the `python3` on `PATH`.
//! Shared by the test crates that need a real local AWS (`#[path]`-included: tests have no crate
//! of their own to share through). `cargo xtask tools` installs both in target/tools/venv/bin.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto_server.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Moto {
    /// moto with its defaults (no IAM authentication).
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// moto with `env` (its settings are environment variables).
    pub async fn start_with(env: &[(&str, &str)]) -> Self {
        // Port 0: moto binds a free port and says which.
        let spawned = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", "0"])
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "moto_server is not on PATH; these tests need a real local AWS: `cargo xtask tools` installs it in target/tools/venv/bin"
            ),
            Err(e) => panic!("could not start moto_server: {e}"),
        };
        let announced = announced_endpoint(child.stderr.take().expect("moto_server's stderr"));
        let endpoint = match tokio::time::timeout(Duration::from_secs(60), announced).await {
            Ok(Ok(endpoint)) => endpoint,
            _ => {
                let _ = child.kill();
                panic!("moto_server did not say where it listens within 60 s; try: pip install 'moto[server]'")
            }
        };
        let mut moto = Self { child, endpoint };
        moto.wait_until_ready().await;
        moto
    }

    async fn wait_until_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("moto_server's status") {
                panic!("moto_server exited before answering ({status}); try: pip install 'moto[server]'");
            }
            if reqwest::get(format!("{}/moto-api/", self.endpoint)).await.is_ok() {
                return;
            }
            assert!(Instant::now() < deadline, "moto_server did not answer on {} within 60 s", self.endpoint);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs the Python `script` with boto3 against this moto, after a prelude defining `ENDPOINT`,
    /// `ARGS` (the JSON `args`), `client(service, region="us-east-1", account=None)` and an empty
    /// dict `out`, which the script fills and this returns.
    pub fn boto3(&self, script: &str, args: &serde_json::Value) -> serde_json::Value {
        let program = format!("{BOTO3_PRELUDE}\n{script}\nprint(json.dumps(out))\n");
        let output = Command::new("python3").args(["-c", &program, &self.endpoint, &args.to_string()]).output();
        let output = match output {
            Ok(output) => output,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                panic!("python3 is not on PATH: `cargo xtask tools` makes target/tools/venv with boto3 (moto's)")
            }
            Err(e) => panic!("could not run python3: {e}"),
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the fixture script failed:\n{}\n{stdout}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("the fixture script's JSON")
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const BOTO3_PRELUDE: &str = r#"
import json, sys
import boto3
from botocore.config import Config

ENDPOINT = sys.argv[1]
ARGS = json.loads(sys.argv[2])
out = {}

def client(service, region="us-east-1", account=None):
    c = boto3.client(service, endpoint_url=ENDPOINT, region_name=region, aws_access_key_id="AKIAFIXTURESFIXTURES",
                     aws_secret_access_key="fixtures", config=Config(s3={"addressing_style": "path"}))
    if account:
        c.meta.events.register("before-send.*", lambda request, **kw: request.headers.__setitem__("x-moto-account-id", account))
    return c
"#;

/// Where moto_server says it listens (` * Running on http://127.0.0.1:PORT`); a thread then
/// reads its stderr to the end, so that its request log never fills the pipe.
fn announced_endpoint(stderr: ChildStderr) -> tokio::sync::oneshot::Receiver<String> {
    let (announce, announced) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut announce = Some(announce);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("Running on")
                && let Some(url) = line.split_whitespace().find(|word| word.starts_with("http://"))
                && let Some(announce) = announce.take()
            {
                let _ = announce.send(url.to_owned());
            }
        }
    });
    announced
}
