//! The route table and the served document are one set of operations.

use std::collections::{BTreeMap, BTreeSet};

use actix_web::http::{Method, StatusCode, header};
use actix_web::test::{self, TestRequest};
use serde_json::Value;

use crate::test_app::TestApp;

/// Every method and path the application routes is an operation of the document it serves at
/// `/openapi.json`, and every operation of that document is routed. What is routed is read from
/// the running application as well as from its route table: each path, asked with a method none
/// of its routes takes, answers 405 with `Allow` naming exactly the methods the table gives it
/// (which also shows that no earlier path, `/v1/risks/{id}` before `/v1/risks/export`, takes its
/// requests).
#[actix_web::test]
async fn the_routes_are_the_documented_operations() {
    let app = TestApp::new().await;
    let service = test::init_service(app.application()).await;

    let response = test::call_service(&service, TestRequest::get().uri("/openapi.json").to_request()).await;
    assert_eq!(response.status(), StatusCode::OK);
    let document: Value = test::read_body_json(response).await;
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        let methods = item.as_object().unwrap().keys().map(|method| method.to_uppercase());
        documented.entry(path.clone()).or_default().extend(methods);
    }

    let mut routed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (method, path) in compliance_http::route_table() {
        routed.entry(path).or_default().insert(method.to_string());
    }
    assert!(routed.len() > 40, "the route table is empty or partial: {routed:?}");
    let unrouted: Vec<_> = documented.iter().filter(|(path, methods)| routed.get(*path) != Some(methods)).collect();
    let undocumented: Vec<_> = routed.iter().filter(|(path, methods)| documented.get(*path) != Some(methods)).collect();
    assert!(
        unrouted.is_empty() && undocumented.is_empty(),
        "documented but not routed so: {unrouted:?}\nrouted but not documented so: {undocumented:?}"
    );

    for (path, methods) in &routed {
        let request = TestRequest::default().method(Method::TRACE).uri(&concrete(path)).to_request();
        let response = test::call_service(&service, request).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED, "TRACE {path}");
        let allow = response.headers().get(header::ALLOW).and_then(|allow| allow.to_str().ok()).unwrap_or_default();
        let allowed: BTreeSet<String> = allow.split(", ").map(str::to_owned).collect();
        assert_eq!(&allowed, methods, "the Allow of {path}");
    }
}

/// A path of the template: each `{parameter}` a value no literal segment has.
fn concrete(template: &str) -> String {
    let segments = template.split('/').map(|segment| match segment.starts_with('{') {
        true => "x1",
        false => segment,
    });
    segments.collect::<Vec<_>>().join("/")
}
