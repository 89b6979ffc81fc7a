//! The IAM credential report (`GenerateCredentialReport`, polled until complete, then
//! `GetCredentialReport`): one CSV row for the root user and one per IAM user, read once for the
//! four checks judging it.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use compliance_domain::check::CheckOutcome;
use compliance_domain::check_result::{CheckResult, CheckedResource};
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::client::{AwsFailure, AwsRequest, Service};
use super::iam::VERSION;
use super::xml;
use super::{ACCESS_KEY_AGE, ROOT_UNUSED, Session, UNUSED_CREDENTIALS, USER_CONSOLE_MFA, errors, verdict, wants};

const GENERATE: &str = "iam:GenerateCredentialReport";
const GET: &str = "iam:GetCredentialReport";
/// The longest the report is waited for.
const REPORT_WAIT: Duration = Duration::from_secs(120);

/// The root user's sign-ins and key uses of the last 90 days fail `aws.iam.root-unused`.
const ROOT_UNUSED_DAYS: i64 = 90;
/// An active key created more than 90 days ago fails `aws.iam.access-key-age`.
const KEY_AGE_DAYS: i64 = 90;
/// A password or active key unused for 45 days (and older than that) fails `aws.iam.unused-credentials`.
const UNUSED_DAYS: i64 = 45;

/// The report's row of the root user.
const ROOT_USER: &str = "<root_account>";

const CHECKS: &[&str] = &[ROOT_UNUSED, USER_CONSOLE_MFA, ACCESS_KEY_AGE, UNUSED_CREDENTIALS];

#[derive(Deserialize)]
struct GenerateResponse {
    #[serde(rename = "GenerateCredentialReportResult")]
    result: GenerateResult,
}

#[derive(Deserialize)]
struct GenerateResult {
    #[serde(rename = "State")]
    state: String,
}

#[derive(Deserialize)]
struct GetResponse {
    #[serde(rename = "GetCredentialReportResult")]
    result: GetResult,
}

#[derive(Deserialize)]
struct GetResult {
    /// The CSV, base64.
    #[serde(rename = "Content")]
    content: String,
}

/// The report's four checks of `wanted`, judged at `now`.
pub(crate) async fn checks(session: &Session<'_>, wanted: &[&str], now: OffsetDateTime) -> Vec<CheckResult> {
    let checks: Vec<&str> = CHECKS.iter().copied().filter(|c| wants(wanted, c)).collect();
    if checks.is_empty() {
        return Vec::new();
    }
    let report = match read(session).await {
        Ok(report) => report,
        Err(failure) => return errors(&checks, &session.account.resource(), &failure.failure),
    };
    let mut results = Vec::new();
    for check in checks {
        match check {
            ROOT_UNUSED => results.push(root_unused(session, &report, now)),
            USER_CONSOLE_MFA => results.extend(report.users().map(console_mfa)),
            ACCESS_KEY_AGE => results.extend(report.users().flat_map(|user| access_key_age(user, now))),
            _ => results.extend(report.users().map(|user| unused_credentials(user, now))),
        }
    }
    results
}

