#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! The GitHub checks against a real local HTTP server playing GitHub's REST API (wiremock), with
//! the JSON shapes and `Link` paging GitHub documents, called through the `CheckReader` port.

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

const TOKEN: &str = "gho_16C7e42F292c6912E7710c838347Ae178B4a";
/// The run's clock and the start of its period.
const NOW: &str = "2026-12-01T12:00:00Z";
const PERIOD_START: &str = "2026-09-01T00:00:00Z";

const TWO_FACTOR: &str = "github.org.two-factor-required";
const BASE_PERMISSION: &str = "github.org.base-permission";
const BRANCH_PROTECTED: &str = "github.repo.default-branch-protected";
const DEPENDABOT: &str = "github.repo.dependabot";
const SECRET_SCANNING: &str = "github.repo.secret-scanning";
const ALERTS_FIXED: &str = "github.repo.dependabot-alerts-fixed";
const PULLS_REVIEWED: &str = "github.repo.merged-pull-requests-reviewed";
const ALL: &[&str] =
    &[TWO_FACTOR, BASE_PERMISSION, BRANCH_PROTECTED, DEPENDABOT, SECRET_SCANNING, ALERTS_FIXED, PULLS_REVIEWED];

/// Retries without real waits: the tests wait for answers, never for time.
fn settings() -> CheckHttpSettings {
    CheckHttpSettings {
        attempts: 3,
        first_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(20),
        ..CheckHttpSettings::default()
    }
}

fn reader(github: &str) -> HttpCheckReader {
    let endpoints = CheckEndpoints { github: github.to_owned(), google: github.to_owned(), aws: None };
    HttpCheckReader::new(endpoints, settings()).unwrap()
}

async fn run_at(github: &str, checks: &[&str]) -> Vec<CheckResult> {
    let target = CheckTarget {
        provider: "github".into(),
        auth: RequestAuth::Bearer(SecretString::from(TOKEN)),
        values: CredentialValues::default(),
        checks: checks.iter().map(|&id| id.to_owned()).collect(),
        period_start: Timestamp::parse(PERIOD_START).unwrap(),
        now: Timestamp::parse(NOW).unwrap(),
        devices: Default::default(),
    };
    reader(github).read(&target).await
}

async fn run(server: &MockServer, checks: &[&str]) -> Vec<CheckResult> {
    run_at(&server.uri(), checks).await
}

/// A GET GitHub answers only when the connection's token comes with it.
fn get(at: &str) -> MockBuilder {
    Mock::given(method("GET")).and(path(at)).and(header("authorization", format!("Bearer {TOKEN}").as_str()))
}

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

/// GitHub's error body.
fn refusal(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": status.to_string(),
    }))
}

/// Mounts a list at `at` whose pages link each to the next as GitHub does (`page=2`, ... with the
/// list's `query` and `per_page=100` kept), every page matching `query`. Each page must be read
/// exactly once.
async fn mount_pages(server: &MockServer, at: &str, query: &[(&str, &str)], pages: Vec<Value>) {
    let count = pages.len();
    mount_pages_read(server, at, query, pages, count).await;
}

/// [`mount_pages`], where only the first `read` pages must be read, once each, and the others never.
async fn mount_pages_read(server: &MockServer, at: &str, query: &[(&str, &str)], pages: Vec<Value>, read: usize) {
    let count = pages.len();
    let link = |page: usize| {
        let mut params = query.to_vec();
        let page = page.to_string();
        params.extend([("per_page", "100"), ("page", page.as_str())]);
        let url = url::Url::parse_with_params(&format!("{}{at}", server.uri()), &params).unwrap();
        format!("<{url}>")
    };
    for (index, items) in pages.into_iter().enumerate() {
        let number = index + 1;
        let mut answer = ok(items);
        if number < count {
            let value = format!("{}; rel=\"next\", {}; rel=\"last\"", link(number + 1), link(count));
            answer = answer.insert_header("link", value.as_str());
        }
        let mut mock = get(at).and(query_param("per_page", "100"));
        for (key, value) in query {
            mock = mock.and(query_param(*key, *value));
        }
        let mock = if number == 1 {
            mock.and(query_param_is_missing("page"))
        } else {
            mock.and(query_param("page", number.to_string().as_str()))
        };
        mock.respond_with(answer).expect(u64::from(number <= read)).mount(server).await;
    }
}

