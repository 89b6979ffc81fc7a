#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! The Google Workspace checks against a real local HTTP server playing the Admin SDK Directory
//! API (wiremock), with the user shapes and `pageToken` paging Google documents, called through
//! the `CheckReader` port.

use std::time::Duration;

use compliance_checks::{CheckEndpoints, CheckHttpSettings, HttpCheckReader};
use compliance_credentials::{CredentialValues, RequestAuth};
use compliance_domain::Timestamp;
use compliance_domain::check::{CheckOutcome, catalog};
use compliance_domain::check_result::CheckResult;
use compliance_ports::{CheckReader, CheckTarget};
use secrecy::SecretString;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

const TOKEN: &str = "ya29.a0AfB_byC-Token-Of-The-Test";
/// The run's clock: 90 days before it is 2026-09-02T12:00:00Z.
const NOW: &str = "2026-12-01T12:00:00Z";
const USERS: &str = "/admin/directory/v1/users";
const CUSTOMER_ID: &str = "C03az79cb";
/// Google's "never signed in".
const NEVER: &str = "1970-01-01T00:00:00.000Z";

const TWO_STEP: &str = "google-workspace.users.two-step-verification";
const SUPER_ADMINS: &str = "google-workspace.admins.super-admin-count";
const INACTIVE: &str = "google-workspace.users.inactive";
const ALL: &[&str] = &[TWO_STEP, SUPER_ADMINS, INACTIVE];

/// Retries without real waits: the tests wait for answers, never for time.
fn settings() -> CheckHttpSettings {
    CheckHttpSettings {
        attempts: 3,
        first_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(20),
        ..CheckHttpSettings::default()
    }
}

fn reader(google: &str) -> HttpCheckReader {
    let endpoints = CheckEndpoints { github: google.to_owned(), google: google.to_owned(), aws: None };
    HttpCheckReader::new(endpoints, settings()).unwrap()
}

async fn run(server: &MockServer, checks: &[&str]) -> Vec<CheckResult> {
    let target = CheckTarget {
        provider: "google-workspace".into(),
        auth: RequestAuth::Bearer(SecretString::from(TOKEN)),
        values: CredentialValues::default(),
        checks: checks.iter().map(|&id| id.to_owned()).collect(),
        period_start: Timestamp::parse("2026-09-01T00:00:00Z").unwrap(),
        now: Timestamp::parse(NOW).unwrap(),
        devices: Default::default(),
    };
    reader(&server.uri()).read(&target).await
}

/// The list of users, as the checks must ask for it, with the connection's token.
fn list_users() -> MockBuilder {
    Mock::given(method("GET"))
        .and(path(USERS))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .and(query_param("customer", "my_customer"))
        .and(query_param("maxResults", "500"))
        .and(query_param("projection", "basic"))
}

/// How a user is set up in a fixture.
#[derive(Clone, Copy, Default)]
struct Setup<'a> {
    admin: bool,
    suspended: bool,
    archived: bool,
    enrolled: bool,
    enforced: bool,
    last_login: Option<&'a str>,
    created: Option<&'a str>,
}

/// A user of `users.list` with `projection=basic`.
fn user(id: &str, email: &str, setup: Setup<'_>) -> Value {
    json!({
        "kind": "admin#directory#user",
        "id": id,
        "etag": "\"mBzcvK4W0ciWfZ1hXnS8pvt9arA0BEx2pn-3NoGeqjI/oZ7d3ft9iqyk8LBb2z2YxTdqsuI\"",
        "primaryEmail": email,
        "name": { "givenName": "Ada", "familyName": "Lovelace", "fullName": "Ada Lovelace" },
        "isAdmin": setup.admin,
        "isDelegatedAdmin": false,
        "lastLoginTime": setup.last_login.unwrap_or("2026-11-28T09:15:02.000Z"),
        "creationTime": setup.created.unwrap_or("2024-02-11T10:20:30.000Z"),
        "agreedToTerms": true,
        "suspended": setup.suspended,
        "archived": setup.archived,
        "changePasswordAtNextLogin": false,
        "ipWhitelisted": false,
        "emails": [{ "address": email, "primary": true }],
        "customerId": CUSTOMER_ID,
        "orgUnitPath": "/",
        "isMailboxSetup": true,
        "isEnrolledIn2Sv": setup.enrolled,
        "isEnforcedIn2Sv": setup.enforced,
        "includeInGlobalAddressList": true,
        "thumbnailPhotoUrl": "https://lh3.googleusercontent.com/a/photo",
        "thumbnailPhotoEtag": "\"photo-etag\""
    })
}

fn page(users: &[Value], next: Option<&str>) -> ResponseTemplate {
    let mut body = json!({ "kind": "admin#directory#users", "etag": "\"list-etag\"", "users": users });
    if let Some(token) = next {
        body["nextPageToken"] = json!(token);
    }
    ResponseTemplate::new(200).set_body_json(body)
}

