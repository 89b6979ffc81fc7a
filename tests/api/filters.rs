//! Filters, time ranges, `q`, `sort` and their strictness on every list (docs/api.md, "Filtering,
//! sorting and search"): each filter narrows the rows and `count` alike; sorted pages skip and
//! repeat nothing while rows are added between them; a parameter the list does not know, a value
//! outside an enumeration, a bad date or a cursor of another query is a 400 naming it; an export
//! holds exactly the rows its list shows with the same parameters, in the same order.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::checks::{data, ids, str_of};
use crate::client::Client;
use crate::harness::TestServer;
use crate::{comments, context, tasks};

api_tests!(
    every_risk_filter_narrows_the_rows_and_the_count,
    time_ranges_are_inclusive_after_and_exclusive_before,
    vendor_policy_task_and_context_filters,
    people_filters_by_role_activity_and_department,
    comments_filter_by_author,
    sorted_pages_skip_and_repeat_nothing_while_rows_are_added,
    unknown_parameters_bad_values_and_foreign_cursors_are_400_naming_them,
    an_export_holds_the_rows_and_order_of_its_list,
    search_finds_words_case_insensitively_and_the_last_as_a_prefix,
);

/// The envelope of `path`, asserting that `count` is the number of rows it holds (one page).
async fn listed(client: &Client, path: &str) -> Value {
    let separator = if path.contains('?') { '&' } else { '?' };
    let page = client.get(&format!("{path}{separator}limit=1000")).await.ok(200);
    // Policies have no `count` (the spec's shape); every other list has one.
    if !path.starts_with("/v1/policies") {
        assert_eq!(page["count"].as_u64(), Some(data(&page).len() as u64), "{path}: count in {page}");
    }
    page
}

/// The ids `path` lists, as a set.
async fn id_set(client: &Client, path: &str) -> BTreeSet<String> {
    ids(&listed(client, path).await).into_iter().collect()
}

fn set(ids: &[&Value]) -> BTreeSet<String> {
    ids.iter().map(|value| str_of(value, "id").to_owned()).collect()
}

/// Creates a risk of `body`, in category `other` unless it names one.
async fn risk(client: &Client, mut body: Value) -> Value {
    if body.get("category").is_none() {
        body["category"] = json!("other");
    }
    client.post("/v1/risks", body).await.ok(201)
}

async fn every_risk_filter_narrows_the_rows_and_the_count(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let me = tenant.owner_member_id.as_str();
    let a = risk(
        api,
        json!({"title": "A", "description": "d", "category": "technology", "status": "open",
        "department": "it", "likelihood": "likely", "impact": "major", "treatmentStrategy": "mitigate",
        "assigneeId": me}),
    )
    .await;
    let b = risk(
        api,
        json!({"title": "B", "description": "d", "category": "people", "status": "pending",
        "department": "hr", "likelihood": "unlikely", "impact": "minor", "treatmentStrategy": "avoid"}),
    )
    .await;
    let c = risk(
        api,
        json!({"title": "C", "description": "d", "category": "technology", "status": "closed",
        "likelihood": "likely", "impact": "minor", "treatmentStrategy": "accept", "assigneeId": me}),
    )
    .await;
    // Another organization's matching risk is never listed.
    let other = server.tenant().await;
    risk(&other.api, json!({"title": "X", "description": "d", "category": "technology", "status": "open"})).await;

    let cases: Vec<(String, BTreeSet<String>)> = vec![
        ("".into(), set(&[&a, &b, &c])),
        ("status=open".into(), set(&[&a])),
        ("status=open&status=pending".into(), set(&[&a, &b])),
        ("status=archived".into(), set(&[])),
        ("category=technology".into(), set(&[&a, &c])),
        ("department=hr".into(), set(&[&b])),
        ("department=it&department=hr".into(), set(&[&a, &b])),
        (format!("assigneeId={me}"), set(&[&a, &c])),
        ("assigneeId=none".into(), set(&[&b])),
        (format!("assigneeId=none&assigneeId={me}"), set(&[&a, &b, &c])),
        ("likelihood=likely".into(), set(&[&a, &c])),
        ("impact=minor".into(), set(&[&b, &c])),
        ("treatmentStrategy=avoid&treatmentStrategy=accept".into(), set(&[&b, &c])),
        // Across fields, every filter holds.
        (format!("category=technology&impact=minor&assigneeId={me}"), set(&[&c])),
        ("category=people&status=open".into(), set(&[])),
    ];
    for (query, expected) in cases {
        assert_eq!(id_set(api, &format!("/v1/risks?{query}")).await, expected, "?{query}");
    }
}

