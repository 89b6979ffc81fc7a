//! `POST /v1/{risks,vendors,tasks,people}/bulk`: a mix of creates, updates and deletes with an audit
//! entry each; all or nothing by default (one bad operation writes nothing and is named by its
//! index); `atomic=false` one by one; the 1..=500 bound; another organization's ids; permissions.

use serde_json::{Value, json};

use crate::checks::{missing_id, str_of};
use crate::client::{Auth, Client};
use crate::harness::TestServer;

api_tests!(
    a_mix_of_creates_updates_and_deletes_applies_with_an_audit_entry_each,
    creates_past_one_insert_statement_are_all_written_with_their_entries,
    one_invalid_operation_writes_nothing_and_is_named_by_index,
    a_missing_record_found_in_the_transaction_rolls_back_the_others,
    not_atomic_applies_the_good_operations_and_answers_each,
    zero_or_501_operations_are_400_naming_operations,
    malformed_operations_are_named_by_index,
    another_organizations_ids_are_not_found_and_stay_unchanged,
    a_caller_who_may_not_write_gets_403_and_nothing_changes,
    people_are_changed_in_bulk_but_never_created_or_deleted,
    the_last_owner_rule_rolls_back_a_bulk_of_people,
);

/// A kind of record with a bulk route: its path, its id prefix, its audit resource type, its
/// text field that a create needs and an update changes.
struct Kind {
    plural: &'static str,
    prefix: &'static str,
    resource_type: &'static str,
    field: &'static str,
    create: fn(&str) -> Value,
}

const KINDS: [Kind; 3] = [
    Kind {
        plural: "risks",
        prefix: "rsk_",
        resource_type: "risk",
        field: "title",
        create: |title| json!({"title": title, "description": "Unencrypted disks.", "category": "technology"}),
    },
    Kind {
        plural: "vendors",
        prefix: "vnd_",
        resource_type: "vendor",
        field: "name",
        create: |name| json!({"name": name, "description": "Hosts our data."}),
    },
    Kind {
        plural: "tasks",
        prefix: "tsk_",
        resource_type: "task",
        field: "title",
        create: |title| json!({"title": title}),
    },
];

impl Kind {
    async fn create_one(&self, client: &Client, text: &str) -> Value {
        client.post(&format!("/v1/{}", self.plural), (self.create)(text)).await.ok(201)
    }

    fn bulk(&self, atomic: bool) -> String {
        match atomic {
            true => format!("/v1/{}/bulk", self.plural),
            false => format!("/v1/{}/bulk?atomic=false", self.plural),
        }
    }

    fn one(&self, id: &Value) -> String {
        format!("/v1/{}/{}", self.plural, id.as_str().unwrap_or_default())
    }

    /// How many records of this kind and how many audit entries the organization has.
    async fn counts(&self, client: &Client) -> (u64, u64) {
        let rows = client.get(&format!("/v1/{}?limit=1", self.plural)).await.ok(200);
        let audit = client.get("/v1/audit-log?limit=1").await.ok(200);
        (rows["count"].as_u64().unwrap(), audit["count"].as_u64().unwrap())
    }
}

fn results(answer: &Value) -> &Vec<Value> {
    answer["results"].as_array().unwrap_or_else(|| panic!("no `results` in {answer}"))
}

fn statuses(answer: &Value) -> Vec<u64> {
    results(answer).iter().map(|result| result["status"].as_u64().unwrap()).collect()
}

/// The failing operations of a 400 bulk problem: (index, status).
fn failing(problem: &Value) -> Vec<(u64, u64)> {
    let operations = problem["operations"].as_array().unwrap_or_else(|| panic!("no `operations` in {problem}"));
    operations.iter().map(|op| (op["index"].as_u64().unwrap(), op["status"].as_u64().unwrap())).collect()
}