fn org(login: &str, id: u64) -> Value {
    json!({
        "login": login,
        "id": id,
        "node_id": "MDEyOk9yZ2FuaXphdGlvbjE=",
        "url": format!("https://api.github.com/orgs/{login}"),
        "repos_url": format!("https://api.github.com/orgs/{login}/repos"),
        "events_url": format!("https://api.github.com/orgs/{login}/events"),
        "hooks_url": format!("https://api.github.com/orgs/{login}/hooks"),
        "issues_url": format!("https://api.github.com/orgs/{login}/issues"),
        "members_url": format!("https://api.github.com/orgs/{login}/members{{/member}}"),
        "public_members_url": format!("https://api.github.com/orgs/{login}/public_members{{/member}}"),
        "avatar_url": "https://github.com/images/error/octocat_happy.gif",
        "description": "A great organization"
    })
}

/// `GET /orgs/{org}` as an owner's token sees it; `None` settings are left out, as GitHub does
/// for a token that is not an owner's.
fn org_settings(login: &str, two_factor: Option<bool>, permission: Option<&str>) -> Value {
    let mut body = org(login, 1);
    let extra = json!({
        "name": "Acme", "company": null, "blog": "https://acme.example", "location": "Paris",
        "email": "octo@acme.example", "is_verified": true, "has_organization_projects": true,
        "has_repository_projects": true, "public_repos": 2, "public_gists": 1, "followers": 20,
        "following": 0, "html_url": format!("https://github.com/{login}"), "type": "Organization",
        "created_at": "2008-01-14T04:33:35Z", "updated_at": "2014-03-03T18:58:10Z"
    });
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    if let Some(two_factor) = two_factor {
        body["two_factor_requirement_enabled"] = json!(two_factor);
        body["total_private_repos"] = json!(100);
        body["billing_email"] = json!("billing@acme.example");
    }
    if let Some(permission) = permission {
        body["default_repository_permission"] = json!(permission);
    }
    body
}

fn user(login: &str, id: u64) -> Value {
    json!({
        "login": login, "id": id, "node_id": "MDQ6VXNlcjE=",
        "avatar_url": "https://github.com/images/error/octocat_happy.gif", "gravatar_id": "",
        "url": format!("https://api.github.com/users/{login}"), "html_url": format!("https://github.com/{login}"),
        "type": "User", "site_admin": false
    })
}

/// A repository of `GET /orgs/acme/repos`.
fn repo(name: &str, archived: bool) -> Value {
    json!({
        "id": 1_296_269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": name,
        "full_name": format!("acme/{name}"),
        "owner": { "login": "acme", "id": 1, "type": "Organization", "url": "https://api.github.com/users/acme" },
        "private": true, "html_url": format!("https://github.com/acme/{name}"), "description": "This your first repo!",
        "fork": false, "url": format!("https://api.github.com/repos/acme/{name}"), "default_branch": "main",
        "archived": archived, "disabled": false, "visibility": "private",
        "pushed_at": "2026-10-06T21:37:21Z", "created_at": "2021-01-26T19:01:12Z", "updated_at": "2026-10-06T21:37:21Z",
        "permissions": { "admin": true, "maintain": true, "push": true, "triage": true, "pull": true }
    })
}

/// The token's one organization, acme, whose repositories come on two pages: `first` with the
/// archived `legacy` on the first, `second` on the second.
async fn mount_acme_repos(server: &MockServer, first: &[&str], second: &[&str]) {
    mount_pages(server, "/user/orgs", &[], vec![json!([org("acme", 1)])]).await;
    let mut page_one: Vec<Value> = first.iter().map(|name| repo(name, false)).collect();
    page_one.push(repo("legacy", true));
    let page_two: Vec<Value> = second.iter().map(|name| repo(name, false)).collect();
    mount_pages(server, "/orgs/acme/repos", &[("type", "all")], vec![json!(page_one), json!(page_two)]).await;
}

/// The one result of `check` for the resource `id`.
fn result<'a>(results: &'a [CheckResult], check: &str, id: &str) -> &'a CheckResult {
    let found: Vec<_> = results.iter().filter(|r| r.check_id == check && r.resource.id == id).collect();
    assert_eq!(found.len(), 1, "{check} of {id}: {results:#?}");
    found[0]
}

