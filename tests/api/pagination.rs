//! Keyset pagination of the stored lists: `limit` and `cursor`, `nextCursor` on every page but the
//! last, `count` as the total, the `LIST_MAX_ROWS` cap, bad parameters, tenant isolation, and rows
//! created at the same instant.

use compliance_client::ListRisksQuery;
use compliance_client::types::{NewRisk, RiskCategory, RiskDto};
use futures_util::TryStreamExt;
use serde_json::{Value, json};

use crate::checks::{data, ids, str_of};
use crate::client::{Client, api_key, get};
use crate::harness::{Env, TestServer};
use crate::{comments, context, policies, risks, tasks, vendors};

api_tests!(
    limit_pages_through_every_row_once_in_order,
    pages_do_not_shift_when_newer_rows_arrive,
    without_limit_the_cap_answers_the_first_page_and_a_cursor with SMALL_CAP,
    bad_limits_and_cursors_are_400_naming_the_parameter,
    a_cursor_reaches_only_the_callers_organization,
    people_pages_keep_the_include_inactive_filter,
    comment_pages_carry_the_total_and_cursor_in_headers,
    policy_pages_have_a_cursor_and_no_count,
    the_count_of_a_whole_list_follows_every_write,
    counts_by_status_and_assignee_are_the_matching_rows,
);
// Rows are given the same `createdAt` with SQL behind the server's back, which the harness does on
// PostgreSQL only; crates/store/tests/contract.rs (`keyset_pages`) covers ties on both backends.
api_tests!(@backend postgres_only, Postgres, rows_created_at_the_same_instant_are_neither_skipped_nor_repeated);

const SMALL_CAP: Env = &[("LIST_MAX_ROWS", "3")];

/// `limit=0`, over 1000, not a number, not whole, negative, empty.
const BAD_LIMITS: [&str; 6] = ["0", "1001", "abc", "1.5", "-1", ""];
/// Not base64; base64 of `garbage`; base64 of `v1:x:y` (the right version, no timestamp); empty.
const BAD_CURSORS: [&str; 4] = ["!!!", "Z2FyYmFnZQ", "djE6eDp5", ""];

/// `path` with `query` appended (`?` or `&`).
fn with_query(path: &str, query: &str) -> String {
    let separator = if path.contains('?') { '&' } else { '?' };
    format!("{path}{separator}{query}")
}

/// `nextCursor` of an envelope, which must be a string when present.
fn next_cursor(envelope: &Value) -> Option<String> {
    envelope.get("nextCursor").map(|cursor| cursor.as_str().unwrap_or_else(|| panic!("{envelope}")).to_owned())
}

/// Every page of `path` at `limit` rows, following `nextCursor` until a page has none.
async fn pages(client: &Client, path: &str, limit: usize) -> Vec<Value> {
    let mut pages = Vec::new();
    let mut url = with_query(path, &format!("limit={limit}"));
    loop {
        let page = client.get(&url).await.ok(200);
        let next = next_cursor(&page);
        pages.push(page);
        match next {
            Some(cursor) => url = with_query(path, &format!("limit={limit}&cursor={cursor}")),
            None => return pages,
        }
        assert!(pages.len() <= 100, "{path}: the pages never end");
    }
}

/// The ids of every page, in order.
fn all_ids(pages: &[Value]) -> Vec<String> {
    pages.iter().flat_map(ids).collect()
}

async fn make_risks(client: &Client, how_many: usize) {
    for n in 0..how_many {
        risks::create(client, &format!("Risk {n}")).await;
    }
}

async fn limit_pages_through_every_row_once_in_order(server: &TestServer) {
    let tenant = server.tenant().await;
    make_risks(&tenant.api, 7).await;
    let everything = tenant.api.get("/v1/risks").await.ok(200);
    assert_eq!((everything["count"].as_u64(), data(&everything).len()), (Some(7), 7), "{everything}");
    assert!(everything.get("nextCursor").is_none(), "a list that fits has no cursor: {everything}");

    let paged = pages(&tenant.api, "/v1/risks", 3).await;
    let sizes: Vec<usize> = paged.iter().map(|page| data(page).len()).collect();
    assert_eq!(sizes, [3, 3, 1]);
    assert!(paged.iter().all(|page| page["count"] == 7), "count is the total on every page: {paged:?}");
    assert!(next_cursor(&paged[1]).is_some() && next_cursor(&paged[2]).is_none(), "{paged:?}");
    assert_eq!(all_ids(&paged), ids(&everything), "no row missing or repeated, newest first");

    let exact = tenant.api.get("/v1/risks?limit=7").await.ok(200);
    assert!(exact.get("nextCursor").is_none(), "the page holding the last row is the last: {exact}");
    for (path, total) in [("/v1/vendors", 0), ("/v1/tasks", 0), ("/v1/context", 0)] {
        let page = tenant.api.get(&format!("{path}?limit=1")).await.ok(200);
        assert_eq!((page["count"].as_u64(), page.get("nextCursor")), (Some(total), None), "{path}: {page}");
    }
}

