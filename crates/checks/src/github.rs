//! GitHub's checks (`checks/github.json`), read through the REST API: the organizations of the
//! token's user (`GET /user/orgs`), their settings, and each of their non-archived repositories.
//!
//! Requests are sent one after another: GitHub asks integrations not to send concurrent requests,
//! which trip its secondary rate limits.

use std::collections::HashSet;

use compliance_credentials::RequestAuth;
use compliance_domain::Timestamp;
use compliance_domain::check::CheckOutcome;
use compliance_domain::check_result::{CheckResult, CheckedResource, ReadFailure};
use compliance_ports::CheckTarget;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::http::{Answer, CheckHttp};

const TWO_FACTOR: &str = "github.org.two-factor-required";
const BASE_PERMISSION: &str = "github.org.base-permission";
const BRANCH_PROTECTED: &str = "github.repo.default-branch-protected";
const DEPENDABOT: &str = "github.repo.dependabot";
const SECRET_SCANNING: &str = "github.repo.secret-scanning";
const ALERTS_FIXED: &str = "github.repo.dependabot-alerts-fixed";
const PULLS_REVIEWED: &str = "github.repo.merged-pull-requests-reviewed";

/// The checks this module runs: every GitHub check of the catalog.
pub(crate) const CHECKS: &[&str] =
    &[TWO_FACTOR, BASE_PERMISSION, BRANCH_PROTECTED, DEPENDABOT, SECRET_SCANNING, ALERTS_FIXED, PULLS_REVIEWED];

/// The checks judging an organization's settings, and those judging each repository.
const ORG_CHECKS: &[&str] = &[TWO_FACTOR, BASE_PERMISSION];
const REPO_CHECKS: &[&str] = &[BRANCH_PROTECTED, DEPENDABOT, SECRET_SCANNING, ALERTS_FIXED, PULLS_REVIEWED];

// The API actions, as the catalog's `reads` name them (what a customer grants).
const LIST_ORGS: &str = "GET /user/orgs";
const GET_ORG: &str = "GET /orgs/{org}";
const LIST_MEMBERS_WITHOUT_2FA: &str = "GET /orgs/{org}/members?filter=2fa_disabled";
const LIST_REPOS: &str = "GET /orgs/{org}/repos";
const GET_REPO: &str = "GET /repos/{owner}/{repo}";
const GET_PROTECTION: &str = "GET /repos/{owner}/{repo}/branches/{branch}/protection";
const GET_BRANCH_RULES: &str = "GET /repos/{owner}/{repo}/rules/branches/{branch}";
const GET_VULNERABILITY_ALERTS: &str = "GET /repos/{owner}/{repo}/vulnerability-alerts";
const GET_SECURITY_FIXES: &str = "GET /repos/{owner}/{repo}/automated-security-fixes";
const LIST_DEPENDABOT_ALERTS: &str = "GET /repos/{owner}/{repo}/dependabot/alerts";
const LIST_PULLS: &str = "GET /repos/{owner}/{repo}/pulls";
const LIST_REVIEWS: &str = "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews";

/// GitHub's largest page.
const PER_PAGE: &str = "100";
/// How long a critical or high Dependabot alert may stay open.
const ALERT_GRACE: time::Duration = time::Duration::days(30);
/// The most names a detail lists; the rest are counted.
const NAMES_SHOWN: usize = 30;

/// Runs the GitHub checks of `target.checks` over every organization of the token's user.
pub(crate) async fn read(http: &CheckHttp, api: &str, target: &CheckTarget) -> Vec<CheckResult> {
    let wanted: Vec<&'static str> =
        CHECKS.iter().copied().filter(|id| target.checks.iter().any(|asked| asked == id)).collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let github = GitHub::new(http, api, &target.auth);
    let orgs = match github.list::<Login>(&["user", "orgs"], &[], LIST_ORGS).await {
        Ok(orgs) => orgs,
        Err(failure) => return errors(&wanted, &account_resource(), &failure),
    };
    let mut results = Vec::new();
    for org in &orgs {
        results.extend(org_results(&github, &org.login, &wanted).await);
        results.extend(repo_results(&github, &org.login, &wanted, target).await);
    }
    results
}