fn outcomes(results: &[CheckResult]) -> Vec<(&str, &str, CheckOutcome)> {
    let mut outcomes: Vec<_> =
        results.iter().map(|r| (r.check_id.as_str(), r.resource.id.as_str(), r.outcome)).collect();
    outcomes.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    outcomes
}

/// No request touched the archived repository.
async fn archived_repository_untouched(server: &MockServer) {
    let requests = server.received_requests().await.unwrap();
    assert!(requests.iter().all(|request| !request.url.path().starts_with("/repos/acme/legacy")));
}

#[tokio::test]
async fn the_reader_runs_every_github_check_of_the_catalog_and_nothing_else() {
    let reader = reader("http://127.0.0.1:1");
    let github: Vec<&str> = catalog().iter().filter(|c| c.provider == "github").map(|c| c.id.as_str()).collect();
    assert_eq!(github.len(), ALL.len());
    for id in github {
        assert!(reader.supports(id), "{id}");
    }
    assert!(!reader.supports("github.org.nothing"));
}

#[tokio::test]
async fn organization_settings_are_judged_for_every_organization_on_every_page() {
    let server = MockServer::start().await;
    mount_pages(
        &server,
        "/user/orgs",
        &[],
        vec![json!([org("acme", 1)]), json!([org("globex", 2), org("initech", 3)])],
    )
    .await;
    get("/orgs/acme").respond_with(ok(org_settings("acme", Some(true), Some("read")))).mount(&server).await;
    get("/orgs/globex").respond_with(ok(org_settings("globex", Some(false), Some("write")))).mount(&server).await;
    // A member's token: GitHub leaves the settings out.
    get("/orgs/initech").respond_with(ok(org_settings("initech", None, None))).mount(&server).await;
    let members = vec![json!([user("octocat", 1)]), json!([user("hubot", 2)])];
    mount_pages(&server, "/orgs/globex/members", &[("filter", "2fa_disabled")], members).await;

    let results = run(&server, &[TWO_FACTOR, BASE_PERMISSION]).await;

    assert_eq!(
        outcomes(&results),
        [
            (BASE_PERMISSION, "acme", CheckOutcome::Pass),
            (BASE_PERMISSION, "globex", CheckOutcome::Fail),
            (BASE_PERMISSION, "initech", CheckOutcome::Error),
            (TWO_FACTOR, "acme", CheckOutcome::Pass),
            (TWO_FACTOR, "globex", CheckOutcome::Fail),
            (TWO_FACTOR, "initech", CheckOutcome::Error),
        ]
    );
    let globex = result(&results, TWO_FACTOR, "globex");
    assert_eq!(
        globex.detail,
        "the organization does not require two-factor authentication; members without it: octocat, hubot"
    );
    assert_eq!((globex.resource.kind.as_str(), globex.resource.name.as_str()), ("github.organization", "globex"));
    assert_eq!(
        result(&results, BASE_PERMISSION, "globex").detail,
        "members' base permission is write; it should be read or none"
    );
    for check in [TWO_FACTOR, BASE_PERMISSION] {
        let failure = result(&results, check, "initech").failure.clone().unwrap();
        assert_eq!((failure.code.as_str(), failure.action.as_str()), ("not_an_owner", "GET /orgs/{org}"));
    }
    // Only the checks asked for ran: no repository was read.
    let requests = server.received_requests().await.unwrap();
    assert!(requests.iter().all(|request| !request.url.path().contains("/repos")), "{requests:?}");
}

fn classic_protection(approvals: u32, dismiss_stale: bool, force_pushes: bool, deletions: bool) -> Value {
    let url = "https://api.github.com/repos/acme/web/branches/main/protection";
    json!({
        "url": url,
        "required_status_checks": { "url": format!("{url}/required_status_checks"), "strict": true, "contexts": ["ci"], "checks": [{ "context": "ci", "app_id": null }] },
        "enforce_admins": { "url": format!("{url}/enforce_admins"), "enabled": true },
        "required_pull_request_reviews": {
            "url": format!("{url}/required_pull_request_reviews"),
            "dismiss_stale_reviews": dismiss_stale,
            "require_code_owner_reviews": false,
            "required_approving_review_count": approvals,
            "require_last_push_approval": false
        },
        "required_linear_history": { "enabled": false },
        "allow_force_pushes": { "enabled": force_pushes },
        "allow_deletions": { "enabled": deletions },
        "block_creations": { "enabled": false },
        "required_conversation_resolution": { "enabled": false },
        "lock_branch": { "enabled": false },
        "allow_fork_syncing": { "enabled": false }
    })
}