async fn time_ranges_are_inclusive_after_and_exclusive_before(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let mut made = Vec::new();
    for n in 0..3 {
        made.push(tasks::create(api, &format!("Task {n}")).await);
        crate::checks::tick().await;
    }
    let at = |n: usize, field: &str| str_of(&made[n], field).to_owned();
    let enc = |text: String| text.replace('+', "%2B");
    let after = id_set(api, &format!("/v1/tasks?createdAfter={}", enc(at(1, "createdAt")))).await;
    assert_eq!(after, set(&[&made[1], &made[2]]), "createdAfter includes its instant");
    let before = id_set(api, &format!("/v1/tasks?createdBefore={}", enc(at(1, "createdAt")))).await;
    assert_eq!(before, set(&[&made[0]]), "createdBefore excludes its instant");
    let between =
        format!("/v1/tasks?createdAfter={}&createdBefore={}", enc(at(0, "createdAt")), enc(at(2, "createdAt")));
    assert_eq!(id_set(api, &between).await, set(&[&made[0], &made[1]]));

    crate::checks::tick().await;
    let changed = api.patch(&format!("/v1/tasks/{}", at(0, "id")), json!({"status": "done"})).await.ok(200);
    let updated = enc(str_of(&changed, "updatedAt").to_owned());
    assert_eq!(id_set(api, &format!("/v1/tasks?updatedAfter={updated}")).await, set(&[&made[0]]));
    assert_eq!(id_set(api, &format!("/v1/tasks?updatedBefore={updated}")).await, set(&[&made[1], &made[2]]));
}