/// GitHub's REST API at `api`, called with the connection's token.
struct GitHub<'a> {
    http: &'a CheckHttp,
    api: &'a str,
    auth: &'a RequestAuth,
    headers: HeaderMap,
}

impl<'a> GitHub<'a> {
    fn new(http: &'a CheckHttp, api: &'a str, auth: &'a RequestAuth) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/vnd.github+json"));
        headers.insert(HeaderName::from_static("x-github-api-version"), HeaderValue::from_static("2022-11-28"));
        Self { http, api, auth, headers }
    }

    /// The URL of the path `segments`, each percent-encoded (a branch's name may hold a `/`).
    fn url(&self, segments: &[&str], query: &[(&str, &str)], action: &str) -> Result<String, ReadFailure> {
        let invalid = || ReadFailure::new("invalid_endpoint", "the GitHub API's address is not a base URL", action);
        let mut url = url::Url::parse(self.api).map_err(|_| invalid())?;
        url.path_segments_mut().map_err(|()| invalid())?.pop_if_empty().extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url.into())
    }

    async fn get(&self, segments: &[&str], action: &str) -> Result<Answer, ReadFailure> {
        self.get_accepting(segments, action, &[]).await
    }

    /// A GET where the `accepted` statuses are answers: GitHub says "not set up" with a 404.
    async fn get_accepting(
        &self,
        segments: &[&str],
        action: &str,
        accepted: &[StatusCode],
    ) -> Result<Answer, ReadFailure> {
        let url = self.url(segments, &[], action)?;
        self.http.get_accepting(&url, self.auth, &self.headers, action, accepted).await
    }

    /// A list read page by page, [`PER_PAGE`] items a page.
    fn pages(&self, segments: &[&str], query: &[(&str, &str)], action: &'static str) -> Pages<'_> {
        let mut query = query.to_vec();
        query.push(("per_page", PER_PAGE));
        let first = self.url(segments, &query, action);
        let seen = first.iter().cloned().collect();
        Pages { github: self, next: Some(first), seen, action }
    }

    /// Every item of a list, from all its pages.
    async fn list<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, &str)],
        action: &'static str,
    ) -> Result<Vec<T>, ReadFailure> {
        let mut pages = self.pages(segments, query, action);
        let mut items = Vec::new();
        while let Some(page) = pages.next_page::<T>().await? {
            items.extend(page);
        }
        Ok(items)
    }
}

/// A list's pages, each naming the next in its `Link` header.
struct Pages<'a> {
    github: &'a GitHub<'a>,
    next: Option<Result<String, ReadFailure>>,
    seen: HashSet<String>,
    action: &'static str,
}

impl Pages<'_> {
    /// The next page's items, or `None` after the last page.
    async fn next_page<T: DeserializeOwned>(&mut self) -> Result<Option<Vec<T>>, ReadFailure> {
        let Some(url) = self.next.take().transpose()? else {
            return Ok(None);
        };
        let github = self.github;
        let answer = github.http.get(&url, github.auth, &github.headers, self.action).await?;
        // A page naming one already read as its next would never end the list.
        self.next = answer.next.clone().filter(|next| self.seen.insert(next.clone())).map(Ok);
        answer.json(self.action).map(Some)
    }
}

// GitHub's answers: only the fields the checks read.

/// An organization (`GET /user/orgs`), a member, a pull request's author or a reviewer.
#[derive(Deserialize)]
struct Login {
    login: String,
}

/// An organization's settings; GitHub leaves these two out for a token that is not an owner's.
#[derive(Deserialize)]
struct OrgSettings {
    two_factor_requirement_enabled: Option<bool>,
    default_repository_permission: Option<String>,
}

#[derive(Deserialize)]
struct Repo {
    name: String,
    full_name: String,
    owner: Login,
    default_branch: String,
    #[serde(default)]
    archived: bool,
}

