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

/// The explorer (Swagger UI, served by the service itself under a CSP of its own origin): a person
/// opens it, pastes an API key under "Authorize", runs `GET /v1/risks` and sees the 200 answer.
#[tokio::test]
async fn the_explorer_authorizes_with_a_key_and_runs_list_risks_in_chromium() {
    run(Backend::Sqlite, |server| async move {
        let made = server.admin().run(&["bootstrap", "--org", "Explorers", "--email", "e@x.test", "--name", "E"]).await;
        let key = made["apiKey"]["key"].as_str().unwrap().to_owned();
        let api = server.client(crate::client::Auth::ApiKey(key.clone()), None);
        api.post("/v1/risks", serde_json::json!({"title": "Explored", "description": "d", "category": "other"}))
            .await
            .ok(201);
        let page = crate::client::get(&server, "/explorer", &[]).await;
        assert_eq!(page.status(), 200);
        let policy = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
        assert!(policy.contains("script-src 'self'") && !policy.contains("unsafe"), "{policy}");
        let html = page.text().await.unwrap();
        assert!(!html.contains("http://") && !html.contains("https://"), "nothing from elsewhere: {html}");

        let browser = Browser::start().await;
        browser.goto(&format!("{}/explorer", server.base_url())).await;
        let authorize = browser.wait_for("button.authorize").await;
        // Any script, style or request the policy refuses from here on is counted.
        browser
            .execute(
                "window.refused = []; document.addEventListener('securitypolicyviolation', \
                 e => window.refused.push(e.violatedDirective + ' ' + e.blockedURI));",
                vec![],
            )
            .await;
        browser.click(&authorize).await;
        browser.wait_for(".auth-container input").await;
        browser
            .execute(
                "const box = Array.from(document.querySelectorAll('.auth-container')) \
                   .find(c => c.querySelector('h4') && c.querySelector('h4').textContent.includes('apiKey')); \
                 box.querySelector('input').id = 'explorer-api-key'; \
                 box.querySelector('button.authorize').id = 'explorer-authorize';",
                vec![],
            )
            .await;
        browser.send_keys(&browser.find("#explorer-api-key").await, &key).await;
        browser.click(&browser.find("#explorer-authorize").await).await;
        browser.click(&browser.wait_for("button.btn-done").await).await;

        browser.click(&browser.wait_for("[id$='-listRisks'] .opblock-summary-control").await).await;
        browser.click(&browser.wait_for("[id$='-listRisks'] button.execute").await).await;
        let status = browser.wait_for("[id$='-listRisks'] .live-responses-table tbody .response-col_status").await;
        let status = browser.text(&status).await;
        let body = browser
            .text(&browser.find("[id$='-listRisks'] .live-responses-table tbody .response-col_description").await)
            .await;
        let refused = browser.execute("return window.refused;", vec![]).await;
        // The key stays in the page: nothing on this origin can read it from localStorage later.
        let stored = browser.execute("return window.localStorage.getItem('authorized');", vec![]).await;
        let kept = browser.execute("return JSON.stringify(window.localStorage);", vec![]).await;
        browser.quit().await;
        assert_eq!(stored, serde_json::Value::Null, "the explorer kept the authorization: {kept}");
        assert!(!kept.to_string().contains(&key), "the key is in localStorage");
        assert!(status.starts_with("200"), "the explorer showed {status:?}: {body}");
        assert!(body.contains("Explored"), "the answer lists the risk: {body}");
        assert_eq!(refused, serde_json::json!([]), "the policy refused something the explorer needs");
    })
    .await;
}

/// Every file the explorer loads comes from the binary, with the same policy; another name is a 404.
#[tokio::test]
async fn the_explorer_files_are_served_by_the_service() {
    run(Backend::Sqlite, |server| async move {
        for (file, media_type) in [
            ("swagger-ui-bundle.js", "text/javascript"),
            ("swagger-ui.css", "text/css"),
            ("favicon-32x32.png", "image/png"),
        ] {
            let answer = crate::client::get(&server, &format!("/explorer/{file}"), &[]).await;
            assert_eq!(answer.status(), 200, "{file}");
            let headers = answer.headers();
            assert!(headers["content-type"].to_str().unwrap().starts_with(media_type), "{file}: {headers:?}");
            assert!(headers["content-security-policy"].to_str().unwrap().contains("default-src 'none'"));
            assert!(!answer.bytes().await.unwrap().is_empty());
        }
        let initializer = crate::client::get(&server, "/explorer/swagger-initializer.js", &[]).await;
        let initializer = initializer.text().await.unwrap();
        assert!(initializer.contains("\"/openapi.json\"") && !initializer.contains("petstore"), "{initializer}");
        assert!(!initializer.contains("\"persistAuthorization\":true"), "keys are not persisted: {initializer}");
        for missing in ["nothing.js", "index.rs", "..%2Fsecrets.js"] {
            server.anonymous().get(&format!("/explorer/{missing}")).await.problem(404);
        }
    })
    .await;
}
