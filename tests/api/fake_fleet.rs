//! A fake FleetDM on a real local HTTP server (wiremock): `GET /api/v1/fleet/hosts` answers the
//! hosts of a label page by page (pages start at 0, as FleetDM's do) to requests that carry the
//! expected bearer token, and records every request. `GET /api/v1/fleet/labels/{id}` answers a
//! regular label for any id, or a built-in one (`All Hosts`) for the ids a test marks so. Tests can make it fail in the ways a real
//! FleetDM does (an error status, a slow answer, a body that is not `{"hosts": […]}`, a redirect).

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::client::Response;
use crate::harness::{Backend, TestServer, random_hex, run_with_owned_env};

/// Runs each listed `async fn NAME(server: &TestServer, fleet: &FakeFleet)` on both backends
/// against a server whose `FLEET_URL` is given by a [`Target`] (the fake unless `on TARGET`).
macro_rules! fleet_tests {
    ($($name:ident $(on $target:ident)?),+ $(,)?) => {
        fleet_tests!(@backend sqlite, Sqlite, $($name $(on $target)?),+);
        fleet_tests!(@backend postgres, Postgres, $($name $(on $target)?),+);
    };
    (@backend $module:ident, $backend:ident, $($name:ident $(on $target:ident)?),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    #[allow(unused_variables)]
                    let target = $crate::fake_fleet::Target::Fake;
                    $(let target = $crate::fake_fleet::Target::$target;)?
                    $crate::fake_fleet::run($crate::harness::Backend::$backend, target, |server, fleet| async move {
                        super::$name(&server, &fleet).await
                    })
                    .await;
                }
            )+
        }
    };
}

/// The path of FleetDM's list-hosts endpoint.
pub const HOSTS_PATH: &str = "/api/v1/fleet/hosts";

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub headers: BTreeMap<String, String>,
}

impl Seen {
    fn of(request: &Request) -> Self {
        let query = request.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let headers = request
            .headers
            .iter()
            .map(|(name, value)| (name.as_str().to_ascii_lowercase(), String::from_utf8_lossy(value.as_bytes()).into()))
            .collect();
        Self { method: request.method.to_string(), path: request.url.path().to_owned(), query, headers }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }
}

/// How the hosts endpoint misbehaves, if it does.
#[derive(Debug, Clone)]
pub enum Answer {
    /// The hosts, as FleetDM would give them.
    Normal,
    /// This status, with a FleetDM-style error body that echoes the token (the server must not
    /// pass it on).
    Status(u16),
    /// The normal answer, after this delay: a slow FleetDM, for the server's timeout to cut short
    /// (not a wait of the test's).
    Delay(Duration),
    /// 200 with this body instead of `{"hosts": […]}`.
    Body(String),
    /// 302 to `/stolen` on the same fake (the server must not follow it with the token).
    Redirect,
}

#[derive(Debug)]
pub struct State {
    /// The hosts of each label id.
    pub hosts: BTreeMap<i64, Vec<Value>>,
    /// Every request to the hosts endpoint.
    pub requests: Vec<Seen>,
    pub answer: Answer,
    /// The ids of FleetDM's built-in labels, with their names.
    pub builtin: BTreeMap<i64, String>,
}

/// The fake FleetDM.
#[derive(Debug)]
pub struct FakeFleet {
    server: MockServer,
    state: Arc<Mutex<State>>,
    /// The API token it accepts (`FLEET_TOKEN`), a secret that must never leak.
    pub token: String,
}