/// An active rule as `GET /repos/{owner}/{repo}/rules/branches/{branch}` lists it.
fn rule(kind: &str, parameters: Option<Value>) -> Value {
    let mut rule =
        json!({ "type": kind, "ruleset_source_type": "Repository", "ruleset_source": "acme/api", "ruleset_id": 42 });
    if let Some(parameters) = parameters {
        rule["parameters"] = parameters;
    }
    rule
}

#[tokio::test]
async fn the_default_branch_passes_by_rulesets_or_classic_protection_and_a_failure_names_what_is_missing() {
    let server = MockServer::start().await;
    mount_acme_repos(&server, &["api"], &["web", "docs", "ops"]).await;
    // api: no classic protection, a ruleset with everything (its rules on two pages).
    get("/repos/acme/api/branches/main/protection")
        .respond_with(refusal(404, "Branch not protected"))
        .mount(&server)
        .await;
    let review = json!({
        "dismiss_stale_reviews_on_push": true, "require_code_owner_review": false,
        "require_last_push_approval": false, "required_approving_review_count": 1,
        "required_review_thread_resolution": false
    });
    let rules = vec![
        json!([rule("pull_request", Some(review))]),
        json!([rule("non_fast_forward", None), rule("deletion", None)]),
    ];
    mount_pages(&server, "/repos/acme/api/rules/branches/main", &[], rules).await;
    // web: weak classic protection, no ruleset.
    get("/repos/acme/web/branches/main/protection")
        .respond_with(ok(classic_protection(0, false, true, false)))
        .mount(&server)
        .await;
    mount_pages(&server, "/repos/acme/web/rules/branches/main", &[], vec![json!([])]).await;
    // docs: classic protection with everything.
    get("/repos/acme/docs/branches/main/protection")
        .respond_with(ok(classic_protection(2, true, false, false)))
        .mount(&server)
        .await;
    mount_pages(&server, "/repos/acme/docs/rules/branches/main", &[], vec![json!([rule("creation", None)])]).await;
    // ops: its protection cannot be read.
    get("/repos/acme/ops/branches/main/protection")
        .respond_with(refusal(403, "Must have admin rights to Repository."))
        .mount(&server)
        .await;
    mount_pages(&server, "/repos/acme/ops/rules/branches/main", &[], vec![json!([])]).await;

    let results = run(&server, &[BRANCH_PROTECTED]).await;

    assert_eq!(
        outcomes(&results),
        [
            (BRANCH_PROTECTED, "acme/api", CheckOutcome::Pass),
            (BRANCH_PROTECTED, "acme/docs", CheckOutcome::Pass),
            (BRANCH_PROTECTED, "acme/ops", CheckOutcome::Error),
            (BRANCH_PROTECTED, "acme/web", CheckOutcome::Fail),
        ]
    );
    assert_eq!(result(&results, BRANCH_PROTECTED, "acme/api").detail, "main: rulesets require all of it");
    assert_eq!(result(&results, BRANCH_PROTECTED, "acme/docs").detail, "main: branch protection requires all of it");
    assert_eq!(
        result(&results, BRANCH_PROTECTED, "acme/web").detail,
        "main: branch protection lacks an approving review, dismissing stale approvals, blocking force pushes; no ruleset"
    );
    let ops = result(&results, BRANCH_PROTECTED, "acme/ops");
    let failure = ops.failure.clone().unwrap();
    assert_eq!(failure.action, "GET /repos/{owner}/{repo}/branches/{branch}/protection");
    assert_eq!((failure.code.as_str(), failure.message.as_str()), ("403", "Must have admin rights to Repository."));
    assert_eq!(ops.resource.kind, "github.repository");
    archived_repository_untouched(&server).await;
}