impl Repo {
    /// The path of `rest` under `/repos/{owner}/{repo}`.
    fn path<'a>(&'a self, rest: &[&'a str]) -> Vec<&'a str> {
        let mut segments = vec!["repos", self.owner.login.as_str(), self.name.as_str()];
        segments.extend_from_slice(rest);
        segments
    }

    fn resource(&self) -> CheckedResource {
        resource("github.repository", &self.full_name, &self.full_name)
    }
}

/// Where a failure to list the token's organizations is reported: no organization is known yet.
fn account_resource() -> CheckedResource {
    resource("github.account", "user", "the connection's GitHub user")
}

fn org_resource(org: &str) -> CheckedResource {
    resource("github.organization", org, org)
}

fn resource(kind: &str, id: &str, name: &str) -> CheckedResource {
    CheckedResource { kind: kind.to_owned(), id: id.to_owned(), name: name.to_owned(), region: None }
}

/// One `error` result per check of `checks`, all for `resource`.
fn errors(checks: &[&str], resource: &CheckedResource, failure: &ReadFailure) -> Vec<CheckResult> {
    checks.iter().map(|id| CheckResult::error(id, resource.clone(), failure.clone())).collect()
}

/// `names` joined, the first [`NAMES_SHOWN`] of them, the rest counted.
fn name_list<S: AsRef<str>>(names: &[S]) -> String {
    let mut text = names.iter().take(NAMES_SHOWN).map(AsRef::as_ref).collect::<Vec<_>>().join(", ");
    if names.len() > NAMES_SHOWN {
        text += &format!(" and {} more", names.len() - NAMES_SHOWN);
    }
    text
}

// The organization's checks.

async fn org_results(github: &GitHub<'_>, org: &str, wanted: &[&'static str]) -> Vec<CheckResult> {
    let checks: Vec<&str> = wanted.iter().copied().filter(|id| ORG_CHECKS.contains(id)).collect();
    if checks.is_empty() {
        return Vec::new();
    }
    let settings =
        match github.get(&["orgs", org], GET_ORG).await.and_then(|answer| answer.json::<OrgSettings>(GET_ORG)) {
            Ok(settings) => settings,
            Err(failure) => return errors(&checks, &org_resource(org), &failure),
        };
    let mut results = Vec::new();
    for id in checks {
        results.push(match id {
            TWO_FACTOR => two_factor(github, org, &settings).await,
            _ => base_permission(org, &settings),
        });
    }
    results
}

/// GitHub answered without a setting only an owner's token sees.
fn not_shown(field: &str) -> ReadFailure {
    let message = format!("GitHub's answer has no {field}: only an organization owner's token sees it");
    ReadFailure::new("not_an_owner", &message, GET_ORG)
}

async fn two_factor(github: &GitHub<'_>, org: &str, settings: &OrgSettings) -> CheckResult {
    let judged = |outcome, detail: String| CheckResult::judged(TWO_FACTOR, org_resource(org), outcome, detail);
    match settings.two_factor_requirement_enabled {
        None => CheckResult::error(TWO_FACTOR, org_resource(org), not_shown("two_factor_requirement_enabled")),
        Some(true) => judged(CheckOutcome::Pass, "the organization requires two-factor authentication".into()),
        Some(false) => judged(CheckOutcome::Fail, members_without_two_factor(github, org).await),
    }
}

/// The failure's detail, naming the members without two-factor authentication. The setting
/// being off is failure enough: when the members cannot be read the detail says so instead.
async fn members_without_two_factor(github: &GitHub<'_>, org: &str) -> String {
    let query = [("filter", "2fa_disabled")];
    let members = github.list::<Login>(&["orgs", org, "members"], &query, LIST_MEMBERS_WITHOUT_2FA).await;
    let off = "the organization does not require two-factor authentication";
    match members {
        Ok(members) if members.is_empty() => format!("{off} (every member has it today)"),
        Ok(members) => {
            let logins: Vec<&str> = members.iter().map(|member| member.login.as_str()).collect();
            format!("{off}; members without it: {}", name_list(&logins))
        }
        Err(failure) => {
            format!("{off}; the members without it could not be read ({}: {})", failure.action, failure.code)
        }
    }
}