impl FakeFleet {
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let token = format!("fleet-token-{}", random_hex(20));
        let state = Arc::new(Mutex::new(State {
            hosts: BTreeMap::new(),
            requests: Vec::new(),
            answer: Answer::Normal,
            builtin: BTreeMap::new(),
        }));
        let responder = Hosts { state: Arc::clone(&state), token: token.clone(), base: server.uri() };
        Mock::given(method("GET")).and(path(HOSTS_PATH)).respond_with(responder).mount(&server).await;
        let labels = Labels { state: Arc::clone(&state), token: token.clone() };
        Mock::given(method("GET"))
            .and(path_regex(r"^/api/v1/fleet/labels/[0-9]+$"))
            .respond_with(labels)
            .mount(&server)
            .await;
        Self { server, state, token }
    }

    /// `http://127.0.0.1:PORT`
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The hosts FleetDM has in `label`.
    pub fn set_hosts(&self, label: i64, hosts: Vec<Value>) {
        self.state().hosts.insert(label, hosts);
    }

    /// Makes `label` one of FleetDM's built-in labels, such as `All Hosts`.
    pub fn set_builtin(&self, label: i64, name: &str) {
        self.state().builtin.insert(label, name.to_owned());
    }

    pub fn answer(&self, answer: Answer) {
        self.state().answer = answer;
    }

    /// The requests received on the hosts endpoint so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.state().requests.clone()
    }

    /// Every request that reached the fake on any path.
    pub async fn all_requests(&self) -> Vec<Seen> {
        self.server.received_requests().await.unwrap_or_default().iter().map(Seen::of).collect()
    }

    /// Fails the test when the token occurs in `text`.
    #[track_caller]
    pub fn assert_no_token_in(&self, what: &str, text: &str) {
        assert!(!text.contains(&self.token), "{what} contains the FleetDM token:\n{text}");
    }

    /// Fails the test when the response body holds the token; returns the response.
    #[track_caller]
    pub fn clean(&self, response: Response) -> Response {
        self.assert_no_token_in("a response body", &String::from_utf8_lossy(&response.bytes));
        response
    }
}

struct Hosts {
    state: Arc<Mutex<State>>,
    token: String,
    base: String,
}

impl Respond for Hosts {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let seen = Seen::of(request);
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.requests.push(seen.clone());
        let delay = match &state.answer {
            Answer::Normal => None,
            Answer::Delay(delay) => Some(*delay),
            Answer::Status(status) => {
                let body = json!({"message": "Authentication required", "errors": [
                    {"name": "base", "reason": format!("token {} was not accepted", self.token)}
                ], "uuid": "2f3c6a0e-2b7d-4a5c-9b1e-0c8f7d6e5a4b"});
                return ResponseTemplate::new(*status).set_body_json(body);
            }
            Answer::Body(body) => {
                return ResponseTemplate::new(200).set_body_raw(body.clone().into_bytes(), "application/json");
            }
            Answer::Redirect => {
                return ResponseTemplate::new(302).insert_header("Location", format!("{}/stolen", self.base).as_str());
            }
        };
        if seen.header("authorization") != Some(format!("Bearer {}", self.token).as_str()) {
            let body = json!({"message": "Authentication required", "errors": [
                {"name": "base", "reason": "Authentication required"}
            ]});
            return ResponseTemplate::new(401).set_body_json(body);
        }
        let label = seen.param("label_id").and_then(|l| l.parse::<i64>().ok());
        let page = seen.param("page").map_or(Some(0), |p| p.parse::<usize>().ok());
        let per_page = seen.param("per_page").map_or(Some(1_000_000), |p| p.parse::<usize>().ok());
        let (Some(page), Some(per_page)) = (page, per_page) else {
            let body = json!({"message": "Bad request", "errors": [{"name": "page", "reason": "not a number"}]});
            return ResponseTemplate::new(400).set_body_json(body);
        };
        let mut hosts = match label {
            Some(label) => state.hosts.get(&label).cloned().unwrap_or_default(),
            None => state.hosts.values().flatten().cloned().collect(),
        };
        hosts.sort_by_key(|host| host["id"].as_i64());
        let page_hosts: Vec<Value> = hosts.into_iter().skip(page.saturating_mul(per_page)).take(per_page).collect();
        let template = ResponseTemplate::new(200).set_body_json(json!({"hosts": page_hosts}));
        match delay {
            Some(delay) => template.set_delay(delay),
            None => template,
        }
    }
}