#[tokio::test]
async fn dependabot_passes_only_with_alerts_and_security_updates_on() {
    let server = MockServer::start().await;
    mount_acme_repos(&server, &["api"], &["web", "docs", "ops"]).await;
    let fixes = |enabled: bool, paused: bool| ok(json!({ "enabled": enabled, "paused": paused }));
    get("/repos/acme/api/vulnerability-alerts").respond_with(ResponseTemplate::new(204)).mount(&server).await;
    get("/repos/acme/api/automated-security-fixes").respond_with(fixes(true, false)).mount(&server).await;
    get("/repos/acme/web/vulnerability-alerts").respond_with(refusal(404, "Not Found")).mount(&server).await;
    get("/repos/acme/web/automated-security-fixes").respond_with(refusal(404, "Not Found")).mount(&server).await;
    get("/repos/acme/docs/vulnerability-alerts").respond_with(ResponseTemplate::new(204)).mount(&server).await;
    get("/repos/acme/docs/automated-security-fixes").respond_with(fixes(true, true)).mount(&server).await;
    // ops: alerts unreadable, so on or off is unknown.
    get("/repos/acme/ops/vulnerability-alerts")
        .respond_with(refusal(403, "Must have admin rights to Repository."))
        .mount(&server)
        .await;
    get("/repos/acme/ops/automated-security-fixes").respond_with(fixes(true, false)).mount(&server).await;

    let results = run(&server, &[DEPENDABOT]).await;

    assert_eq!(
        outcomes(&results),
        [
            (DEPENDABOT, "acme/api", CheckOutcome::Pass),
            (DEPENDABOT, "acme/docs", CheckOutcome::Fail),
            (DEPENDABOT, "acme/ops", CheckOutcome::Error),
            (DEPENDABOT, "acme/web", CheckOutcome::Fail),
        ]
    );
    assert_eq!(
        result(&results, DEPENDABOT, "acme/web").detail,
        "Dependabot alerts are off; Dependabot security updates are off"
    );
    assert_eq!(result(&results, DEPENDABOT, "acme/docs").detail, "Dependabot security updates are paused");
    let failure = result(&results, DEPENDABOT, "acme/ops").failure.clone().unwrap();
    assert_eq!(failure.action, "GET /repos/{owner}/{repo}/vulnerability-alerts");
    archived_repository_untouched(&server).await;
}

/// `GET /repos/acme/{name}`, with `security_and_analysis` when the plan offers it.
fn repo_detail(name: &str, secret_scanning: Option<&str>) -> Value {
    let mut body = repo(name, false);
    if let Some(status) = secret_scanning {
        body["security_and_analysis"] = json!({
            "advanced_security": { "status": "enabled" },
            "secret_scanning": { "status": status },
            "secret_scanning_push_protection": { "status": "disabled" },
            "dependabot_security_updates": { "status": "enabled" }
        });
    }
    body
}

#[tokio::test]
async fn secret_scanning_is_not_applicable_where_the_plan_lacks_it_never_a_pass() {
    let server = MockServer::start().await;
    mount_acme_repos(&server, &["api"], &["web", "docs"]).await;
    get("/repos/acme/api").respond_with(ok(repo_detail("api", Some("enabled")))).mount(&server).await;
    get("/repos/acme/web").respond_with(ok(repo_detail("web", Some("disabled")))).mount(&server).await;
    get("/repos/acme/docs").respond_with(ok(repo_detail("docs", None))).mount(&server).await;

    let results = run(&server, &[SECRET_SCANNING]).await;

    assert_eq!(
        outcomes(&results),
        [
            (SECRET_SCANNING, "acme/api", CheckOutcome::Pass),
            (SECRET_SCANNING, "acme/docs", CheckOutcome::NotApplicable),
            (SECRET_SCANNING, "acme/web", CheckOutcome::Fail),
        ]
    );
    assert_eq!(result(&results, SECRET_SCANNING, "acme/web").detail, "secret scanning is disabled");
    assert!(result(&results, SECRET_SCANNING, "acme/docs").detail.contains("plan does not offer it"));
    archived_repository_untouched(&server).await;
}