/// `count` risks made through the typed client, `Risk 0` first.
async fn make_typed_risks(client: &compliance_client::Client, count: usize) {
    for n in 0..count {
        let new = NewRisk::new(RiskCategory::Other, "A risk.".into(), format!("Risk {n}"));
        client.create_risk(&new).await.unwrap();
    }
}

fn typed_ids(risks: &[RiskDto]) -> Vec<String> {
    risks.iter().map(|risk| risk.id.clone()).collect()
}

async fn pages_do_not_shift_when_newer_rows_arrive(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = server.typed_api(&tenant).await;
    make_typed_risks(&client, 5).await;
    let before = typed_ids(&client.list_risks(&ListRisksQuery::default()).await.unwrap().data);
    let first = client.list_risks(&ListRisksQuery { limit: Some(2), ..Default::default() }).await.unwrap();
    client.create_risk(&NewRisk::new(RiskCategory::Other, "A risk.".into(), "Newer".into())).await.unwrap();
    let cursor = first.next_cursor.unwrap_or_else(|| panic!("a first page of 2 out of 5 has a cursor"));
    let second = ListRisksQuery { limit: Some(2), cursor: Some(cursor), ..Default::default() };
    let second = client.list_risks(&second).await.unwrap();
    assert_eq!(typed_ids(&second.data), before[2..4], "the next page starts after the last row seen");
    assert_eq!(second.count, 6, "the total counts the newer row");
}

async fn without_limit_the_cap_answers_the_first_page_and_a_cursor(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = server.typed_api(&tenant).await;
    make_typed_risks(&client, 5).await;
    let first = client.list_risks(&ListRisksQuery::default()).await.unwrap();
    assert_eq!((first.data.len(), first.count), (3, 5));
    let cursor = first.next_cursor.clone().unwrap_or_else(|| panic!("over the cap there is a cursor"));
    let rest = client.list_risks(&ListRisksQuery { cursor: Some(cursor), ..Default::default() }).await.unwrap();
    assert_eq!((rest.data.len(), rest.count, rest.next_cursor), (2, 5, None));
    let streamed: Vec<RiskDto> = client.list_risks_stream(ListRisksQuery::default()).try_collect().await.unwrap();
    assert_eq!(
        typed_ids(&streamed),
        [typed_ids(&first.data), typed_ids(&rest.data)].concat(),
        "the stream follows the cap's cursor"
    );

    let asked_for_more = client.list_risks(&ListRisksQuery { limit: Some(10), ..Default::default() }).await.unwrap();
    assert_eq!(asked_for_more.data.len(), 3, "no page is larger than the cap");
    assert!(asked_for_more.next_cursor.is_some());
}

async fn bad_limits_and_cursors_are_400_naming_the_parameter(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = comments::entity(&tenant.api, "risk").await;
    let lists = ["/v1/risks".to_owned(), "/v1/policies".into(), "/v1/context".into(), "/v1/people".into()];
    for path in lists.iter().cloned().chain([comments::list_path("risk", &risk)]) {
        for limit in BAD_LIMITS {
            tenant.api.get(&with_query(&path, &format!("limit={limit}"))).await.invalid("limit");
        }
        for cursor in BAD_CURSORS {
            tenant.api.get(&with_query(&path, &format!("cursor={cursor}"))).await.invalid("cursor");
        }
        tenant.api.get(&with_query(&path, "limit=1000")).await.ok(200);
    }
}