async fn vendor_policy_task_and_context_filters(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let me = tenant.owner_member_id.as_str();

    let vendor = |body: Value| async move { api.post("/v1/vendors", body).await.ok(201) };
    let v1 = vendor(json!({"name": "V1", "description": "d", "category": "cloud", "status": "assessed",
        "assigneeId": me}))
    .await;
    let v2 = vendor(json!({"name": "V2", "description": "d", "category": "finance"})).await;
    let cases: Vec<(String, BTreeSet<String>)> = vec![
        ("status=not_assessed".into(), set(&[&v2])),
        ("status=assessed&status=in_progress".into(), set(&[&v1])),
        ("category=cloud&category=finance".into(), set(&[&v1, &v2])),
        ("category=hr".into(), set(&[])),
        (format!("assigneeId={me}"), set(&[&v1])),
        ("assigneeId=none".into(), set(&[&v2])),
    ];
    for (query, expected) in cases {
        assert_eq!(id_set(api, &format!("/v1/vendors?{query}")).await, expected, "vendors ?{query}");
    }

    let content = json!([{"type": "paragraph", "content": [{"type": "text", "text": "x"}]}]);
    let policy = |body: Value| async move { api.post("/v1/policies", body).await.ok(201) };
    let p1 = policy(json!({"name": "P1", "content": content, "status": "published", "frequency": "yearly",
        "department": "it", "assigneeId": me}))
    .await;
    let p2 = policy(json!({"name": "P2", "content": content, "frequency": "monthly", "isArchived": true})).await;
    let cases: Vec<(String, BTreeSet<String>)> = vec![
        ("status=published".into(), set(&[&p1])),
        ("status=draft&status=needs_review".into(), set(&[&p2])),
        ("frequency=monthly".into(), set(&[&p2])),
        ("department=it".into(), set(&[&p1])),
        ("isArchived=true".into(), set(&[&p2])),
        ("isArchived=false".into(), set(&[&p1])),
        (format!("assigneeId={me}"), set(&[&p1])),
        ("assigneeId=none".into(), set(&[&p2])),
    ];
    for (query, expected) in cases {
        assert_eq!(id_set(api, &format!("/v1/policies?{query}")).await, expected, "policies ?{query}");
    }

    let t1 = api.post("/v1/tasks", json!({"title": "T1", "description": "d", "assigneeId": me})).await.ok(201);
    let t2 = api.post("/v1/tasks", json!({"title": "T2", "description": "d", "status": "done"})).await.ok(201);
    let cases: Vec<(String, BTreeSet<String>)> = vec![
        ("status=todo".into(), set(&[&t1])),
        ("status=done&status=in_progress".into(), set(&[&t2])),
        (format!("assigneeId={me}"), set(&[&t1])),
        ("assigneeId=none".into(), set(&[&t2])),
    ];
    for (query, expected) in cases {
        assert_eq!(id_set(api, &format!("/v1/tasks?{query}")).await, expected, "tasks ?{query}");
    }

    let entry = |question: &str, tags: Value| {
        let body = json!({"question": question, "answer": "a", "tags": tags});
        async move { api.post("/v1/context", body).await.ok(201) }
    };
    let c1 = entry("Q1", json!(["security", "backups"])).await;
    let c2 = entry("Q2", json!(["hr"])).await;
    let c3 = entry("Q3", json!([])).await;
    let cases: Vec<(&str, BTreeSet<String>)> = vec![
        ("tag=backups", set(&[&c1])),
        ("tag=hr&tag=security", set(&[&c1, &c2])),
        ("tag=back", set(&[])),
        ("", set(&[&c1, &c2, &c3])),
    ];
    for (query, expected) in cases {
        assert_eq!(id_set(api, &format!("/v1/context?{query}")).await, expected, "context ?{query}");
    }
}

async fn people_filters_by_role_activity_and_department(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let user = server.user().await;
    let admin = server.admin().add_member(&tenant.org_id, &user.id, "admin").await;
    let admin_id = str_of(&admin, "id").to_owned();
    api.patch(&format!("/v1/people/{admin_id}"), json!({"department": "it"})).await.ok(200);
    let leaver = server.user().await;
    let gone = server.admin().add_member(&tenant.org_id, &leaver.id, "employee").await;
    let gone_id = str_of(&gone, "id").to_owned();
    api.patch(&format!("/v1/people/{gone_id}"), json!({"isActive": false})).await.ok(200);

    let owner = tenant.owner_member_id.clone();
    let of = |ids: &[&String]| ids.iter().copied().cloned().collect::<BTreeSet<_>>();
    let cases: Vec<(&str, BTreeSet<String>)> = vec![
        ("", of(&[&owner, &admin_id])),
        ("includeInactive=true", of(&[&owner, &admin_id, &gone_id])),
        ("role=admin", of(&[&admin_id])),
        ("role=owner&role=admin", of(&[&owner, &admin_id])),
        ("isActive=false", of(&[&gone_id])),
        ("department=it", of(&[&admin_id])),
        ("includeInactive=true&role=employee", of(&[&gone_id])),
    ];
    for (query, expected) in cases {
        assert_eq!(id_set(api, &format!("/v1/people?{query}")).await, expected, "people ?{query}");
    }
    api.get("/v1/people?role=boss").await.invalid("role");
    api.get("/v1/people?updatedAfter=2026-01-01T00:00:00Z").await.invalid("updatedAfter");
}