async fn a_mix_of_creates_updates_and_deletes_applies_with_an_audit_entry_each(server: &TestServer) {
    let tenant = server.tenant().await;
    for kind in &KINDS {
        let (kept, dropped) =
            (kind.create_one(&tenant.api, "kept").await, kind.create_one(&tenant.api, "dropped").await);
        let (rows, audit) = kind.counts(&tenant.api).await;
        let operations = json!({"operations": [
            {"op": "create", "body": (kind.create)("new one")},
            {"op": "create", "body": (kind.create)("new two")},
            {"op": "update", "id": kept["id"], "body": {kind.field: "changed"}},
            {"op": "delete", "id": dropped["id"]},
        ]});
        let answer = tenant.api.post(&kind.bulk(true), operations).await.ok(200);
        assert_eq!(statuses(&answer), [201, 201, 200, 200], "{answer}");
        let results = results(&answer);
        for (index, result) in results.iter().enumerate() {
            assert_eq!(result["index"], index, "{answer}");
        }
        assert!(str_of(&results[0]["body"], "id").starts_with(kind.prefix), "{answer}");
        assert_eq!(results[1]["body"][kind.field], "new two");
        assert_eq!(results[2]["body"][kind.field], "changed");
        assert_eq!(results[3]["body"]["id"], dropped["id"], "a delete answers the record as it was");

        assert_eq!(tenant.api.get(&kind.one(&kept["id"])).await.ok(200)[kind.field], "changed");
        tenant.api.get(&kind.one(&dropped["id"])).await.problem(404);
        for created in &results[..2] {
            tenant.api.get(&kind.one(&created["body"]["id"])).await.ok(200);
        }
        assert_eq!(kind.counts(&tenant.api).await, (rows + 1, audit + 4), "{}: +2 −1 rows, 4 entries", kind.plural);

        let entries = tenant.api.get("/v1/audit-log?limit=4").await.ok(200);
        let mut written: Vec<(String, String)> = entries["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (str_of(e, "action").to_owned(), str_of(e, "resourceId").to_owned()))
            .collect();
        written.sort();
        let id = |value: &Value| value.as_str().unwrap().to_owned();
        let t = kind.resource_type;
        let mut expected = vec![
            (format!("{t}.created"), id(&results[0]["body"]["id"])),
            (format!("{t}.created"), id(&results[1]["body"]["id"])),
            (format!("{t}.updated"), id(&kept["id"])),
            (format!("{t}.deleted"), id(&dropped["id"])),
        ];
        expected.sort();
        assert_eq!(written, expected, "{entries}");
    }
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified["valid"], true, "the bulk entries continue the hash chain: {verified}");
}

/// The store inserts a bulk request's rows and entries 100 to a statement (`INSERT_CHUNK`,
/// crates/store/src/prepared.rs), keeping the one-row and the full statement prepared: 237 creates
/// are two full statements and a shorter one, 201 two full and a one-row one; each size goes
/// twice, so that kept statements are used again. Every record and every entry is written.
async fn creates_past_one_insert_statement_are_all_written_with_their_entries(server: &TestServer) {
    let tenant = server.tenant().await;
    for kind in &KINDS {
        for size in [237, 201, 237, 201] {
            let (rows, audit) = kind.counts(&tenant.api).await;
            let operations: Vec<Value> =
                (0..size).map(|i| json!({"op": "create", "body": (kind.create)(&format!("n{i}"))})).collect();
            let answer = tenant.api.post(&kind.bulk(true), json!({"operations": operations})).await.ok(200);
            assert_eq!(statuses(&answer), vec![201; size], "{}", kind.plural);
            let created: Vec<&Value> = results(&answer).iter().map(|result| &result["body"]).collect();
            assert!(created.iter().enumerate().all(|(i, body)| body[kind.field] == format!("n{i}")));
            assert_eq!(kind.counts(&tenant.api).await, (rows + size as u64, audit + size as u64), "{}", kind.plural);
            let last = created[size - 1];
            assert_eq!(tenant.api.get(&kind.one(&last["id"])).await.ok(200)[kind.field], format!("n{}", size - 1));
        }
    }
    let verified = tenant.api.get("/v1/audit-log/verify").await.ok(200);
    assert_eq!(verified["valid"], true, "{verified}");
}

