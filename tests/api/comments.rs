//! `/v1/comments`: comments on tasks, vendors, risks and policies, their authors, limits, who may
//! edit them, and what deleting the commented entity takes with it.

use serde_json::{Value, json};

use crate::attachments::{self, file};
use crate::checks::{assert_acting_user, assert_id, assert_lacks, assert_timestamp, missing_id, str_of, tick};
use crate::client::Client;
use crate::harness::TestServer;
use crate::tenant::{Tenant, User};
use crate::{policies, risks, tasks, vendors};

api_tests!(
    every_entity_type_takes_comments,
    list_requires_entity_id_and_entity_type,
    list_is_newest_first_and_per_entity,
    content_and_context_url_limits_are_exact,
    an_api_key_comments_as_its_creator_only,
    a_session_is_the_author_whatever_the_body_says,
    only_the_author_may_edit_or_delete,
    put_and_delete_answer_the_documented_shapes,
    deactivated_authors_are_flagged,
    deleting_the_entity_deletes_its_comments_and_attachments,
);

/// The entity types a comment can be attached to.
pub const ENTITY_TYPES: [&str; 4] = ["task", "vendor", "risk", "policy"];

/// Creates an entity of `entity_type` through `client`; returns its id.
pub async fn entity(client: &Client, entity_type: &str) -> String {
    let created = match entity_type {
        "task" => tasks::create(client, "Commented task").await,
        "vendor" => vendors::create(client, "Commented vendor").await,
        "risk" => risks::create(client, "Commented risk").await,
        "policy" => policies::create(client, "Commented policy").await,
        other => panic!("no entity type {other}"),
    };
    str_of(&created, "id").to_owned()
}

/// The path of an entity of `entity_type`.
pub fn entity_path(entity_type: &str, id: &str) -> String {
    let base = match entity_type {
        "task" => "tasks",
        "vendor" => "vendors",
        "risk" => "risks",
        "policy" => "policies",
        other => panic!("no entity type {other}"),
    };
    format!("/v1/{base}/{id}")
}

/// `GET /v1/comments` of one entity.
pub fn list_path(entity_type: &str, entity_id: &str) -> String {
    format!("/v1/comments?entityId={entity_id}&entityType={entity_type}")
}

/// A POST body for a comment with `content` on the entity.
pub fn body(entity_type: &str, entity_id: &str, content: &str) -> Value {
    json!({"content": content, "entityId": entity_id, "entityType": entity_type})
}

/// `body` with `key` set to `value`.
pub fn with(mut body: Value, key: &str, value: Value) -> Value {
    body[key] = value;
    body
}

/// Posts a comment through the tenant's API key, authored by its owner; returns the 201 body.
pub async fn create(tenant: &Tenant, entity_type: &str, entity_id: &str, content: &str) -> Value {
    let body = with(body(entity_type, entity_id, content), "userId", json!(tenant.owner.id));
    tenant.api.post("/v1/comments", body).await.ok(201)
}

/// The comments of one entity (a bare array).
pub async fn list(client: &Client, entity_type: &str, entity_id: &str) -> Vec<Value> {
    let list = client.get(&list_path(entity_type, entity_id)).await.ok(200);
    list.as_array().unwrap_or_else(|| panic!("comments are not a bare array: {list}")).clone()
}

/// Asserts a Comment with `content` written by `author`.
#[track_caller]
pub fn assert_comment(comment: &Value, content: &str, author: &User) {
    assert_id(&comment["id"], "cmt_");
    assert_eq!(comment["content"], content, "{comment}");
    let who = &comment["author"];
    assert_eq!(who["id"], author.id.as_str(), "author.id is the user id: {comment}");
    assert_eq!(who["name"], author.name.as_str(), "{comment}");
    assert_eq!(who["email"], author.email.as_str(), "{comment}");
    assert!(who["image"].is_null() || who["image"].is_string(), "{comment}");
    assert!(who["deactivated"].is_boolean(), "{comment}");
    assert!(comment["attachments"].is_array(), "{comment}");
    assert_timestamp(&comment["createdAt"]);
}