async fn comments_filter_by_author(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = comments::entity(&tenant.api, "task").await;
    let mine = comments::create(&tenant, "task", &task, "first").await;
    let path = comments::list_path("task", &task);
    let by = |author: &str| format!("{path}&authorId={author}");
    let listed = tenant.api.get(&by(&tenant.owner.id)).await;
    assert_eq!(listed.header("X-Total-Count").as_deref(), Some("1"));
    assert_eq!(
        listed.ok(200).as_array().map(|a| a.iter().map(|c| c["id"].clone()).collect::<Vec<_>>()),
        Some(vec![mine["id"].clone()])
    );
    let stranger = server.user().await;
    let none = tenant.api.get(&by(&stranger.id)).await;
    assert_eq!(none.header("X-Total-Count").as_deref(), Some("0"));
    tenant.api.get(&by("nobody")).await.invalid("authorId");
}

/// Every page of `path` at `limit` rows; `between` runs after each page (it adds rows).
async fn paged<F, Fut>(client: &Client, path: &str, limit: usize, mut between: F) -> Vec<Value>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut rows = Vec::new();
    let mut url = format!("{path}&limit={limit}");
    for _ in 0..100 {
        let page = client.get(&url).await.ok(200);
        rows.extend(data(&page).iter().cloned());
        between().await;
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(cursor) => url = format!("{path}&limit={limit}&cursor={cursor}"),
            None => return rows,
        }
    }
    panic!("{path}: the pages never end");
}

async fn sorted_pages_skip_and_repeat_nothing_while_rows_are_added(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    // Titles with ties (the id breaks them) and letters spread so that added rows land on both
    // sides of every cursor.
    let titles = ["m", "c", "x", "c", "m", "a", "z", "c", "q"];
    for title in titles {
        risk(api, json!({"title": title, "description": "d", "status": "open"})).await;
        api.post("/v1/vendors", json!({"name": title, "description": "d"})).await.ok(201);
        tasks::create(api, title).await;
        context::create(api, title).await;
    }
    let lists = [
        ("/v1/risks?sort=title", "title"),
        ("/v1/risks?sort=-title", "title"),
        ("/v1/risks?sort=status,-updatedAt&status=open", "title"),
        ("/v1/vendors?sort=name", "name"),
        ("/v1/vendors?sort=-name,createdAt", "name"),
        ("/v1/tasks?sort=title,-createdAt", "title"),
        ("/v1/context?sort=question", "question"),
    ];
    let mut added = 0;
    for (path, field) in lists {
        let before = ids(&listed(api, path).await);
        // Rows are added after each of the first pages (a row of every list each time).
        let mut pages = 0;
        let rows = paged(api, path, 2, || {
            pages += 1;
            added += 1;
            let (n, title, add) = (added, ["b", "y", "m"][added % 3], pages <= 6);
            async move {
                if !add {
                    return;
                }
                let name = format!("{title}{n}");
                risk(api, json!({"title": name, "description": "d", "status": "open"})).await;
                api.post("/v1/vendors", json!({"name": name, "description": "d"})).await.ok(201);
                tasks::create(api, &name).await;
                context::create(api, &name).await;
            }
        })
        .await;
        let seen: Vec<String> = rows.iter().map(|row| str_of(row, "id").to_owned()).collect();
        let unique: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "{path}: a row repeated in {seen:?}");
        let kept: Vec<&String> = seen.iter().filter(|id| before.contains(id)).collect();
        assert_eq!(kept, before.iter().collect::<Vec<_>>(), "{path}: the rows there at the start, in order");
        // The pages are in the order asked, added rows included.
        let keys: Vec<&str> = rows.iter().map(|row| str_of(row, field)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        if path.contains("sort=-") {
            sorted.reverse();
        }
        if !path.contains("status,") {
            assert_eq!(keys, sorted, "{path}: order of {field}");
        }
    }
}