/// `GET /api/v1/fleet/labels/{id}` as FleetDM answers it.
struct Labels {
    state: Arc<Mutex<State>>,
    token: String,
}

impl Respond for Labels {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        if Seen::of(request).header("authorization") != Some(format!("Bearer {}", self.token).as_str()) {
            return ResponseTemplate::new(401).set_body_json(json!({"message": "Authentication required"}));
        }
        let Some(id) = request.url.path().rsplit('/').next().and_then(|id| id.parse::<i64>().ok()) else {
            return ResponseTemplate::new(404).set_body_json(json!({"message": "Resource Not Found"}));
        };
        let state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (name, kind) = match state.builtin.get(&id) {
            Some(name) => (name.clone(), "builtin"),
            None => (format!("label {id}"), "regular"),
        };
        ResponseTemplate::new(200).set_body_json(json!({"label": {
            "id": id, "name": name, "label_type": kind, "label_membership_type": "dynamic",
            "host_count": state.hosts.get(&id).map_or(0, Vec::len),
        }}))
    }
}

/// Where the server's `FLEET_URL` points.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// At the fake, with its token.
    Fake,
    /// At a closed port on loopback, with the fake's token.
    ClosedPort,
    /// Nowhere: neither `FLEET_URL` nor `FLEET_TOKEN` is set.
    Unconfigured,
}

/// A port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// Runs `test` against a server configured by `target` for a fresh [`FakeFleet`], with
/// `RUST_LOG=info` so that info lines are checked too. Afterwards the token may not appear in the
/// server's stderr.
pub async fn run<F, Fut>(backend: Backend, target: Target, test: F)
where
    F: FnOnce(Arc<TestServer>, Arc<FakeFleet>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let fleet = Arc::new(FakeFleet::start().await);
    let mut env = vec![("RUST_LOG".to_owned(), "info".to_owned())];
    match target {
        Target::Fake => env.push(("FLEET_URL".to_owned(), fleet.uri())),
        Target::ClosedPort => env.push(("FLEET_URL".to_owned(), format!("http://127.0.0.1:{}", closed_port()))),
        Target::Unconfigured => {}
    }
    if !matches!(target, Target::Unconfigured) {
        env.push(("FLEET_TOKEN".to_owned(), fleet.token.clone()));
    }
    run_with_owned_env(backend, env, move |server| async move {
        test(Arc::clone(&server), Arc::clone(&fleet)).await;
        // Stopped first, so that the last lines are in.
        fleet.assert_no_token_in("the server's stderr", &server.stop().await);
    })
    .await;
}

