#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
#![recursion_limit = "256"] // the host fixture is one large json! literal
//! `FleetDeviceDirectory` against a real local HTTP server playing FleetDM (wiremock).

use std::time::Duration;

use compliance_devices::{FleetDeviceDirectory, FleetSettings};
use compliance_ports::{DeviceDirectory, DeviceError, DeviceRecord};
use secrecy::SecretString;
use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "fleet-api-token-Zk3q9XbT";
const HOSTS_PATH: &str = "/api/v1/fleet/hosts";

/// A host as FleetDM's list-hosts endpoint returns it with `populate_policies` and `populate_software`
/// (fields as in FleetDM's REST API documentation). Odd ids are encrypted macOS laptops without a screen lock, even ids unencrypted Ubuntu desktops:
/// each fails one policy.
fn fleet_host(id: i64) -> Value {
    let mac = id % 2 == 1;
    let (platform, os_version) = if mac { ("darwin", "macOS 14.4.1") } else { ("ubuntu", "Ubuntu 22.04.4 LTS") };
    let mut host = json!({
        "created_at": "2024-03-01T09:12:44Z",
        "updated_at": "2024-05-20T07:03:39Z",
        "id": id,
        "detail_updated_at": "2024-05-20T06:58:12Z",
        "software_updated_at": "2024-05-19T22:10:01Z",
        "label_updated_at": "2024-05-20T06:58:12Z",
        "policy_updated_at": "2024-05-20T06:58:13Z",
        "last_enrolled_at": "2024-03-01T09:12:44Z",
        "seen_time": "2024-05-20T07:03:39Z",
        "refetch_requested": false,
        "hostname": format!("host-{id}.corp.example.com"),
        "uuid": format!("392547dc-0000-0000-a87a-{id:012}"),
        "platform": platform,
        "osquery_version": "5.12.1",
        "orbit_version": "1.24.0",
        "os_version": os_version,
        "build": if mac { "23E224" } else { "" },
        "platform_like": if mac { "darwin" } else { "debian" },
        "code_name": if mac { "" } else { "jammy" },
        "uptime": 210_671_000_000_000_i64,
        "memory": 17_179_869_184_i64,
        "cpu_type": if mac { "arm64e" } else { "x86_64" },
        "cpu_subtype": if mac { "ARM64E" } else { "158" },
        "cpu_brand": if mac { "Apple M2 Pro" } else { "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz" },
        "cpu_physical_cores": 10,
        "cpu_logical_cores": 10,
        "hardware_vendor": if mac { "Apple Inc." } else { "Dell Inc." },
        "hardware_model": if mac { "Mac14,10" } else { "OptiPlex 7060" },
        "hardware_version": "",
        "hardware_serial": format!("C02XK{id:05}"),
        "computer_name": format!("host-{id}"),
        "display_name": format!("host-{id}"),
        "public_ip": "203.0.113.27",
        "primary_ip": format!("10.0.4.{id}"),
        "primary_mac": "36:8a:21:6e:4f:1c",
        "distributed_interval": 10,
        "config_tls_refresh": 60,
        "logger_tls_period": 10,
        "team_id": 2,
        "team_name": "Workstations",
        "pack_stats": null,
        "gigs_disk_space_available": 174.98,
        "percent_disk_space_available": 71.0,
        "gigs_total_disk_space": 245.1,
        "disk_encryption_enabled": mac,
        "status": "online",
        "display_text": format!("host-{id}.corp.example.com"),
        "additional": {},
        "issues": { "failing_policies_count": 1, "total_issues_count": 1 },
        "mdm": {
            "encryption_key_available": mac,
            "enrollment_status": if mac { Value::from("On (automatic)") } else { Value::Null },
            "name": if mac { "Fleet" } else { "" },
            "server_url": if mac { Value::from("https://fleet.example.com/mdm/apple/mdm") } else { Value::Null },
            "dep_profile_error": false
        },
    });
    let Value::Object(fields) = &mut host else { unreachable!("a JSON object") };
    fields.insert("software".into(), fleet_software(mac));
    fields.insert("policies".into(), fleet_policies(mac));
    host
}