fn base_permission(org: &str, settings: &OrgSettings) -> CheckResult {
    let Some(permission) = settings.default_repository_permission.as_deref() else {
        return CheckResult::error(BASE_PERMISSION, org_resource(org), not_shown("default_repository_permission"));
    };
    let (outcome, detail) = if matches!(permission, "read" | "none") {
        (CheckOutcome::Pass, format!("members' base permission is {permission}"))
    } else {
        (CheckOutcome::Fail, format!("members' base permission is {permission}; it should be read or none"))
    };
    CheckResult::judged(BASE_PERMISSION, org_resource(org), outcome, detail)
}

// The repositories' checks.

async fn repo_results(
    github: &GitHub<'_>,
    org: &str,
    wanted: &[&'static str],
    target: &CheckTarget,
) -> Vec<CheckResult> {
    let checks: Vec<&str> = wanted.iter().copied().filter(|id| REPO_CHECKS.contains(id)).collect();
    if checks.is_empty() {
        return Vec::new();
    }
    let repos = match github.list::<Repo>(&["orgs", org, "repos"], &[("type", "all")], LIST_REPOS).await {
        Ok(repos) => repos,
        Err(failure) => return errors(&checks, &org_resource(org), &failure),
    };
    let mut results = Vec::new();
    // An archived repository is read-only: nothing in it can be fixed, and it takes no changes.
    for repo in repos.iter().filter(|repo| !repo.archived) {
        for id in &checks {
            results.extend(repo_check(github, repo, id, target).await);
        }
    }
    results
}

async fn repo_check(github: &GitHub<'_>, repo: &Repo, id: &str, target: &CheckTarget) -> Vec<CheckResult> {
    match id {
        BRANCH_PROTECTED => vec![branch_protected(github, repo).await],
        DEPENDABOT => vec![dependabot(github, repo).await],
        SECRET_SCANNING => vec![secret_scanning(github, repo).await],
        ALERTS_FIXED => vec![alerts_fixed(github, repo, target.now).await],
        PULLS_REVIEWED => pulls_reviewed(github, repo, target).await,
        _ => Vec::new(),
    }
}

// github.repo.default-branch-protected

/// What the default branch's protection must hold, as one mechanism (classic branch protection or
/// rulesets) sets it.
#[derive(Debug, Default)]
struct BranchRules {
    approving_review: bool,
    dismisses_stale_approvals: bool,
    blocks_force_pushes: bool,
    blocks_deletion: bool,
}

impl BranchRules {
    fn missing(&self) -> Vec<&'static str> {
        [
            (self.approving_review, "an approving review"),
            (self.dismisses_stale_approvals, "dismissing stale approvals"),
            (self.blocks_force_pushes, "blocking force pushes"),
            (self.blocks_deletion, "blocking deletion"),
        ]
        .into_iter()
        .filter(|(held, _)| !held)
        .map(|(_, what)| what)
        .collect()
    }

    fn from_rules(rules: &[Rule]) -> Self {
        let reviews =
            || rules.iter().filter(|rule| rule.kind == "pull_request").filter_map(|rule| rule.parameters.as_ref());
        Self {
            approving_review: reviews().any(|review| review.required_approving_review_count >= 1),
            dismisses_stale_approvals: reviews().any(|review| review.dismiss_stale_reviews_on_push),
            blocks_force_pushes: rules.iter().any(|rule| rule.kind == "non_fast_forward"),
            blocks_deletion: rules.iter().any(|rule| rule.kind == "deletion"),
        }
    }
}

/// Classic branch protection (`GET .../branches/{branch}/protection`).
#[derive(Deserialize)]
struct ClassicProtection {
    required_pull_request_reviews: Option<ClassicReviews>,
    allow_force_pushes: Option<Enabled>,
    allow_deletions: Option<Enabled>,
}

#[derive(Deserialize)]
struct ClassicReviews {
    #[serde(default)]
    dismiss_stale_reviews: bool,
    #[serde(default)]
    required_approving_review_count: u32,
}

#[derive(Deserialize)]
struct Enabled {
    enabled: bool,
}