/// A host as FleetDM 4.x returns it from `GET /api/v1/fleet/hosts?populate_policies=true&
/// populate_software=true`, in label `label`: every field of the spec's Device table with
/// FleetDM's types, plus a few fields the spec does not list (which pass through as well).
pub fn host(id: i64, label: i64) -> Value {
    let hostname = format!("mbp-{id:04}.corp.example");
    let computer_name = format!("Laptop {id} – Zoë");
    let mut host = json!({
        "id": id,
        "created_at": "2024-03-01T09:15:27Z",
        "updated_at": "2024-06-11T14:02:11Z",
        "software_updated_at": "2024-06-11T13:58:40Z",
        "detail_updated_at": "2024-06-11T13:58:40Z",
        "label_updated_at": "2024-06-11T13:58:40Z",
        "policy_updated_at": "2024-06-11T13:58:41Z",
        "last_enrolled_at": "2024-03-01T09:15:29Z",
        "seen_time": "2024-06-11T14:02:10.123456Z",
        "refetch_requested": false,
        "refetch_critical_queries_until": "2024-06-12T00:00:00Z",
    });
    extend(
        &mut host,
        json!({
            "hostname": hostname,
            "uuid": format!("5B4E8C2A-9F1D-4E3B-A6C7-{:012X}", id),
            "platform": "darwin",
            "osquery_version": "5.12.1",
            "query_agent_version": "5.12.1",
            "os_version": "macOS 14.5",
            "build": "23F79",
            "platform_like": "darwin",
            "code_name": "sonoma",
            // Nanoseconds, as FleetDM reports it: above 2^53, so a detour through f64 would show.
            "uptime": 9_007_199_254_740_993_i64 + id,
            "memory": 34_359_738_368_i64,
        }),
    );
    extend(
        &mut host,
        json!({
            "cpu_type": "arm64e",
            "cpu_subtype": "ARM64E",
            "cpu_brand": "Apple M2 Pro",
            "cpu_physical_cores": 12,
            "cpu_logical_cores": 12,
            "hardware_vendor": "Apple Inc.",
            "hardware_model": "Mac14,10",
            "hardware_version": "",
            "hardware_serial": format!("C02XK{id:05}"),
            "computer_name": computer_name,
            "display_name": computer_name,
            "display_text": hostname,
            "public_ip": "203.0.113.7",
            "primary_ip": "192.168.1.23",
            "primary_mac": "36:8a:1c:2b:4e:0f",
            "distributed_interval": 10,
            "config_tls_refresh": 60,
            "logger_tls_period": 10,
        }),
    );
    extend(
        &mut host,
        json!({
            "team_id": 3,
            "team_name": "Engineering",
            "gigs_disk_space_available": 174.98,
            "percent_disk_space_available": 35.12,
            "gigs_total_disk_space": 494.38,
            "gigs_all_disk_space": null,
            "disk_encryption_enabled": true,
            "scripts_enabled": true,
            "status": "online",
            "orbit_version": "1.27.0",
            "updater_version": "1.27.0",
            "desktop_app_version": "1.27.0",
            "fleet_desktop_version": "1.27.0",
            "last_restarted_at": "2024-06-08T07:30:00.5Z",
            "last_mdm_enrolled_at": "2024-03-01T09:20:00Z",
            "last_mdm_checked_in_at": "2024-06-11T13:50:00Z",
        }),
    );
    extend(
        &mut host,
        json!({
            "issues": {"failing_policies_count": 1, "critical_vulnerabilities_count": 0, "total_issues_count": 1},
        }),
    );
    extend(
        &mut host,
        json!({
            "mdm": {
                "encryption_key_available": true,
                "enrollment_status": "On (automatic)",
                "dep_profile_error": false,
                "name": "Fleet",
                "server_url": "https://fleet.example.com/mdm/apple/mdm",
                "device_status": "unlocked",
                "pending_action": "",
                "macos_settings": {"disk_encryption": "verified", "action_required": null},
                "macos_setup": {"bootstrap_package_status": "", "details": "", "bootstrap_package_name": ""},
                "profiles": [{"profile_uuid": "a1b2c3", "name": "FileVault", "status": "verified",
                              "operation_type": "install", "detail": ""}]
            },
        }),
    );
    extend(
        &mut host,
        json!({
            "software": [
                {"id": 101, "name": "Google Chrome.app", "version": "125.0.6422.142", "source": "apps",
                 "bundle_identifier": "com.google.Chrome",
                 "generated_cpe": "cpe:2.3:a:google:chrome:125.0.6422.142:*:*:*:*:macos:*:*",
                 "installed_paths": ["/Applications/Google Chrome.app"],
                 "last_opened_at": "2024-06-11T08:00:00Z",
                 "vulnerabilities": [{"cve": "CVE-2024-5274",
                                      "details_link": "https://nvd.nist.gov/vuln/detail/CVE-2024-5274",
                                      "cvss_score": 8.8, "epss_probability": 0.0123, "cisa_known_exploit": true,
                                      "cve_published": "2024-05-28T15:15:09Z", "resolved_in_version": "125.0.6422.141"}]},
                {"id": 102, "name": "zsh", "version": "5.9", "source": "homebrew_packages",
                 "generated_cpe": "", "vulnerabilities": null}
            ],
            "pack_stats": [{"pack_id": 1, "pack_name": "Global", "type": "global", "query_stats": [
                {"scheduled_query_name": "uptime", "scheduled_query_id": 4, "query_name": "uptime",
                 "description": "Time since boot", "pack_name": "Global", "pack_id": 1, "average_memory": 8192,
                 "denylisted": false, "executions": 12, "interval": 3600, "last_executed": "2024-06-11T13:00:00Z",
                 "output_size": 512, "system_time": 3, "user_time": 7, "wall_time": 0}
            ]}],
        }),
    );
    extend(
        &mut host,
        json!({
            "users": [
                {"uid": 501, "username": "alice", "type": "", "groupname": "staff", "shell": "/bin/zsh"},
                {"uid": 0, "username": "root", "type": "", "groupname": "wheel", "shell": "/bin/sh"}
            ],
            "labels": [
                {"id": 6, "name": "All Hosts", "description": "All hosts which have enrolled in Fleet",
                 "query": "SELECT 1;", "platform": "", "label_type": "builtin", "label_membership_type": "dynamic",
                 "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"},
                {"id": label, "name": format!("Compliance label {label}"), "description": "", "query": "",
                 "platform": "", "label_type": "regular", "label_membership_type": "manual",
                 "created_at": "2024-02-01T10:00:00Z", "updated_at": "2024-02-01T10:00:00Z"}
            ],
            "packs": [{"id": 1, "name": "Global", "type": "global", "description": "Global pack",
                       "platform": "", "disabled": false,
                       "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"}],
            "batteries": [{"cycle_count": 412, "health": "Normal"}],
            "end_users": [{"idp_id": "00u1abcd", "idp_username": "alice@example.com", "idp_full_name": "Alice Doe",
                           "idp_groups": ["Engineering", "All"], "idp_info_updated_at": "2024-06-01T00:00:00Z",
                           "other_emails": [{"email": "alice@corp.example", "source": "google_chrome_profiles"}]}],
        }),
    );
    extend(
        &mut host,
        json!({
            "policies": [
                {"id": 7, "name": "Disk encryption enabled",
                 "query": "SELECT 1 FROM disk_encryption WHERE user_uuid IS NOT '' AND filevault_status = 'on' LIMIT 1;",
                 "critical": true, "description": "Checks that FileVault is on.", "author_id": 2,
                 "author_name": "Ada Admin", "author_email": "ada@example.com", "team_id": 3,
                 "resolution": "Turn on FileVault in System Settings.", "platform": "darwin",
                 "calendar_events_enabled": false, "created_at": "2024-02-02T10:00:00Z",
                 "updated_at": "2024-05-02T10:00:00Z", "response": "pass"},
                {"id": 9, "name": "Screen lock after 5 minutes",
                 "query": "SELECT 1 FROM managed_policies WHERE name = 'askForPasswordDelay' AND value <= 300;",
                 "critical": false, "description": "Locks an idle screen.", "author_id": 4,
                 "author_name": "Bo Builder", "author_email": "bo@example.com", "team_id": 3,
                 "resolution": "Set the screen saver delay.", "platform": "darwin,linux",
                 "calendar_events_enabled": true, "created_at": "2024-02-03T10:00:00Z",
                 "updated_at": "2024-05-03T10:00:00Z", "response": "fail"}
            ]
        }),
    );

    host
}

/// Adds the members of the object `more` to the object `host` (one `json!` of a whole host would
/// be deeper than the macro's recursion limit).
fn extend(host: &mut Value, more: Value) {
    let Value::Object(more) = more else { panic!("not an object: {more}") };
    host.as_object_mut().expect("a host is an object").extend(more);
}