async fn one_invalid_operation_writes_nothing_and_is_named_by_index(server: &TestServer) {
    let tenant = server.tenant().await;
    for kind in &KINDS {
        let kept = kind.create_one(&tenant.api, "kept").await;
        let before = kind.counts(&tenant.api).await;
        let operations = json!({"operations": [
            {"op": "create", "body": (kind.create)("good")},
            {"op": "create", "body": (kind.create)("")},
            {"op": "update", "id": kept["id"], "body": {kind.field: "changed"}},
            {"op": "update", "id": missing_id(kind.prefix), "body": {kind.field: "changed"}},
            {"op": "delete", "id": kept["id"]},
            {"op": "update", "id": kept["id"], "body": {"assigneeId": missing_id("mem_")}},
        ]});
        let problem = tenant.api.post(&kind.bulk(true), operations).await.problem(400);
        assert_eq!(failing(&problem), [(1, 400), (3, 404), (5, 400)], "{problem}");
        let errors = &problem["operations"][0]["errors"];
        assert_eq!(errors[0]["field"], kind.field, "the single create's field error: {problem}");
        assert_eq!(problem["operations"][2]["errors"][0]["field"], "assigneeId", "{problem}");
        assert_eq!(kind.counts(&tenant.api).await, before, "{}: nothing written", kind.plural);
        assert_eq!(tenant.api.get(&kind.one(&kept["id"])).await.ok(200)[kind.field], "kept");
    }
}

async fn a_missing_record_found_in_the_transaction_rolls_back_the_others(server: &TestServer) {
    let tenant = server.tenant().await;
    for kind in &KINDS {
        let (kept, other) = (kind.create_one(&tenant.api, "kept").await, kind.create_one(&tenant.api, "other").await);
        let before = kind.counts(&tenant.api).await;
        // every operation is valid; the third's record goes away with the second
        let operations = json!({"operations": [
            {"op": "create", "body": (kind.create)("good")},
            {"op": "delete", "id": other["id"]},
            {"op": "update", "id": other["id"], "body": {kind.field: "changed"}},
            {"op": "update", "id": kept["id"], "body": {kind.field: "changed"}},
        ]});
        let problem = tenant.api.post(&kind.bulk(true), operations).await.problem(400);
        assert_eq!(failing(&problem), [(2, 404)], "{problem}");
        assert_eq!(
            kind.counts(&tenant.api).await,
            before,
            "{}: the create, delete and update rolled back",
            kind.plural
        );
        assert_eq!(tenant.api.get(&kind.one(&kept["id"])).await.ok(200)[kind.field], "kept");
        tenant.api.get(&kind.one(&other["id"])).await.ok(200);
    }
}

async fn not_atomic_applies_the_good_operations_and_answers_each(server: &TestServer) {
    let tenant = server.tenant().await;
    for kind in &KINDS {
        let (kept, dropped) =
            (kind.create_one(&tenant.api, "kept").await, kind.create_one(&tenant.api, "dropped").await);
        let (rows, audit) = kind.counts(&tenant.api).await;
        let operations = json!({"operations": [
            {"op": "create", "body": (kind.create)("good")},
            {"op": "create", "body": (kind.create)("")},
            {"op": "update", "id": missing_id(kind.prefix), "body": {kind.field: "changed"}},
            {"op": "update", "id": kept["id"], "body": {kind.field: "changed"}},
            {"op": "delete", "id": dropped["id"]},
        ]});
        let answer = tenant.api.post(&kind.bulk(false), operations).await.ok(200);
        assert_eq!(statuses(&answer), [201, 400, 404, 200, 200], "{answer}");
        let results = results(&answer);
        assert_eq!(results[1]["problem"]["errors"][0]["field"], kind.field, "{answer}");
        assert_eq!(results[2]["problem"]["type"], "/problems/not-found", "{answer}");
        assert!(results[1].get("body").is_none() && results[0].get("problem").is_none(), "{answer}");
        assert_eq!(kind.counts(&tenant.api).await, (rows, audit + 3), "{}: +1 −1 rows, 3 entries", kind.plural);
        assert_eq!(tenant.api.get(&kind.one(&kept["id"])).await.ok(200)[kind.field], "changed");
        tenant.api.get(&kind.one(&dropped["id"])).await.problem(404);
        tenant.api.get(&kind.one(&results[0]["body"]["id"])).await.ok(200);
    }
}