/// Asks for a report until IAM says it is complete (at most [`REPORT_WAIT`]), then reads it.
async fn read(session: &Session<'_>) -> Result<Report, AwsFailure> {
    let settings = session.http.settings();
    let deadline = tokio::time::Instant::now() + REPORT_WAIT;
    let mut wait = settings.first_backoff.max(Duration::from_millis(50));
    loop {
        let request =
            AwsRequest::query(Service::Iam, &session.region, "GenerateCredentialReport", VERSION, &[], GENERATE);
        let body = session.client.send(&request).await?;
        let state: GenerateResponse = xml::parse(&body, GENERATE)?;
        if state.result.state == "COMPLETE" {
            break;
        }
        if tokio::time::Instant::now() + wait > deadline {
            let message = format!("the credential report was not complete within {} s", REPORT_WAIT.as_secs());
            return Err(AwsFailure::local("report_not_ready", &message, GENERATE));
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(settings.max_backoff.max(Duration::from_millis(50)));
    }
    let request = AwsRequest::query(Service::Iam, &session.region, "GetCredentialReport", VERSION, &[], GET);
    let body = session.client.send(&request).await?;
    let answer: GetResponse = xml::parse(&body, GET)?;
    let content: String = answer.result.content.split_whitespace().collect();
    let csv = base64::engine::general_purpose::STANDARD
        .decode(content)
        .map_err(|_| xml::unreadable(GET, "the credential report is not base64"))?;
    Report::parse(&String::from_utf8_lossy(&csv))
        .ok_or_else(|| xml::unreadable(GET, "the credential report is not the CSV expected"))
}

/// The report: its columns by name, and its rows.
#[derive(Debug)]
struct Report {
    rows: Vec<Row>,
}

#[derive(Debug)]
struct Row {
    fields: HashMap<String, String>,
}

impl Row {
    fn get(&self, column: &str) -> &str {
        self.fields.get(column).map_or("", String::as_str)
    }

    fn name(&self) -> &str {
        self.get("user")
    }

    fn resource(&self) -> CheckedResource {
        CheckedResource {
            kind: "aws.iam.user".into(),
            id: self.get("arn").into(),
            name: self.name().into(),
            region: None,
        }
    }

    /// The column as an instant; `N/A`, `no_information`, `not_supported` and the like are none.
    fn instant(&self, column: &str) -> Option<OffsetDateTime> {
        OffsetDateTime::parse(self.get(column), &Rfc3339).ok()
    }

    fn is_true(&self, column: &str) -> bool {
        self.get(column).eq_ignore_ascii_case("true")
    }
}

impl Report {
    /// The CSV's rows by its header's column names. A user's name may hold commas (IAM allows
    /// `+=,.@_-`), which the report does not quote: a row with more fields than the header has
    /// its extra commas in its first two columns (the name, and the ARN ending with it).
    fn parse(csv: &str) -> Option<Self> {
        let mut lines = csv.lines().filter(|line| !line.trim().is_empty());
        let header: Vec<String> = split(lines.next()?).into_iter().map(|h| h.trim().to_owned()).collect();
        if header.first().map(String::as_str) != Some("user") || header.get(1).map(String::as_str) != Some("arn") {
            return None;
        }
        let mut rows = Vec::new();
        for line in lines {
            let mut fields = split(line);
            if fields.len() < header.len() {
                return None;
            }
            if fields.len() > header.len() {
                let extra = fields.len() - header.len();
                // The ARN is the first field starting `arn:` (a user name holds no `:`).
                let arn_at = fields.iter().position(|f| f.starts_with("arn:"))?;
                if arn_at == 0 || arn_at > extra + 1 {
                    return None;
                }
                let name = fields[..arn_at].join(",");
                let arn_end = extra + 2;
                let arn = fields[arn_at..arn_end].join(",");
                fields.splice(..arn_end, [name, arn]);
            }
            rows.push(Row { fields: header.iter().cloned().zip(fields).collect() });
        }
        Some(Self { rows })
    }

    fn root(&self) -> Option<&Row> {
        self.rows.iter().find(|row| row.name() == ROOT_USER)
    }

    fn users(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|row| row.name() != ROOT_USER)
    }
}