/// `software` of a host, with one vulnerable title.
fn fleet_software(mac: bool) -> Value {
    json!([
        {
            "id": 408,
            "name": "osquery",
            "version": "5.12.1",
            "source": if mac { "pkg_packages" } else { "deb_packages" },
            "generated_cpe": "",
            "vulnerabilities": null,
            "installed_paths": ["/opt/osquery/lib/osquery.app"]
        },
        {
            "id": 1146,
            "name": "Google Chrome.app",
            "version": "124.0.6367.208",
            "source": "apps",
            "bundle_identifier": "com.google.Chrome",
            "last_opened_at": "2024-05-19T21:14:00Z",
            "generated_cpe": "cpe:2.3:a:google:chrome:124.0.6367.208:*:*:*:*:macos:*:*",
            "vulnerabilities": [
                {
                    "cve": "CVE-2024-4671",
                    "details_link": "https://nvd.nist.gov/vuln/detail/CVE-2024-4671",
                    "cvss_score": 9.6,
                    "epss_probability": 0.0089,
                    "cisa_known_exploit": true,
                    "cve_published": "2024-05-14T15:44:00Z"
                }
            ]
        }
    ])
}

/// `policies` of a host: `response` is "pass", "fail", or "" when the policy has not run on it yet.
fn fleet_policies(mac: bool) -> Value {
    json!([
        {
            "id": 1,
            "name": "Full disk encryption enabled",
            "query": "SELECT 1 FROM disk_encryption WHERE user_uuid IS NOT '' AND filevault_status = 'on' LIMIT 1;",
            "critical": true,
            "description": "Checks that FileVault or LUKS protects the system disk.",
            "author_id": 1,
            "author_name": "Jane Doe",
            "author_email": "jane@example.com",
            "team_id": null,
            "resolution": "Turn on FileVault in System Settings > Privacy & Security.",
            "platform": "darwin,linux",
            "calendar_events_enabled": false,
            "created_at": "2024-01-10T10:00:00Z",
            "updated_at": "2024-02-11T10:00:00Z",
            "response": if mac { "pass" } else { "fail" }
        },
        {
            "id": 2,
            "name": "Screen lock after 5 minutes",
            "query": "SELECT 1 FROM screenlock WHERE enabled = 1 AND grace_period <= 300;",
            "critical": false,
            "description": "Locks an unattended screen.",
            "author_id": 1,
            "author_name": "Jane Doe",
            "author_email": "jane@example.com",
            "team_id": 2,
            "resolution": "Set the screen saver to start after 5 minutes at most.",
            "platform": "darwin",
            "calendar_events_enabled": false,
            "created_at": "2024-01-10T10:00:00Z",
            "updated_at": "2024-01-10T10:00:00Z",
            "response": if mac { "fail" } else { "" }
        }
    ])
}

fn hosts_body(ids: impl IntoIterator<Item = i64>) -> Value {
    json!({ "hosts": ids.into_iter().map(fleet_host).collect::<Vec<_>>() })
}

fn record(id: i64) -> DeviceRecord {
    match fleet_host(id) {
        Value::Object(host) => host,
        _ => unreachable!("fleet_host returns an object"),
    }
}

fn settings(url: &str, page_size: usize) -> FleetSettings {
    FleetSettings { page_size, ..FleetSettings::new(url, SecretString::from(TOKEN)) }
}

fn directory(server: &MockServer, page_size: usize) -> FleetDeviceDirectory {
    FleetDeviceDirectory::new(settings(&server.uri(), page_size)).unwrap()
}

async fn fleet_answering(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET")).and(path(HOSTS_PATH)).respond_with(response).mount(&server).await;
    server
}