async fn zero_or_501_operations_are_400_naming_operations(server: &TestServer) {
    let tenant = server.tenant().await;
    for kind in &KINDS {
        let before = kind.counts(&tenant.api).await;
        let many: Vec<Value> =
            (0..501).map(|i| json!({"op": "create", "body": (kind.create)(&format!("n{i}"))})).collect();
        for atomic in [true, false] {
            tenant.api.post(&kind.bulk(atomic), json!({"operations": []})).await.invalid("operations");
            tenant.api.post(&kind.bulk(atomic), json!({"operations": many})).await.invalid("operations");
        }
        tenant.api.post(&kind.bulk(true), json!({})).await.invalid("operations");
        tenant
            .api
            .post(&format!("{}?atomic=maybe", kind.bulk(true)), json!({"operations": []}))
            .await
            .invalid("atomic");
        assert_eq!(kind.counts(&tenant.api).await, before);
    }
    // 500 operations fit the body limit and are applied, each with its entry
    let kind = &KINDS[0];
    let (rows, audit) = kind.counts(&tenant.api).await;
    let long = "x".repeat(2000);
    let five_hundred: Vec<Value> = (0..500)
        .map(|i| json!({"op": "create", "body": {"title": format!("r{i}"), "description": long, "category": "other"}}))
        .collect();
    let answer = tenant.api.post(&kind.bulk(true), json!({"operations": five_hundred})).await.ok(200);
    assert_eq!(statuses(&answer), vec![201; 500]);
    assert_eq!(kind.counts(&tenant.api).await, (rows + 500, audit + 500));
}

async fn malformed_operations_are_named_by_index(server: &TestServer) {
    let tenant = server.tenant().await;
    let kind = &KINDS[0];
    let kept = kind.create_one(&tenant.api, "kept").await;
    let before = kind.counts(&tenant.api).await;
    let operations = json!({"operations": [
        {"op": "update", "id": kept["id"], "body": {"title": "fine"}},
        {"op": "create", "body": {"title": "t", "description": "d", "category": "technology", "colour": "red"}},
        {"op": "update", "body": {"title": "no id"}},
        {"op": "create", "id": kept["id"], "body": (kind.create)("an id")},
        {"op": "delete", "id": "not-an-id"},
        {"op": "delete", "id": kept["id"], "body": {}},
        {"op": "update", "id": kept["id"], "body": {"likelihood": "sometimes"}},
    ]});
    let problem = tenant.api.post(&kind.bulk(true), operations).await.problem(400);
    assert_eq!(failing(&problem), [(1, 400), (2, 400), (3, 400), (4, 404), (5, 400), (6, 400)], "{problem}");
    let field = |i: usize| problem["operations"][i]["errors"][0]["field"].as_str().unwrap_or_default().to_owned();
    assert_eq!([field(0), field(1), field(2), field(4), field(5)], ["colour", "id", "id", "body", "likelihood"]);
    assert_eq!(kind.counts(&tenant.api).await, before);
    // an unknown `op` is the envelope's error, named by its path
    let unknown = json!({"operations": [{"op": "upsert", "body": {}}]});
    tenant.api.post(&kind.bulk(true), unknown).await.invalid("operations[0].op");
}

async fn another_organizations_ids_are_not_found_and_stay_unchanged(server: &TestServer) {
    let (mine, theirs) = (server.tenant().await, server.tenant().await);
    for kind in &KINDS {
        let (a, b) = (kind.create_one(&theirs.api, "theirs a").await, kind.create_one(&theirs.api, "theirs b").await);
        let their_counts = kind.counts(&theirs.api).await;
        let operations = json!({"operations": [
            {"op": "update", "id": a["id"], "body": {kind.field: "taken"}},
            {"op": "delete", "id": b["id"]},
        ]});
        let problem = mine.api.post(&kind.bulk(true), operations.clone()).await.problem(400);
        assert_eq!(failing(&problem), [(0, 404), (1, 404)], "{problem}");
        let answer = mine.api.post(&kind.bulk(false), operations).await.ok(200);
        assert_eq!(statuses(&answer), [404, 404], "{answer}");
        assert_eq!(kind.counts(&theirs.api).await, their_counts, "{}: the other organization unchanged", kind.plural);
        assert_eq!(theirs.api.get(&kind.one(&a["id"])).await.ok(200)[kind.field], "theirs a");
        theirs.api.get(&kind.one(&b["id"])).await.ok(200);
    }
}