async fn a_cursor_reaches_only_the_callers_organization(server: &TestServer) {
    let (a, b) = (server.tenant().await, server.tenant().await);
    make_risks(&b.api, 2).await;
    let theirs = ids(&b.api.get("/v1/risks").await.ok(200));
    make_risks(&a.api, 3).await;
    let page = a.api.get("/v1/risks?limit=1").await.ok(200);
    let cursor = next_cursor(&page).unwrap_or_else(|| panic!("{page}"));
    // b's rows are all older than the cursor's position: b gets exactly them, and none of a's.
    let borrowed = b.api.get(&format!("/v1/risks?limit=10&cursor={cursor}")).await.ok(200);
    assert_eq!((ids(&borrowed), borrowed["count"].as_u64()), (theirs, Some(2)), "{borrowed}");
}

async fn people_pages_keep_the_include_inactive_filter(server: &TestServer) {
    let tenant = server.tenant().await;
    let mut members = Vec::new();
    for _ in 0..4 {
        members.push(server.member(&tenant, "member").await.1);
    }
    tenant.deactivate(str_of(&members[1], "id")).await;

    let everyone = tenant.api.get("/v1/people?includeInactive=true").await.ok(200);
    let paged = pages(&tenant.api, "/v1/people?includeInactive=true", 2).await;
    assert_eq!(all_ids(&paged), ids(&everyone));
    assert!(paged.iter().all(|page| page["count"] == 5), "{paged:?}");
    assert_eq!(paged.len(), 3);

    let active = pages(&tenant.api, "/v1/people", 2).await;
    assert!(active.iter().all(|page| page["count"] == 4), "{active:?}");
    assert!(!all_ids(&active).contains(&str_of(&members[1], "id").to_owned()), "deactivated members stay out");
    assert_eq!(all_ids(&active).len(), 4);
}

async fn comment_pages_carry_the_total_and_cursor_in_headers(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = comments::entity(&tenant.api, "risk").await;
    for n in 0..5 {
        comments::create(&tenant, "risk", &risk, &format!("comment {n}")).await;
    }
    let everything: Vec<String> =
        comments::list(&tenant.api, "risk", &risk).await.iter().map(|c| str_of(c, "id").to_owned()).collect();
    assert_eq!(everything.len(), 5);

    let key = api_key(server, &tenant.org_id, &tenant.owner.id).await;
    let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let query = cursor.map_or("limit=2".to_owned(), |c| format!("limit=2&cursor={c}"));
        let response =
            get(server, &with_query(&comments::list_path("risk", &risk), &query), &[("X-API-Key", &key)]).await;
        assert_eq!(response.status(), 200);
        let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap_or_default().to_owned());
        assert_eq!(header("X-Total-Count").as_deref(), Some("5"), "the total, on every page");
        cursor = header("X-Next-Cursor");
        let page: Vec<Value> = response.json().await.unwrap_or_default();
        seen.extend(page.iter().map(|c| str_of(c, "id").to_owned()));
        pages += 1;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!((seen, pages), (everything, 3));
}

async fn policy_pages_have_a_cursor_and_no_count(server: &TestServer) {
    let tenant = server.tenant().await;
    for n in 0..3 {
        policies::create(&tenant.api, &format!("Policy {n}")).await;
    }
    let paged = pages(&tenant.api, "/v1/policies", 2).await;
    assert_eq!(paged.len(), 2);
    assert!(paged.iter().all(|page| page.get("count").is_none()), "policies have no count: {paged:?}");
    assert_eq!(all_ids(&paged), ids(&tenant.api.get("/v1/policies").await.ok(200)));
}

async fn rows_created_at_the_same_instant_are_neither_skipped_nor_repeated(server: &TestServer) {
    let tenant = server.tenant().await;
    make_risks(&tenant.api, 5).await;
    let org = &tenant.org_id;
    server
        .execute_sql(&format!(
            "UPDATE risks SET created_at = '2026-01-01 00:00:00.123456' WHERE organization_id = '{org}'"
        ))
        .await;
    let everything = ids(&tenant.api.get("/v1/risks").await.ok(200));
    let mut by_id = everything.clone();
    by_id.sort_by(|a, b| b.cmp(a));
    assert_eq!(everything, by_id, "ties are ordered by id, descending");
    for limit in [1, 2] {
        assert_eq!(all_ids(&pages(&tenant.api, "/v1/risks", limit).await), everything, "limit {limit}");
    }
}

/// `count` of a page that does not hold every row, so that the total is not the rows' own.
async fn counted(client: &Client, path: &str) -> u64 {
    let page = client.get(&with_query(path, "limit=1")).await.ok(200);
    page["count"].as_u64().unwrap_or_else(|| panic!("{path}: {page}"))
}