impl From<ClassicProtection> for BranchRules {
    fn from(protection: ClassicProtection) -> Self {
        let reviews = protection.required_pull_request_reviews;
        // A setting GitHub did not show is not one that holds.
        let refused = |allowed: Option<Enabled>| allowed.is_some_and(|allowed| !allowed.enabled);
        Self {
            approving_review: reviews.as_ref().is_some_and(|r| r.required_approving_review_count >= 1),
            dismisses_stale_approvals: reviews.as_ref().is_some_and(|r| r.dismiss_stale_reviews),
            blocks_force_pushes: refused(protection.allow_force_pushes),
            blocks_deletion: refused(protection.allow_deletions),
        }
    }
}

/// An active rule of the rulesets applying to a branch (`GET .../rules/branches/{branch}`).
#[derive(Deserialize)]
struct Rule {
    #[serde(rename = "type")]
    kind: String,
    parameters: Option<RuleParameters>,
}

/// A `pull_request` rule's parameters (other rules' parameters read as the defaults).
#[derive(Deserialize)]
struct RuleParameters {
    #[serde(default)]
    required_approving_review_count: u32,
    #[serde(default)]
    dismiss_stale_reviews_on_push: bool,
}

async fn branch_protected(github: &GitHub<'_>, repo: &Repo) -> CheckResult {
    let classic = classic_protection(github, repo).await;
    let rules = github
        .list::<Rule>(&repo.path(&["rules", "branches", &repo.default_branch]), &[], GET_BRANCH_RULES)
        .await
        .map(|rules| (rules.is_empty(), BranchRules::from_rules(&rules)));
    judge_protection(repo, classic, rules)
}

/// The branch's classic protection, `None` when it has none (GitHub's 404).
async fn classic_protection(github: &GitHub<'_>, repo: &Repo) -> Result<Option<BranchRules>, ReadFailure> {
    let path = repo.path(&["branches", &repo.default_branch, "protection"]);
    let answer = github.get_accepting(&path, GET_PROTECTION, &[StatusCode::NOT_FOUND]).await?;
    if answer.status == StatusCode::NOT_FOUND.as_u16() {
        return Ok(None);
    }
    answer.json::<ClassicProtection>(GET_PROTECTION).map(|protection| Some(protection.into()))
}

/// Either mechanism holding everything passes, even when the other could not be read; a failure
/// needs both read.
fn judge_protection(
    repo: &Repo,
    classic: Result<Option<BranchRules>, ReadFailure>,
    rules: Result<(bool, BranchRules), ReadFailure>,
) -> CheckResult {
    let branch = &repo.default_branch;
    let judged = |outcome, detail: String| CheckResult::judged(BRANCH_PROTECTED, repo.resource(), outcome, detail);
    if matches!(&classic, Ok(Some(held)) if held.missing().is_empty()) {
        return judged(CheckOutcome::Pass, format!("{branch}: branch protection requires all of it"));
    }
    if matches!(&rules, Ok((_, held)) if held.missing().is_empty()) {
        return judged(CheckOutcome::Pass, format!("{branch}: rulesets require all of it"));
    }
    match (classic, rules) {
        (Err(failure), _) | (_, Err(failure)) => CheckResult::error(BRANCH_PROTECTED, repo.resource(), failure),
        (Ok(classic), Ok((no_rules, rules))) => {
            let classic = match classic {
                None => "no branch protection".to_owned(),
                Some(held) => format!("branch protection lacks {}", held.missing().join(", ")),
            };
            let rules = if no_rules {
                "no ruleset".to_owned()
            } else {
                format!("rulesets lack {}", rules.missing().join(", "))
            };
            judged(CheckOutcome::Fail, format!("{branch}: {classic}; {rules}"))
        }
    }
}

// github.repo.dependabot

/// `GET .../automated-security-fixes`.
#[derive(Deserialize)]
struct SecurityFixes {
    enabled: bool,
    #[serde(default)]
    paused: bool,
}

async fn dependabot(github: &GitHub<'_>, repo: &Repo) -> CheckResult {
    let not_found = [StatusCode::NOT_FOUND];
    // 204: alerts are on; 404: off.
    let alerts = github
        .get_accepting(&repo.path(&["vulnerability-alerts"]), GET_VULNERABILITY_ALERTS, &not_found)
        .await
        .map(|answer| answer.status != StatusCode::NOT_FOUND.as_u16());
    let fixes = security_fixes(github, repo).await;
    judge_dependabot(repo, alerts, fixes)
}

