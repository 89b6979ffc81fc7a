//! Google Workspace's checks (`checks/google-workspace.json`), read through the Admin SDK Directory API.
//!
//! Every check judges the same list, the customer's users, read once a run.

use std::collections::HashSet;
use std::ops::RangeInclusive;

use compliance_credentials::RequestAuth;
use compliance_domain::Timestamp;
use compliance_domain::check::CheckOutcome;
use compliance_domain::check_result::{CheckResult, CheckedResource, ReadFailure};
use compliance_ports::CheckTarget;
use reqwest::header::HeaderMap;
use serde::Deserialize;

use crate::http::CheckHttp;

const TWO_STEP: &str = "google-workspace.users.two-step-verification";
const SUPER_ADMINS: &str = "google-workspace.admins.super-admin-count";
const INACTIVE: &str = "google-workspace.users.inactive";

/// The checks this module runs: every Google Workspace check of the catalog.
pub(crate) const CHECKS: &[&str] = &[TWO_STEP, SUPER_ADMINS, INACTIVE];

/// The API action, as the catalog's `reads` name it.
const LIST_USERS: &str = "GET /admin/directory/v1/users?customer=my_customer";
/// The Directory API's alias of the token's own customer.
const MY_CUSTOMER: &str = "my_customer";
/// The Directory API's largest page.
const MAX_RESULTS: &str = "500";
/// Enough super admins that one can recover another, few enough that every power stays with few.
const SUPER_ADMIN_COUNT: RangeInclusive<usize> = 2..=4;
/// How long an active account may go without a sign-in.
const INACTIVE_AFTER: time::Duration = time::Duration::days(90);
/// The most names a detail lists; the rest are counted.
const NAMES_SHOWN: usize = 30;

/// Runs the Google Workspace checks of `target.checks` over the customer's users.
pub(crate) async fn read(http: &CheckHttp, api: &str, target: &CheckTarget) -> Vec<CheckResult> {
    let wanted: Vec<&str> = CHECKS.iter().copied().filter(|id| target.checks.iter().any(|asked| asked == id)).collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let users = match list_users(http, api, &target.auth).await {
        Ok(users) => users,
        Err(failure) => {
            let customer = customer_resource(MY_CUSTOMER);
            return wanted.iter().map(|id| CheckResult::error(id, customer.clone(), failure.clone())).collect();
        }
    };
    wanted.iter().flat_map(|id| judge(id, &users, target.now)).collect()
}

fn judge(check: &str, users: &[User], now: Timestamp) -> Vec<CheckResult> {
    match check {
        TWO_STEP => users.iter().map(two_step_verification).collect(),
        SUPER_ADMINS => vec![super_admin_count(users)],
        INACTIVE => users.iter().map(|user| inactive(user, now)).collect(),
        _ => Vec::new(),
    }
}

/// A user of `GET /admin/directory/v1/users`: only the fields the checks read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct User {
    id: String,
    primary_email: String,
    customer_id: Option<String>,
    /// A super admin (delegated admins are `isDelegatedAdmin`).
    #[serde(default)]
    is_admin: bool,
    #[serde(default)]
    suspended: bool,
    #[serde(default)]
    archived: bool,
    #[serde(default, rename = "isEnrolledIn2Sv")]
    enrolled_in_2sv: bool,
    #[serde(default, rename = "isEnforcedIn2Sv")]
    enforced_in_2sv: bool,
    /// The Unix epoch when the user never signed in.
    last_login_time: Option<Timestamp>,
    creation_time: Option<Timestamp>,
}

