//! One headless Chromium process with its own fresh profile directory.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use compliance_ports::CaptureError;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};

/// What Chromium prints on stderr once its DevTools endpoint is up.
const LISTENING: &str = "DevTools listening on ";

/// How long a graceful exit may take before the process is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

static PROFILES: AtomicU64 = AtomicU64::new(0);

/// Profile directories older than this, left by a process that died without removing them, are
/// removed when a runner is created.
const STALE_PROFILE: Duration = Duration::from_secs(3600);

/// The prefix of every profile directory's name.
const PROFILE_PREFIX: &str = "compliance-browser-";

/// A running Chromium, the leader of its own process group (its zygote, renderers and utility
/// processes are in the group too). [`Chromium::shutdown`] ends it and removes its profile; if it
/// is dropped instead (the capture was cancelled), the whole group is killed and the profile
/// removed all the same.
pub(crate) struct Chromium {
    child: Child,
    /// The process group (the leader's pid), until the group was killed.
    group: Option<u32>,
    profile: Profile,
    /// The browser's DevTools websocket, `ws://127.0.0.1:<port>/devtools/browser/<id>`.
    pub ws_url: String,
}

impl Chromium {
    /// Starts Chromium and waits (up to `timeout`) until it prints its DevTools endpoint.
    pub(crate) async fn launch(
        executable: &Path,
        work_dir: &Path,
        extra_args: &[String],
        timeout: Duration,
    ) -> Result<Self, CaptureError> {
        let profile = Profile::create(work_dir)?;
        let mut command = Command::new(executable);
        // Only what Chromium needs from our environment: no secrets of the service (database
        // URLs, keys) reach a process that runs tenants' pages.
        command.env_clear().env("HOME", &profile.path);
        for name in ["PATH", "TMPDIR", "LANG", "FONTCONFIG_PATH"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        let child = command
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-default-apps",
                "--disable-extensions",
                "--disable-sync",
                "--hide-scrollbars",
                "--mute-audio",
                "--remote-debugging-port=0",
                "--window-size=1280,800",
            ])
            .arg(format!("--user-data-dir={}", profile.path.display()))
            .args(extra_args)
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .map_err(|e| CaptureError::Browser(format!("cannot start {}: {e}", executable.display())))?;
        let group = child.id();
        let mut chromium = Self { child, group, profile, ws_url: String::new() };
        let Some(stderr) = chromium.child.stderr.take() else {
            chromium.shutdown().await;
            return Err(CaptureError::Browser("Chromium's stderr is not captured".into()));
        };
        match tokio::time::timeout(timeout, wait_for_endpoint(stderr)).await {
            Ok(Ok(ws_url)) => {
                chromium.ws_url = ws_url;
                Ok(chromium)
            }
            Ok(Err(error)) => {
                let _ = chromium.child.start_kill();
                chromium.shutdown().await;
                Err(error)
            }
            Err(_) => {
                let _ = chromium.child.start_kill();
                chromium.shutdown().await;
                Err(CaptureError::Browser(format!("Chromium did not start within {} seconds", timeout.as_secs())))
            }
        }
    }

    /// Waits briefly for the process to exit (after `Browser.close`), kills its whole process group
    /// (helpers that outlived it too), reaps it, and removes the profile directory.
    pub(crate) async fn shutdown(mut self) {
        let exited = matches!(tokio::time::timeout(EXIT_GRACE, self.child.wait()).await, Ok(Ok(_)));
        if let Some(group) = self.group.take() {
            kill_group(group).await;
        }
        if !exited && let Err(e) = self.child.kill().await {
            tracing::warn!(error = %e, "cannot kill Chromium");
        }
        self.profile.remove().await;
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // Cancelled: `kill_on_drop` ends the leader; this ends the rest of the group.
        if let Some(group) = self.group.take() {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Sends SIGKILL to every process of the group `group` (with `kill`, as no safe API of the standard
/// library signals a group). The group's id cannot have been reused meanwhile: the kernel keeps a
/// pid allocated while a process group of that id has a member, and an empty group just makes
/// `kill` fail.
async fn kill_group(group: u32) {
    let status = Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    if let Err(e) = status {
        tracing::warn!(error = %e, "cannot run kill for Chromium's process group");
    }
}

/// Removes the profile directories in `work_dir` older than an hour (left by a crash).
pub(crate) fn sweep_stale_profiles(work_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(work_dir) else { return };
    for entry in entries.flatten() {
        let stale = entry.file_name().to_str().is_some_and(|name| name.starts_with(PROFILE_PREFIX))
            && entry.file_type().is_ok_and(|kind| kind.is_dir())
            && entry
                .metadata()
                .and_then(|meta| meta.modified())
                .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age > STALE_PROFILE));
        if stale && let Err(e) = std::fs::remove_dir_all(entry.path()) {
            tracing::warn!(error = %e, path = %entry.path().display(), "cannot remove a stale Chromium profile");
        }
    }
}

/// Reads stderr until the DevTools line, then keeps draining it (so Chromium never blocks on a
/// full pipe) until the process exits.
async fn wait_for_endpoint(stderr: ChildStderr) -> Result<String, CaptureError> {
    let mut lines = BufReader::new(stderr).lines();
    let mut last = Vec::new();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                if let Some(at) = line.find(LISTENING) {
                    let ws_url = line[at + LISTENING.len()..].trim().to_owned();
                    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                    return Ok(ws_url);
                }
                if last.len() == 5 {
                    last.remove(0);
                }
                last.push(line);
            }
            Ok(None) | Err(_) => {
                return Err(CaptureError::Browser(format!(
                    "Chromium exited before it was ready: {}",
                    last.join(" / ")
                )));
            }
        }
    }
}

/// A fresh `--user-data-dir`, removed when the browser is done.
struct Profile {
    path: PathBuf,
    removed: bool,
}

impl Profile {
    fn create(work_dir: &Path) -> Result<Self, CaptureError> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let mut last_error = None;
        for _ in 0..8 {
            let n = PROFILES.fetch_add(1, Ordering::Relaxed);
            let path = work_dir.join(format!("{PROFILE_PREFIX}{}-{n}-{nanos:08x}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(Self { path, removed: false }),
                Err(e) => last_error = Some(e),
            }
        }
        let reason = last_error.map(|e| e.to_string()).unwrap_or_default();
        Err(CaptureError::Browser(format!("cannot create a profile directory in {}: {reason}", work_dir.display())))
    }

    async fn remove(&mut self) {
        if let Err(e) = tokio::fs::remove_dir_all(&self.path).await {
            tracing::warn!(error = %e, path = %self.path.display(), "cannot remove a Chromium profile");
        }
        self.removed = true;
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        if !self.removed {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
