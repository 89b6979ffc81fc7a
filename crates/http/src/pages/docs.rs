//! `GET /docs`: the OpenAPI document rendered as one HTML page on the server. No script and no
//! asset from elsewhere, so it works offline and under a strict CSP.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::{Map, Value};

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

const STYLE: &str = "\
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:70rem;padding:1rem 2rem;color:#1d1d1f}\
h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2.5rem}\
section.operation{border:1px solid #ddd;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}\
.method{display:inline-block;min-width:4.5rem;font-weight:700;text-transform:uppercase}\
.get{color:#0a6}.post{color:#06c}.put,.patch{color:#b60}.delete{color:#c03}\
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;\
vertical-align:top}code{font:13px ui-monospace,monospace}nav li{margin:.1rem 0}td p,li p{margin:0;display:inline}";

/// The page for `document` (the OpenAPI document as JSON).
pub(crate) fn render_docs_page(document: &Value) -> String {
    let title = text(document.pointer("/info/title"));
    let operations = operations(document);
    let mut tags: Vec<&str> = operations.iter().map(|operation| operation.tag).collect();
    tags.dedup();
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " — API reference" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { (title) }
                (markdown(text(document.pointer("/info/description"))))
                p { "The machine-readable document: " a href="/openapi.json" { "/openapi.json" } " (OpenAPI "
                    (text(document.get("openapi"))) ")." }
                (security(document))
                nav aria-label="Operations" {
                    ul {
                        @for operation in &operations {
                            li { a href={ "#" (operation.id) } {
                                span class={ "method " (operation.method) } { (operation.method) } " " code { (operation.path) }
                            } }
                        }
                    }
                }
                @for tag in &tags {
                    h2 id={ "tag-" (tag) } { (tag) }
                    @for operation in operations.iter().filter(|operation| operation.tag == *tag) {
                        (render_operation(document, operation))
                    }
                }
                h2 id="schemas" { "Schemas" }
                @for (name, schema) in entries(document.pointer("/components/schemas")) {
                    section id={ "schema-" (name) } {
                        h3 { (name) }
                        (render_schema(schema))
                    }
                }
            }
        }
    };
    page.into_string()
}

struct Operation<'a> {
    id: &'a str,
    method: &'static str,
    path: &'a str,
    tag: &'a str,
    body: &'a Value,
}

fn operations(document: &Value) -> Vec<Operation<'_>> {
    let mut operations = Vec::new();
    for (path, item) in entries(document.get("paths")) {
        for method in METHODS {
            let Some(body) = item.get(method) else { continue };
            let tag = body.pointer("/tags/0").and_then(Value::as_str).unwrap_or("other");
            let id = body.get("operationId").and_then(Value::as_str).unwrap_or(path);
            operations.push(Operation { id, method, path, tag, body });
        }
    }
    // Stable: operations keep the document's order within a tag.
    operations.sort_by_key(|operation| operation.tag);
    operations
}