async fn unknown_parameters_bad_values_and_foreign_cursors_are_400_naming_them(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    for n in 0..3 {
        tasks::create(api, &format!("T{n}")).await;
        risk(api, json!({"title": format!("R{n}"), "description": "d"})).await;
    }
    let task = comments::entity(api, "task").await;
    let comments_path = comments::list_path("task", &task);
    let lists = [
        "/v1/risks?x=1",
        "/v1/vendors?x=1",
        "/v1/policies?x=1",
        "/v1/context?x=1",
        "/v1/tasks?x=1",
        "/v1/people?x=1",
        "/v1/integrations/connections?x=1",
        &format!("{comments_path}&x=1"),
    ];
    for list in lists {
        let base = list.trim_end_matches("x=1").trim_end_matches(['?', '&']);
        let join = if base.contains('?') { '&' } else { '?' };
        api.get(&format!("{base}{join}stauts=open")).await.invalid("stauts");
        api.get(&format!("{base}{join}createdAfter=yesterday")).await.invalid("createdAfter");
        api.get(&format!("{base}{join}sort=nope")).await.invalid("sort");
        // A field given again changes nothing: its first mention decides.
        let once = api.get(&format!("{base}{join}sort=-createdAt")).await.ok(200);
        let again = api.get(&format!("{base}{join}sort=-createdAt,createdAt,-createdAt")).await.ok(200);
        assert_eq!(again["data"], once["data"], "{base}: a repeated sort field");
        // The export takes the same parameters, parsed the same way.
        let (path, query) = base.split_once('?').unwrap_or((base, ""));
        let export = format!("{path}/export?{query}{}", if query.is_empty() { "" } else { "&" });
        api.get(&format!("{export}stauts=open")).await.invalid("stauts");
        api.get(&format!("{export}limit=5")).await.invalid("limit");
    }
    for (list, field) in [
        ("/v1/risks", "status"),
        ("/v1/risks", "category"),
        ("/v1/risks", "likelihood"),
        ("/v1/vendors", "status"),
        ("/v1/policies", "frequency"),
        ("/v1/tasks", "status"),
        ("/v1/integrations/connections", "status"),
    ] {
        api.get(&format!("{list}?{field}=opne")).await.invalid(field);
    }
    api.get("/v1/risks?assigneeId=someone").await.invalid("assigneeId");
    api.get("/v1/policies?isArchived=yes").await.invalid("isArchived");
    api.get("/v1/risks?status=open&q=").await.invalid("q");
    api.get("/v1/risks?createdAfter=2026-01-01T00:00:00Z&createdAfter=2026-01-02T00:00:00Z")
        .await
        .invalid("createdAfter");

    // A cursor reaches only the query it was issued for: another sort, filter or list is a 400.
    let first = api.get("/v1/risks?sort=title&limit=1").await.ok(200);
    let cursor = str_of(&first, "nextCursor").to_owned();
    api.get(&format!("/v1/risks?sort=title&limit=1&cursor={cursor}")).await.ok(200);
    api.get(&format!("/v1/risks?sort=title&limit=5&cursor={cursor}")).await.ok(200);
    for other in ["sort=-title", "", "sort=title&status=open", "sort=title&q=r"] {
        api.get(&format!("/v1/risks?{other}&limit=1&cursor={cursor}")).await.invalid("cursor");
    }
    api.get(&format!("/v1/tasks?sort=title&limit=1&cursor={cursor}")).await.invalid("cursor");
    let filtered = api.get("/v1/tasks?status=todo&limit=1").await.ok(200);
    let cursor = str_of(&filtered, "nextCursor").to_owned();
    api.get(&format!("/v1/tasks?status=todo&limit=1&cursor={cursor}")).await.ok(200);
    api.get(&format!("/v1/tasks?status=done&limit=1&cursor={cursor}")).await.invalid("cursor");

    // A cursor made by hand keeps the list's fingerprint but carries a number where the title
    // goes, or a NUL byte in it: a 400 as well, never a failure of the database.
    let first = api.get("/v1/risks?sort=title&limit=1").await.ok(200);
    for forged_key in [json!({"i": 5}), json!({"s": "R\u{0}"})] {
        let forged = forge(str_of(&first, "nextCursor"), forged_key);
        api.get(&format!("/v1/risks?sort=title&limit=1&cursor={forged}")).await.invalid("cursor");
    }
    // The filters of the audit log refuse what PostgreSQL's text cannot hold.
    api.get("/v1/audit-log?resourceId=rsk_%00").await.invalid("resourceId");
    api.get("/v1/audit-log?acton=risk.").await.invalid("acton");
    api.get("/v1/risks?status=open&q=%00").await.invalid("q");
}

