//! Every answer a test reads is one the API's document declares: the status must be among the
//! `responses` of the operation the request addressed (docs/openapi.json, which `cargo xtask
//! openapi --check` holds equal to the served one). [`crate::client::Response`] checks each answer
//! it reads, so the whole black-box suite, error paths included, keeps the document honest: a
//! handler that starts answering a status its annotation does not list fails the first test that
//! provokes it. Requests to no documented operation (an unknown path, a method a path does not
//! take) are not checked here; their 404 and 405 have tests of their own.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::Value;

/// The committed document, read once per test binary.
static DOCUMENT: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../docs/openapi.json"))
        .unwrap_or_else(|err| panic!("docs/openapi.json is not JSON: {err}"))
});

/// Method → the document's path templates taking it.
static TEMPLATES: LazyLock<BTreeMap<String, Vec<String>>> = LazyLock::new(|| {
    let mut templates: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (template, item) in DOCUMENT["paths"].as_object().into_iter().flatten() {
        for method in item.as_object().into_iter().flatten().map(|(method, _)| method) {
            templates.entry(method.to_uppercase()).or_default().push(template.clone());
        }
    }
    templates
});

/// Panics when `status` is not among the responses the document declares for the operation
/// `request` (`METHOD PATH` or `METHOD URL`) addresses.
#[track_caller]
pub fn assert_declared(request: &str, status: u16, body: &Value) {
    let (method, path) = request_path(request);
    let Some(template) = operation_template(&method, &path) else { return };
    let responses = &DOCUMENT["paths"][template.as_str()][method.to_lowercase()]["responses"];
    let declared = responses.get(status.to_string()).is_some() || responses.get("default").is_some();
    if !declared {
        let listed: Vec<&String> = responses.as_object().into_iter().flatten().map(|(status, _)| status).collect();
        panic!(
            "{request} answered {status}, which docs/openapi.json does not declare for {method} {template} \
             (it declares {listed:?}): declare it in the handler's #[utoipa::path] responses, then run \
             `cargo xtask openapi` and `cargo xtask client`. The answer: {body}"
        );
    }
}

/// The template of the documented operation `method path` addresses, if any: among the templates
/// it matches, the one with the most literal segments (`/v1/risks/bulk` before `/v1/risks/{id}`),
/// as the router prefers them.
fn operation_template(method: &str, path: &str) -> Option<String> {
    TEMPLATES
        .get(method)?
        .iter()
        .filter(|template| matches_template(template, path))
        .max_by_key(|template| template.split('/').filter(|segment| !segment.starts_with('{')).count())
        .cloned()
}

/// `("GET", "/v1/x/1")` from `GET /v1/x/1?y=2` or `GET http://host:port/v1/x/1?y=2`.
pub fn request_path(request: &str) -> (String, String) {
    let (method, target) = request.split_once(' ').unwrap_or_else(|| panic!("not `METHOD PATH`: {request}"));
    let path = match target.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |at| &rest[at..]),
        None => target,
    };
    let path = path.split(['?', '#']).next().unwrap_or_default();
    (method.to_owned(), path.to_owned())
}

/// Whether `path` is an instance of the OpenAPI path `template` (`{name}` matching one segment).
pub fn matches_template(template: &str, path: &str) -> bool {
    let (template, path): (Vec<_>, Vec<_>) = (template.split('/').collect(), path.split('/').collect());
    template.len() == path.len()
        && template.iter().zip(&path).all(|(t, p)| if t.starts_with('{') { !p.is_empty() } else { t == p })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn requests_match_their_templates() {
        let (method, path) = request_path("GET http://127.0.0.1:1/v1/attachments/att_1/content?org=o&signature=s");
        assert_eq!((method.as_str(), path.as_str()), ("GET", "/v1/attachments/att_1/content"));
        assert!(matches_template("/v1/attachments/{id}/content", &path));
        assert!(!matches_template("/v1/attachments/{id}/download", &path));
        assert!(!matches_template("/v1/attachments/{id}", &path));
        assert_eq!(request_path("DELETE /v1/tasks/tsk_1").1, "/v1/tasks/tsk_1");
    }

    #[test]
    fn a_literal_segment_wins_over_a_parameter() {
        assert_eq!(operation_template("POST", "/v1/risks/bulk").as_deref(), Some("/v1/risks/bulk"));
        assert_eq!(operation_template("PATCH", "/v1/risks/rsk_1").as_deref(), Some("/v1/risks/{id}"));
        assert_eq!(operation_template("GET", "/v1/no-such-resource"), None);
    }

    #[test]
    fn a_declared_status_passes_and_an_undeclared_one_fails() {
        assert_declared("PATCH /v1/risks/rsk_1", 200, &Value::Null);
        assert_declared("PATCH /v1/risks/rsk_1", 412, &Value::Null);
        assert_declared("GET /v1/no-such-resource", 418, &Value::Null);
        let undeclared = std::panic::catch_unwind(|| assert_declared("GET /v1/risks", 418, &json!({})));
        let message = *undeclared.expect_err("418 is declared nowhere").downcast::<String>().unwrap();
        assert!(message.contains("does not declare for GET /v1/risks"), "{message}");
    }
}