fn ids(comments: &[Value]) -> Vec<&str> {
    comments.iter().map(|c| str_of(c, "id")).collect()
}

async fn every_entity_type_takes_comments(server: &TestServer) {
    let tenant = server.tenant().await;
    for entity_type in ENTITY_TYPES {
        let id = entity(&tenant.api, entity_type).await;
        let comment = create(&tenant, entity_type, &id, &format!("On a {entity_type}")).await;
        assert_comment(&comment, &format!("On a {entity_type}"), &tenant.owner);
        assert_eq!(comment["author"]["deactivated"], false);
        assert_eq!(comment["attachments"], json!([]));
        assert_eq!(list(&tenant.api, entity_type, &id).await, std::slice::from_ref(&comment));
        assert_eq!(list(&tenant.session, entity_type, &id).await, [comment]);
    }
}

async fn list_requires_entity_id_and_entity_type(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let risk = entity(&tenant.api, "risk").await;
    let foreign = entity(&other.api, "risk").await;
    create(&other, "risk", &foreign, "Secret").await;

    tenant.api.get("/v1/comments").await.problem(400);
    tenant.api.get("/v1/comments?entityType=risk").await.invalid("entityId");
    tenant.api.get(&format!("/v1/comments?entityId={risk}")).await.invalid("entityType");
    tenant.api.get(&format!("/v1/comments?entityId={risk}&entityType=device")).await.invalid("entityType");
    assert!(list(&tenant.api, "risk", &risk).await.is_empty());

    for client in [&tenant.api, &tenant.session] {
        client.get(&list_path("risk", &missing_id("rsk_"))).await.problem(404);
        client.get(&list_path("task", &risk)).await.problem(404);
        client.get(&list_path("risk", &foreign)).await.problem(404);
    }
    let post = |body: Value| tenant.api.post("/v1/comments", with(body, "userId", json!(tenant.owner.id)));
    post(json!({"content": "c", "entityType": "risk"})).await.invalid("entityId");
    post(json!({"content": "c", "entityId": risk})).await.invalid("entityType");
    post(body("device", &risk, "c")).await.invalid("entityType");
    post(body("risk", &missing_id("rsk_"), "c")).await.problem(404);
    // In a body an id of the wrong kind is a malformed field, as for `assigneeId`.
    post(body("vendor", &risk, "c")).await.invalid("entityId");
    post(body("risk", &foreign, "c")).await.problem(404);
    assert!(list(&tenant.api, "risk", &risk).await.is_empty());
    assert_eq!(list(&other.api, "risk", &foreign).await.len(), 1);
}

async fn list_is_newest_first_and_per_entity(server: &TestServer) {
    let tenant = server.tenant().await;
    let task = entity(&tenant.api, "task").await;
    let elsewhere = entity(&tenant.api, "task").await;
    let mut created = Vec::new();
    for content in ["one", "two", "three"] {
        created.push(create(&tenant, "task", &task, content).await);
        tick().await;
    }
    create(&tenant, "task", &elsewhere, "elsewhere").await;
    let comments = list(&tenant.api, "task", &task).await;
    created.reverse();
    assert_eq!(comments, created, "newest first, only this entity's comments");
    assert_eq!(ids(&list(&tenant.session, "task", &elsewhere).await).len(), 1);
}

