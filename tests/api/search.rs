//! `q=`: full-text search of every list's text fields (docs/api.md, "Search"): whole words, the
//! last one as a prefix, whatever the case and the accents, ordered by relevance without `sort`,
//! paged like any list, and never another organization's rows.

use serde_json::{Value, json};

use crate::checks::{data, ids, str_of};
use crate::client::Client;
use crate::comments;
use crate::harness::TestServer;

api_tests!(
    words_match_whole_the_last_as_a_prefix,
    case_and_accents_do_not_matter,
    punctuation_separates_words,
    relevance_orders_a_search_without_sort,
    a_sort_orders_a_search_by_its_keys,
    pages_of_a_search_hold_every_match_once,
    another_organizations_rows_are_never_found,
    every_list_searches_its_text_fields,
    a_search_combines_with_filters,
    the_index_follows_changes_and_deletions,
    an_export_holds_the_search_in_the_lists_order,
    a_q_without_words_matches_nothing,
    query_syntax_in_q_is_only_words,
    runs_and_connections_take_q,
);

async fn risk(client: &Client, title: &str, description: &str) -> String {
    let body = json!({"title": title, "description": description, "category": "technology"});
    str_of(&client.post("/v1/risks", body).await.ok(201), "id").to_owned()
}

/// The ids a search of the risks finds, in order, after checking `count` against them.
async fn found(client: &Client, query: &str) -> Vec<String> {
    let list = client.get(&format!("/v1/risks?{query}")).await.ok(200);
    assert_eq!(list["count"].as_u64(), Some(data(&list).len() as u64), "{query}: count in {list}");
    ids(&list)
}

fn q(words: &str) -> String {
    format!("q={}", urlencoding(words))
}

/// Percent-encodes everything but unreserved ASCII (the tests' words include spaces, accents, `@`).
fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

async fn words_match_whole_the_last_as_a_prefix(server: &TestServer) {
    let api = &server.tenant().await.api;
    let backups = risk(api, "Nightly backups fail", "The tape drive is old.").await;
    let theft = risk(api, "Laptop theft", "A backup laptop left in a taxi.").await;
    let _phishing = risk(api, "Phishing", "Staff click links.").await;

    assert_eq!(sorted(found(api, &q("back")).await), sorted(vec![backups.clone(), theft.clone()]), "a prefix");
    assert_eq!(found(api, &q("backups")).await, vec![backups.clone()], "a whole word");
    assert_eq!(found(api, &q("tape")).await, vec![backups.clone()], "a description's word");
    assert_eq!(found(api, &q("laptop back")).await, vec![theft.clone()], "every word");
    assert!(found(api, &q("lap backup")).await.is_empty(), "only the last word is a prefix: `lap` is not a word");
    assert_eq!(found(api, &q("backup lap")).await, vec![theft.clone()], "`lap` last: a prefix of `laptop`");
    assert_eq!(found(api, &q("lap")).await, vec![theft.clone()], "…and alone it is the last");
    assert!(found(api, &q("backup lap ta")).await.is_empty(), "`lap` is not a whole word");
    assert!(found(api, &q("nightly phishing")).await.is_empty(), "every word, in one row");
    assert!(found(api, &q("ransomware")).await.is_empty());
}

async fn case_and_accents_do_not_matter(server: &TestServer) {
    let api = &server.tenant().await.api;
    let cafe = risk(api, "Crème brûlée in the CAFÉ", "Über-zealous Ångström tests.").await;
    let _other = risk(api, "Cream", "Plain.").await;
    for words in ["creme", "CRÈME", "Crème Brûlée", "brul", "café", "cafe", "uber", "ÜBER", "angstrom", "ÅNGS"] {
        assert_eq!(found(api, &q(words)).await, vec![cafe.clone()], "q={words}");
    }
}

async fn punctuation_separates_words(server: &TestServer) {
    let api = &server.tenant().await.api;
    let mail = risk(api, "Mail to ada@example.com bounces", "SPF/DKIM not set (v2.1).").await;
    for words in ["ada@example.com", "example", "ada", "dkim", "spf", "v2", "\"bounces\"", "bounces*", "(v2", "mail-to"]
    {
        assert_eq!(found(api, &q(words)).await, vec![mail.clone()], "q={words}");
    }
    assert!(found(api, &q("'); DROP TABLE risks; --")).await.is_empty(), "SQL is words too");
    assert!(found(api, &q("OR risks")).await.is_empty(), "FTS syntax is words too");
}

