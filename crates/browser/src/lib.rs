//! An adapter for the [`BrowserRunner`] port: [`ChromiumRunner`] drives a real headless Chromium
//! over the Chrome DevTools Protocol (CDP) to screenshot the page an automation points at.
//!
//! # Choices
//!
//! - **Raw CDP over the DevTools pipe**, not `chromiumoxide` or `headless_chrome`. Those crates
//!   generate bindings for the whole protocol (hundreds of thousands of lines, minutes of
//!   compilation on a small machine) while a capture needs about ten commands. The `cdp` module is a
//!   client over Chromium's `--remote-debugging-pipe` (fds 3 and 4, NUL-separated JSON): send a
//!   command, read the answer with the same id, keep the events that arrive meanwhile. No DevTools
//!   TCP port exists for another local process or a page to reach. Sessions are "flat"
//!   (`Target.attachToTarget` with `flatten: true`): page commands and events carry a `sessionId`.
//! - **A process per capture.** Each capture starts Chromium with a fresh `--user-data-dir`
//!   (cookies, cache and service workers never leak from one tenant's page to another's) as the
//!   leader of its own process group, with an emptied environment (`PATH`, `TMPDIR`, `LANG`,
//!   `FONTCONFIG_PATH` when set, and `HOME` set to the profile), and ends the whole group
//!   afterwards, on errors, timeouts and cancellation too; the profile directory is removed, and
//!   profiles older than an hour that a crash left in [`BrowserSettings::work_dir`] are removed
//!   when a runner is created. Downloads are denied (`Browser.setDownloadBehavior`). Starting
//!   Chromium costs about a second, which is acceptable for automations.
//! - **The sandbox** ([`BrowserIsolation`]): Chromium's own sandbox is on. A service running as
//!   root, where Chromium cannot run its sandbox, starts it as an unprivileged browser user (its
//!   uid and primary group, no supplementary groups, a profile directory it owns), which cannot read
//!   the service's data directory; without one, no browser starts unless the operator chose
//!   `--no-sandbox` explicitly, which [`ChromiumRunner::new`] logs as dangerous.
//! - **Two pools.** Automations' browsers ([`BrowserSettings::max_concurrent`]; a run waits for a
//!   slot, outside its timeout) and printing browsers ([`BrowserSettings::max_prints`]; a print
//!   waits at most [`BrowserSettings::print_wait`], then is [`PrintError::Busy`]) never wait for
//!   each other.
//! - **Time.** A capture takes at most the request's timeout plus [`LAUNCH_ALLOWANCE`] (15 s):
//!   Chromium's start and the DevTools connection get the allowance (a slow start is reported as a
//!   browser failure, not as a slow page), navigation, load and screenshot the request's timeout
//!   ([`CaptureError::Timeout`]). Before that, the target's DNS lookup takes at most 10 s; after
//!   it, ending the browser at most about 3 s.
//! - **The run.** `Page.navigate`; an `errorText` (`net::ERR_NAME_NOT_RESOLVED`,
//!   `net::ERR_CONNECTION_REFUSED`, …) is [`CaptureError::Unreachable`]. Then the wait for
//!   `Page.loadEventFired`; the main document's status comes from `Network.responseReceived` (type
//!   `Document`, top frame), and a status of 400 or more fails the run with
//!   [`CaptureError::HttpStatus`] without a screenshot (an error page is not evidence). Otherwise
//!   `Page.captureScreenshot` of the 1280×800 viewport, as PNG.
//! - **Page sessions** ([`BrowserRunner::open`]): the same launch, proxy, checks and load as a
//!   capture, then the page stays open for the executors to drive one action at a time (the
//!   `session` module documents its matching rules). Every navigation (`navigate`, a link, a form,
//!   a redirect) is checked as the target is; each action is bounded by the session's timeout; the
//!   browser's slot, proxy and process group live as long as the page, which ends them on `close`
//!   or when dropped.
//!
//! - **Printing** ([`DocumentPrinter::print_pdf`], the `print` module): a browser per document as
//!   for a capture, in a slot of the printing pool, but with no network at all: the HTML is
//!   written into a blank page (`Page.setDocumentContent`), scripts are disabled, every request is
//!   failed and the proxy is a local black hole; then `Page.printToPDF` on A4. A browser that
//!   cannot start is [`PrintError::Unavailable`]; the print takes at most
//!   [`BrowserSettings::default_timeout`] after the start ([`PrintError::Timeout`]).
//!
//! # Outbound rules
//!
//! An automation's URL is chosen by a tenant, and the browser runs inside our network, so the
//! browser must not become a way to reach internal services (SSRF). [`BrowserRunner::check_target`]
//! (and again the start of every capture) allows only absolute `http`/`https` URLs whose host is
//! spelled with ASCII letters, digits, `-`, `_` and `.` (or is an IP literal) and resolves
//! exclusively to public addresses: loopback, private (RFC 1918, `fc00::/7`), link-local
//! (`169.254.0.0/16`, `fe80::/10`), unspecified, broadcast, multicast and reserved, carrier-grade
//! NAT (`100.64.0.0/10`), IETF protocol assignments (`192.0.0.0/24`), benchmarking
//! (`198.18.0.0/15`), local-use NAT64 (`64:ff9b:1::/48`) and cloud metadata addresses
//! (`169.254.169.254`, `100.100.100.200`, `168.63.129.16`, `fd00:ec2::254`) are refused, as are the
//! names `localhost`, `*.localhost` and `metadata.google.internal`, unless the host is in
//! [`BrowserSettings::allowed_hosts`] (exact, case-insensitive). IPv4-mapped, NAT64
//! (`64:ff9b::/96`), 6to4 (`2002::/16`) and IPv4-compatible (`::a.b.c.d`, refused anyway) IPv6
//! addresses are judged by their IPv4 address. A host that does not resolve is
//! [`CaptureError::Unreachable`].
//!
//! - **Egress through our own proxy.** Each capture starts a forward proxy on `127.0.0.1:0`, and
//!   Chromium gets `--proxy-server` pointing at it with `--proxy-bypass-list=<-loopback>` (so even
//!   loopback goes through it) and WebRTC restricted to proxied connections. Every connection the
//!   browser makes (documents, redirects, sub-resources, frames, workers, WebSockets, preconnects)
//!   is a `CONNECT host:port` or an absolute-URI HTTP request to the proxy, which resolves the
//!   host itself, checks it with the rules above and connects to an address it checked. DNS
//!   rebinding, on the target's host or any other, has no second lookup to exploit. A refused
//!   destination is answered `403`.
//! - **Reporting**: every request is also intercepted with the browser-wide `Fetch` domain and
//!   checked by the same rules (one verdict per origin and capture); a refused one fails with
//!   `BlockedByClient`. A main-document request refused by either (a redirect, a script or a meta
//!   refresh sending the page to an internal host, at any time before the screenshot) fails the
//!   capture with [`CaptureError::Refused`].
//!
//! Known limits: the proxy listens on loopback for the capture's duration, where other local
//! processes could use it too (to reach only what the rules allow). UDP (WebRTC without a relay,
//! QUIC) is not proxied and is disabled rather than checked.

