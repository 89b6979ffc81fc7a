//! The data every case reads and writes: two organizations, each with 50 members, 100 risks,
//! 100 vendors, 100 context entries and 20 policies with rich-text content, and an API key.
//! Made the way a customer would: people through the admin CLI and `POST /v1/people`, records
//! through the API, so both backends hold the same shape of data.

use std::path::Path;

use anyhow::Result;

use crate::service::{Request, Tenant, admin, json_string};

pub const MEMBERS: usize = 50;
pub const RISKS: usize = 100;
pub const VENDORS: usize = 100;
pub const CONTEXT_ENTRIES: usize = 100;
pub const POLICIES: usize = 20;

/// One seeded organization.
pub struct Organization {
    pub id: String,
    pub api_key: String,
    pub risk_ids: Vec<String>,
}

/// Seeds organization `name` through the server at `address` (whose database is `database_url`).
pub fn organization(binary: &Path, database_url: &str, address: &str, name: &str) -> Result<Organization> {
    let tenant = Tenant::create(binary, database_url, name)?;
    let key = tenant.api_key.as_str();
    let post = |path: &str, body: &str| -> Result<String> {
        let created = Request::post(path, body).with_key(key).expect(address, 201)?;
        json_string(&created, "id")
    };
    // the owner is the first member
    for n in 1..MEMBERS {
        let email = format!("member{n}@{name}.test");
        let user = admin(binary, database_url, &["create-user", "--email", &email, "--name", &format!("Member {n}")])?;
        let user_id = json_string(&user, "id")?;
        post("/v1/people", &format!(r#"{{"userId":"{user_id}","role":"{}"}}"#, ROLES[n % ROLES.len()]))?;
    }
    let mut risk_ids = Vec::with_capacity(RISKS);
    for n in 0..RISKS {
        risk_ids.push(post("/v1/risks", &risk(n, &tenant.member_id))?);
    }
    for n in 0..VENDORS {
        post("/v1/vendors", &vendor(n, &tenant.member_id))?;
    }
    for n in 0..CONTEXT_ENTRIES {
        post("/v1/context", &context_entry(n))?;
    }
    for n in 0..POLICIES {
        post("/v1/policies", &policy(n, &tenant.member_id))?;
    }
    Ok(Organization { id: tenant.organization_id, api_key: tenant.api_key, risk_ids })
}

const ROLES: [&str; 3] = ["employee", "admin", "auditor"];
const LIKELIHOODS: [&str; 5] = ["very_unlikely", "unlikely", "possible", "likely", "very_likely"];
const IMPACTS: [&str; 5] = ["insignificant", "minor", "moderate", "major", "severe"];

// Values sit on one line: the JSON below is written in raw strings, where `\` continues nothing.
const RISK_TEXT: &str =
    "A production service runs a version with known vulnerabilities; an attacker could read customer data.";
const VENDOR_TEXT: &str =
    "Processes invoices and stores employee records; holds a SOC 2 Type II report renewed yearly.";
const ANSWER_TEXT: &str = "Access is granted by role, reviewed every quarter and removed within one day of departure.";

fn pick<'a>(values: &[&'a str], n: usize) -> &'a str {
    values[n % values.len()]
}

fn risk(n: usize, assignee: &str) -> String {
    const CATEGORIES: [&str; 5] = ["technology", "operations", "vendor_management", "regulatory", "people"];
    const STATUSES: [&str; 3] = ["open", "pending", "closed"];
    const STRATEGIES: [&str; 4] = ["accept", "avoid", "mitigate", "transfer"];
    format!(
        r#"{{"title":"Risk {n}: unpatched service exposed to the internet","description":"{RISK_TEXT} ({n})",
           "category":"{}","department":"it","status":"{}","likelihood":"{}","impact":"{}",
           "residualLikelihood":"unlikely","residualImpact":"minor",
           "treatmentStrategyDescription":"Patch within 14 days and add the host to the scanner.",
           "treatmentStrategy":"{}","assigneeId":"{assignee}"}}"#,
        pick(&CATEGORIES, n),
        pick(&STATUSES, n),
        pick(&LIKELIHOODS, n),
        pick(&IMPACTS, n / 5),
        pick(&STRATEGIES, n),
    )
}

fn vendor(n: usize, assignee: &str) -> String {
    const CATEGORIES: [&str; 4] = ["cloud", "software_as_a_service", "finance", "hr"];
    const STATUSES: [&str; 3] = ["not_assessed", "in_progress", "assessed"];
    format!(
        r#"{{"name":"Vendor {n} Ltd","description":"{VENDOR_TEXT}","category":"{}","status":"{}",
           "inherentProbability":"{}","inherentImpact":"{}","residualProbability":"unlikely",
           "residualImpact":"minor","website":"https://vendor{n}.example.com","assigneeId":"{assignee}"}}"#,
        pick(&CATEGORIES, n),
        pick(&STATUSES, n),
        pick(&LIKELIHOODS, n),
        pick(&IMPACTS, n / 5),
    )
}

fn context_entry(n: usize) -> String {
    format!(
        r#"{{"question":"How does the company handle question {n} of the security questionnaire?",
           "answer":"{ANSWER_TEXT}",
           "tags":["security","access-control","q{n}"]}}"#
    )
}

/// A policy of about 3 KB of rich text: headings, paragraphs with marks, and bullet lists.
fn policy(n: usize, owner: &str) -> String {
    let text = |text: &str| format!(r#"{{"type":"text","text":"{text}"}}"#);
    let bold = |text: &str| format!(r#"{{"type":"text","marks":[{{"type":"bold"}}],"text":"{text}"}}"#);
    let paragraph = |parts: &[String]| format!(r#"{{"type":"paragraph","content":[{}]}}"#, parts.join(","));
    let heading = |level: u8, title: &str| {
        format!(r#"{{"type":"heading","attrs":{{"level":{level}}},"content":[{}]}}"#, text(title))
    };
    let bullets = |items: &[&str]| {
        let items: Vec<String> = items
            .iter()
            .map(|item| format!(r#"{{"type":"listItem","content":[{}]}}"#, paragraph(&[text(item)])))
            .collect();
        format!(r#"{{"type":"bulletList","content":[{}]}}"#, items.join(","))
    };
    let mut content = vec![heading(1, &format!("Policy {n}: Access Control"))];
    for section in ["Purpose", "Scope", "Responsibilities", "Procedure"] {
        content.push(heading(2, section));
        content.push(paragraph(&[
            text("This policy sets out how the company grants, reviews and removes access to its systems. "),
            bold("Every employee and contractor"),
            text(" must follow it; exceptions are approved in writing by the security officer."),
        ]));
        content.push(bullets(&[
            "Access is granted on the principle of least privilege.",
            "Access reviews happen every quarter and are recorded as evidence.",
            "Leavers lose access within one business day.",
        ]));
    }
    format!(
        r#"{{"name":"Policy {n}","description":"How access to company systems is granted and reviewed.",
           "status":"published","frequency":"yearly","department":"it","assigneeId":"{owner}",
           "content":[{}]}}"#,
        content.join(",")
    )
}