/// A CSV line's fields; a field in double quotes may hold commas and doubled quotes.
fn split(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' if quoted => quoted = false,
            '"' if field.is_empty() => quoted = true,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

fn days_since(then: OffsetDateTime, now: OffsetDateTime) -> i64 {
    (now - then).whole_days()
}

/// `aws.iam.root-unused`: no root sign-in and no root key use in the last 90 days.
fn root_unused(session: &Session<'_>, report: &Report, now: OffsetDateTime) -> CheckResult {
    let account = session.account.resource();
    let Some(root) = report.root() else {
        let failure = xml::unreadable(GET, "the credential report has no row for the root user");
        return CheckResult::error(ROOT_UNUSED, account, failure.failure);
    };
    let uses = [
        ("signed in to the console", "password_last_used"),
        ("used access key 1", "access_key_1_last_used_date"),
        ("used access key 2", "access_key_2_last_used_date"),
    ];
    let recent: Vec<String> = uses
        .iter()
        .filter_map(|(what, column)| {
            let when = root.instant(column)?;
            (days_since(when, now) < ROOT_UNUSED_DAYS).then(|| format!("{what} on {}", when.date()))
        })
        .collect();
    if recent.is_empty() {
        verdict(ROOT_UNUSED, account, true, format!("The root user was not used in the last {ROOT_UNUSED_DAYS} days."))
    } else {
        let detail = format!("The root user {} (within {ROOT_UNUSED_DAYS} days).", recent.join(" and "));
        verdict(ROOT_UNUSED, account, false, detail)
    }
}

/// `aws.iam.user-console-mfa`: a user with a console password has MFA; one without is not concerned.
fn console_mfa(user: &Row) -> CheckResult {
    let name = user.name();
    if !user.is_true("password_enabled") {
        let detail = format!("User {name} has no console password.");
        return CheckResult::judged(USER_CONSOLE_MFA, user.resource(), CheckOutcome::NotApplicable, detail);
    }
    if user.is_true("mfa_active") {
        verdict(USER_CONSOLE_MFA, user.resource(), true, format!("User {name} has a console password and MFA."))
    } else {
        verdict(
            USER_CONSOLE_MFA,
            user.resource(),
            false,
            format!("User {name} has a console password and no MFA device."),
        )
    }
}

/// `aws.iam.access-key-age`: one result per active key, failing when created over 90 days ago.
fn access_key_age(user: &Row, now: OffsetDateTime) -> Vec<CheckResult> {
    let mut results = Vec::new();
    for slot in [1, 2] {
        if !user.is_true(&format!("access_key_{slot}_active")) {
            continue;
        }
        let resource = CheckedResource {
            kind: "aws.iam.access-key".into(),
            id: format!("{}#access_key_{slot}", user.get("arn")),
            name: format!("{} access key {slot}", user.name()),
            region: None,
        };
        let Some(rotated) = user.instant(&format!("access_key_{slot}_last_rotated")) else {
            let failure = xml::unreadable(GET, "an active access key has no creation date in the credential report");
            results.push(CheckResult::error(ACCESS_KEY_AGE, resource, failure.failure));
            continue;
        };
        let days = days_since(rotated, now);
        let detail =
            format!("Access key {slot} of user {} was created {days} days ago ({}).", user.name(), rotated.date());
        results.push(verdict(ACCESS_KEY_AGE, resource, days <= KEY_AGE_DAYS, detail));
    }
    results
}

/// `aws.iam.unused-credentials`: the user's console password and active keys were each used in
/// the last 45 days, or are younger than that.
fn unused_credentials(user: &Row, now: OffsetDateTime) -> CheckResult {
    let mut unused = Vec::new();
    let mut credentials = 0;
    let mut judge = |what: String, last_used: Option<OffsetDateTime>, created: Option<OffsetDateTime>| {
        credentials += 1;
        match (last_used, created) {
            (Some(used), _) if days_since(used, now) > UNUSED_DAYS => {
                unused.push(format!("{what} last used {} days ago", days_since(used, now)));
            }
            (None, Some(created)) if days_since(created, now) > UNUSED_DAYS => {
                unused.push(format!("{what} never used, created {} days ago", days_since(created, now)));
            }
            _ => {}
        }
    };
    if user.is_true("password_enabled") {
        let created = user.instant("password_last_changed").or_else(|| user.instant("user_creation_time"));
        judge("console password".into(), user.instant("password_last_used"), created);
    }
    for slot in [1, 2] {
        if user.is_true(&format!("access_key_{slot}_active")) {
            let used = user.instant(&format!("access_key_{slot}_last_used_date"));
            let created = user.instant(&format!("access_key_{slot}_last_rotated"));
            judge(format!("access key {slot}"), used, created);
        }
    }
    let name = user.name();
    let detail = match (credentials, unused.is_empty()) {
        (0, _) => format!("User {name} has no console password and no active access key."),
        (_, true) => format!("Every credential of user {name} was used in the last {UNUSED_DAYS} days or is newer."),
        (_, false) => format!("User {name}: {}.", unused.join("; ")),
    };
    verdict(UNUSED_CREDENTIALS, user.resource(), unused.is_empty(), detail)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    const HEADER: &str = "user,arn,user_creation_time,password_enabled,password_last_used,password_last_changed,\
        password_next_rotation,mfa_active,access_key_1_active,access_key_1_last_rotated,access_key_1_last_used_date,\
        access_key_1_last_used_region,access_key_1_last_used_service,access_key_2_active,access_key_2_last_rotated,\
        access_key_2_last_used_date,access_key_2_last_used_region,access_key_2_last_used_service,cert_1_active,\
        cert_1_last_rotated,cert_2_active,cert_2_last_rotated";

    #[test]
    fn a_name_with_commas_stays_one_name() {
        let csv = format!(
            "{HEADER}\na,b,arn:aws:iam::123456789012:user/a,b,2020-01-01T00:00:00+00:00,true,N/A,2020-01-01T00:00:00+00:00,\
             N/A,false,false,N/A,N/A,N/A,N/A,false,N/A,N/A,N/A,N/A,false,N/A,false,N/A\n"
        );
        let report = Report::parse(&csv).unwrap();
        let row = &report.rows[0];
        assert_eq!(row.name(), "a,b");
        assert_eq!(row.get("arn"), "arn:aws:iam::123456789012:user/a,b");
        assert!(row.is_true("password_enabled") && !row.is_true("mfa_active"));
        assert_eq!(split(r#"x,"y,""z""",w"#), vec!["x", r#"y,"z""#, "w"]);
        assert!(Report::parse("not,a,report\n").is_none());
    }
}