mod cdp;
mod chromium;
mod outbound;
mod page;
mod print;
mod proxy;
mod session;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use compliance_ports::{BrowserPage, BrowserRunner, Capture, CaptureError, CaptureRequest, PageError};
#[cfg(doc)]
use compliance_ports::{DocumentPrinter, PrintError};
use serde_json::json;
use tokio::sync::Semaphore;

use crate::cdp::Cdp;
use crate::chromium::Chromium;

/// How long Chromium may take to start and accept the DevTools connection, on top of the
/// request's timeout.
pub const LAUNCH_ALLOWANCE: Duration = Duration::from_secs(15);

/// How [`ChromiumRunner`] runs Chromium.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserSettings {
    /// The Chromium executable; `/usr/bin/chromium` by default.
    pub chromium_path: PathBuf,
    /// Hosts (names or IP literals) that may be opened although they resolve to internal
    /// addresses: exact, case-insensitive matches.
    pub allowed_hosts: Vec<String>,
    /// How many browsers may run at once; 2 by default (at least 1 is used).
    pub max_concurrent: usize,
    /// The timeout of a capture whose request has a zero timeout; 30 seconds by default.
    pub default_timeout: Duration,
    /// Where the fresh profile directories are created; the system's temporary directory by
    /// default. A browser user must be able to enter it (`/tmp` is fine).
    pub work_dir: PathBuf,
    /// How many browsers may print documents at once, apart from [`BrowserSettings::max_concurrent`]
    /// (automations never take a printing slot, nor prints an automation's); 1 by default.
    pub max_prints: usize,
    /// How long a print waits for a printing slot before it is refused as
    /// [`PrintError::Busy`]; 10 seconds by default.
    pub print_wait: Duration,
    /// Which sandbox Chromium runs in.
    pub isolation: BrowserIsolation,
}