/// Whether security updates are on, or why not; a 404 is GitHub's "not enabled".
async fn security_fixes(github: &GitHub<'_>, repo: &Repo) -> Result<Result<(), &'static str>, ReadFailure> {
    let path = repo.path(&["automated-security-fixes"]);
    let answer = github.get_accepting(&path, GET_SECURITY_FIXES, &[StatusCode::NOT_FOUND]).await?;
    if answer.status == StatusCode::NOT_FOUND.as_u16() {
        return Ok(Err("Dependabot security updates are off"));
    }
    let fixes: SecurityFixes = answer.json(GET_SECURITY_FIXES)?;
    Ok(match (fixes.enabled, fixes.paused) {
        (false, _) => Err("Dependabot security updates are off"),
        (true, true) => Err("Dependabot security updates are paused"),
        (true, false) => Ok(()),
    })
}

/// Either setting known to be off fails; a pass needs both read.
fn judge_dependabot(
    repo: &Repo,
    alerts: Result<bool, ReadFailure>,
    fixes: Result<Result<(), &'static str>, ReadFailure>,
) -> CheckResult {
    let mut off = Vec::new();
    if matches!(alerts, Ok(false)) {
        off.push("Dependabot alerts are off");
    }
    if let Ok(Err(why)) = &fixes {
        off.push(*why);
    }
    let unread = alerts.as_ref().err().or(fixes.as_ref().err()).cloned();
    match (off.is_empty(), unread) {
        (false, unread) => {
            let unread = unread.map(|f| format!(" ({} could not be read: {})", f.action, f.code)).unwrap_or_default();
            CheckResult::judged(DEPENDABOT, repo.resource(), CheckOutcome::Fail, format!("{}{unread}", off.join("; ")))
        }
        (true, Some(failure)) => CheckResult::error(DEPENDABOT, repo.resource(), failure),
        (true, None) => CheckResult::judged(
            DEPENDABOT,
            repo.resource(),
            CheckOutcome::Pass,
            "Dependabot alerts and security updates are on",
        ),
    }
}

// github.repo.secret-scanning

/// `GET /repos/{owner}/{repo}`: `security_and_analysis` is there only when the plan offers it.
#[derive(Deserialize)]
struct RepoSecurity {
    security_and_analysis: Option<SecurityAndAnalysis>,
}

#[derive(Deserialize)]
struct SecurityAndAnalysis {
    secret_scanning: Option<FeatureStatus>,
}

#[derive(Deserialize)]
struct FeatureStatus {
    status: String,
}

async fn secret_scanning(github: &GitHub<'_>, repo: &Repo) -> CheckResult {
    let security = github.get(&repo.path(&[]), GET_REPO).await.and_then(|answer| answer.json::<RepoSecurity>(GET_REPO));
    let status = match security {
        Ok(security) => security.security_and_analysis.and_then(|analysis| analysis.secret_scanning),
        Err(failure) => return CheckResult::error(SECRET_SCANNING, repo.resource(), failure),
    };
    let (outcome, detail) = match status {
        None => (
            CheckOutcome::NotApplicable,
            "GitHub shows no secret scanning setting for this repository: its plan does not offer it".to_owned(),
        ),
        Some(status) if status.status == "enabled" => (CheckOutcome::Pass, "secret scanning is enabled".to_owned()),
        Some(status) => (CheckOutcome::Fail, format!("secret scanning is {}", status.status)),
    };
    CheckResult::judged(SECRET_SCANNING, repo.resource(), outcome, detail)
}

// github.repo.dependabot-alerts-fixed

#[derive(Deserialize)]
struct Alert {
    number: u64,
    created_at: Timestamp,
}

async fn alerts_fixed(github: &GitHub<'_>, repo: &Repo, now: Timestamp) -> CheckResult {
    let query = [("state", "open"), ("severity", "critical,high")];
    let alerts = match github.list::<Alert>(&repo.path(&["dependabot", "alerts"]), &query, LIST_DEPENDABOT_ALERTS).await
    {
        Ok(alerts) => alerts,
        Err(failure) => return CheckResult::error(ALERTS_FIXED, repo.resource(), failure),
    };
    let cutoff = now.plus(-ALERT_GRACE);
    let overdue: Vec<String> =
        alerts.iter().filter(|alert| alert.created_at < cutoff).map(|alert| format!("#{}", alert.number)).collect();
    let (outcome, detail) = if overdue.is_empty() {
        (CheckOutcome::Pass, format!("{} critical or high alerts open, none for more than 30 days", alerts.len()))
    } else {
        (CheckOutcome::Fail, format!("critical or high alerts open for more than 30 days: {}", name_list(&overdue)))
    };
    CheckResult::judged(ALERTS_FIXED, repo.resource(), outcome, detail)
}

// github.repo.merged-pull-requests-reviewed

#[derive(Deserialize)]
struct Pull {
    number: u64,
    title: String,
    user: Option<Login>,
    updated_at: Timestamp,
    merged_at: Option<Timestamp>,
}

#[derive(Deserialize)]
struct Review {
    user: Option<Login>,
    state: String,
}

async fn pulls_reviewed(github: &GitHub<'_>, repo: &Repo, target: &CheckTarget) -> Vec<CheckResult> {
    let merged = match merged_pulls(github, repo, target).await {
        Ok(merged) => merged,
        Err(failure) => return vec![CheckResult::error(PULLS_REVIEWED, repo.resource(), failure)],
    };
    let mut results = Vec::with_capacity(merged.len());
    for pull in &merged {
        results.push(pull_reviewed(github, repo, pull).await);
    }
    results
}

/// The pull requests merged into the default branch in the period. Pages come most recently
/// updated first, and merging updates a pull request: the first one updated before the period
/// ends the reading.
async fn merged_pulls(github: &GitHub<'_>, repo: &Repo, target: &CheckTarget) -> Result<Vec<Pull>, ReadFailure> {
    let query =
        [("state", "closed"), ("base", repo.default_branch.as_str()), ("sort", "updated"), ("direction", "desc")];
    let mut pages = github.pages(&repo.path(&["pulls"]), &query, LIST_PULLS);
    let in_period = |at: &Timestamp| target.period_start <= *at && *at <= target.now;
    let mut merged = Vec::new();
    while let Some(page) = pages.next_page::<Pull>().await? {
        let past_the_period = page.iter().any(|pull| pull.updated_at < target.period_start);
        merged.extend(page.into_iter().filter(|pull| pull.merged_at.as_ref().is_some_and(in_period)));
        if past_the_period {
            break;
        }
    }
    Ok(merged)
}

async fn pull_reviewed(github: &GitHub<'_>, repo: &Repo, pull: &Pull) -> CheckResult {
    let resource = resource("github.pull-request", &format!("{}#{}", repo.full_name, pull.number), &pull.title);
    let number = pull.number.to_string();
    let reviews = match github.list::<Review>(&repo.path(&["pulls", &number, "reviews"]), &[], LIST_REVIEWS).await {
        Ok(reviews) => reviews,
        Err(failure) => return CheckResult::error(PULLS_REVIEWED, resource, failure),
    };
    let author = pull.user.as_ref().map(|user| user.login.as_str());
    let mut approvers: Vec<&str> = reviews
        .iter()
        .filter(|review| review.state == "APPROVED")
        .filter_map(|review| review.user.as_ref().map(|user| user.login.as_str()))
        .filter(|login| Some(*login) != author)
        .collect();
    approvers.sort_unstable();
    approvers.dedup();
    let (outcome, detail) = if approvers.is_empty() {
        let by = author.map(|author| format!(" from someone other than its author, {author}")).unwrap_or_default();
        (CheckOutcome::Fail, format!("merged without an approving review{by}"))
    } else {
        (CheckOutcome::Pass, format!("approved by {}", name_list(&approvers)))
    };
    CheckResult::judged(PULLS_REVIEWED, resource, outcome, detail)
}
