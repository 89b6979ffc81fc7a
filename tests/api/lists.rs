//! Lists answered from the pages the server keeps serialized (docs/store.md, "Lists"): every
//! committed write shows in the next list, whoever makes it (the API, the admin CLI in another
//! process, SQL behind the server's back, another instance), and a kept page is never another
//! organization's or another caller's.

use serde_json::{Value, json};

use crate::checks::{data, ids, str_of};
use crate::client::{Auth, Client, api_key};
use crate::harness::{Env, TestServer};
use crate::{context, policies, risks, tasks, vendors};

api_tests!(
    every_write_through_the_api_shows_in_the_next_list,
    a_member_added_by_the_admin_cli_shows_in_the_next_people_list,
    one_organizations_kept_page_is_never_anothers,
    a_kept_page_carries_each_callers_own_auth,
    without_kept_pages_every_write_shows_too with KEEP_NO_PAGES,
);
// Writing behind the server's back and a second instance sharing the database are PostgreSQL
// deployments (the harness writes SQL on PostgreSQL only; SQLite serves one process).
api_tests!(@backend postgres_only, Postgres, writes_by_sql_and_by_another_instance_show_in_the_next_list);

const KEEP_NO_PAGES: Env = &[("LIST_CACHE_MIB", "0")];

/// A record kind: where it lives, how to make one, and the field that names it.
struct Kind {
    path: &'static str,
    name_field: &'static str,
    counted: bool,
}

const KINDS: [Kind; 5] = [
    Kind { path: "/v1/risks", name_field: "title", counted: true },
    Kind { path: "/v1/vendors", name_field: "name", counted: true },
    Kind { path: "/v1/context", name_field: "question", counted: true },
    Kind { path: "/v1/policies", name_field: "name", counted: false },
    Kind { path: "/v1/tasks", name_field: "title", counted: true },
];

impl Kind {
    async fn create(&self, client: &Client, name: &str) -> Value {
        match self.path {
            "/v1/risks" => risks::create(client, name).await,
            "/v1/vendors" => vendors::create(client, name).await,
            "/v1/context" => context::create(client, name).await,
            "/v1/policies" => policies::create(client, name).await,
            _ => tasks::create(client, name).await,
        }
    }

    /// The list's ids and names, after checking its `count` against its length.
    async fn listed(&self, client: &Client, query: &str) -> Vec<(String, String)> {
        let list = client.get(&format!("{}{query}", self.path)).await.ok(200);
        if self.counted && query.is_empty() {
            assert_eq!(list["count"].as_u64(), Some(data(&list).len() as u64), "{}: {list}", self.path);
        }
        data(&list)
            .iter()
            .map(|item| (str_of(item, "id").to_owned(), str_of(item, self.name_field).to_owned()))
            .collect()
    }
}

fn named(record: &Value, name: &str) -> (String, String) {
    (str_of(record, "id").to_owned(), name.to_owned())
}

async fn every_write_through_the_api_shows_in_the_next_list(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    for kind in &KINDS {
        let first = kind.create(api, "First").await;
        let listed = kind.listed(api, "").await;
        assert_eq!(listed, vec![named(&first, "First")], "{}", kind.path);
        assert_eq!(kind.listed(api, "").await, listed, "{}: asked again, the same", kind.path);
        assert_eq!(kind.listed(api, "?limit=1").await, listed, "{}: a page of one", kind.path);

        let second = kind.create(api, "Second").await;
        assert_eq!(kind.listed(api, "").await, vec![named(&second, "Second"), named(&first, "First")], "{}", kind.path);
        assert_eq!(
            kind.listed(api, "?limit=1").await,
            vec![named(&second, "Second")],
            "{}: the page of one too",
            kind.path
        );

        let path = format!("{}/{}", kind.path, str_of(&first, "id"));
        api.patch(&path, json!({kind.name_field: "Renamed"})).await.ok(200);
        assert_eq!(
            kind.listed(api, "").await,
            vec![named(&second, "Second"), named(&first, "Renamed")],
            "{}",
            kind.path
        );

        api.delete(&format!("{}/{}", kind.path, str_of(&second, "id"))).await.ok(200);
        assert_eq!(kind.listed(api, "").await, vec![named(&first, "Renamed")], "{}", kind.path);
        assert_eq!(kind.listed(api, "?limit=1").await, vec![named(&first, "Renamed")], "{}", kind.path);
    }
}

