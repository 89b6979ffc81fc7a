//! `/v1/context`: create, list, get, update and delete context entries.

use serde_json::{Value, json};

use crate::checks::{assert_id, assert_lacks, assert_later, assert_timestamp, ids, str_of, tick, without};
use crate::client::Client;
use crate::harness::TestServer;

api_tests!(
    create_answers_201_with_auth_type,
    list_is_data_count_auth_type_newest_first,
    get_update_and_delete_by_id,
    question_and_answer_are_required,
    tags_are_validated,
);

/// Creates an entry through the API and returns the 201 body.
pub async fn create(client: &Client, question: &str) -> Value {
    let body = json!({"question": question, "answer": "Yes, with AES-256.", "tags": ["security"]});
    client.post("/v1/context", body).await.ok(201)
}

async fn create_answers_201_with_auth_type(server: &TestServer) {
    let tenant = server.tenant().await;
    let body = json!({"question": "Do we encrypt backups?", "answer": "Yes.", "tags": ["backup", "crypto"]});
    let entry = tenant.api.post("/v1/context", body).await.ok(201);
    assert_id(&entry["id"], "ctx_");
    assert_eq!(entry["organizationId"], tenant.org_id.as_str());
    assert_eq!(entry["question"], "Do we encrypt backups?");
    assert_eq!(entry["answer"], "Yes.");
    assert_eq!(entry["tags"], json!(["backup", "crypto"]));
    assert_timestamp(&entry["createdAt"]);
    assert_timestamp(&entry["updatedAt"]);
    assert_eq!(entry["authType"], "apikey", "context says `apikey` for API keys");
    assert_lacks(&entry, &["authenticatedUser"]);

    let entry = tenant.session.post("/v1/context", json!({"question": "Q", "answer": "A"})).await.ok(201);
    assert_eq!(entry["authType"], "session");
    assert_eq!(entry["tags"], json!([]), "omitted tags are an empty list");
    assert_lacks(&entry, &["authenticatedUser"]);
}

async fn list_is_data_count_auth_type_newest_first(server: &TestServer) {
    let tenant = server.tenant().await;
    let first = create(&tenant.api, "First?").await;
    tick().await;
    let second = create(&tenant.api, "Second?").await;

    let list = tenant.api.get("/v1/context").await.ok(200);
    assert_eq!(list["count"], 2);
    assert_eq!(list["authType"], "apikey");
    assert_lacks(&list, &["authenticatedUser"]);
    assert_eq!(ids(&list), [str_of(&second, "id"), str_of(&first, "id")]);
    assert_eq!(list["data"][1], without(&first, &["authType"]), "list items are entries without authType");

    let list = tenant.session.get("/v1/context").await.ok(200);
    assert_eq!(list["authType"], "session");
    assert_eq!(list["count"], 2);
    assert_lacks(&list, &["authenticatedUser"]);
}

async fn get_update_and_delete_by_id(server: &TestServer) {
    let tenant = server.tenant().await;
    let entry = create(&tenant.api, "Who reviews access?").await;
    let path = format!("/v1/context/{}", str_of(&entry, "id"));

    let fetched = tenant.api.get(&path).await.ok(200);
    assert_eq!(fetched, without(&entry, &["authType"]), "GET one is the bare entry");

    tick().await;
    let updated = tenant.api.patch(&path, json!({"answer": "The security team, quarterly."})).await.ok(200);
    assert_eq!(updated["answer"], "The security team, quarterly.");
    assert_eq!(updated["question"], entry["question"]);
    assert_eq!(updated["tags"], entry["tags"]);
    assert_eq!(updated["authType"], "apikey");
    assert_later(&updated["updatedAt"], &entry["updatedAt"]);

    let updated = tenant.session.patch(&path, json!({"tags": ["access", "iam"]})).await.ok(200);
    assert_eq!(updated["tags"], json!(["access", "iam"]));
    assert_eq!(updated["authType"], "session");
    assert_eq!(tenant.api.get(&path).await.ok(200)["tags"], json!(["access", "iam"]));

    let deleted = tenant.api.delete(&path).await.ok(200);
    assert!(deleted["message"].is_string(), "{deleted}");
    assert_eq!(deleted["deletedContext"], json!({"id": entry["id"], "question": "Who reviews access?"}));
    assert_eq!(deleted["authType"], "apikey");
    tenant.api.get(&path).await.problem(404);
    tenant.api.delete(&path).await.problem(404);
    assert_eq!(tenant.api.get("/v1/context").await.ok(200)["count"], 0);
}

async fn question_and_answer_are_required(server: &TestServer) {
    let tenant = server.tenant().await;
    tenant.api.post("/v1/context", json!({"answer": "A"})).await.invalid("question");
    tenant.api.post("/v1/context", json!({"question": "Q"})).await.invalid("answer");
    tenant.api.post("/v1/context", json!({"question": "  ", "answer": "A"})).await.invalid("question");
    tenant.api.post("/v1/context", json!({"question": 5, "answer": "A"})).await.invalid("question");
    tenant.api.post("/v1/context", json!({"question": "q".repeat(2001), "answer": "A"})).await.invalid("question");
    tenant.api.post("/v1/context", json!({"question": "Q", "answer": "a".repeat(20_001)})).await.invalid("answer");
    tenant.api.post("/v1/context", json!({"question": "Q", "answer": null})).await.invalid("answer");
    tenant.api.post("/v1/context", json!({"question": "Q", "answer": "A", "colour": "red"})).await.invalid("colour");
    let entry = create(&tenant.api, "Q?").await;
    let path = format!("/v1/context/{}", str_of(&entry, "id"));
    tenant.api.patch(&path, json!({"question": null})).await.invalid("question");
    tenant.api.patch(&path, json!({"answer": ""})).await.invalid("answer");
    assert_eq!(tenant.api.get(&path).await.ok(200), without(&entry, &["authType"]), "failed updates change nothing");
    assert_eq!(tenant.api.get("/v1/context").await.ok(200)["count"], 1, "failed creates store nothing");
}

async fn tags_are_validated(server: &TestServer) {
    let tenant = server.tenant().await;
    let post = |tags: Value| tenant.api.post("/v1/context", json!({"question": "Q", "answer": "A", "tags": tags}));
    post(json!("security")).await.invalid("tags");
    post(json!([1])).await.invalid("tags");
    post(json!([null])).await.invalid("tags");
    post(json!([""])).await.invalid("tags");
    post(json!(["a", "a"])).await.invalid("tags");
    post(json!(["x".repeat(65)])).await.invalid("tags");
    let too_many: Vec<String> = (0..51).map(|i| format!("t{i}")).collect();
    post(json!(too_many)).await.invalid("tags");

    let at_limit: Vec<String> = (0..50).map(|i| format!("{i:0>64}")).collect();
    let entry = post(json!(at_limit)).await.ok(201);
    assert_eq!(entry["tags"], json!(at_limit));
    let path = format!("/v1/context/{}", str_of(&entry, "id"));
    tenant.api.patch(&path, json!({"tags": null})).await.invalid("tags");
    tenant.api.patch(&path, json!({"tags": ["b", "b"]})).await.invalid("tags");
    assert_eq!(tenant.api.get(&path).await.ok(200)["tags"], json!(at_limit));
    assert_eq!(tenant.api.get("/v1/context").await.ok(200)["count"], 1);
}