async fn content_and_context_url_limits_are_exact(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = entity(&tenant.api, "risk").await;
    let post = |body: Value| tenant.api.post("/v1/comments", with(body, "userId", json!(tenant.owner.id)));

    let longest = "é".repeat(2000);
    let comment = post(body("risk", &risk, &longest)).await.ok(201);
    assert_eq!(comment["content"], longest.as_str(), "2,000 characters (not bytes) are allowed");
    post(body("risk", &risk, &"x".repeat(2001))).await.invalid("content");
    post(body("risk", &risk, "")).await.invalid("content");
    post(json!({"entityId": risk, "entityType": "risk"})).await.invalid("content");
    post(body("risk", &risk, "a\0b")).await.invalid("content");

    let url = |len: usize| {
        let head = "https://app.example.test/risks?x=";
        format!("{head}{}", "a".repeat(len - head.len()))
    };
    post(with(body("risk", &risk, "url"), "contextUrl", json!(url(2048)))).await.ok(201);
    post(with(body("risk", &risk, "url"), "contextUrl", json!(url(2049)))).await.invalid("contextUrl");
    post(with(body("risk", &risk, "url"), "contextUrl", json!("http://app.example.test/r"))).await.ok(201);
    for bad in [json!("ftp://app.example.test/r"), json!("not a url"), json!(""), json!(5)] {
        post(with(body("risk", &risk, "url"), "contextUrl", bad)).await.invalid("contextUrl");
    }
    assert_eq!(list(&tenant.api, "risk", &risk).await.len(), 3);

    let path = format!("/v1/comments/{}", str_of(&comment, "id"));
    let edited = tenant.api.put(&path, json!({"content": "ü".repeat(2000)})).await.ok(200);
    assert_eq!(edited["content"], "ü".repeat(2000));
    tenant.api.put(&path, json!({"content": "x".repeat(2001)})).await.invalid("content");
    tenant.api.put(&path, json!({"content": ""})).await.invalid("content");
    tenant.api.put(&path, json!({})).await.invalid("content");
    tenant.api.put(&path, json!({"content": 5})).await.invalid("content");
    let stored = list(&tenant.api, "risk", &risk).await;
    let stored = stored.iter().find(|c| c["id"] == comment["id"]).expect("the edited comment");
    assert_eq!(stored["content"], "ü".repeat(2000), "failed edits change nothing");
}

async fn an_api_key_comments_as_its_creator_only(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let (admin, _) = server.member(&tenant, "admin").await;
    let (former, former_member) = server.member(&tenant, "admin").await;
    tenant.deactivate(str_of(&former_member, "id")).await;
    let stranger = server.user().await;
    let vendor = entity(&tenant.api, "vendor").await;
    let post = |body: Value| tenant.api.post("/v1/comments", body);

    // The owner's key names another member, a former one, a stranger, another tenant's owner.
    for bad in [
        json!("bob"),
        json!(5),
        json!(missing_id("usr_")),
        json!(admin.id),
        json!(stranger.id),
        json!(other.owner.id),
        json!(former.id),
        json!(tenant.owner_member_id),
    ] {
        post(with(body("vendor", &vendor, "bad author"), "userId", bad)).await.invalid("userId");
    }
    assert!(list(&tenant.api, "vendor", &vendor).await.is_empty());

    let comment = post(body("vendor", &vendor, "no author named")).await.ok(201);
    assert_comment(&comment, "no author named", &tenant.owner);
    let comment = post(with(body("vendor", &vendor, "by the owner"), "userId", json!(tenant.owner.id))).await.ok(201);
    assert_comment(&comment, "by the owner", &tenant.owner);
    // The admin's own key writes as the admin.
    let admin_key = server.api_key(&tenant, &admin.id).await;
    let comment = admin_key.post("/v1/comments", body("vendor", &vendor, "by the admin")).await.ok(201);
    assert_comment(&comment, "by the admin", &admin);
}

async fn a_session_is_the_author_whatever_the_body_says(server: &TestServer) {
    let tenant = server.tenant().await;
    let (auditor, _) = server.member(&tenant, "admin").await;
    let policy = entity(&tenant.api, "policy").await;
    let comment = tenant.session.post("/v1/comments", body("policy", &policy, "mine")).await.ok(201);
    assert_comment(&comment, "mine", &tenant.owner);
    let claimed = with(body("policy", &policy, "still mine"), "userId", json!(auditor.id));
    let comment = tenant.session.post("/v1/comments", claimed).await.ok(201);
    assert_comment(&comment, "still mine", &tenant.owner);
    let auditor_session = server.session(&auditor.id, Some(&tenant.org_id)).await;
    let claimed = with(body("policy", &policy, "the auditor's"), "userId", json!(tenant.owner.id));
    let comment = auditor_session.post("/v1/comments", claimed).await.ok(201);
    assert_comment(&comment, "the auditor's", &auditor);
}