/// Without `sort`: a title holding every word first (2), then the words as a phrase (1), newest
/// first among equals. Created oldest to newest in the order that newest-first would reverse.
async fn relevance_orders_a_search_without_sort(server: &TestServer) {
    let api = &server.tenant().await.api;
    let title_phrase = risk(api, "Nightly backups", "Kept a week.").await; // 2 + 1
    let title_words = risk(api, "Backups, nightly", "Kept a week.").await; // 2
    let phrase_older = risk(api, "Storage", "The nightly backups are late.").await; // 1
    let phrase_newer = risk(api, "Tapes", "Old nightly backups are lost.").await; // 1
    let scattered = risk(api, "Retention", "Backups run every night, nightly checks follow.").await; // 0
    let _unrelated = risk(api, "Phishing", "Nothing about it.").await;

    let expected = vec![title_phrase, title_words, phrase_newer, phrase_older, scattered];
    assert_eq!(found(api, &q("nightly backups")).await, expected);
    assert_eq!(found(api, &q("nightly back")).await, expected, "the last word as a prefix ranks alike");
}

async fn a_sort_orders_a_search_by_its_keys(server: &TestServer) {
    let api = &server.tenant().await.api;
    let b = risk(api, "Backups B", "x").await;
    let c = risk(api, "Other C", "nightly backups").await;
    let a = risk(api, "Backups A", "x").await;
    assert_eq!(found(api, &format!("{}&sort=title", q("backups"))).await, vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(found(api, &format!("{}&sort=-createdAt", q("backups"))).await, vec![a, c, b]);
}

/// Pages of 2 through matches of every relevance: each match once, in the unpaged order, with
/// the same `count` on every page; a match added between pages shifts nothing already read.
async fn pages_of_a_search_hold_every_match_once(server: &TestServer) {
    let api = &server.tenant().await.api;
    for n in 0..3 {
        risk(api, &format!("Backups {n}"), "x").await;
        risk(api, &format!("Other {n}"), "nightly backups").await;
        risk(api, &format!("Spare {n}"), "backups, then nightly").await;
        risk(api, &format!("Unrelated {n}"), "x").await;
    }
    let all = found(api, &q("nightly backups")).await;
    assert_eq!(all.len(), 6, "every word: the titles `Backups n` lack `nightly`");
    let all = found(api, &q("backups")).await;
    assert_eq!(all.len(), 9);

    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    let mut added = 0;
    for page_number in 0.. {
        let query = match &cursor {
            None => format!("{}&limit=2", q("backups")),
            Some(cursor) => format!("{}&limit=2&cursor={cursor}", q("backups")),
        };
        let page = api.get(&format!("/v1/risks?{query}")).await.ok(200);
        assert_eq!(page["count"], 9 + added, "page {page_number}: every match, counted on every page: {page}");
        paged.extend(ids(&page));
        if page_number == 1 {
            risk(api, "Backups added", "while paging").await;
            risk(api, "Later", "nightly backups added while paging").await;
            added = 2;
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let new_ones: Vec<&String> = paged.iter().filter(|id| !all.contains(id)).collect();
    assert!(new_ones.len() <= added as usize, "only the added rows are new: {new_ones:?}");
    let read: Vec<String> = paged.iter().filter(|id| all.contains(id)).cloned().collect();
    assert_eq!(read, all, "every match once, in order");
}

async fn another_organizations_rows_are_never_found(server: &TestServer) {
    let ours = server.tenant().await;
    let theirs = server.tenant().await;
    let mine = risk(&ours.api, "Backups", "ours").await;
    let _their_risk = risk(&theirs.api, "Backups secret", "theirs").await;
    let _their_vendor =
        theirs.api.post("/v1/vendors", json!({"name": "Backups vendor", "description": "theirs"})).await.ok(201);
    assert_eq!(found(&ours.api, &q("backups")).await, vec![mine]);
    assert!(found(&ours.api, &q("secret")).await.is_empty());
    assert!(data(&ours.api.get(&format!("/v1/vendors?{}", q("backups"))).await.ok(200)).is_empty());

    // People: users are shared between organizations; a search finds this organization's members.
    let (zed, _) = server.member(&theirs, "employee").await;
    let people = ours.api.get(&format!("/v1/people?{}", q(&zed.name))).await.ok(200);
    assert!(data(&people).is_empty(), "{people}");
    let people = theirs.api.get(&format!("/v1/people?{}", q(&zed.name))).await.ok(200);
    assert_eq!(data(&people).len(), 1, "{people}");
}

/// Each list finds a row by a word of each of its text fields, and not its other rows.
async fn every_list_searches_its_text_fields(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let lists: [(&str, Value, Value, &[&str]); 5] = [
        (
            "/v1/vendors",
            json!({"name": "Zebrafish hosting", "description": "Quokka datacenter."}),
            json!({"name": "Other", "description": "x"}),
            &["zebra", "quokka"],
        ),
        (
            "/v1/policies",
            json!({"name": "Zebrafish policy", "description": "Quokka rules.", "content": []}),
            json!({"name": "Other", "content": []}),
            &["zebra", "quokka"],
        ),
        (
            "/v1/context",
            json!({"question": "Zebrafish question?", "answer": "Quokka answer.", "tags": []}),
            json!({"question": "Other?", "answer": "x", "tags": []}),
            &["zebra", "quokka"],
        ),
        (
            "/v1/tasks",
            json!({"title": "Zebrafish task", "description": "Quokka steps."}),
            json!({"title": "Other", "description": "x"}),
            &["zebra", "quokka"],
        ),
        (
            "/v1/risks",
            json!({"title": "Zebrafish risk", "description": "Quokka harm.", "category": "technology"}),
            json!({"title": "Other", "description": "x", "category": "technology"}),
            &["zebra", "quokka"],
        ),
    ];
    for (path, matching, other, words) in lists {
        let matching = str_of(&api.post(path, matching).await.ok(201), "id").to_owned();
        api.post(path, other).await.ok(201);
        for word in words {
            let list = api.get(&format!("{path}?{}", q(word))).await.ok(200);
            assert_eq!(ids(&list), vec![matching.clone()], "{path}?q={word}: {list}");
        }
    }

    // People: name and email (the email's words too).
    let user = server.admin().create_user("zoe.quokka@zebra-mail.test", "Zoë Müller").await;
    let user_id = str_of(&user, "id");
    server.admin().add_member(&tenant.org_id, user_id, "employee").await;
    for word in ["zoe", "MULLER", "quokka", "zebra", "zoe.quokka@zebra-mail.test"] {
        let people = api.get(&format!("/v1/people?{}", q(word))).await.ok(200);
        let found: Vec<&str> = data(&people).iter().map(|p| p["user"]["id"].as_str().unwrap_or_default()).collect();
        assert_eq!(found, vec![user_id], "/v1/people?q={word}: {people}");
    }

    // Comments of one entity: their content; the total is a header.
    let entity = comments::entity(api, "risk").await;
    let path = comments::list_path("risk", &entity);
    let comment = str_of(&comments::create(&tenant, "risk", &entity, "Zebrafish comment").await, "id").to_owned();
    comments::create(&tenant, "risk", &entity, "Other").await;
    let listed = api.get(&format!("{path}&{}", q("zebra"))).await;
    assert_eq!(listed.header("x-total-count").as_deref(), Some("1"));
    let listed = listed.ok(200);
    let found: Vec<&str> = listed.as_array().into_iter().flatten().filter_map(|c| c["id"].as_str()).collect();
    assert_eq!(found, vec![comment.as_str()], "{listed}");
}

async fn a_search_combines_with_filters(server: &TestServer) {
    let api = &server.tenant().await.api;
    let open = risk(api, "Backups open", "x").await;
    let closed = risk(api, "Backups closed", "x").await;
    api.patch(&format!("/v1/risks/{closed}"), json!({"status": "closed"})).await.ok(200);
    assert_eq!(found(api, &format!("{}&status=open", q("backups"))).await, vec![open]);
    assert_eq!(found(api, &format!("{}&status=closed", q("backups"))).await, vec![closed]);
    assert!(found(api, &format!("{}&status=pending", q("backups"))).await.is_empty());
}

/// The index is kept in step by the database: a changed row is found by its new words only, a
/// deleted one no more (on both tables of the test, risks and vendors).
async fn the_index_follows_changes_and_deletions(server: &TestServer) {
    let api = &server.tenant().await.api;
    let id = risk(api, "Zebrafish escape", "Tank cracked.").await;
    assert_eq!(found(api, &q("zebrafish")).await, vec![id.clone()]);
    api.patch(&format!("/v1/risks/{id}"), json!({"title": "Quokka escape", "description": "Fence broken."}))
        .await
        .ok(200);
    assert!(found(api, &q("zebrafish")).await.is_empty(), "the old title");
    assert!(found(api, &q("tank")).await.is_empty(), "the old description");
    assert_eq!(found(api, &q("quokka fence")).await, vec![id.clone()], "the new words");
    api.patch(&format!("/v1/risks/{id}"), json!({"status": "closed"})).await.ok(200);
    assert_eq!(found(api, &q("quokka")).await, vec![id.clone()], "a change of another field keeps the words");
    api.delete(&format!("/v1/risks/{id}")).await.ok(200);
    assert!(found(api, &q("quokka")).await.is_empty(), "a deleted row");

    let vendor = api.post("/v1/vendors", json!({"name": "Wombat hosting", "description": "x"})).await.ok(201);
    let vendor = str_of(&vendor, "id").to_owned();
    let vendors =
        |words: &'static str| async move { ids(&api.get(&format!("/v1/vendors?{}", q(words))).await.ok(200)) };
    assert_eq!(vendors("wombat").await, vec![vendor.clone()]);
    api.patch(&format!("/v1/vendors/{vendor}"), json!({"name": "Numbat hosting"})).await.ok(200);
    assert!(vendors("wombat").await.is_empty());
    assert_eq!(vendors("numbat").await, vec![vendor.clone()]);
    api.delete(&format!("/v1/vendors/{vendor}")).await.ok(200);
    assert!(vendors("numbat").await.is_empty());
}

/// An export with `q` holds the search's rows in the list's order (relevance without `sort`).
async fn an_export_holds_the_search_in_the_lists_order(server: &TestServer) {
    let api = &server.tenant().await.api;
    risk(api, "Storage", "The nightly backups are late.").await;
    risk(api, "Nightly backups", "Kept a week.").await;
    risk(api, "Retention", "Backups run every night, nightly checks follow.").await;
    risk(api, "Phishing", "Nothing about it.").await;
    let listed = found(api, &q("nightly backups")).await;
    assert_eq!(listed.len(), 3);
    let export = api.get(&format!("/v1/risks/export?format=json&{}", q("nightly backups"))).await;
    let exported: Vec<String> = std::str::from_utf8(&export.bytes)
        .expect("UTF-8")
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).expect("a JSON line")["id"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(exported, listed);
    let csv = api.get(&format!("/v1/risks/export?format=csv&{}", q("backups"))).await;
    assert_eq!(std::str::from_utf8(&csv.bytes).expect("UTF-8").lines().count(), 1 + 3, "the header and 3 rows");
}

/// A `q` of punctuation only holds no word: it matches nothing (a 200 with no rows, never a 500),
/// on every list and export; an empty `q` is a 400 naming `q`.
async fn a_q_without_words_matches_nothing(server: &TestServer) {
    let api = &server.tenant().await.api;
    risk(api, "Backups", "Nightly.").await;
    for raw in ["%21%40%23", "%22%22", "*", "%20%20", "---", "%27%3B", "%F0%9F%94%92"] {
        for path in ["/v1/risks", "/v1/vendors", "/v1/people", "/v1/context"] {
            let page = api.get(&format!("{path}?q={raw}")).await.ok(200);
            assert_eq!(page["count"], 0, "{path}?q={raw}");
            assert_eq!(page["data"].as_array().map(Vec::len), Some(0), "{path}?q={raw}");
        }
        let csv = api.get(&format!("/v1/risks/export?format=csv&q={raw}")).await;
        assert_eq!(std::str::from_utf8(&csv.bytes).expect("UTF-8").lines().count(), 1, "the header only");
    }
    api.get("/v1/risks?q=").await.invalid("q");
    // A word that is a letter to HTTP but that no row holds as such (a lone Devanagari vowel
    // sign, which the databases' tokenizers may drop) matches nothing, without an error.
    assert!(found(api, &q("\u{093e}")).await.is_empty());
    assert!(found(api, &q("backups \u{093e}")).await.is_empty());
    assert!(found(api, &q("\u{093e} backups")).await.is_empty());
}

/// FTS5 and tsquery syntax, SQL and the organization's own id are words to look for, never
/// operators or columns: none finds a row that does not hold them.
async fn query_syntax_in_q_is_only_words(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.api;
    let backups = risk(api, "Backups", "Nightly.").await;
    for words in [
        "\" OR \"",
        "backups\" OR organization_id : \"",
        "title : phishing",
        "NEAR(backups nightly)",
        "back* | x",
        "x:* & y",
        "'); DELETE FROM risks; --",
        tenant.org_id.as_str(),
    ] {
        let found = found(api, &q(words)).await;
        assert!(found.is_empty(), "q={words}: {found:?}");
    }
    assert_eq!(found(api, &q("backups\" nightly")).await, vec![backups.clone()], "a quote separates words");
    assert_eq!(found(api, &q("nightly back*")).await, vec![backups], "`*` separates, the last word is a prefix");
}

/// The lists without a create route here (an automation's runs, connections) run their search.
async fn runs_and_connections_take_q(server: &TestServer) {
    let api = &server.tenant().await.api;
    let list = api.get(&format!("/v1/integrations/connections?{}", q("aws error"))).await.ok(200);
    assert_eq!((data(&list).len(), list["count"].as_u64()), (0, Some(0)), "{list}");
    let task = crate::tasks::create(api, "Check the status page").await;
    let body = json!({"taskId": str_of(&task, "id"), "name": "Status page", "targetUrl": "https://example.com/",
                      "instruction": "screenshot"});
    let automation = api.post("/v1/browser/automations", body).await.ok(201);
    let runs = format!("/v1/browser/automations/{}/runs?{}", str_of(&automation, "id"), q("timeout"));
    let list = api.get(&runs).await;
    assert_eq!(list.header("x-total-count").as_deref(), Some("0"));
    let list = list.ok(200);
    assert_eq!(list.as_array().map(Vec::len), Some(0), "runs are a bare array: {list}");
}
