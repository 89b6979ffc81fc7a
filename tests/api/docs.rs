//! The OpenAPI document and the `/docs` page that renders it, opened in headless Chromium.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::harness::{Backend, run};
use crate::webdriver::Browser;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// The operation ids of a document.
fn operation_ids(document: &Value) -> BTreeSet<String> {
    let paths = document["paths"].as_object().expect("the document has paths");
    let operations = paths.values().flat_map(|item| METHODS.iter().filter_map(|method| item.get(*method)));
    operations.map(|operation| operation["operationId"].as_str().expect("an operationId").to_owned()).collect()
}

#[tokio::test]
async fn the_document_is_openapi_3_1_with_both_security_schemes() {
    run(Backend::Sqlite, |server| async move {
        let document = server.anonymous().get("/openapi.json").await.ok(200);
        assert_eq!(document["openapi"], "3.1.0");
        let schemes = &document["components"]["securitySchemes"];
        assert_eq!(schemes["apiKey"]["in"], "header");
        assert_eq!(schemes["apiKey"]["name"], "X-API-Key");
        assert_eq!(schemes["session"]["in"], "cookie");
        assert_eq!(schemes["session"]["name"], "session_token");
        assert_eq!(schemes["organization"]["name"], "X-Organization-Id");
        let problem = &document["components"]["schemas"]["Problem"];
        assert_eq!(problem["required"], serde_json::json!(["type", "title", "status", "detail"]), "{problem}");
        let list_risks = &document["paths"]["/v1/risks"]["get"];
        assert_eq!(list_risks["operationId"], "listRisks");
        for status in ["200", "401", "503"] {
            assert!(list_risks["responses"].get(status).is_some(), "listRisks does not document {status}");
        }
        assert!(operation_ids(&document).len() > 40, "too few operations: {:?}", operation_ids(&document));
    })
    .await;
}

/// Every operation of the document is listed on the page, which loads nothing from elsewhere and
/// runs no script (so it works offline).
#[tokio::test]
async fn the_docs_page_lists_every_operation_in_chromium() {
    run(Backend::Sqlite, |server| async move {
        let document = server.anonymous().get("/openapi.json").await.ok(200);
        let expected = operation_ids(&document);
        let browser = Browser::start().await;
        browser.goto(&format!("{}/docs", server.base_url())).await;
        browser.wait_for("section.operation").await;
        let listed = browser
            .execute("return Array.from(document.querySelectorAll('section.operation')).map(s => s.id);", vec![])
            .await;
        let listed: BTreeSet<String> =
            listed.as_array().expect("ids").iter().map(|id| id.as_str().unwrap_or_default().to_owned()).collect();
        let title = browser.text(&browser.find("h1").await).await;
        let risks = browser.text(&browser.find("section#listRisks h3").await).await;
        let external = browser
            .execute(
                "return Array.from(document.querySelectorAll('script, link[href], img[src], iframe')).length;",
                vec![],
            )
            .await;
        browser.quit().await;
        assert_eq!(listed, expected, "the page lists other operations than the document holds");
        assert_eq!(title, "Compliance API");
        assert!(risks.contains("GET") && risks.contains("/v1/risks"), "listRisks is shown as {risks:?}");
        assert_eq!(external, 0, "the page loads scripts, stylesheets, images or frames");
    })
    .await;
}