/// Mounts the users on as many pages, each page but the last naming the next by its token; each
/// page must be read exactly once.
async fn mount_users(server: &MockServer, pages: &[Vec<Value>]) {
    for (index, users) in pages.iter().enumerate() {
        let token = |number: usize| format!("token+/={number}");
        let next = (index + 1 < pages.len()).then(|| token(index + 1));
        let mock = if index == 0 {
            list_users().and(query_param_is_missing("pageToken"))
        } else {
            list_users().and(query_param("pageToken", token(index).as_str()))
        };
        mock.respond_with(page(users, next.as_deref())).expect(1).mount(server).await;
    }
}

/// The one result of `check` for the resource `id`.
fn result<'a>(results: &'a [CheckResult], check: &str, id: &str) -> &'a CheckResult {
    let found: Vec<_> = results.iter().filter(|r| r.check_id == check && r.resource.id == id).collect();
    assert_eq!(found.len(), 1, "{check} of {id}: {results:#?}");
    found[0]
}

fn outcomes(results: &[CheckResult], check: &str) -> Vec<(String, CheckOutcome)> {
    let mut outcomes: Vec<_> =
        results.iter().filter(|r| r.check_id == check).map(|r| (r.resource.id.clone(), r.outcome)).collect();
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    outcomes
}

fn active(enrolled: bool, enforced: bool) -> Setup<'static> {
    Setup { enrolled, enforced, ..Setup::default() }
}

#[tokio::test]
async fn the_reader_runs_every_google_workspace_check_of_the_catalog() {
    let reader = reader("http://127.0.0.1:1");
    let google: Vec<&str> =
        catalog().iter().filter(|c| c.provider == "google-workspace").map(|c| c.id.as_str()).collect();
    assert_eq!(google.len(), ALL.len());
    for id in google {
        assert!(reader.supports(id), "{id}");
    }
}

#[tokio::test]
async fn every_active_user_on_every_page_needs_two_step_verification_enrolled_and_enforced() {
    let server = MockServer::start().await;
    let pages = [
        vec![
            user("1001", "ada@acme.example", active(true, true)),
            user("1002", "bob@acme.example", active(true, false)),
        ],
        vec![user("1003", "cy@acme.example", active(false, false))],
        vec![
            user("1004", "dee@acme.example", Setup { suspended: true, ..Setup::default() }),
            user("1005", "eve@acme.example", Setup { archived: true, ..Setup::default() }),
        ],
    ];
    mount_users(&server, &pages).await;

    let results = run(&server, &[TWO_STEP]).await;

    assert_eq!(
        outcomes(&results, TWO_STEP),
        [
            ("1001".into(), CheckOutcome::Pass),
            ("1002".into(), CheckOutcome::Fail),
            ("1003".into(), CheckOutcome::Fail),
            ("1004".into(), CheckOutcome::NotApplicable),
            ("1005".into(), CheckOutcome::NotApplicable),
        ]
    );
    assert_eq!(results.len(), 5, "only the check asked for ran");
    let bob = result(&results, TWO_STEP, "1002");
    assert_eq!(bob.detail, "enrolled in 2-Step Verification, but it is not enforced");
    assert_eq!((bob.resource.kind.as_str(), bob.resource.name.as_str()), ("google-workspace.user", "bob@acme.example"));
    assert_eq!(result(&results, TWO_STEP, "1004").detail, "the account is suspended");
}

#[tokio::test]
async fn two_to_four_active_super_admins_pass_and_the_detail_names_them() {
    let admin = Setup { admin: true, ..active(true, true) };
    let suspended_admin = Setup { suspended: true, ..admin };
    let two = [
        vec![user("1", "root@acme.example", admin), user("2", "ops@acme.example", admin)],
        vec![user("3", "gone@acme.example", suspended_admin), user("4", "dev@acme.example", active(true, true))],
    ];
    let one = [vec![user("1", "root@acme.example", admin), user("3", "gone@acme.example", suspended_admin)]];
    let five: Vec<Value> = (1..=5).map(|n| user(&n.to_string(), &format!("admin{n}@acme.example"), admin)).collect();

    for (pages, outcome, detail) in [
        (two.to_vec(), CheckOutcome::Pass, "2 active super admins: root@acme.example, ops@acme.example"),
        (one.to_vec(), CheckOutcome::Fail, "1 active super admin: root@acme.example; there should be between 2 and 4"),
        (
            vec![five.clone()],
            CheckOutcome::Fail,
            "5 active super admins: admin1@acme.example, admin2@acme.example, admin3@acme.example, \
             admin4@acme.example, admin5@acme.example; there should be between 2 and 4",
        ),
    ] {
        let server = MockServer::start().await;
        mount_users(&server, &pages).await;

        let results = run(&server, &[SUPER_ADMINS]).await;

        assert_eq!(results.len(), 1, "{results:#?}");
        let customer = result(&results, SUPER_ADMINS, CUSTOMER_ID);
        assert_eq!(customer.resource.kind, "google-workspace.customer");
        assert_eq!((customer.outcome, customer.detail.as_str()), (outcome, detail));
    }
}

