//! The outbound rules of `check_target`, without starting a browser.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use compliance_browser::{BrowserSettings, ChromiumRunner};
use compliance_ports::{BrowserRunner, CaptureError};

fn runner(allowed_hosts: &[&str]) -> ChromiumRunner {
    let allowed_hosts = allowed_hosts.iter().map(|host| (*host).to_owned()).collect();
    ChromiumRunner::new(BrowserSettings { allowed_hosts, ..BrowserSettings::default() })
}

async fn refusal(runner: &ChromiumRunner, url: &str) -> String {
    match runner.check_target(url, &[]).await {
        Err(CaptureError::Refused(reason)) => reason,
        other => panic!("{url}: expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn internal_addresses_are_refused() {
    let runner = runner(&[]);
    assert_eq!(refusal(&runner, "http://127.0.0.1/").await, "127.0.0.1 is a loopback address");
    assert_eq!(refusal(&runner, "https://10.0.0.1/admin").await, "10.0.0.1 is a private address");
    assert_eq!(
        refusal(&runner, "http://169.254.169.254/latest/meta-data/").await,
        "169.254.169.254 is a cloud metadata address"
    );
    assert_eq!(refusal(&runner, "http://[::1]:8080/").await, "::1 is a loopback address");
    assert_eq!(refusal(&runner, "http://[fd00:ec2::254]/").await, "fd00:ec2::254 is a cloud metadata address");
    assert_eq!(refusal(&runner, "http://100.64.1.1/").await, "100.64.1.1 is a carrier-grade NAT address");
    assert_eq!(refusal(&runner, "http://[::ffff:192.168.0.1]/").await, "::ffff:192.168.0.1 is a private address");
    // Other spellings of an address are normalised before the check.
    assert_eq!(refusal(&runner, "http://2130706433/").await, "127.0.0.1 is a loopback address");
}

#[tokio::test]
async fn internal_names_are_refused() {
    let runner = runner(&[]);
    assert_eq!(refusal(&runner, "http://localhost:3000/").await, "localhost is a loopback name");
    assert_eq!(refusal(&runner, "http://LocalHost./").await, "localhost is a loopback name");
    assert_eq!(refusal(&runner, "http://app.localhost/").await, "app.localhost is a loopback name");
    assert_eq!(
        refusal(&runner, "http://metadata.google.internal/computeMetadata/v1/").await,
        "metadata.google.internal is a cloud metadata name"
    );
}

#[tokio::test]
async fn other_schemes_and_relative_urls_are_refused() {
    let runner = runner(&[]);
    assert_eq!(refusal(&runner, "file:///etc/passwd").await, "only http and https URLs can be opened, not file:");
    assert_eq!(
        refusal(&runner, "javascript:alert(document.cookie)").await,
        "only http and https URLs can be opened, not javascript:"
    );
    assert_eq!(refusal(&runner, "ftp://example.com/").await, "only http and https URLs can be opened, not ftp:");
    assert_eq!(refusal(&runner, "/relative/path").await, "the target is not an absolute URL");
    assert_eq!(refusal(&runner, "not a url").await, "the target is not an absolute URL");
}

#[tokio::test]
async fn the_reason_names_the_host_and_not_the_rest_of_the_url() {
    let runner = runner(&[]);
    let reason = refusal(&runner, "http://user:hunter2@10.1.2.3/?token=secret").await;
    assert_eq!(reason, "10.1.2.3 is a private address");
}

#[tokio::test]
async fn allow_listed_hosts_pass() {
    let runner = runner(&["127.0.0.1", "LOCALHOST", "::1"]);
    runner.check_target("http://127.0.0.1:8080/status", &[]).await.unwrap();
    runner.check_target("http://[::1]/", &[]).await.unwrap();
    runner.check_target("http://localhost/", &[]).await.unwrap();
    // Exact matches only.
    refusal(&runner, "http://127.0.0.2/").await;
    refusal(&runner, "http://app.localhost/").await;
}

/// An organization's grants hold for the call that carries them, beside the runner's own hosts.
#[tokio::test]
async fn granted_hosts_pass_for_the_call_that_carries_them() {
    let runner = runner(&["127.0.0.1"]);
    let granted = vec!["10.1.2.3".to_owned()];
    runner.check_target("http://10.1.2.3/", &granted).await.unwrap();
    runner.check_target("http://127.0.0.1/", &granted).await.unwrap();
    refusal(&runner, "http://10.1.2.3/").await;
}

#[tokio::test]
async fn an_unresolvable_host_is_unreachable() {
    let runner = runner(&[]);
    match runner.check_target("https://no-such-host.invalid/", &[]).await {
        Err(CaptureError::Unreachable(reason)) => assert!(reason.starts_with("no-such-host.invalid: "), "{reason}"),
        other => panic!("expected Unreachable, got {other:?}"),
    }
}