impl User {
    /// Why the account is not active (suspended or archived), if it is not.
    fn inactive_because(&self) -> Option<&'static str> {
        if self.suspended {
            Some("the account is suspended")
        } else if self.archived {
            Some("the account is archived")
        } else {
            None
        }
    }

    /// The last sign-in, `None` when Google says "never" with the Unix epoch.
    fn last_sign_in(&self) -> Option<Timestamp> {
        self.last_login_time.filter(|at| at.as_unix_seconds() > 0)
    }

    fn resource(&self) -> CheckedResource {
        resource("google-workspace.user", &self.id, &self.primary_email)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsersPage {
    /// Absent from an empty page.
    #[serde(default)]
    users: Vec<User>,
    next_page_token: Option<String>,
}

/// Every user of the customer, from all the pages.
async fn list_users(http: &CheckHttp, api: &str, auth: &RequestAuth) -> Result<Vec<User>, ReadFailure> {
    let mut users = Vec::new();
    let mut token: Option<String> = None;
    // A page naming an already read token as its next would never end the list.
    let mut seen = HashSet::new();
    loop {
        let url = users_url(api, token.as_deref())?;
        let page: UsersPage = http.get(&url, auth, &HeaderMap::new(), LIST_USERS).await?.json(LIST_USERS)?;
        users.extend(page.users);
        match page.next_page_token.filter(|next| !next.is_empty()) {
            Some(next) if seen.insert(next.clone()) => token = Some(next),
            _ => return Ok(users),
        }
    }
}

fn users_url(api: &str, page_token: Option<&str>) -> Result<String, ReadFailure> {
    let invalid = || ReadFailure::new("invalid_endpoint", "the Admin SDK's address is not a base URL", LIST_USERS);
    let mut url = url::Url::parse(api).map_err(|_| invalid())?;
    url.path_segments_mut().map_err(|()| invalid())?.pop_if_empty().extend(["admin", "directory", "v1", "users"]);
    let mut query = url.query_pairs_mut();
    query
        .append_pair("customer", MY_CUSTOMER)
        .append_pair("maxResults", MAX_RESULTS)
        .append_pair("projection", "basic");
    if let Some(token) = page_token {
        query.append_pair("pageToken", token);
    }
    drop(query);
    Ok(url.into())
}

fn resource(kind: &str, id: &str, name: &str) -> CheckedResource {
    CheckedResource { kind: kind.to_owned(), id: id.to_owned(), name: name.to_owned(), region: None }
}

fn customer_resource(id: &str) -> CheckedResource {
    resource("google-workspace.customer", id, id)
}

/// `names` joined, the first [`NAMES_SHOWN`] of them, the rest counted.
fn name_list(names: &[&str]) -> String {
    let mut text = names.iter().take(NAMES_SHOWN).copied().collect::<Vec<_>>().join(", ");
    if names.len() > NAMES_SHOWN {
        text += &format!(" and {} more", names.len() - NAMES_SHOWN);
    }
    text
}

fn two_step_verification(user: &User) -> CheckResult {
    let (outcome, detail) = match (user.inactive_because(), user.enrolled_in_2sv, user.enforced_in_2sv) {
        (Some(why), _, _) => (CheckOutcome::NotApplicable, why),
        (None, true, true) => (CheckOutcome::Pass, "enrolled in 2-Step Verification, and it is enforced"),
        (None, true, false) => (CheckOutcome::Fail, "enrolled in 2-Step Verification, but it is not enforced"),
        (None, false, true) => (CheckOutcome::Fail, "2-Step Verification is enforced, but the user is not enrolled"),
        (None, false, false) => (CheckOutcome::Fail, "not enrolled in 2-Step Verification, and it is not enforced"),
    };
    CheckResult::judged(TWO_STEP, user.resource(), outcome, detail)
}

/// One result for the customer, counting the active super admins.
fn super_admin_count(users: &[User]) -> CheckResult {
    let customer = users.iter().find_map(|user| user.customer_id.as_deref()).unwrap_or(MY_CUSTOMER);
    let admins: Vec<&str> = users
        .iter()
        .filter(|user| user.is_admin && user.inactive_because().is_none())
        .map(|user| user.primary_email.as_str())
        .collect();
    let count = admins.len();
    let noun = if count == 1 { "super admin" } else { "super admins" };
    let named = if admins.is_empty() { String::new() } else { format!(": {}", name_list(&admins)) };
    let found = format!("{count} active {noun}{named}");
    let (outcome, detail) = if SUPER_ADMIN_COUNT.contains(&count) {
        (CheckOutcome::Pass, found)
    } else {
        let (low, high) = (SUPER_ADMIN_COUNT.start(), SUPER_ADMIN_COUNT.end());
        (CheckOutcome::Fail, format!("{found}; there should be between {low} and {high}"))
    };
    CheckResult::judged(SUPER_ADMINS, customer_resource(customer), outcome, detail)
}

/// An active user fails when its last sign-in (or, never signed in, its creation) is older than
/// [`INACTIVE_AFTER`].
fn inactive(user: &User, now: Timestamp) -> CheckResult {
    if let Some(why) = user.inactive_because() {
        return CheckResult::judged(INACTIVE, user.resource(), CheckOutcome::NotApplicable, why);
    }
    let cutoff = now.plus(-INACTIVE_AFTER);
    let days_ago = |at: Timestamp| (now.to_offset() - at.to_offset()).whole_days();
    let (outcome, detail) = match (user.last_sign_in(), user.creation_time) {
        (Some(last), _) => {
            let outcome = if last < cutoff { CheckOutcome::Fail } else { CheckOutcome::Pass };
            (outcome, format!("last signed in on {}, {} days ago", last.to_offset().date(), days_ago(last)))
        }
        (None, Some(created)) => {
            let outcome = if created < cutoff { CheckOutcome::Fail } else { CheckOutcome::Pass };
            let when = format!("{}, {} days ago", created.to_offset().date(), days_ago(created));
            (outcome, format!("never signed in; created on {when}"))
        }
        (None, None) => {
            let message = "Google's answer has neither a sign-in nor a creation time for the user";
            return CheckResult::error(
                INACTIVE,
                user.resource(),
                ReadFailure::new("unreadable_answer", message, LIST_USERS),
            );
        }
    };
    CheckResult::judged(INACTIVE, user.resource(), outcome, detail)
}
