//! The review worker: a published policy whose `reviewDate` has passed becomes `needs_review`,
//! with one `policy.review_requested` entry by the system, however many instances run
//! (docs/api.md, "Review dates").

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::checks::str_of;
use crate::client::Client;
use crate::harness::{PATIENCE, TestServer, poll_until};

/// Both instances look every 50 ms, so they race for every policy as soon as it is due.
const POLL: (&str, &str) = ("POLICY_REVIEW_POLL_MILLIS", "50");
const PAST: &str = "2020-01-01T00:00:00Z";
const FUTURE: &str = "2999-01-01T00:00:00Z";

api_tests!(
    a_passed_review_date_needs_review with &[POLL],
    two_instances_write_one_entry_per_policy with &[POLL],
);

async fn publish(api: &Client, review_date: &str) -> Value {
    let body = json!({"name": "Access", "content": [], "status": "published", "frequency": "monthly",
                      "reviewDate": review_date});
    api.post("/v1/policies", body).await.ok(201)
}

async fn status(api: &Client, policy: &Value) -> String {
    let now = api.get(&format!("/v1/policies/{}", str_of(policy, "id"))).await.ok(200);
    str_of(&now, "status").to_owned()
}

/// The review worker's entries of the organization, oldest first.
async fn review_entries(api: &Client) -> Vec<Value> {
    let log = api.get("/v1/audit-log?action=policy.review_requested&limit=1000").await.ok(200);
    let mut entries = log["data"].as_array().unwrap().clone();
    entries.reverse();
    entries
}

async fn a_passed_review_date_needs_review(server: &TestServer) {
    let tenant = server.tenant().await;
    // the future one first: once the past one moved, a tick has seen both
    let later = publish(&tenant.api, FUTURE).await;
    let due = publish(&tenant.api, PAST).await;
    let moved = poll_until(PATIENCE, || async { (status(&tenant.api, &due).await == "needs_review").then_some(()) });
    assert!(moved.await.is_some(), "the policy whose review date passed did not move to needs_review");
    assert_eq!(status(&tenant.api, &later).await, "published");

    let entries = review_entries(&tenant.api).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    assert_eq!(entry["resourceId"], due["id"]);
    assert_eq!(entry["actor"]["type"], "system");
    assert_eq!(entry["actor"]["id"], "policy-review-worker");
    assert_eq!(entry["changes"]["status"], json!({"from": "published", "to": "needs_review"}));
    let history = tenant.api.get(&format!("/v1/policies/{}/history", str_of(&due, "id"))).await.ok(200);
    assert_eq!(history["data"][0]["action"], "policy.review_requested");

    // the published version stays what readers and signers see; the next publish moves the
    // review date a month (its frequency) past the publish, and the policy is published again
    let flagged = tenant.api.get(&format!("/v1/policies/{}", str_of(&due, "id"))).await.ok(200);
    assert_eq!(flagged["currentVersion"], 1);
    let path = format!("/v1/policies/{}", str_of(&due, "id"));
    let again = tenant.api.patch(&path, json!({"status": "published"})).await.ok(200);
    assert_eq!(again["currentVersion"], 2);
    let published_at = str_of(&again, "lastPublishedAt");
    assert_eq!(str_of(&again, "reviewDate"), one_month_after(published_at));
    assert_eq!(status(&tenant.api, &due).await, "published");
    assert_eq!(review_entries(&tenant.api).await.len(), 1, "nothing is due any more");
}

/// `at` (RFC 3339, UTC) a calendar month later, on the same day (the month's last when shorter).
fn one_month_after(at: &str) -> String {
    let (year, month, day): (i32, u32, u32) =
        (at[0..4].parse().unwrap(), at[5..7].parse().unwrap(), at[8..10].parse().unwrap());
    let (year, month) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let length = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    format!("{year:04}-{month:02}-{:02}{}", day.min(length), &at[10..])
}

async fn two_instances_write_one_entry_per_policy(server: &TestServer) {
    let mut sibling = server.start_sibling(&[(POLL.0.to_owned(), POLL.1.to_owned())]).await;
    let tenant = server.tenant().await;
    let mut ids = Vec::new();
    for _ in 0..12 {
        ids.push(str_of(&publish(&tenant.api, FUTURE).await, "id").to_owned());
    }
    // each policy falls due while both instances poll for it
    for id in &ids {
        tenant.api.patch(&format!("/v1/policies/{id}"), json!({"reviewDate": PAST})).await.ok(200);
    }
    let all_moved = poll_until(PATIENCE, || async {
        let list = tenant.api.get("/v1/policies?status=needs_review&limit=100").await.ok(200);
        (list["data"].as_array().unwrap().len() == ids.len()).then_some(())
    });
    assert!(all_moved.await.is_some(), "not every policy moved to needs_review");
    assert!(sibling.healthy().await);

    let mut per_policy: BTreeMap<String, usize> = BTreeMap::new();
    for entry in review_entries(&tenant.api).await {
        *per_policy.entry(str_of(&entry, "resourceId").to_owned()).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = ids.iter().map(|id| (id.clone(), 1)).collect();
    assert_eq!(per_policy, expected, "exactly one entry per policy");
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified["valid"], true, "{verified}");
}