/// `cursor` (URL-safe base64 of `v2:` and JSON) with its first sort value replaced by `key`.
fn forge(cursor: &str, key: Value) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let bytes = URL_SAFE_NO_PAD.decode(cursor).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let mut json: Value = serde_json::from_str(text.strip_prefix("v2:").unwrap()).unwrap();
    json["k"][0] = key;
    URL_SAFE_NO_PAD.encode(format!("v2:{json}"))
}

async fn an_export_holds_the_rows_and_order_of_its_list(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    for (title, status) in [("b", "open"), ("a", "pending"), ("d", "open"), ("c", "closed"), ("e", "open")] {
        risk(api, json!({"title": title, "description": "d", "status": status})).await;
    }
    for query in ["status=open&sort=title", "status=open&status=closed&sort=-title", "sort=-createdAt", ""] {
        let list = ids(&listed(api, &format!("/v1/risks?{query}")).await);
        let csv = api.get(&format!("/v1/risks/export?format=csv&{query}")).await;
        assert_eq!(csv.status, 200, "{query}: {}", csv.body);
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(csv.bytes.as_slice());
        let id_column = reader.headers().unwrap().iter().position(|c| c == "id").unwrap();
        let exported: Vec<String> = reader.records().map(|r| r.unwrap()[id_column].to_owned()).collect();
        assert_eq!(exported, list, "csv ?{query}");
        let json = api.get(&format!("/v1/risks/export?{query}&format=json")).await;
        let text = std::str::from_utf8(&json.bytes).unwrap();
        let exported: Vec<String> = text
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(exported, list, "json ?{query}");
    }
    let open = api.get("/v1/risks/export?format=json&status=open").await;
    assert_eq!(std::str::from_utf8(&open.bytes).unwrap().lines().count(), 3);

    api.post("/v1/vendors", json!({"name": "Cloud", "description": "d", "category": "cloud"})).await.ok(201);
    api.post("/v1/vendors", json!({"name": "Bank", "description": "d", "category": "finance"})).await.ok(201);
    let vendors = api.get("/v1/vendors/export?format=json&category=finance").await;
    let lines: Vec<Value> =
        std::str::from_utf8(&vendors.bytes).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().map(|v| v["name"].clone()).collect::<Vec<_>>(), vec![json!("Bank")]);
}

async fn search_finds_words_case_insensitively_and_the_last_as_a_prefix(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let backups = risk(api, json!({"title": "Nightly BACKUPS fail", "description": "Disk full"})).await;
    let both =
        risk(api, json!({"title": "Laptop theft", "description": "No backups of laptops", "status": "closed"})).await;
    risk(api, json!({"title": "Phishing", "description": "Mail"})).await;
    assert_eq!(id_set(api, "/v1/risks?q=back").await, set(&[&backups, &both]));
    assert_eq!(id_set(api, "/v1/risks?q=Backups").await, set(&[&backups, &both]));
    assert_eq!(id_set(api, "/v1/risks?q=laptop%20back").await, set(&[&both]));
    assert_eq!(id_set(api, "/v1/risks?q=back&status=open").await, set(&[&backups]));
    assert_eq!(id_set(api, "/v1/risks?q=ransomware").await, set(&[]));
    let vendor = api.post("/v1/vendors", json!({"name": "Backblaze", "description": "Storage"})).await.ok(201);
    assert_eq!(id_set(api, "/v1/vendors?q=backb").await, set(&[&vendor]));
    let entry = context::create(api, "Do we keep backups offsite?").await;
    assert_eq!(id_set(api, "/v1/context?q=offsite").await, set(&[&entry]));
}
