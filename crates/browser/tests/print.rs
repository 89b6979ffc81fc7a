//! Printing HTML to PDF with a real Chromium (`CHROMIUM_PATH`, or `/usr/bin/chromium`); the PDF's
//! text is read back with poppler's `pdftotext`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use compliance_browser::{BrowserIsolation, BrowserSettings, ChromiumRunner, local_user, running_as_root};
use compliance_ports::{DocumentPrinter, PrintError};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

fn runner() -> ChromiumRunner {
    let chromium_path =
        std::env::var_os("CHROMIUM_PATH").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    ChromiumRunner::new(BrowserSettings { chromium_path, isolation: sandboxed(), ..BrowserSettings::default() })
}

async fn pdf_text(pdf: &[u8]) -> String {
    let mut child = tokio::process::Command::new("pdftotext")
        .args(["-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("pdftotext (poppler-utils) is installed");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(pdf).await.unwrap();
    drop(stdin);
    let output = child.wait_with_output().await.unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

/// A server on loopback that counts the connections it gets.
async fn counting_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let count = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await;
        }
    });
    (port, hits)
}

#[tokio::test(flavor = "multi_thread")]
async fn prints_html_to_an_a4_pdf_without_running_scripts_or_fetching_anything() {
    let (port, hits) = counting_server().await;
    let html = format!(
        "<!DOCTYPE html><html><head><meta charset=utf-8><link rel=stylesheet href=http://127.0.0.1:{port}/s.css>\
         <style>h1{{color:#036}}</style></head><body><h1>Access control</h1><p>Least privilege, always.</p>\
         <img src=http://127.0.0.1:{port}/x.png><p id=s>static</p>\
         <script>document.getElementById('s').textContent='SCRIPT RAN'</script>\
         <table><tr><td>Cell one</td><td>Cell two</td></tr></table></body></html>"
    );
    let pdf = runner().print_pdf(&html).await.unwrap();
    assert!(pdf.starts_with(b"%PDF-"), "a PDF");
    let text = pdf_text(&pdf).await;
    for expected in ["Access control", "Least privilege, always.", "static", "Cell one", "Cell two"] {
        assert!(text.contains(expected), "{expected:?} in {text:?}");
    }
    assert!(text.replace(' ', "").contains("1/1"), "the footer numbers the pages: {text:?}");
    assert!(!text.contains("SCRIPT RAN"), "no script ran: {text:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was fetched");
    let media_box = String::from_utf8_lossy(&pdf).contains("/MediaBox [0 0 595");
    assert!(media_box, "A4 pages (595 × 842 points)");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_browser_printing_is_unavailable() {
    let runner = ChromiumRunner::new(BrowserSettings {
        chromium_path: PathBuf::from("/nonexistent/chromium"),
        ..BrowserSettings::default()
    });
    let error = runner.print_pdf("<p>x</p>").await.unwrap_err();
    assert!(matches!(error, PrintError::Unavailable(_)), "{error:?}");
}

/// Chromium's sandbox on: as root (tests and CI), as the unprivileged `nobody`.
fn sandboxed() -> BrowserIsolation {
    let nobody = local_user("nobody").unwrap();
    assert!(!running_as_root() || nobody.is_some(), "as root, the sandboxed browser runs as `nobody`");
    BrowserIsolation::choose(running_as_root(), nobody, false)
}