/// The error, after checking that neither its Display nor its Debug shows the token.
fn without_token(error: DeviceError) -> DeviceError {
    assert!(!error.to_string().contains(TOKEN), "{error}");
    assert!(!format!("{error:?}").contains(TOKEN), "{error:?}");
    error
}

async fn request_count(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn sends_the_documented_query_and_the_bearer_token() {
    let server = fleet_answering(ResponseTemplate::new(200).set_body_json(hosts_body([7]))).await;
    let hosts = directory(&server, 100).hosts_with_label(42).await.unwrap();
    assert_eq!(hosts, vec![record(7)], "hosts pass through unchanged");

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.url.path(), HOSTS_PATH);
    assert_eq!(
        request.url.query(),
        Some("label_id=42&populate_policies=true&populate_software=true&page=0&per_page=100&order_key=id")
    );
    assert_eq!(request.headers.get("authorization").unwrap(), &format!("Bearer {TOKEN}"));
    assert_eq!(request.headers.get("accept").unwrap(), "application/json");
}

#[tokio::test]
async fn pages_until_a_short_page() {
    let server = MockServer::start().await;
    for (page, ids) in [("0", vec![1, 2]), ("1", vec![3, 4]), ("2", vec![5])] {
        Mock::given(method("GET"))
            .and(path(HOSTS_PATH))
            .and(query_param("label_id", "9"))
            .and(query_param("per_page", "2"))
            .and(query_param("page", page))
            .respond_with(ResponseTemplate::new(200).set_body_json(hosts_body(ids)))
            .expect(1)
            .mount(&server)
            .await;
    }
    let hosts = directory(&server, 2).hosts_with_label(9).await.unwrap();
    assert_eq!(hosts, (1..=5).map(record).collect::<Vec<_>>());
    assert_eq!(request_count(&server).await, 3);
    server.verify().await;
}

#[tokio::test]
async fn a_full_last_page_costs_one_empty_page() {
    let server = MockServer::start().await;
    for (page, body) in [("0", hosts_body([1, 2])), ("1", json!({ "hosts": [] }))] {
        Mock::given(query_param("page", page))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .expect(1)
            .mount(&server)
            .await;
    }
    let hosts = directory(&server, 2).hosts_with_label(9).await.unwrap();
    assert_eq!(hosts, vec![record(1), record(2)]);
    server.verify().await;
}

#[tokio::test]
async fn a_host_that_moved_to_the_next_page_is_kept_once() {
    let server = MockServer::start().await;
    for (page, ids) in [("0", vec![1, 2]), ("1", vec![2, 3]), ("2", vec![])] {
        Mock::given(query_param("page", page))
            .respond_with(ResponseTemplate::new(200).set_body_json(hosts_body(ids)))
            .mount(&server)
            .await;
    }
    let hosts = directory(&server, 2).hosts_with_label(9).await.unwrap();
    assert_eq!(hosts, vec![record(1), record(2), record(3)]);
}

#[tokio::test]
async fn an_empty_label_is_one_request() {
    let server = fleet_answering(ResponseTemplate::new(200).set_body_json(json!({ "hosts": [] }))).await;
    assert!(directory(&server, 100).hosts_with_label(3).await.unwrap().is_empty());
    assert_eq!(request_count(&server).await, 1);

    let server = fleet_answering(ResponseTemplate::new(200).set_body_json(json!({ "hosts": null }))).await;
    assert!(directory(&server, 100).hosts_with_label(3).await.unwrap().is_empty());
}

