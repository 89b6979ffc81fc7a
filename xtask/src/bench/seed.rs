//! The data every case reads and writes: two organizations, each with 50 members, 100 risks,
//! 100 vendors, 100 context entries and 20 policies with rich-text content, and an API key.
//! Made the way a customer would: people through the admin CLI (users join by invitation or the operator), records
//! through the API, so both backends hold the same shape of data.

use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};

use crate::service::{Request, Tenant, admin, json_string};

pub const MEMBERS: usize = 50;
pub const RISKS: usize = 100;
pub const VENDORS: usize = 100;
pub const CONTEXT_ENTRIES: usize = 100;
pub const POLICIES: usize = 20;

/// One seeded organization.
pub struct Organization {
    pub id: String,
    /// The owner's membership, to which every seeded risk is assigned.
    pub member_id: String,
    pub api_key: String,
    pub risk_ids: Vec<String>,
}

/// Seeds organization `name` through the server at `address` (whose database is `database_url`).
pub fn organization(binary: &Path, database_url: &str, address: &str, name: &str) -> Result<Organization> {
    let tenant = Tenant::create(binary, database_url, name)?;
    let key = tenant.api_key.as_str();
    let post = |path: &str, body: Value| -> Result<String> {
        let created = Request::post(path, &body.to_string()).with_key(key).expect(address, 201)?;
        json_string(&created, "id")
    };
    // the owner is the first member
    for n in 1..MEMBERS {
        let email = format!("member{n}@{name}.test");
        let user = admin(binary, database_url, &["create-user", "--email", &email, "--name", &format!("Member {n}")])?;
        let user_id = json_string(&user, "id")?;
        let role = pick(&ROLES, n);
        admin(
            binary,
            database_url,
            &["add-member", "--org", &tenant.organization_id, "--user", &user_id, "--role", role],
        )?;
    }
    let mut risk_ids = Vec::with_capacity(RISKS);
    for n in 0..RISKS {
        risk_ids.push(post("/v1/risks", risk(n, &tenant.member_id))?);
    }
    for n in 0..VENDORS {
        post("/v1/vendors", vendor(n, &tenant.member_id))?;
    }
    for n in 0..CONTEXT_ENTRIES {
        post("/v1/context", context_entry(n))?;
    }
    for n in 0..POLICIES {
        post("/v1/policies", policy(n, &tenant.member_id))?;
    }
    Ok(Organization { id: tenant.organization_id, member_id: tenant.member_id, api_key: tenant.api_key, risk_ids })
}

const ROLES: [&str; 3] = ["employee", "admin", "auditor"];
const LIKELIHOODS: [&str; 5] = ["very_unlikely", "unlikely", "possible", "likely", "very_likely"];
const IMPACTS: [&str; 5] = ["insignificant", "minor", "moderate", "major", "severe"];

const RISK_TEXT: &str =
    "A production service runs a version with known vulnerabilities; an attacker could read customer data.";
const VENDOR_TEXT: &str =
    "Processes invoices and stores employee records; holds a SOC 2 Type II report renewed yearly.";
const ANSWER_TEXT: &str = "Access is granted by role, reviewed every quarter and removed within one day of departure.";

fn pick<'a>(values: &[&'a str], n: usize) -> &'a str {
    values[n % values.len()]
}

fn risk(n: usize, assignee: &str) -> Value {
    const CATEGORIES: [&str; 5] = ["technology", "operations", "vendor_management", "regulatory", "people"];
    const STATUSES: [&str; 3] = ["open", "pending", "closed"];
    const STRATEGIES: [&str; 4] = ["accept", "avoid", "mitigate", "transfer"];
    json!({
        "title": format!("Risk {n}: unpatched service exposed to the internet"),
        "description": format!("{RISK_TEXT} ({n})"),
        "category": pick(&CATEGORIES, n),
        "department": "it",
        "status": pick(&STATUSES, n),
        "likelihood": pick(&LIKELIHOODS, n),
        "impact": pick(&IMPACTS, n / 5),
        "residualLikelihood": "unlikely",
        "residualImpact": "minor",
        "treatmentStrategyDescription": "Patch within 14 days and add the host to the scanner.",
        "treatmentStrategy": pick(&STRATEGIES, n),
        "assigneeId": assignee,
    })
}

fn vendor(n: usize, assignee: &str) -> Value {
    const CATEGORIES: [&str; 4] = ["cloud", "software_as_a_service", "finance", "hr"];
    const STATUSES: [&str; 3] = ["not_assessed", "in_progress", "assessed"];
    json!({
        "name": format!("Vendor {n} Ltd"),
        "description": VENDOR_TEXT,
        "category": pick(&CATEGORIES, n),
        "status": pick(&STATUSES, n),
        "inherentProbability": pick(&LIKELIHOODS, n),
        "inherentImpact": pick(&IMPACTS, n / 5),
        "residualProbability": "unlikely",
        "residualImpact": "minor",
        "website": format!("https://vendor{n}.example.com"),
        "assigneeId": assignee,
    })
}

fn context_entry(n: usize) -> Value {
    json!({
        "question": format!("How does the company handle question {n} of the security questionnaire?"),
        "answer": ANSWER_TEXT,
        "tags": ["security", "access-control", format!("q{n}")],
    })
}

/// A policy of about 3 KB of rich text: headings, paragraphs with marks, and bullet lists.
fn policy(n: usize, owner: &str) -> Value {
    let text = |text: &str| json!({"type": "text", "text": text});
    let bold = |text: &str| json!({"type": "text", "marks": [{"type": "bold"}], "text": text});
    let paragraph = |parts: Vec<Value>| json!({"type": "paragraph", "content": parts});
    let heading =
        |level: u8, title: &str| json!({"type": "heading", "attrs": {"level": level}, "content": [text(title)]});
    let bullets = |items: &[&str]| {
        let items: Vec<Value> =
            items.iter().map(|item| json!({"type": "listItem", "content": [paragraph(vec![text(item)])]})).collect();
        json!({"type": "bulletList", "content": items})
    };
    let mut content = vec![heading(1, &format!("Policy {n}: Access Control"))];
    for section in ["Purpose", "Scope", "Responsibilities", "Procedure"] {
        content.push(heading(2, section));
        content.push(paragraph(vec![
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
    json!({
        "name": format!("Policy {n}"),
        "description": "How access to company systems is granted and reviewed.",
        "status": "published",
        "frequency": "yearly",
        "department": "it",
        "assigneeId": owner,
        "content": content,
    })
}