/// How Chromium is kept from the service's own files and privileges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrowserIsolation {
    /// Chromium's own sandbox (user namespaces), in the service's user, which is not root.
    Sandbox,
    /// The service runs as root: Chromium runs as this unprivileged user and group (no
    /// supplementary groups), with its sandbox, in a profile directory it owns.
    User {
        /// The browser user's id.
        uid: u32,
        /// The browser user's primary group.
        gid: u32,
    },
    /// `--no-sandbox`: the operator chose it explicitly. A renderer exploit runs with the
    /// service's privileges.
    NoSandbox,
    /// Root without a browser user and without the operator's choice: no browser is started
    /// (captures fail, prints are [`PrintError::Unavailable`]).
    Refused,
}

impl BrowserIsolation {
    /// What a service that runs as `root` (or not) gets: with a browser user, that user; with the
    /// operator's explicit `no_sandbox`, no sandbox; as root without either, refused; otherwise
    /// Chromium's own sandbox.
    pub fn choose(root: bool, user: Option<(u32, u32)>, no_sandbox: bool) -> Self {
        match (root, user, no_sandbox) {
            (true, Some((uid, gid)), _) => Self::User { uid, gid },
            (_, _, true) => Self::NoSandbox,
            (true, None, false) => Self::Refused,
            (false, _, false) => Self::Sandbox,
        }
    }
}

/// Says in the log when `isolation` is dangerous (no sandbox) or refused, and why: for the service
/// to call once at start-up.
pub fn log_isolation(isolation: &BrowserIsolation) {
    match isolation {
        BrowserIsolation::NoSandbox => tracing::warn!(
            "Chromium runs WITHOUT its sandbox (AUTOMATION_BROWSER_NO_SANDBOX): it renders pages tenants choose, and a \
             renderer exploit would run with this service's privileges, able to read its data directory (vault.keys, \
             the URL signing key), its database and every secret in reach; run the service as a non-root user, set \
             AUTOMATION_BROWSER_USER, or run the browser in a sidecar without secrets (docs/operations.md)"
        ),
        BrowserIsolation::Refused => {
            tracing::error!("{}; automations and PDF documents fail until one is", chromium::REFUSED);
        }
        BrowserIsolation::Sandbox | BrowserIsolation::User { .. } => {}
    }
}

/// Whether this process runs as root (its `/proc/self` belongs to uid 0).
pub fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0)
}

/// The user id and primary group id of the local user `name` (from `/etc/passwd`); `None` when
/// there is no such user.
pub fn local_user(name: &str) -> std::io::Result<Option<(u32, u32)>> {
    let passwd = std::fs::read_to_string("/etc/passwd")?;
    Ok(passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let (Some(user), Some(_), Some(uid), Some(gid)) = (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return None;
        };
        (user == name).then(|| Some((uid.parse().ok()?, gid.parse().ok()?))).flatten()
    }))
}

impl Default for BrowserSettings {
    fn default() -> Self {
        Self {
            chromium_path: PathBuf::from("/usr/bin/chromium"),
            allowed_hosts: Vec::new(),
            max_concurrent: 2,
            default_timeout: Duration::from_secs(30),
            work_dir: std::env::temp_dir(),
            max_prints: 1,
            print_wait: Duration::from_secs(10),
            isolation: BrowserIsolation::Sandbox,
        }
    }
}

/// A [`BrowserRunner`] that starts a headless Chromium per capture.
#[derive(Debug)]
pub struct ChromiumRunner {
    settings: BrowserSettings,
    /// Automations' browsers.
    slots: Arc<Semaphore>,
    /// Printing browsers: a pool of its own, so that prints and automations never wait for each
    /// other.
    print_slots: Arc<Semaphore>,
}

impl ChromiumRunner {
    pub fn new(settings: BrowserSettings) -> Self {
        let slots = Arc::new(Semaphore::new(settings.max_concurrent.max(1)));
        let print_slots = Arc::new(Semaphore::new(settings.max_prints.max(1)));
        chromium::sweep_stale_profiles(&settings.work_dir);
        Self { settings, slots, print_slots }
    }

    pub fn settings(&self) -> &BrowserSettings {
        &self.settings
    }
}

#[async_trait]
impl BrowserRunner for ChromiumRunner {
    async fn check_target(&self, url: &str, granted_hosts: &[String]) -> Result<(), CaptureError> {
        outbound::check(url, &self.allowed_hosts(granted_hosts)).await.map(|_| ())
    }