/// A list asked for without filters answers its `count` from the size the database's triggers
/// keep (`list_row_counts`), not by counting: it must follow creates and deletes through the
/// API, many rows written by one statement behind the server's back, and no other organization.
async fn the_count_of_a_whole_list_follows_every_write(server: &TestServer) {
    let (a, b) = (server.tenant().await, server.tenant().await);
    make_risks(&a.api, 4).await;
    make_risks(&b.api, 2).await;
    let doomed = risks::create(&a.api, "Doomed").await;
    for n in 0..3 {
        vendors::create(&a.api, &format!("Vendor {n}")).await;
        tasks::create(&a.api, &format!("Task {n}")).await;
        context::create(&a.api, &format!("Question {n}?")).await;
    }
    assert_eq!(counted(&a.api, "/v1/risks").await, 5);
    a.api.delete(&format!("/v1/risks/{}", str_of(&doomed, "id"))).await.ok(200);
    assert_eq!(counted(&a.api, "/v1/risks").await, 4, "a delete through the API");
    for path in ["/v1/vendors", "/v1/tasks", "/v1/context"] {
        assert_eq!(counted(&a.api, path).await, 3, "{path}");
    }
    let org = &a.org_id;
    assert_eq!(counted(&b.api, "/v1/risks").await, 2, "another organization's list");

    // One statement copying three rows, one deleting three: each changes the count by its rows.
    let copy = |new_id: &str| {
        format!(
            "INSERT INTO risks (id, organization_id, title, description, category, status, likelihood, impact, \
               residual_likelihood, residual_impact, treatment_strategy, created_at, updated_at) \
             SELECT {new_id}, organization_id, title, description, category, status, likelihood, impact, \
               residual_likelihood, residual_impact, treatment_strategy, created_at, updated_at \
             FROM risks WHERE organization_id = '{org}' AND title IN ('Risk 0', 'Risk 1', 'Risk 2'); \
             DELETE FROM risks WHERE organization_id = '{org}' AND title IN ('Risk 0', 'Risk 3');"
        )
    };
    server.execute_sql_per_backend(&copy("'rsk_' || md5(id)"), &copy("'rsk_' || lower(hex(randomblob(16)))")).await;
    assert_eq!(counted(&a.api, "/v1/risks").await, 4, "4 + 3 copied − 3 deleted (one of them a copy)");
    assert_eq!(data(&a.api.get("/v1/risks").await.ok(200)).len(), 4, "the count is the rows'");
    assert_eq!(counted(&b.api, "/v1/risks").await, 2, "the other organization's list did not move");

    // A filtered list still counts what matches.
    let closed = risks::create(&a.api, "Closed one").await;
    a.api.patch(&format!("/v1/risks/{}", str_of(&closed, "id")), json!({"status": "closed"})).await.ok(200);
    let open = a.api.get("/v1/risks?status=open&limit=1").await.ok(200);
    assert_eq!((open["count"].as_u64(), counted(&a.api, "/v1/risks").await), (Some(4), 5), "{open}");
}

/// `count` of `path` (a filtered list) on a one-row page, where it is not the page's own rows,
/// and the number of rows of the whole list in one page, where it is; they must agree.
async fn count_and_rows(client: &Client, path: &str) -> (u64, u64) {
    let rows = client.get(&with_query(path, "limit=1000")).await.ok(200);
    (counted(client, path).await, data(&rows).len() as u64)
}

/// Every list filtered by nothing but status and assignee answers `count` as its rows are.
async fn kept_counts_agree(api: &Client, owner: &str, other: &str, moment: &str) {
    let risks = [
        "status=open",
        "status=open&status=pending",
        "assigneeId=none",
        "status=open&assigneeId=OWNER",
        "assigneeId=OTHER&assigneeId=none",
        "status=pending&assigneeId=OTHER",
        "status=archived",
    ];
    let tasks = ["status=todo", "assigneeId=OTHER", "status=todo&assigneeId=OWNER"];
    let paths = risks.map(|f| format!("/v1/risks?{f}")).into_iter().chain(tasks.map(|f| format!("/v1/tasks?{f}")));
    for path in paths {
        let path = path.replace("OWNER", owner).replace("OTHER", other);
        let (count, rows) = count_and_rows(api, &path).await;
        assert_eq!(count, rows, "{moment}: {path}");
    }
}