async fn only_the_author_may_edit_or_delete(server: &TestServer) {
    let tenant = server.tenant().await;
    let (auditor, _) = server.member(&tenant, "admin").await;
    let auditor_session = server.session(&auditor.id, Some(&tenant.org_id)).await;
    let auditor_key = server.api_key(&tenant, &auditor.id).await;
    let task = entity(&tenant.api, "task").await;

    // Written by the owner: the owner's key and session may edit it, the auditor's may not.
    let owners = create(&tenant, "task", &task, "owner's").await;
    let path = format!("/v1/comments/{}", str_of(&owners, "id"));
    for intruder in [&auditor_session, &auditor_key] {
        intruder.put(&path, json!({"content": "hijacked"})).await.problem(403);
        intruder.delete(&path).await.problem(403);
    }
    assert_eq!(list(&tenant.api, "task", &task).await, std::slice::from_ref(&owners), "refused edits change nothing");
    let edited = tenant.api.put(&path, json!({"content": "by key"})).await.ok(200);
    assert_comment(&edited, "by key", &tenant.owner);
    let edited = tenant.session.put(&path, json!({"content": "by session"})).await.ok(200);
    assert_comment(&edited, "by session", &tenant.owner);

    // Written by the auditor through the auditor's own key: the owner's key may not touch it.
    let auditors = auditor_key.post("/v1/comments", body("task", &task, "auditor's")).await.ok(201);
    let path = format!("/v1/comments/{}", str_of(&auditors, "id"));
    for intruder in [&tenant.api, &tenant.session] {
        intruder.put(&path, json!({"content": "hijacked"})).await.problem(403);
        intruder.delete(&path).await.problem(403);
    }
    assert_comment(&auditor_key.put(&path, json!({"content": "by key"})).await.ok(200), "by key", &auditor);
    assert_comment(&auditor_session.put(&path, json!({"content": "ok"})).await.ok(200), "ok", &auditor);
    auditor_session.delete(&path).await.ok(200);
    let left = list(&tenant.api, "task", &task).await;
    assert_eq!(ids(&left), [str_of(&owners, "id")]);
    assert_eq!(left[0]["content"], "by session");
}

async fn put_and_delete_answer_the_documented_shapes(server: &TestServer) {
    let tenant = server.tenant().await;
    let risk = entity(&tenant.api, "risk").await;
    let comment = create(&tenant, "risk", &risk, "before").await;
    let path = format!("/v1/comments/{}", str_of(&comment, "id"));

    let edited = tenant.api.put(&path, json!({"content": "after"})).await.ok(200);
    assert_comment(&edited, "after", &tenant.owner);
    assert_eq!((&edited["id"], &edited["createdAt"]), (&comment["id"], &comment["createdAt"]));
    assert_eq!(edited["author"], comment["author"]);
    assert_eq!(list(&tenant.api, "risk", &risk).await[0]["content"], "after");

    let deleted = tenant.api.delete(&path).await.ok(200);
    assert!(deleted["message"].is_string(), "{deleted}");
    assert_eq!(deleted["deletedComment"], json!({"id": comment["id"]}));
    assert_eq!(deleted["authType"], "api-key");
    assert_lacks(&deleted, &["authenticatedUser"]);
    assert!(list(&tenant.api, "risk", &risk).await.is_empty());
    tenant.api.put(&path, json!({"content": "again"})).await.problem(404);
    tenant.api.delete(&path).await.problem(404);

    let comment = tenant.session.post("/v1/comments", body("risk", &risk, "session's")).await.ok(201);
    let path = format!("/v1/comments/{}", str_of(&comment, "id"));
    let deleted = tenant.session.delete(&path).await.ok(200);
    assert_eq!(deleted["deletedComment"], json!({"id": comment["id"]}));
    assert_eq!(deleted["authType"], "session");
    assert_acting_user(&deleted, &tenant.owner);

    let missing = format!("/v1/comments/{}", missing_id("cmt_"));
    tenant.api.put(&missing, json!({"content": "x"})).await.problem(404);
    tenant.api.delete(&missing).await.problem(404);
}