    async fn capture(&self, request: &CaptureRequest) -> Result<Capture, CaptureError> {
        let target = outbound::check(&request.url, &self.settings.allowed_hosts).await?;
        let timeout = self.timeout(request.timeout);
        let _slot = self.slots.acquire().await.map_err(|_| CaptureError::Browser("the runner is closed".into()))?;
        let (chromium, tab) = self.launch(self.settings.allowed_hosts.clone()).await?;
        let result = match tab {
            Ok(mut tab) => {
                let run = tokio::time::timeout(timeout, page::capture(&mut tab, &target));
                let result = run.await.unwrap_or_else(|_| Err(CaptureError::Timeout(whole_seconds(timeout))));
                // A graceful exit lets Chromium end its renderers; `shutdown` kills it otherwise.
                let _ = tokio::time::timeout(EXIT_COMMAND, tab.cdp.send("Browser.close", json!({}), None)).await;
                result
            }
            Err(error) => Err(error),
        };
        chromium.shutdown().await;
        result
    }

    async fn open(
        &self,
        url: &str,
        granted_hosts: &[String],
        timeout: Duration,
    ) -> Result<Box<dyn BrowserPage>, PageError> {
        let allowed_hosts = self.allowed_hosts(granted_hosts);
        let target = outbound::check(url, &allowed_hosts).await?;
        let timeout = self.timeout(timeout);
        let slot =
            self.slots.clone().acquire_owned().await.map_err(|_| PageError::Browser("the runner is closed".into()))?;
        let (chromium, tab) = self.launch(allowed_hosts).await?;
        let mut tab = match tab {
            Ok(tab) => tab,
            Err(error) => {
                chromium.shutdown().await;
                return Err(error.into());
            }
        };
        let loaded = tokio::time::timeout(timeout, tab.navigate(target.url.as_str())).await;
        let page = session::ChromiumPage::new(tab, chromium, slot, timeout);
        match loaded {
            Ok(Ok(())) => Ok(Box::new(page)),
            Ok(Err(error)) => {
                page.end().await;
                Err(error.into())
            }
            Err(_) => {
                page.end().await;
                Err(CaptureError::Timeout(whole_seconds(timeout)).into())
            }
        }
    }
}

impl ChromiumRunner {
    /// `AUTOMATION_ALLOWED_HOSTS` (every organization's) and the hosts granted to this one.
    fn allowed_hosts(&self, granted_hosts: &[String]) -> Vec<String> {
        self.settings.allowed_hosts.iter().chain(granted_hosts).cloned().collect()
    }

    fn timeout(&self, requested: Duration) -> Duration {
        match requested.is_zero() {
            true => self.settings.default_timeout,
            false => requested,
        }
    }

    /// Starts Chromium behind a fresh egress proxy and opens a blank tab in it, both letting
    /// `allowed_hosts` through. The browser is returned even when the tab could not be opened,
    /// for the caller to shut it down.
    async fn launch(
        &self,
        allowed_hosts: Vec<String>,
    ) -> Result<(Chromium, Result<page::Tab, CaptureError>), CaptureError> {
        let settings = &self.settings;
        let proxy = proxy::Proxy::start(allowed_hosts.clone()).await?;
        let args = [
            format!("--proxy-server=http://127.0.0.1:{}", proxy.port),
            // Loopback too: Chromium bypasses proxies for it by default.
            "--proxy-bypass-list=<-loopback>".to_owned(),
            // WebRTC may only use the proxy (which carries no UDP): no direct peer connections.
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
            "--webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
        ];
        let launch_deadline = tokio::time::Instant::now() + LAUNCH_ALLOWANCE;
        let (chromium, mut cdp) =
            Chromium::launch(&settings.chromium_path, &settings.work_dir, &settings.isolation, &args)?;
        let tab = match tokio::time::timeout_at(launch_deadline, ready(&mut cdp)).await {
            Ok(Ok(())) => {
                let opening = page::Tab::open(cdp, proxy, allowed_hosts);
                match tokio::time::timeout_at(launch_deadline, opening).await {
                    Ok(tab) => tab,
                    Err(_) => Err(CaptureError::Browser("the browser did not open a page in time".into())),
                }
            }
            // On a failure, `shutdown` waits a moment for an exit that will not come, then kills
            // the process.
            Ok(Err(error)) => Err(CaptureError::Browser(format!("{}: {}", error.0, chromium.stderr_tail()))),
            Err(_) => Err(CaptureError::Browser(format!(
                "Chromium did not start within {} seconds",
                LAUNCH_ALLOWANCE.as_secs()
            ))),
        };
        Ok((chromium, tab))
    }
}

/// Waits until the browser answers on its DevTools pipe (it has started).
async fn ready(cdp: &mut Cdp) -> Result<(), cdp::CdpError> {
    cdp.call("Browser.getVersion", json!({}), None).await.map(|_| ())
}

/// How long sending `Browser.close` may take.
const EXIT_COMMAND: Duration = Duration::from_secs(1);

/// A timeout in whole seconds, rounded up (as the user set it).
fn whole_seconds(timeout: Duration) -> u64 {
    timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0)
}