fn alert(number: u64, created_at: &str, severity: &str) -> Value {
    let package = json!({ "ecosystem": "pip", "name": "django" });
    json!({
        "number": number, "state": "open",
        "dependency": { "package": package, "manifest_path": "requirements.txt", "scope": "runtime" },
        "security_advisory": {
            "ghsa_id": "GHSA-rf4j-j272-fj86", "cve_id": "CVE-2018-6188",
            "summary": "Django allows remote attackers to gain privileges", "severity": severity,
            "identifiers": [{ "value": "GHSA-rf4j-j272-fj86", "type": "GHSA" }],
            "published_at": "2018-10-03T21:13:54Z", "updated_at": "2022-04-26T18:35:37Z", "withdrawn_at": null
        },
        "security_vulnerability": {
            "package": package, "severity": severity, "vulnerable_version_range": ">= 2.0.0, < 2.0.2",
            "first_patched_version": { "identifier": "2.0.2" }
        },
        "url": format!("https://api.github.com/repos/acme/api/dependabot/alerts/{number}"),
        "html_url": format!("https://github.com/acme/api/security/dependabot/{number}"),
        "created_at": created_at, "updated_at": created_at,
        "dismissed_at": null, "dismissed_by": null, "dismissed_reason": null, "dismissed_comment": null,
        "fixed_at": null, "auto_dismissed_at": null
    })
}

/// Mounts a repository's open critical and high alerts, checking the list's query.
async fn mount_alerts(server: &MockServer, name: &str, pages: Vec<Value>) {
    let at = format!("/repos/acme/{name}/dependabot/alerts");
    mount_pages(server, &at, &[("state", "open"), ("severity", "critical,high")], pages).await;
}

#[tokio::test]
async fn critical_and_high_alerts_open_for_more_than_30_days_fail_naming_them() {
    let server = MockServer::start().await;
    mount_acme_repos(&server, &["api"], &["web", "docs"]).await;
    let recent =
        vec![json!([alert(7, "2026-11-21T08:00:00Z", "critical")]), json!([alert(8, "2026-11-11T08:00:00Z", "high")])];
    mount_alerts(&server, "api", recent).await;
    mount_alerts(
        &server,
        "web",
        vec![json!([alert(3, "2026-10-17T08:00:00Z", "high"), alert(4, "2026-11-26T08:00:00Z", "critical")])],
    )
    .await;
    mount_alerts(&server, "docs", vec![json!([])]).await;

    let results = run(&server, &[ALERTS_FIXED]).await;

    assert_eq!(
        outcomes(&results),
        [
            (ALERTS_FIXED, "acme/api", CheckOutcome::Pass),
            (ALERTS_FIXED, "acme/docs", CheckOutcome::Pass),
            (ALERTS_FIXED, "acme/web", CheckOutcome::Fail),
        ]
    );
    assert_eq!(
        result(&results, ALERTS_FIXED, "acme/web").detail,
        "critical or high alerts open for more than 30 days: #3"
    );
    assert_eq!(
        result(&results, ALERTS_FIXED, "acme/api").detail,
        "2 critical or high alerts open, none for more than 30 days"
    );
    archived_repository_untouched(&server).await;
}