async fn deactivated_authors_are_flagged(server: &TestServer) {
    let tenant = server.tenant().await;
    let (auditor, member) = server.member(&tenant, "admin").await;
    let auditor_session = server.session(&auditor.id, Some(&tenant.org_id)).await;
    let vendor = entity(&tenant.api, "vendor").await;
    let by_auditor = auditor_session.post("/v1/comments", body("vendor", &vendor, "bye")).await.ok(201);
    assert_eq!(by_auditor["author"]["deactivated"], false);
    create(&tenant, "vendor", &vendor, "owner's").await;

    tenant.deactivate(str_of(&member, "id")).await;
    let comments = list(&tenant.api, "vendor", &vendor).await;
    assert_eq!(comments.len(), 2, "a deactivated author's comments remain");
    let theirs = comments.iter().find(|c| c["id"] == by_auditor["id"]).expect("the auditor's comment");
    assert_comment(theirs, "bye", &auditor);
    assert_eq!(theirs["author"]["deactivated"], true, "{theirs}");
    let owners = comments.iter().find(|c| c["id"] != by_auditor["id"]).expect("the owner's comment");
    assert_eq!(owners["author"]["deactivated"], false, "{owners}");

    let member_path = format!("/v1/people/{}", str_of(&member, "id"));
    tenant.api.patch(&member_path, json!({"isActive": true})).await.ok(200);
    let comments = list(&tenant.api, "vendor", &vendor).await;
    let theirs = comments.iter().find(|c| c["id"] == by_auditor["id"]).expect("the auditor's comment");
    assert_eq!(theirs["author"]["deactivated"], false, "reactivated: {theirs}");
}

async fn deleting_the_entity_deletes_its_comments_and_attachments(server: &TestServer) {
    let tenant = server.tenant().await;
    for entity_type in ENTITY_TYPES {
        let id = entity(&tenant.api, entity_type).await;
        let kept = entity(&tenant.api, entity_type).await;
        let body =
            with(body(entity_type, &id, "with a file"), "attachments", json!([file("a.txt", "text/plain", b"A")]));
        let comment = tenant.api.post("/v1/comments", with(body, "userId", json!(tenant.owner.id))).await.ok(201);
        create(&tenant, entity_type, &id, "plain").await;
        let survivor = create(&tenant, entity_type, &kept, "unrelated").await;
        let attachment = str_of(&comment["attachments"][0], "id").to_owned();
        let download = format!("/v1/attachments/{attachment}/download");
        let url = str_of(&tenant.api.get(&download).await.ok(200), "downloadUrl").to_owned();
        assert_eq!(server.anonymous().get_url(&url).await.status, 200);
        let blob = attachments::blob_key(&tenant, &attachment);
        assert!(server.blob_files().contains(&blob), "{blob} in {:?}", server.blob_files());

        tenant.api.delete(&entity_path(entity_type, &id)).await.ok(200);
        tenant.api.get(&list_path(entity_type, &id)).await.problem(404);
        tenant.api.get(&download).await.problem(404);
        tenant.api.put(&format!("/v1/comments/{}", str_of(&comment, "id")), json!({"content": "x"})).await.problem(404);
        let stale = server.anonymous().get_url(&url).await;
        assert!(stale.status == 404 || stale.status == 403, "a deleted attachment is still served: {}", stale.status);
        assert!(
            crate::checks::eventually(|| !server.blob_files().contains(&blob)).await,
            "{entity_type} deleted but its attachment stays in BLOB_DIR: {:?}",
            server.blob_files()
        );
        assert_eq!(list(&tenant.api, entity_type, &kept).await, [survivor], "other entities keep their comments");
    }
    assert!(server.blob_files().is_empty(), "{:?}", server.blob_files());
}
