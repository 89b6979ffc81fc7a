//! One headless Chromium process with its own fresh profile directory, driven over its DevTools
//! pipe, sandboxed as [`BrowserIsolation`] says.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use compliance_ports::CaptureError;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};

use crate::BrowserIsolation;
use crate::cdp::Cdp;

/// Starts Chromium with its DevTools pipe on fds 3 (commands) and 4 (messages), which the standard
/// library cannot set up without `unsafe`: the shell moves our stdin and stdout pipes there and
/// gives Chromium `/dev/null` as stdin and stdout instead.
const PIPE_SHIM: &str = "exec \"$0\" \"$@\" 3<&0 4>&1 </dev/null >/dev/null";

/// How many of Chromium's last stderr lines a start failure reports.
const STDERR_TAIL: usize = 5;

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
    /// Chromium's last lines on stderr, for a start that failed.
    stderr_tail: Arc<Mutex<Vec<String>>>,
}

impl Chromium {
    /// Starts Chromium and returns it with a DevTools client over its pipe; the browser answers
    /// once it is up, which the caller bounds with its own deadline.
    pub(crate) fn launch(
        executable: &Path,
        work_dir: &Path,
        isolation: &BrowserIsolation,
        extra_args: &[String],
    ) -> Result<(Self, Cdp), CaptureError> {
        let sandbox_flag = match isolation {
            BrowserIsolation::Refused => return Err(CaptureError::Browser(REFUSED.into())),
            BrowserIsolation::NoSandbox => Some("--no-sandbox"),
            BrowserIsolation::Sandbox | BrowserIsolation::User { .. } => None,
        };
        let profile = Profile::create(work_dir, isolation)?;
        let mut command = Command::new("/bin/sh");
        // Only what Chromium needs from our environment: no secrets of the service (database
        // URLs, keys) reach a process that runs tenants' pages.
        command.env_clear().env("HOME", &profile.path);
        for name in ["PATH", "TMPDIR", "LANG", "FONTCONFIG_PATH"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        if let BrowserIsolation::User { uid, gid } = isolation {
            // As root, `uid` also drops every supplementary group.
            command.uid(*uid).gid(*gid);
        }
        let mut child = command
            .arg("-c")
            .arg(PIPE_SHIM)
            .arg(executable)
            .args([
                "--headless=new",
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
                "--remote-debugging-pipe",
                "--window-size=1280,800",
            ])
            .args(sandbox_flag)
            .arg(format!("--user-data-dir={}", profile.path.display()))
            .args(extra_args)
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .map_err(|e| CaptureError::Browser(format!("cannot start {}: {e}", executable.display())))?;
        let group = child.id();
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_tail(stderr, stderr_tail.clone()));
        }
        let (Some(commands), Some(messages)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(CaptureError::Browser("Chromium's DevTools pipe is not captured".into()));
        };
        let chromium = Self { child, group, profile, stderr_tail };
        Ok((chromium, Cdp::over_pipe(commands, messages)))
    }

    /// Chromium's last lines on stderr (why it did not start, when it did not).
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr_tail.lock().unwrap_or_else(PoisonError::into_inner).join(" / ")
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

/// What a launch answers when the service runs as root without a browser user and without the
/// operator's explicit choice to run Chromium unsandboxed.
pub(crate) const REFUSED: &str = "Chromium is not started: the service runs as root, where Chromium's sandbox cannot \
    run, and neither a browser user (AUTOMATION_BROWSER_USER) nor running without the sandbox \
    (AUTOMATION_BROWSER_NO_SANDBOX=true) is configured";

/// Drains Chromium's stderr (so it never blocks on a full pipe) until it exits, keeping the last
/// lines.
async fn keep_tail(stderr: ChildStderr, tail: Arc<Mutex<Vec<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
        if tail.len() == STDERR_TAIL {
            tail.remove(0);
        }
        tail.push(line);
    }
}

/// A fresh `--user-data-dir`, removed when the browser is done.
struct Profile {
    path: PathBuf,
    removed: bool,
}

impl Profile {
    /// A directory only the browser's user may enter: created 0700, and given to the browser
    /// user when there is one.
    fn create(work_dir: &Path, isolation: &BrowserIsolation) -> Result<Self, CaptureError> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let mut last_error = None;
        for _ in 0..8 {
            let n = PROFILES.fetch_add(1, Ordering::Relaxed);
            let path = work_dir.join(format!("{PROFILE_PREFIX}{}-{n}-{nanos:08x}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    let profile = Self { path, removed: false };
                    if let BrowserIsolation::User { uid, gid } = isolation {
                        std::os::unix::fs::chown(&profile.path, Some(*uid), Some(*gid)).map_err(|e| {
                            CaptureError::Browser(format!("cannot give the profile directory to the browser user: {e}"))
                        })?;
                    }
                    return Ok(profile);
                }
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