fn pull(number: u64, author: &str, updated_at: &str, merged_at: Option<&str>) -> Value {
    json!({
        "url": format!("https://api.github.com/repos/acme/api/pulls/{number}"),
        "id": 1_000 + number, "node_id": "MDExOlB1bGxSZXF1ZXN0MQ==",
        "html_url": format!("https://github.com/acme/api/pull/{number}"),
        "number": number, "state": "closed", "locked": false, "title": format!("Change number {number}"),
        "user": user(author, 7), "body": "Please pull these awesome changes in!", "labels": [],
        "created_at": "2026-08-01T09:00:00Z", "updated_at": updated_at, "closed_at": merged_at.unwrap_or(updated_at),
        "merged_at": merged_at, "merge_commit_sha": "e5bd3914e2e596debea16f433f57875b5b90bcd6",
        "assignee": null, "requested_reviewers": [],
        "head": { "label": "acme:feature", "ref": "feature", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e" },
        "base": { "label": "acme:main", "ref": "main", "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e" },
        "author_association": "MEMBER", "draft": false
    })
}

fn review(id: u64, reviewer: &str, state: &str) -> Value {
    json!({
        "id": id, "node_id": "MDE3OlB1bGxSZXF1ZXN0UmV2aWV3ODA=", "user": user(reviewer, id),
        "body": "Here is the body for the review.", "state": state,
        "html_url": "https://github.com/acme/api/pull/12#pullrequestreview-80",
        "pull_request_url": "https://api.github.com/repos/acme/api/pulls/12",
        "submitted_at": "2026-11-19T17:43:43Z", "commit_id": "ecdd80bb57125d7ba9641ffaa4d7d2c19d3f3091",
        "author_association": "COLLABORATOR"
    })
}

#[tokio::test]
async fn every_pull_request_merged_in_the_period_needs_an_approval_from_someone_else() {
    let server = MockServer::start().await;
    mount_acme_repos(&server, &["api"], &["web"]).await;
    // api, most recently updated first: #12 merged in the period, #11 closed unmerged; then #10
    // merged in the period, #9 merged before it though updated in it, #8 updated before it, which
    // ends the reading: the third page is never asked for.
    let pulls = vec![
        json!([
            pull(12, "alice", "2026-11-20T10:00:00Z", Some("2026-11-20T10:00:00Z")),
            pull(11, "alice", "2026-11-10T10:00:00Z", None)
        ]),
        json!([
            pull(10, "carol", "2026-10-06T10:00:00Z", Some("2026-10-05T10:00:00Z")),
            pull(9, "carol", "2026-09-10T10:00:00Z", Some("2026-08-20T10:00:00Z")),
            pull(8, "carol", "2026-08-01T10:00:00Z", Some("2026-07-30T10:00:00Z"))
        ]),
        json!([pull(7, "carol", "2026-07-01T10:00:00Z", Some("2026-07-01T10:00:00Z"))]),
    ];
    let query = [("state", "closed"), ("base", "main"), ("sort", "updated"), ("direction", "desc")];
    mount_pages_read(&server, "/repos/acme/api/pulls", &query, pulls, 2).await;
    let reviews_of_12 = vec![
        json!([review(80, "bob", "COMMENTED"), review(81, "alice", "APPROVED")]),
        json!([review(82, "bob", "APPROVED")]),
    ];
    mount_pages(&server, "/repos/acme/api/pulls/12/reviews", &[], reviews_of_12).await;
    let reviews_of_10 = vec![json!([review(90, "carol", "APPROVED"), review(91, "dave", "CHANGES_REQUESTED")])];
    mount_pages(&server, "/repos/acme/api/pulls/10/reviews", &[], reviews_of_10).await;
    // web: one merged pull request whose reviews cannot be read.
    mount_pages(
        &server,
        "/repos/acme/web/pulls",
        &[],
        vec![json!([pull(5, "erin", "2026-11-25T10:00:00Z", Some("2026-11-25T10:00:00Z"))])],
    )
    .await;
    get("/repos/acme/web/pulls/5/reviews")
        .respond_with(refusal(403, "Resource not accessible by integration"))
        .mount(&server)
        .await;

    let results = run(&server, &[PULLS_REVIEWED]).await;

    assert_eq!(
        outcomes(&results),
        [
            (PULLS_REVIEWED, "acme/api#10", CheckOutcome::Fail),
            (PULLS_REVIEWED, "acme/api#12", CheckOutcome::Pass),
            (PULLS_REVIEWED, "acme/web#5", CheckOutcome::Error),
        ]
    );
    let approved = result(&results, PULLS_REVIEWED, "acme/api#12");
    assert_eq!(approved.detail, "approved by bob");
    assert_eq!(
        (approved.resource.kind.as_str(), approved.resource.name.as_str()),
        ("github.pull-request", "Change number 12")
    );
    assert_eq!(
        result(&results, PULLS_REVIEWED, "acme/api#10").detail,
        "merged without an approving review from someone other than its author, carol"
    );
    let failure = result(&results, PULLS_REVIEWED, "acme/web#5").failure.clone().unwrap();
    assert_eq!(failure.action, "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews");
    archived_repository_untouched(&server).await;
}

#[tokio::test]
async fn a_refused_list_of_organizations_is_an_error_for_every_check_naming_the_action() {
    let server = MockServer::start().await;
    get("/user/orgs").respond_with(refusal(401, "Bad credentials")).mount(&server).await;

    let results = run(&server, ALL).await;

    assert_eq!(results.len(), ALL.len());
    for result in &results {
        assert_eq!(result.outcome, CheckOutcome::Error, "{result:?}");
        let failure = result.failure.clone().unwrap();
        assert_eq!(
            (failure.code.as_str(), failure.message.as_str(), failure.action.as_str()),
            ("401", "Bad credentials", "GET /user/orgs")
        );
        assert_eq!(result.detail, "could not read (GET /user/orgs): 401");
    }
}

#[tokio::test]
async fn a_refused_organization_is_an_error_never_a_failure_and_keeps_no_token_or_body() {
    let server = MockServer::start().await;
    mount_pages(&server, "/user/orgs", &[], vec![json!([org("acme", 1)])]).await;
    let saml = "Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization.";
    get("/orgs/acme").respond_with(refusal(403, saml)).mount(&server).await;
    get("/orgs/acme/repos").respond_with(refusal(403, saml)).mount(&server).await;

    let results = run(&server, ALL).await;

    assert_eq!(results.len(), ALL.len(), "{results:#?}");
    for result in &results {
        assert_eq!(result.outcome, CheckOutcome::Error, "{result:?}");
        assert_eq!((result.resource.kind.as_str(), result.resource.id.as_str()), ("github.organization", "acme"));
        let failure = result.failure.clone().unwrap();
        let action =
            if result.check_id.starts_with("github.org.") { "GET /orgs/{org}" } else { "GET /orgs/{org}/repos" };
        assert_eq!((failure.code.as_str(), failure.message.as_str(), failure.action.as_str()), ("403", saml, action));
    }
    let text = serde_json::to_string(&results).unwrap();
    assert!(!text.contains(TOKEN) && !text.contains("documentation_url"), "{text}");
}

#[tokio::test]
async fn a_throttled_read_is_retried() {
    let server = MockServer::start().await;
    // A secondary rate limit (429 with Retry-After), then the answer.
    get("/user/orgs")
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0").set_body_json(json!({
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
        })))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    mount_pages(&server, "/user/orgs", &[], vec![json!([org("acme", 1)])]).await;
    // The primary rate limit: GitHub's 403 with no requests remaining, then the answer.
    get("/orgs/acme")
        .respond_with(
            refusal(403, "API rate limit exceeded for user ID 1.")
                .insert_header("x-ratelimit-limit", "5000")
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", "1764590400"),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    get("/orgs/acme").respond_with(ok(org_settings("acme", Some(true), Some("none")))).expect(1).mount(&server).await;

    let results = run(&server, &[TWO_FACTOR, BASE_PERMISSION]).await;

    assert_eq!(
        outcomes(&results),
        [(BASE_PERMISSION, "acme", CheckOutcome::Pass), (TWO_FACTOR, "acme", CheckOutcome::Pass)]
    );
}

