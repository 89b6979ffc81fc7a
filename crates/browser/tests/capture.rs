//! Captures with a real Chromium (`CHROMIUM_PATH`, or `/usr/bin/chromium`) against pages served on
//! loopback by a tiny HTTP server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use compliance_browser::{BrowserIsolation, BrowserSettings, ChromiumRunner, local_user, running_as_root};
use compliance_ports::{BrowserRunner, Capture, CaptureError, CaptureRequest, Clickable, Field, PageError};
use secrecy::SecretString;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PAGE: &str = "<!doctype html><title>Evidence</title><body style='background:#2a6'><h1>Access review</h1>";

/// A server on 127.0.0.1 with a few fixed pages; counts the requests for `/secret`. Its pages
/// point at `other` (a server on 127.0.0.2, which is not allow-listed) too.
struct Server {
    port: u16,
    secret_hits: Arc<AtomicUsize>,
}

impl Server {
    async fn start() -> Self {
        Self::start_with_other(0).await
    }

    async fn start_with_other(other: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let secret_hits = Arc::new(AtomicUsize::new(0));
        let hits = secret_hits.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                tokio::spawn(answer(stream, port, other, hits.clone()));
            }
        });
        Self { port, secret_hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// A server on 127.0.0.2 that counts the connections it gets (and answers HTTP with a page).
struct Other {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Other {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buffer = [0_u8; 4096];
                    let _ = stream.read(&mut buffer).await;
                    let _ = stream.write_all(html("200 OK", "<!doctype html><h1>Internal</h1>").as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { port, connections }
    }

    fn hits(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

async fn answer(mut stream: TcpStream, port: u16, other: u16, secret_hits: Arc<AtomicUsize>) {
    let mut head = Vec::new();
    let mut buffer = [0_u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let response = match path.as_str() {
        "/" => html("200 OK", PAGE),
        "/missing" => html("404 Not Found", "<!doctype html><h1>Not found</h1>"),
        "/empty-missing" => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
        // The page itself arrives, but its image never does, so the load event never fires.
        "/hang" => html("200 OK", "<!doctype html><h1>Waiting</h1><img src='/never'>"),
        "/never" => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return;
        }
        "/redirect-inside" => {
            format!(
                "HTTP/1.1 302 Found\r\nLocation: http://localhost:{port}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
        }
        "/leaky" => html("200 OK", &format!("<!doctype html><h1>Leaky</h1><img src='http://localhost:{port}/secret'>")),
        "/embeds-other" => html(
            "200 OK",
            &format!(
                "<!doctype html><h1>Embeds</h1><img src='http://127.0.0.2:{other}/image.png'>\
                 <iframe src='http://127.0.0.2:{other}/frame'></iframe>"
            ),
        ),
        "/redirect-other" => format!(
            "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.2:{other}/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        "/script-away" => html(
            "200 OK",
            &format!(
                "<!doctype html><h1>Away</h1><script>location.href = 'http://127.0.0.2:{other}/';</script><img src='/slow'>"
            ),
        ),
        // The WebSocket is opened while an image holds the load event back.
        "/websocket-other" => html(
            "200 OK",
            &format!(
                "<!doctype html><h1>Socket</h1><script>window.socket = new WebSocket('ws://127.0.0.2:{other}/socket');</script>\
                 <img src='/slow'>"
            ),
        ),
        "/slow" => {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            html("404 Not Found", "no image")
        }
        "/form" => html(
            "200 OK",
            &format!(
                "<!doctype html><title>Form</title><h1>Search   the   archive</h1>\
                 <input id='q' placeholder='Search' onkeydown=\"if (event.key === 'Enter') out.textContent = 'Entered ' + q.value\">\
                 <button onclick=\"out.textContent = 'You searched for ' + q.value\">Go</button>\
                 <button onclick=\"setTimeout(() => out.textContent = 'Later', 300)\">Slowly</button>\
                 <a href='/'>Home</a> <a href='http://localhost:{port}/secret'>Secret</a><p id='out'></p>"
            ),
        ),
        "/secret" => {
            secret_hits.fetch_add(1, Ordering::SeqCst);
            html("200 OK", "secret")
        }
        _ => html("404 Not Found", "no such page"),
    };
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn html(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A runner that may open 127.0.0.1, with its own profile directory root.
fn runner(name: &str) -> (ChromiumRunner, PathBuf) {
    let (settings, work_dir) = settings(name);
    (ChromiumRunner::new(settings), work_dir)
}

fn settings(name: &str) -> (BrowserSettings, PathBuf) {
    let work_dir = std::env::temp_dir().join(format!("compliance-browser-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&work_dir).unwrap();
    let chromium_path =
        std::env::var_os("CHROMIUM_PATH").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let settings = BrowserSettings {
        chromium_path,
        allowed_hosts: vec!["127.0.0.1".into()],
        work_dir: work_dir.clone(),
        isolation: sandboxed(),
        ..BrowserSettings::default()
    };
    (settings, work_dir)
}

fn request(url: String, seconds: u64) -> CaptureRequest {
    CaptureRequest { url, instruction: "Screenshot the page".into(), timeout: Duration::from_secs(seconds) }
}

/// Processes whose command line names `dir` (Chromium and its helpers all carry the profile path).
fn processes_using(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(&needle)
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// Asserts that no browser is left: no process names the work directory and it is empty.
/// SIGKILL ends the group at once, but on a loaded machine a killed helper can still be listed
/// for a moment before the kernel has torn it down; two seconds is far beyond that.
fn assert_cleaned_up(work_dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = processes_using(work_dir);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = processes_using(work_dir);
    }
    assert!(left.is_empty(), "processes left: {left:?}");
    let profiles: Vec<_> = std::fs::read_dir(work_dir).unwrap().flatten().map(|e| e.path()).collect();
    assert!(profiles.is_empty(), "profiles left: {profiles:?}");
    std::fs::remove_dir(work_dir).unwrap();
}

fn assert_screenshot(capture: &Capture) {
    let png = &capture.png;
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "the PNG signature");
    assert_eq!(&png[12..16], b"IHDR");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1280, 800));
    assert!((1_000..5_000_000).contains(&png.len()), "a plausible size: {} bytes", png.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_loads_is_captured() {
    let server = Server::start().await;
    let (runner, work_dir) = runner("loads");
    let started = Instant::now();
    let capture = runner.capture(&request(server.url("/"), 20)).await.unwrap();
    eprintln!("captured in {:?}", started.elapsed());
    assert_eq!(capture.http_status, Some(200));
    assert_screenshot(&capture);
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_page_fails_with_its_status() {
    let server = Server::start().await;
    let (runner, work_dir) = runner("missing");
    assert_eq!(runner.capture(&request(server.url("/missing"), 20)).await, Err(CaptureError::HttpStatus(404)));
    // Without a body Chromium shows its own error page and reports a navigation error instead.
    assert_eq!(runner.capture(&request(server.url("/empty-missing"), 20)).await, Err(CaptureError::HttpStatus(404)));
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_is_unreachable() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let (runner, work_dir) = runner("closed");
    let result = runner.capture(&request(format!("http://127.0.0.1:{port}/"), 20)).await;
    assert_eq!(result, Err(CaptureError::Unreachable("net::ERR_CONNECTION_REFUSED".into())));
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_loads_times_out_and_the_browser_is_gone() {
    let server = Server::start().await;
    let (runner, work_dir) = runner("hang");
    let started = Instant::now();
    let result = runner.capture(&request(server.url("/hang"), 2)).await;
    let elapsed = started.elapsed();
    eprintln!("timed out after {elapsed:?}");
    assert_eq!(result, Err(CaptureError::Timeout(2)));
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_refused_host_is_refused() {
    let server = Server::start().await;
    let (runner, work_dir) = runner("redirect");
    let result = runner.capture(&request(server.url("/redirect-inside"), 20)).await;
    assert_eq!(result, Err(CaptureError::Refused("localhost is a loopback name".into())));
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_resources_on_refused_hosts_are_blocked() {
    let server = Server::start().await;
    let (runner, work_dir) = runner("leaky");
    let capture = runner.capture(&request(server.url("/leaky"), 20)).await.unwrap();
    assert_screenshot(&capture);
    assert_eq!(server.secret_hits.load(Ordering::SeqCst), 0, "the image on localhost was not requested");
    assert_cleaned_up(&work_dir);

    // The control: with localhost allowed, the same page does fetch it.
    let (mut settings, work_dir) = settings("leaky-allowed");
    settings.allowed_hosts.push("localhost".into());
    let runner = ChromiumRunner::new(settings);
    runner.capture(&request(server.url("/leaky"), 20)).await.unwrap();
    assert_eq!(server.secret_hits.load(Ordering::SeqCst), 1);
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_target_starts_no_browser() {
    let (runner, work_dir) = runner("refused");
    let result = runner.capture(&request("http://10.0.0.1/".into(), 20)).await;
    assert_eq!(result, Err(CaptureError::Refused("10.0.0.1 is a private address".into())));
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_captures_at_once_both_succeed() {
    let server = Server::start().await;
    let (runner, work_dir) = runner("two");
    let started = Instant::now();
    let page = request(server.url("/"), 30);
    let (first, second) = tokio::join!(runner.capture(&page), runner.capture(&page));
    eprintln!("two captures in {:?}", started.elapsed());
    assert_screenshot(&first.unwrap());
    assert_screenshot(&second.unwrap());
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_resources_on_a_refused_loopback_alias_never_reach_it() {
    let other = Other::start().await;
    let server = Server::start_with_other(other.port).await;
    let (runner, work_dir) = runner("embeds-other");
    let started = Instant::now();
    let capture = runner.capture(&request(server.url("/embeds-other"), 20)).await.unwrap();
    eprintln!("captured in {:?}", started.elapsed());
    assert_screenshot(&capture);
    assert_eq!(other.hits(), 0, "nothing reached 127.0.0.2");
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_a_refused_loopback_alias_is_refused() {
    let other = Other::start().await;
    let server = Server::start_with_other(other.port).await;
    let (runner, work_dir) = runner("redirect-other");
    let result = runner.capture(&request(server.url("/redirect-other"), 20)).await;
    assert_eq!(result, Err(CaptureError::Refused("127.0.0.2 is a loopback address".into())));
    assert_eq!(other.hits(), 0);
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_navigating_to_a_refused_host_is_refused() {
    let other = Other::start().await;
    let server = Server::start_with_other(other.port).await;
    let (runner, work_dir) = runner("script-away");
    let result = runner.capture(&request(server.url("/script-away"), 20)).await;
    assert_eq!(result, Err(CaptureError::Refused("127.0.0.2 is a loopback address".into())));
    assert_eq!(other.hits(), 0);
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_to_a_refused_host_never_reaches_it() {
    let other = Other::start().await;
    let server = Server::start_with_other(other.port).await;
    let (runner, work_dir) = runner("websocket-other");
    let capture = runner.capture(&request(server.url("/websocket-other"), 20)).await.unwrap();
    assert_screenshot(&capture);
    assert_eq!(other.hits(), 0, "the WebSocket did not reach 127.0.0.2");
    assert_cleaned_up(&work_dir);

    // The control: with 127.0.0.2 allowed, the same page does connect (through the proxy).
    let (mut settings, work_dir) = settings("websocket-allowed");
    settings.allowed_hosts.push("127.0.0.2".into());
    ChromiumRunner::new(settings).capture(&request(server.url("/websocket-other"), 20)).await.unwrap();
    assert!(other.hits() >= 1, "the WebSocket reached 127.0.0.2 when allowed");
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_with_a_comma_is_refused() {
    let (runner, work_dir) = runner("comma");
    let result = runner.capture(&request("http://127.0.0.1,evil.example/".into(), 20)).await;
    assert_eq!(
        result,
        Err(CaptureError::Refused("the host name may only contain ASCII letters, digits, '-', '_' and '.'".into()))
    );
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_profiles_are_swept_when_a_runner_is_created() {
    let (settings, work_dir) = settings("sweep");
    let stale = work_dir.join("compliance-browser-1-2-3");
    let fresh = work_dir.join("compliance-browser-4-5-6");
    let unrelated = work_dir.join("someone-else");
    for dir in [&stale, &fresh, &unrelated] {
        std::fs::create_dir_all(dir.join("Default")).unwrap();
    }
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::open(&stale).unwrap().set_modified(two_hours_ago).unwrap();
    let _runner = ChromiumRunner::new(settings);
    assert!(!stale.exists(), "the stale profile is removed");
    assert!(fresh.exists() && unrelated.exists(), "the others stay");
    std::fs::remove_dir_all(&work_dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_session_types_clicks_presses_and_reads_the_page() {
    let server = Server::start().await;
    let (runner, work_dir) = runner("session");
    let mut page = runner.open(&server.url("/form"), &[], Duration::from_secs(20)).await.unwrap();

    let value = SecretString::from("evidence".to_owned());
    page.type_into(Field::Named("search"), &value).await.unwrap();
    // The key goes to the focused element: the field just typed into.
    page.press("Enter").await.unwrap();
    assert!(page.contains_text("Entered evidence").await.unwrap());
    page.click(Clickable::Text("go")).await.unwrap();
    assert!(page.contains_text("you searched   for EVIDENCE").await.unwrap(), "white space and case are ignored");
    page.click(Clickable::Css("button:nth-of-type(2)")).await.unwrap();
    page.wait_for_text("Later", std::time::Instant::now() + Duration::from_secs(10)).await.unwrap();
    let missing = page.click(Clickable::Text("Delete everything")).await;
    assert!(matches!(&missing, Err(PageError::NotFound(why)) if why.contains("Delete everything")), "{missing:?}");
    let bad_selector = page.click(Clickable::Css("button[")).await;
    assert!(matches!(bad_selector, Err(PageError::NotFound(_))), "{bad_selector:?}");

    // The snapshot names the interactive elements; a reference clicks the same element again.
    let snapshot = page.snapshot().await.unwrap();
    assert_eq!((snapshot.url.as_str(), snapshot.title.as_str()), (server.url("/form").as_str(), "Form"));
    assert!(snapshot.text.contains("Search the archive"), "{:?}", snapshot.text);
    let home = snapshot.elements.iter().find(|e| e.name == "Home").unwrap();
    assert_eq!(home.role, "link");
    assert!(snapshot.elements.iter().any(|e| e.role == "textbox" && e.name == "Search"), "{:?}", snapshot.elements);
    page.click(Clickable::Reference(&home.reference)).await.unwrap();
    assert_eq!(page.current_url().await.unwrap(), server.url("/"), "the click waited for the navigation");
    assert!(page.contains_text("Access review").await.unwrap());
    assert_eq!(&page.screenshot().await.unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    page.close().await;
    assert_cleaned_up(&work_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_session_never_goes_where_the_target_may_not() {
    let server = Server::start().await;
    let (runner, work_dir) = runner("session-refused");
    let mut page = runner.open(&server.url("/form"), &[], Duration::from_secs(20)).await.unwrap();
    let secret = format!("http://localhost:{}/secret", server.port);
    let refused = page.navigate(&secret).await;
    assert_eq!(refused, Err(PageError::Refused("localhost is a loopback name".into())));
    let clicked = page.click(Clickable::Text("Secret")).await;
    assert!(matches!(clicked, Err(PageError::Refused(_))), "a link to a refused host: {clicked:?}");
    assert_eq!(server.secret_hits.load(Ordering::SeqCst), 0, "localhost was never reached");
    // Dropped without closing (a cancelled run): the browser is killed all the same.
    drop(page);
    assert_cleaned_up(&work_dir);

    let (slow, work_dir) = self::runner("session-never-loads");
    let result = slow.open(&server.url("/hang"), &[], Duration::from_secs(2)).await.err();
    assert_eq!(result, Some(PageError::Timeout("the page did not load within 2 seconds".into())));
    assert_cleaned_up(&work_dir);
}

/// Chromium's sandbox on: as root (tests and CI), as the unprivileged `nobody`.
fn sandboxed() -> BrowserIsolation {
    let nobody = local_user("nobody").unwrap();
    assert!(!running_as_root() || nobody.is_some(), "as root, the sandboxed browser runs as `nobody`");
    BrowserIsolation::choose(running_as_root(), nobody, false)
}