/// Risks and tasks filtered by nothing but `status` and `assigneeId` answer `count` from the
/// numbers the database's triggers keep per status and assignee (`list_status_counts`): after
/// creates, status and assignee changes, deletes, statements behind the server's back and in
/// another organization, each such count must still be the number of rows the list shows. An
/// employee, who sees only their own tasks, counts only their own.
async fn counts_by_status_and_assignee_are_the_matching_rows(server: &TestServer) {
    let (a, b) = (server.tenant().await, server.tenant().await);
    let (employee, membership) = server.member(&a, "employee").await;
    let (owner, other) = (a.owner_member_id.clone(), str_of(&membership, "id").to_owned());
    let mut made = Vec::new();
    let risks_made = [
        ("open", Some(&owner)),
        ("open", Some(&owner)),
        ("open", Some(&other)),
        ("open", None),
        ("pending", Some(&other)),
        ("closed", None),
    ];
    for (n, (status, assignee)) in risks_made.into_iter().enumerate() {
        let body = json!({"title": format!("Risk {n}"), "description": "d", "category": "technology", "status": status, "assigneeId": assignee});
        made.push(str_of(&a.api.post("/v1/risks", body).await.ok(201), "id").to_owned());
    }
    risks::create(&b.api, "Another organization's").await;
    for n in 0..4 {
        let body = json!({"title": format!("Task {n}"), "assigneeId": if n % 2 == 0 { &other } else { &owner }});
        a.api.post("/v1/tasks", body).await.ok(201);
    }
    kept_counts_agree(&a.api, &owner, &other, "after creating").await;
    assert_eq!(count_and_rows(&a.api, &format!("/v1/risks?status=open&assigneeId={owner}")).await, (2, 2));

    a.api.patch(&format!("/v1/risks/{}", made[0]), json!({"status": "closed"})).await.ok(200);
    a.api.patch(&format!("/v1/risks/{}", made[1]), json!({"assigneeId": other})).await.ok(200);
    a.api.patch(&format!("/v1/risks/{}", made[2]), json!({"assigneeId": null})).await.ok(200);
    a.api.patch(&format!("/v1/risks/{}", made[3]), json!({"title": "Renamed"})).await.ok(200);
    a.api.delete(&format!("/v1/risks/{}", made[4])).await.ok(200);
    kept_counts_agree(&a.api, &owner, &other, "after changing and deleting").await;
    assert_eq!(count_and_rows(&a.api, &format!("/v1/risks?status=open&assigneeId={owner}")).await, (0, 0));

    // Statements of many rows behind the server's back: every open risk to pending, then the
    // pending ones of the other member deleted.
    let org = &a.org_id;
    let sql = format!(
        "UPDATE risks SET status = 'pending' WHERE organization_id = '{org}' AND status = 'open'; \
         DELETE FROM risks WHERE organization_id = '{org}' AND status = 'pending' AND assignee_id = '{other}';"
    );
    server.execute_sql_per_backend(&sql, &sql).await;
    kept_counts_agree(&a.api, &owner, &other, "after statements of many rows").await;
    assert_eq!(count_and_rows(&b.api, "/v1/risks?status=open").await, (1, 1), "the other organization's");

    // An employee sees and counts only their own tasks, whatever they filter by.
    let own = server.session(&employee.id, Some(&a.org_id)).await;
    for filter in ["", "status=todo", &format!("assigneeId={other}"), &format!("assigneeId={owner}")] {
        let path = if filter.is_empty() { "/v1/tasks".to_owned() } else { format!("/v1/tasks?{filter}") };
        let (count, rows) = count_and_rows(&own, &path).await;
        assert_eq!(count, rows, "the employee's {path}");
    }
    assert_eq!(count_and_rows(&own, "/v1/tasks").await, (2, 2), "the employee's own two tasks");

    // Those counts were the kept ones, not counted: a kept number changed by hand shows.
    let closed = data(&a.api.get("/v1/risks?status=closed&limit=1000").await.ok(200)).len() as u64;
    // A shard no writer uses (they are 0 to 15), so that exactly 1000 is added.
    let sql = format!("INSERT INTO list_status_counts VALUES ('{org}', 'risks', 'closed', '', 99, 1000)");
    server.execute_sql_per_backend(&sql, &sql).await;
    assert_eq!(counted(&a.api, "/v1/risks?status=closed").await, closed + 1000, "the count is the kept one");
}