fn render_operation(document: &Value, operation: &Operation<'_>) -> Markup {
    let body = operation.body;
    let parameters = body.get("parameters").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let security = body.get("security").and_then(Value::as_array);
    let public = security.is_some_and(|requirements| requirements.iter().all(|r| entries(Some(r)).next().is_none()));
    html! {
        section class="operation" id=(operation.id) {
            h3 { span class={ "method " (operation.method) } { (operation.method) } " " code { (operation.path) } }
            @if let Some(summary) = body.get("summary").and_then(Value::as_str) { p { strong { (summary) } } }
            @if let Some(description) = body.get("description").and_then(Value::as_str) { (markdown(description)) }
            p { "Operation " code { (operation.id) } @if public { " · no authentication" } }
            @if !parameters.is_empty() {
                table {
                    tr { th { "Parameter" } th { "In" } th { "Type" } th { "Required" } th { "Description" } }
                    @for parameter in parameters {
                        tr {
                            td { code { (text(parameter.get("name"))) } }
                            td { (text(parameter.get("in"))) }
                            td { (type_of(parameter.get("schema").unwrap_or(&Value::Null))) }
                            td { @if parameter.get("required") == Some(&Value::Bool(true)) { "yes" } @else { "no" } }
                            td { (markdown(text(parameter.get("description")))) }
                        }
                    }
                }
            }
            @if let Some(content) = body.pointer("/requestBody/content") {
                p { "Request body: "
                    @for (media_type, media) in entries(Some(content)) {
                        code { (media_type) } " " (type_of(media.get("schema").unwrap_or(&Value::Null))) " "
                    }
                }
            }
            table {
                tr { th { "Status" } th { "Description" } th { "Body" } }
                @for (status, response) in entries(body.get("responses")) {
                    @let response = resolve(document, response);
                    tr {
                        td { (status) }
                        td { (markdown(text(response.get("description")))) }
                        td { @for (media_type, media) in entries(response.get("content")) {
                            code { (media_type) } " " (type_of(media.get("schema").unwrap_or(&Value::Null))) " "
                        } }
                    }
                }
            }
        }
    }
}

fn security(document: &Value) -> Markup {
    html! {
        h2 id="authentication" { "Authentication" }
        ul {
            @for (name, scheme) in entries(document.pointer("/components/securitySchemes")) {
                li { code { (name) } ": " (text(scheme.get("in"))) " " code { (text(scheme.get("name"))) } " — "
                    (markdown(text(scheme.get("description")))) }
            }
        }
    }
}

fn render_schema(schema: &Value) -> Markup {
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let properties: Vec<_> = entries(schema.get("properties")).collect();
    html! {
        @if let Some(description) = schema.get("description").and_then(Value::as_str) { (markdown(description)) }
        @if properties.is_empty() {
            p { (type_of(schema)) }
        } @else {
            table {
                tr { th { "Field" } th { "Type" } th { "Required" } th { "Description" } }
                @for (name, property) in properties {
                    tr {
                        td { code { (name) } }
                        td { (type_of(property)) }
                        td { @if required.contains(&name.as_str()) { "yes" } @else { "no" } }
                        td { (markdown(text(property.get("description")))) }
                    }
                }
            }
        }
    }
}

/// A short description of a schema's type, linking to named schemas.
fn type_of(schema: &Value) -> Markup {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return html! { a href={ "#schema-" (name) } { (name) } };
    }
    for combinator in ["oneOf", "anyOf", "allOf"] {
        if let Some(options) = schema.get(combinator).and_then(Value::as_array) {
            return html! { @for (i, option) in options.iter().enumerate() { @if i > 0 { " | " } (type_of(option)) } };
        }
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | "),
        Some(Value::String(kind)) => kind.clone(),
        _ => "any".to_owned(),
    };
    html! {
        (kind)
        @if let Some(items) = schema.get("items") { " of " (type_of(items)) }
        @if let Some(format) = schema.get("format").and_then(Value::as_str) { " (" (format) ")" }
        @if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            ": " @for (i, value) in values.iter().enumerate() { @if i > 0 { ", " } code { (value) } }
        }
        @if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) { " matching " code { (pattern) } }
    }
}

/// A `$ref` to a component response, resolved; anything else as it is.
fn resolve<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
    let pointer = value.get("$ref").and_then(Value::as_str).and_then(|reference| reference.strip_prefix('#'));
    pointer.and_then(|pointer| document.pointer(pointer)).unwrap_or(value)
}

/// A description (CommonMark) as safe HTML: the document's own text, but rendered like any other.
fn markdown(text: &str) -> Markup {
    PreEscaped(super::markdown::render_markdown(text))
}

/// The members of an object; none for anything else.
fn entries(value: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    value.and_then(Value::as_object).into_iter().flat_map(Map::iter)
}

fn text(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).unwrap_or("")
}