async fn without_kept_pages_every_write_shows_too(server: &TestServer) {
    every_write_through_the_api_shows_in_the_next_list(server).await;
    a_member_added_by_the_admin_cli_shows_in_the_next_people_list(server).await;
}

async fn a_member_added_by_the_admin_cli_shows_in_the_next_people_list(server: &TestServer) {
    let tenant = server.tenant().await;
    let people = async |query: &str| ids(&tenant.api.get(&format!("/v1/people{query}")).await.ok(200));
    assert_eq!(people("").await, vec![tenant.owner_member_id.clone()]);
    assert_eq!(people("?includeInactive=true").await, vec![tenant.owner_member_id.clone()]);

    // `admin add-member` is another process writing the database.
    let (_, member) = server.member(&tenant, "auditor").await;
    let added = str_of(&member, "id").to_owned();
    assert_eq!(people("").await, vec![added.clone(), tenant.owner_member_id.clone()]);

    tenant.deactivate(&added).await;
    assert_eq!(people("").await, vec![tenant.owner_member_id.clone()], "the default list drops the deactivated");
    assert_eq!(
        people("?includeInactive=true").await,
        vec![added, tenant.owner_member_id.clone()],
        "this one keeps them"
    );
}

async fn one_organizations_kept_page_is_never_anothers(server: &TestServer) {
    let (ours, theirs) = (server.tenant().await, server.tenant().await);
    let our_risk = risks::create(&ours.api, "Ours").await;
    let their_risk = risks::create(&theirs.api, "Theirs").await;
    for _ in 0..2 {
        assert_eq!(ids(&ours.api.get("/v1/risks").await.ok(200)), vec![str_of(&our_risk, "id")]);
        assert_eq!(ids(&theirs.api.get("/v1/risks").await.ok(200)), vec![str_of(&their_risk, "id")]);
        assert_eq!(ids(&ours.api.get("/v1/people").await.ok(200)), vec![ours.owner_member_id.clone()]);
        assert_eq!(ids(&theirs.api.get("/v1/people").await.ok(200)), vec![theirs.owner_member_id.clone()]);
    }
}

async fn a_kept_page_carries_each_callers_own_auth(server: &TestServer) {
    let tenant = server.tenant().await;
    risks::create(&tenant.api, "Shared").await;
    let (other_user, _) = server.member(&tenant, "auditor").await;
    let other = server.session(&other_user.id, Some(&tenant.org_id)).await;
    for _ in 0..2 {
        let by_key = tenant.api.get("/v1/risks").await.ok(200);
        assert_eq!(
            (by_key["authType"].clone(), by_key["authenticatedUser"]["id"].clone()),
            (json!("api-key"), json!(tenant.owner.id))
        );
        let by_session = other.get("/v1/risks").await.ok(200);
        assert_eq!(
            (by_session["authType"].clone(), by_session["authenticatedUser"]["id"].clone()),
            (json!("session"), json!(other_user.id))
        );
        assert_eq!(data(&by_key), data(&by_session), "the same page");
        let context = tenant.api.get("/v1/context").await.ok(200);
        assert_eq!(context["authType"], "apikey", "the context spelling: {context}");
        assert!(context.get("authenticatedUser").is_none(), "{context}");
    }
}

async fn writes_by_sql_and_by_another_instance_show_in_the_next_list(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = risks::create(&tenant.api, "Before").await;
    let id = str_of(&risk, "id");
    let titles = async |client: &Client| -> Vec<String> {
        data(&client.get("/v1/risks").await.ok(200)).iter().map(|r| str_of(r, "title").to_owned()).collect()
    };
    assert_eq!(titles(&tenant.api).await, ["Before"]);

    server.execute_sql(&format!("UPDATE risks SET title = 'By SQL' WHERE id = '{id}'")).await;
    assert_eq!(titles(&tenant.api).await, ["By SQL"], "a write the server did not make");

    let sibling = server.start_sibling(&[]).await;
    let key = api_key(server, &tenant.org_id, &tenant.owner.id).await;
    let there = sibling.client(Auth::ApiKey(key), None);
    assert_eq!(titles(&there).await, ["By SQL"]);
    tenant.api.patch(&format!("/v1/risks/{id}"), json!({"title": "On the first"})).await.ok(200);
    assert_eq!(titles(&there).await, ["On the first"], "the second instance kept the page before the write");
    there.patch(&format!("/v1/risks/{id}"), json!({"title": "On the second"})).await.ok(200);
    assert_eq!(titles(&tenant.api).await, ["On the second"], "and the first");
}