#[tokio::test]
async fn throttling_beyond_the_retries_is_an_error() {
    let server = MockServer::start().await;
    get("/user/orgs")
        .respond_with(refusal(429, "You have exceeded a secondary rate limit."))
        .expect(3)
        .mount(&server)
        .await;

    let results = run(&server, &[BASE_PERMISSION]).await;

    assert_eq!(results.len(), 1);
    assert_eq!(results[0].outcome, CheckOutcome::Error);
    assert_eq!(results[0].failure.as_ref().map(|f| f.code.as_str()), Some("429"));
}

#[tokio::test]
async fn a_next_page_on_another_origin_is_not_followed() {
    let server = MockServer::start().await;
    let elsewhere = MockServer::start().await;
    Mock::given(method("GET")).respond_with(ok(json!([org("evil", 9)]))).expect(0).mount(&elsewhere).await;
    let link = format!("<{}/user/orgs?per_page=100&page=2>; rel=\"next\"", elsewhere.uri());
    get("/user/orgs")
        .respond_with(ok(json!([org("acme", 1)])).insert_header("link", link.as_str()))
        .mount(&server)
        .await;
    get("/orgs/acme").respond_with(ok(org_settings("acme", Some(true), Some("read")))).mount(&server).await;

    let results = run(&server, &[BASE_PERMISSION]).await;

    assert_eq!(outcomes(&results), [(BASE_PERMISSION, "acme", CheckOutcome::Pass)]);
    assert!(elsewhere.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_unreachable_github_is_an_error_for_every_check() {
    // A port nothing listens on any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);

    let results = run_at(&format!("http://{address}"), ALL).await;

    assert_eq!(results.len(), ALL.len());
    for result in &results {
        assert_eq!(result.outcome, CheckOutcome::Error);
        assert_eq!(result.failure.as_ref().map(|f| f.code.as_str()), Some("unreachable"));
    }
}
