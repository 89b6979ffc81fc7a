//! How Chromium is kept from the service: its sandbox on (as root: as the unprivileged `nobody`),
//! DevTools over a pipe instead of a TCP port, no browser at all as root without a browser user or
//! the operator's explicit choice, and a separate, bounded printing pool.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use compliance_browser::{BrowserIsolation, BrowserSettings, ChromiumRunner, local_user, running_as_root};
use compliance_ports::{BrowserRunner, CaptureRequest, DocumentPrinter, PrintError};

fn settings(name: &str, isolation: BrowserIsolation) -> BrowserSettings {
    let work_dir = std::env::temp_dir().join(format!("compliance-isolation-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&work_dir).unwrap();
    let chromium_path =
        std::env::var_os("CHROMIUM_PATH").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    BrowserSettings { chromium_path, work_dir, isolation, ..BrowserSettings::default() }
}

/// The sandboxed isolation this machine allows: as root, the user `nobody`.
fn sandboxed() -> (BrowserIsolation, u32) {
    let nobody = local_user("nobody").unwrap().expect("the user nobody exists");
    match running_as_root() {
        true => (BrowserIsolation::choose(true, Some(nobody), false), nobody.0),
        false => (BrowserIsolation::choose(false, None, false), own_uid()),
    }
}

fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").unwrap().uid()
}

/// `(real uid, command line)` of every process whose command line names `dir`.
fn processes_using(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else { continue };
        let uid =
            status.lines().find_map(|line| line.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().next());
        if let (true, Some(uid)) = (cmdline.contains(&needle), uid.and_then(|uid| uid.parse().ok())) {
            found.push((uid, cmdline));
        }
    }
    found
}

/// A document of a few pages: its browser (which takes about a second to start) holds its slot
/// well past a short wait.
fn long_document() -> String {
    let rows: String = (0..300).map(|n| format!("<tr><td>Row {n}</td><td>{}</td></tr>", "text ".repeat(20))).collect();
    format!("<!DOCTYPE html><html><body><table>{rows}</table></body></html>")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_chromium_process_runs_sandboxed_as_the_browser_user_and_without_a_devtools_port() {
    let (isolation, uid) = sandboxed();
    let settings = settings("sandboxed", isolation);
    let work_dir = settings.work_dir.clone();
    let runner = std::sync::Arc::new(ChromiumRunner::new(settings));
    let printing = tokio::spawn({
        let runner = runner.clone();
        async move { runner.print_pdf(&long_document()).await }
    });
    let mut seen = Vec::new();
    while !printing.is_finished() {
        seen.extend(processes_using(&work_dir));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pdf = printing.await.unwrap().unwrap();
    assert!(pdf.starts_with(b"%PDF-"), "printed with the sandbox on");
    assert!(seen.iter().any(|(_, cmdline)| cmdline.contains("--type=renderer")), "a renderer was seen: {seen:?}");
    for (process_uid, cmdline) in &seen {
        assert_eq!(*process_uid, uid, "runs as the browser user: {cmdline}");
        assert!(!cmdline.contains("--no-sandbox"), "sandboxed: {cmdline}");
        assert!(!cmdline.contains("--remote-debugging-port"), "no DevTools port: {cmdline}");
    }
    assert!(seen.iter().any(|(_, cmdline)| cmdline.contains("--remote-debugging-pipe")), "DevTools over a pipe");
    std::fs::remove_dir_all(&work_dir).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_isolation_starts_no_browser_and_says_what_to_set() {
    let settings = settings("refused", BrowserIsolation::choose(true, None, false));
    assert_eq!(settings.isolation, BrowserIsolation::Refused, "root, no browser user, no explicit choice");
    let work_dir = settings.work_dir.clone();
    let runner = ChromiumRunner::new(settings);
    let error = runner.print_pdf("<p>x</p>").await.unwrap_err();
    let PrintError::Unavailable(why) = error else { panic!("unavailable: {error:?}") };
    for setting in ["AUTOMATION_BROWSER_USER", "AUTOMATION_BROWSER_NO_SANDBOX"] {
        assert!(why.contains(setting), "{why}");
    }
    let request = CaptureRequest {
        url: "http://93.184.215.14/".into(),
        instruction: "Screenshot".into(),
        timeout: Duration::from_secs(5),
    };
    let error = runner.capture(&request).await.unwrap_err();
    assert!(error.to_string().contains("AUTOMATION_BROWSER_USER"), "{error}");
    assert!(processes_using(&work_dir).is_empty(), "nothing was started");
    std::fs::remove_dir_all(&work_dir).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_print_waits_a_bounded_time_for_the_printing_pool_then_is_busy() {
    let (isolation, _) = sandboxed();
    let settings =
        BrowserSettings { max_prints: 1, print_wait: Duration::from_millis(200), ..settings("busy", isolation) };
    let work_dir = settings.work_dir.clone();
    let runner = std::sync::Arc::new(ChromiumRunner::new(settings));
    let first = tokio::spawn({
        let runner = runner.clone();
        async move { runner.print_pdf(&long_document()).await }
    });
    // The first print holds the only slot once its browser's profile exists.
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_dir(&work_dir).unwrap().next().is_none() {
        assert!(Instant::now() < deadline, "the first print started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    let error = runner.print_pdf("<p>second</p>").await.unwrap_err();
    assert!(matches!(error, PrintError::Busy { retry_after } if !retry_after.is_zero()), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "refused after the wait, not after the first print");
    assert!(first.await.unwrap().is_ok(), "the first print finished");
    assert!(runner.print_pdf("<p>third</p>").await.is_ok(), "the slot is free again");
    std::fs::remove_dir_all(&work_dir).unwrap();
}