async fn a_caller_who_may_not_write_gets_403_and_nothing_changes(server: &TestServer) {
    let tenant = server.tenant().await;
    let read_only = tenant
        .api
        .post("/v1/api-keys", json!({"name": "read", "scopes": ["risks:read", "vendors:read", "tasks:read"]}))
        .await
        .ok(201);
    let read_only = server.client(Auth::ApiKey(str_of(&read_only, "key").to_owned()), None);
    let (auditor, _) = server.member(&tenant, "auditor").await;
    let auditor = server.session(&auditor.id, Some(&tenant.org_id)).await;
    for kind in &KINDS {
        let kept = kind.create_one(&tenant.api, "kept").await;
        let before = kind.counts(&tenant.api).await;
        let operations = json!({"operations": [
            {"op": "create", "body": (kind.create)("no")},
            {"op": "delete", "id": kept["id"]},
        ]});
        for caller in [&read_only, &auditor] {
            for atomic in [true, false] {
                let problem = caller.post(&kind.bulk(atomic), operations.clone()).await.problem(403);
                assert!(str_of(&problem, "detail").contains(kind.plural), "{problem}");
            }
        }
        assert_eq!(kind.counts(&tenant.api).await, before);
    }
}

/// How many people (active or not) and audit entries the organization has.
async fn people_counts(client: &Client) -> (u64, u64) {
    let people = client.get("/v1/people?includeInactive=true&limit=1").await.ok(200);
    let audit = client.get("/v1/audit-log?limit=1").await.ok(200);
    (people["count"].as_u64().unwrap(), audit["count"].as_u64().unwrap())
}

async fn people_are_changed_in_bulk_but_never_created_or_deleted(server: &TestServer) {
    let tenant = server.tenant().await;
    let (_, member) = server.member(&tenant, "employee").await;
    let new = server.user().await;
    let (people, audit) = people_counts(&tenant.api).await;
    let operations = json!({"operations": [
        {"op": "update", "id": member["id"], "body": {"department": "hr"}},
    ]});
    let answer = tenant.api.post("/v1/people/bulk", operations).await.ok(200);
    assert_eq!(statuses(&answer), [200], "{answer}");
    assert_eq!(results(&answer)[0]["body"]["department"], "hr");
    assert_eq!(people_counts(&tenant.api).await, (people, audit + 1));

    // a create (users join by accepting an invitation) and a delete are refused, and with them
    // the whole atomic request
    let (people, audit) = people_counts(&tenant.api).await;
    let operations = json!({"operations": [
        {"op": "create", "body": {"userId": new.id, "role": "employee"}},
        {"op": "update", "id": member["id"], "body": {"department": "it"}},
        {"op": "delete", "id": member["id"]},
    ]});
    let problem = tenant.api.post("/v1/people/bulk", operations).await.problem(400);
    assert_eq!(failing(&problem), [(0, 400), (2, 400)], "{problem}");
    assert_eq!(problem["operations"][0]["errors"][0]["field"], "op", "{problem}");
    assert_eq!(problem["operations"][1]["errors"][0]["field"], "op", "{problem}");
    assert_eq!(people_counts(&tenant.api).await, (people, audit));

    // one by one: the good ones apply, the create and the delete are a 400
    let operations = json!({"operations": [
        {"op": "create", "body": {"userId": new.id, "role": "employee"}},
        {"op": "delete", "id": member["id"]},
        {"op": "update", "id": member["id"], "body": {"isActive": false}},
    ]});
    let answer = tenant.api.post("/v1/people/bulk?atomic=false", operations).await.ok(200);
    assert_eq!(statuses(&answer), [400, 400, 200], "{answer}");
    assert_eq!(results(&answer)[2]["body"]["isActive"], false);
    assert_eq!(people_counts(&tenant.api).await, (people, audit + 1));
}

async fn the_last_owner_rule_rolls_back_a_bulk_of_people(server: &TestServer) {
    let tenant = server.tenant().await;
    let (_, member) = server.member(&tenant, "employee").await;
    let before = people_counts(&tenant.api).await;
    // every operation is valid on its own; the demotion of the only owner fails in the transaction
    let operations = json!({"operations": [
        {"op": "update", "id": member["id"], "body": {"department": "hr"}},
        {"op": "update", "id": tenant.owner_member_id, "body": {"role": "admin"}},
    ]});
    let problem = tenant.api.post("/v1/people/bulk", operations).await.problem(400);
    assert_eq!(failing(&problem), [(1, 409)], "{problem}");
    assert_eq!(people_counts(&tenant.api).await, before, "the update rolled back with the demotion");
    let kept = tenant.api.get(&format!("/v1/people/{}", member["id"].as_str().unwrap())).await.ok(200);
    assert_eq!(kept["department"], "none");
    let owner = tenant.api.get(&format!("/v1/people/{}", tenant.owner_member_id)).await.ok(200);
    assert_eq!(owner["role"], "owner");
}