#[tokio::test]
async fn an_active_user_without_a_sign_in_for_90_days_fails() {
    let server = MockServer::start().await;
    let signed_in = |at| Setup { last_login: Some(at), ..active(true, true) };
    let never_since = |created| Setup { last_login: Some(NEVER), created: Some(created), ..active(true, true) };
    let pages = [
        vec![user("1", "recent@acme.example", signed_in("2026-11-20T08:00:00.000Z"))],
        vec![
            user("2", "stale@acme.example", signed_in("2026-06-01T08:00:00.000Z")),
            user("3", "never-old@acme.example", never_since("2025-01-01T08:00:00.000Z")),
            user("4", "never-new@acme.example", never_since("2026-11-15T08:00:00.000Z")),
            user("5", "away@acme.example", Setup { suspended: true, ..signed_in("2025-01-01T08:00:00.000Z") }),
        ],
    ];
    mount_users(&server, &pages).await;

    let results = run(&server, &[INACTIVE]).await;

    assert_eq!(
        outcomes(&results, INACTIVE),
        [
            ("1".into(), CheckOutcome::Pass),
            ("2".into(), CheckOutcome::Fail),
            ("3".into(), CheckOutcome::Fail),
            ("4".into(), CheckOutcome::Pass),
            ("5".into(), CheckOutcome::NotApplicable),
        ]
    );
    assert_eq!(result(&results, INACTIVE, "2").detail, "last signed in on 2026-06-01, 183 days ago");
    assert_eq!(result(&results, INACTIVE, "3").detail, "never signed in; created on 2025-01-01, 699 days ago");
    assert_eq!(result(&results, INACTIVE, "4").detail, "never signed in; created on 2026-11-15, 16 days ago");
}

#[tokio::test]
async fn a_refused_list_is_an_error_for_every_check_never_a_failure() {
    let server = MockServer::start().await;
    let refusal = json!({ "error": {
        "code": 403,
        "message": "Not Authorized to access this resource/api",
        "errors": [{ "message": "Not Authorized to access this resource/api", "domain": "global", "reason": "forbidden" }],
        "status": "PERMISSION_DENIED"
    }});
    list_users().respond_with(ResponseTemplate::new(403).set_body_json(refusal)).mount(&server).await;

    let results = run(&server, ALL).await;

    assert_eq!(results.len(), ALL.len());
    for result in &results {
        assert_eq!(result.outcome, CheckOutcome::Error, "{result:?}");
        assert_eq!(
            (result.resource.kind.as_str(), result.resource.id.as_str()),
            ("google-workspace.customer", "my_customer")
        );
        let failure = result.failure.clone().unwrap();
        assert_eq!(
            (failure.code.as_str(), failure.message.as_str(), failure.action.as_str()),
            (
                "PERMISSION_DENIED",
                "Not Authorized to access this resource/api",
                "GET /admin/directory/v1/users?customer=my_customer"
            )
        );
    }
    let text = serde_json::to_string(&results).unwrap();
    assert!(!text.contains(TOKEN) && !text.contains("forbidden"), "{text}");
}

#[tokio::test]
async fn a_throttled_page_is_retried() {
    let server = MockServer::start().await;
    let quota = json!({ "error": { "code": 429, "message": "Quota exceeded for quota metric 'Queries'", "status": "RESOURCE_EXHAUSTED" } });
    list_users()
        .and(query_param("pageToken", "token+/=1"))
        .respond_with(ResponseTemplate::new(429).set_body_json(quota))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    let pages = [
        vec![user("1", "ada@acme.example", active(true, true))],
        vec![user("2", "bob@acme.example", active(true, true))],
    ];
    mount_users(&server, &pages).await;

    let results = run(&server, &[TWO_STEP]).await;

    assert_eq!(outcomes(&results, TWO_STEP), [("1".into(), CheckOutcome::Pass), ("2".into(), CheckOutcome::Pass)]);
}

#[tokio::test]
async fn an_unavailable_directory_beyond_the_retries_is_an_error() {
    let server = MockServer::start().await;
    let unavailable = json!({ "error": { "code": 503, "message": "The service is currently unavailable.", "status": "UNAVAILABLE" } });
    list_users().respond_with(ResponseTemplate::new(503).set_body_json(unavailable)).expect(3).mount(&server).await;

    let results = run(&server, &[INACTIVE]).await;

    assert_eq!(results.len(), 1);
    assert_eq!(results[0].outcome, CheckOutcome::Error);
    assert_eq!(results[0].failure.as_ref().map(|f| f.code.as_str()), Some("UNAVAILABLE"));
}