#[tokio::test]
async fn error_statuses_are_upstream() {
    // FleetDM's error body for a bad token.
    let unauthorized = json!({
        "message": "Authentication required",
        "errors": [{ "name": "base", "reason": "Authentication required" }],
        "uuid": "1272014b-902b-4b36-bcdb-75fde5eac1fc"
    });
    for (status, body) in [(401, unauthorized), (500, json!({ "message": "Unknown Error", "errors": [] }))] {
        let server = fleet_answering(ResponseTemplate::new(status).set_body_json(body)).await;
        let error = without_token(directory(&server, 100).hosts_with_label(1).await.unwrap_err());
        assert_eq!(error, DeviceError::Upstream { status });
        assert_eq!(request_count(&server).await, 1, "no retry");
    }
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let elsewhere = fleet_answering(ResponseTemplate::new(200).set_body_json(hosts_body([1]))).await;
    let server = fleet_answering(
        ResponseTemplate::new(302).insert_header("location", format!("{}{HOSTS_PATH}", elsewhere.uri()).as_str()),
    )
    .await;
    let error = without_token(directory(&server, 100).hosts_with_label(1).await.unwrap_err());
    assert_eq!(error, DeviceError::Upstream { status: 302 });
    assert_eq!(request_count(&elsewhere).await, 0, "the token never travels to another host");
}

#[tokio::test]
async fn a_slow_server_is_a_timeout() {
    let server =
        fleet_answering(ResponseTemplate::new(200).set_body_json(hosts_body([1])).set_delay(Duration::from_secs(3)))
            .await;
    let settings = FleetSettings { timeout: Duration::from_millis(300), ..settings(&server.uri(), 100) };
    let error = FleetDeviceDirectory::new(settings).unwrap().hosts_with_label(1).await.unwrap_err();
    assert_eq!(without_token(error), DeviceError::Timeout);
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let directory = FleetDeviceDirectory::new(settings(&format!("http://{address}"), 100)).unwrap();
    let error = directory.hosts_with_label(1).await.unwrap_err();
    assert_eq!(without_token(error), DeviceError::Unreachable);
}

#[tokio::test]
async fn unexpected_bodies_are_invalid_responses() {
    let bodies = [
        ResponseTemplate::new(200).set_body_string("<html><body>Fleet is starting</body></html>"),
        ResponseTemplate::new(200).set_body_json(json!([fleet_host(1)])),
        ResponseTemplate::new(200).set_body_json(json!({ "host": fleet_host(1) })),
        ResponseTemplate::new(200).set_body_json(json!({ "hosts": [fleet_host(1), "host-2"] })),
        ResponseTemplate::new(200).set_body_json(json!({ "hosts": "Authentication required" })),
    ];
    for body in bodies {
        let server = fleet_answering(body).await;
        let error = without_token(directory(&server, 100).hosts_with_label(1).await.unwrap_err());
        let DeviceError::InvalidResponse(message) = &error else { panic!("{error:?}") };
        for echoed in ["html", "Fleet is starting", "host-2", "Authentication", "label_id", "127.0.0.1"] {
            assert!(!message.contains(echoed), "{message}");
        }
    }
}

#[tokio::test]
async fn a_page_longer_than_asked_for_is_refused() {
    let server = fleet_answering(ResponseTemplate::new(200).set_body_json(hosts_body(1..=3))).await;
    let error = directory(&server, 2).hosts_with_label(1).await.unwrap_err();
    assert!(matches!(without_token(error), DeviceError::InvalidResponse(_)));
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn a_label_beyond_the_page_bound_is_refused() {
    let server = fleet_answering(ResponseTemplate::new(200).set_body_json(hosts_body([1]))).await;
    let error = without_token(directory(&server, 1).hosts_with_label(1).await.unwrap_err());
    let DeviceError::InvalidResponse(message) = &error else { panic!("{error:?}") };
    assert!(message.contains("label too large"), "{message}");
    assert_eq!(request_count(&server).await, compliance_devices::MAX_PAGES);
}

#[test]
fn debug_output_hides_the_token() {
    let settings = settings("https://fleet.example.com", 100);
    assert!(!format!("{settings:?}").contains(TOKEN));
    let directory = FleetDeviceDirectory::new(settings).unwrap();
    let shown = format!("{directory:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("fleet.example.com"), "{shown}");
}
