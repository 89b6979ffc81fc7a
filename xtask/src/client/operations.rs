//! One `Client` method per operation, a query struct per operation with query parameters, and
//! an item stream for each list that pages with `cursor`/`nextCursor`.

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::names::{doc, pascal, snake};
use super::types::Types;

const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// What a successful answer decodes to.
enum Success {
    /// JSON of this Rust type.
    Json(String),
    /// No body (204).
    Empty,
    /// Anything else (CSV, HTML, images, redirects): status, headers and bytes.
    Raw,
}

struct Parameter<'a> {
    wire: String,
    rust: String,
    schema: &'a Value,
    description: Option<&'a str>,
    required: bool,
    /// An array sent as one comma-separated value (`style: form, explode: false`).
    comma_separated: bool,
}

pub fn generate(document: &Value, types: &mut Types<'_>) -> Result<(String, String)> {
    let paths = document.get("paths").and_then(Value::as_object).context("the document has no paths")?;
    let mut methods = String::new();
    let mut declarations = String::new();
    // The list types whose `Page` is implemented: several lists share one (the audit trails).
    let mut pages = BTreeSet::new();
    for (path, item) in paths {
        for method in METHODS {
            if let Some(operation) = item.get(*method) {
                operation_code(path, method, operation, types, &mut methods, &mut declarations, &mut pages)
                    .with_context(|| format!("{} {path}", method.to_uppercase()))?;
            }
        }
    }
    Ok((methods, declarations))
}

fn operation_code(
    path: &str,
    method: &str,
    operation: &Value,
    types: &mut Types<'_>,
    methods: &mut String,
    declarations: &mut String,
    pages: &mut BTreeSet<String>,
) -> Result<()> {
    let id = operation.get("operationId").and_then(Value::as_str).context("no operationId")?;
    let name = snake(id);
    let type_prefix = pascal(id);
    let parameters = operation.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut arguments = String::new();
    let mut path_format = path.to_owned();
    let mut path_values = Vec::new();
    let mut query = Vec::new();
    for parameter in &parameters {
        let wire = parameter.get("name").and_then(Value::as_str).context("a parameter without name")?;
        let schema = parameter.get("schema").context("a parameter without schema")?;
        match parameter.get("in").and_then(Value::as_str) {
            Some("path") => {
                let rust = snake(wire);
                let field = types.field_type(schema, &type_prefix, wire)?;
                let argument = if field.rust == "String" || is_string_alias(types, schema)? {
                    "&str".to_owned()
                } else {
                    field.rust
                };
                arguments.push_str(&format!(", {rust}: {argument}"));
                path_format = path_format.replace(&format!("{{{wire}}}"), "{}");
                path_values.push(format!("crate::transport::segment({rust})"));
            }
            Some("query") => {
                let comma_separated = parameter.get("explode").and_then(Value::as_bool) == Some(false);
                let required = parameter.get("required").and_then(Value::as_bool) == Some(true);
                let description = parameter.get("description").and_then(Value::as_str);
                query.push(Parameter {
                    wire: wire.to_owned(),
                    rust: snake(wire),
                    schema,
                    description,
                    required,
                    comma_separated,
                });
            }
            // `If-Match` / `If-None-Match`: the generated methods send no precondition, so their
            // writes are unconditional and their reads never answer 304 (docs/client.md).
            Some("header") => {}
            other => bail!("parameters in {other:?} are not supported"),
        }
    }
    let query_type = format!("{type_prefix}Query");
    if !query.is_empty() {
        types.reserve(&query_type)?;
        declarations.push_str(&query_struct(&query_type, id, &query, &type_prefix, types)?);
        arguments.push_str(&format!(", query: &{query_type}"));
    }
    let (body_argument, body_expression) = request_body(operation, &type_prefix, types)?;
    arguments.push_str(&body_argument);
    let success = success(operation, &type_prefix, types)?;

    let mut method_doc = String::new();
    if let Some(summary) = operation.get("summary").and_then(Value::as_str) {
        method_doc.push_str(summary);
        method_doc.push_str(".\n\n");
    }
    if let Some(description) = operation.get("description").and_then(Value::as_str) {
        method_doc.push_str(description);
        method_doc.push_str("\n\n");
    }
    method_doc.push_str(&format!("`{} {path}` (`{id}`).", method.to_uppercase()));
    doc(&method_doc, methods);
    let path_expression = if path_values.is_empty() {
        format!("\"{path}\".to_owned()")
    } else {
        format!("format!(\"{path_format}\", {})", path_values.join(", "))
    };
    let pairs = if query.is_empty() { "Vec::new()" } else { "query.pairs()" };
    let (returns, call) = match &success {
        Success::Json(rust) => (rust.clone(), "json"),
        Success::Empty => ("()".to_owned(), "empty"),
        Success::Raw => ("crate::RawResponse".to_owned(), "raw"),
    };
    let http_method = method.to_uppercase();
    methods.push_str(&format!(
        "pub async fn {name}(&self{arguments}) -> Result<{returns}, crate::Error> {{\n\
         let request = crate::transport::Request {{ method: reqwest::Method::{http_method}, path: {path_expression}, query: {pairs}, body: {body_expression} }};\n\
         self.{call}(request).await\n}}\n\n"
    ));
    if let Success::Json(rust) = &success
        && let Some(item) = paged_item(types, rust, &query)?
    {
        if pages.insert(rust.clone()) {
            declarations.push_str(&format!(
                "impl crate::pagination::Page for {rust} {{\ntype Item = {item};\nfn into_parts(self) -> (Vec<{item}>, Option<String>) {{\n(self.data, crate::pagination::Cursor::into_cursor(self.next_cursor))\n}}\n}}\n\n"
            ));
        }
        declarations.push_str(&format!(
            "impl crate::pagination::Paged for {query_type} {{\nfn set_cursor(&mut self, cursor: String) {{\nself.cursor = Some(cursor);\n}}\n}}\n\n"
        ));
        let path_arguments: String = arguments
            .split(", ")
            .skip(1)
            .filter(|argument| !argument.starts_with("query:"))
            .map(|argument| format!(", {argument}"))
            .collect();
        let path_names: String = path_arguments
            .split(", ")
            .skip(1)
            .filter_map(|argument| argument.split(':').next())
            .map(|argument| format!("{argument}, "))
            .collect();
        doc(
            &format!(
                "Every item of [`Self::{name}`], page after page: follows `nextCursor` until the last page, \
                 fetching each page when the stream reaches it."
            ),
            methods,
        );
        methods.push_str(&format!(
            "pub fn {name}_stream<'a>(&'a self{path_arguments_a}, query: {query_type}) -> impl futures_util::Stream<Item = Result<{item}, crate::Error>> + Send + 'a {{\n\
             crate::pagination::items(query, move |query: {query_type}| async move {{ self.{name}({path_names}&query).await }})\n}}\n\n",
            path_arguments_a = path_arguments.replace("&str", "&'a str"),
        ));
    }
    Ok(())
}

/// The item type when `rust` is a `{data, nextCursor}` page and the query has `cursor` (a list
/// answered as a bare array, e.g. an automation's runs, has no stream).
fn paged_item(types: &Types<'_>, rust: &str, query: &[Parameter<'_>]) -> Result<Option<String>> {
    if !query.iter().any(|parameter| parameter.wire == "cursor" && !parameter.required) {
        return Ok(None);
    }
    let Ok(schema) = types.resolve(&format!("#/components/schemas/{rust}")) else { return Ok(None) };
    let properties = schema.get("properties");
    let next = properties.and_then(|properties| properties.get("nextCursor"));
    let items = properties.and_then(|properties| properties.get("data")).and_then(|data| data.get("items"));
    match (next, items.and_then(|items| items.get("$ref")).and_then(Value::as_str)) {
        (Some(_), Some(reference)) => Ok(reference.rsplit('/').next().map(str::to_owned)),
        _ => Ok(None),
    }
}

fn is_string_alias(types: &Types<'_>, schema: &Value) -> Result<bool> {
    let Some(reference) = schema.get("$ref").and_then(Value::as_str) else { return Ok(false) };
    let target = types.resolve(reference)?;
    Ok(target.get("type").and_then(Value::as_str) == Some("string") && target.get("enum").is_none())
}

fn query_struct(
    name: &str,
    id: &str,
    parameters: &[Parameter<'_>],
    type_prefix: &str,
    types: &mut Types<'_>,
) -> Result<String> {
    let mut fields = String::new();
    let mut pairs = String::new();
    let mut all_optional = true;
    for parameter in parameters {
        let field = types.field_type(parameter.schema, type_prefix, &parameter.wire)?;
        if let Some(description) = parameter.description {
            doc(description, &mut fields);
        }
        let (rust, wire) = (&parameter.rust, &parameter.wire);
        let is_array = field.rust.starts_with("Vec<");
        if parameter.required {
            all_optional = false;
            fields.push_str(&format!("pub {rust}: {},\n", field.rust));
        } else {
            fields.push_str(&format!("pub {rust}: Option<{}>,\n", field.rust));
        }
        let value = if parameter.required { format!("&self.{rust}") } else { "value".to_owned() };
        let push = match (is_array, parameter.comma_separated) {
            (true, true) => format!(
                "pairs.push((\"{wire}\", {value}.iter().map(crate::transport::query_value).collect::<Vec<_>>().join(\",\")));"
            ),
            (true, false) => {
                format!("for item in {value} {{ pairs.push((\"{wire}\", crate::transport::query_value(item))); }}")
            }
            (false, _) => format!("pairs.push((\"{wire}\", crate::transport::query_value({value})));"),
        };
        if parameter.required {
            pairs.push_str(&push);
        } else {
            pairs.push_str(&format!("if let Some(value) = &self.{rust} {{ {push} }}\n"));
        }
    }
    let default = if all_optional { ", Default" } else { "" };
    Ok(format!(
        "/// The query parameters of [`Client::{method}`](crate::Client::{method}) (`{id}`).\n\
         #[derive(Debug, Clone, PartialEq{default})]\npub struct {name} {{\n{fields}}}\n\n\
         impl {name} {{\n/// The parameters as `(name, value)` pairs, in the document's order.\n{allow}\
         pub(crate) fn pairs(&self) -> Vec<(&'static str, String)> {{\nlet mut pairs = Vec::new();\n{pairs}\npairs\n}}\n}}\n\n",
        method = snake(id),
        // one push per parameter keeps the generator simple; a required first one is pushed at once
        allow = if parameters.first().is_some_and(|first| first.required) {
            "#[allow(clippy::vec_init_then_push)] // one push per parameter, as generated\n"
        } else {
            ""
        },
    ))
}

/// The method's body argument and the expression that encodes it.
fn request_body(operation: &Value, type_prefix: &str, types: &mut Types<'_>) -> Result<(String, String)> {
    let Some(content) = operation.pointer("/requestBody/content").and_then(Value::as_object) else {
        return Ok((String::new(), "crate::transport::Body::None".to_owned()));
    };
    let Some((media_type, media)) = content.iter().next() else { bail!("a request body without content") };
    let schema = media.get("schema").context("a request body without schema")?;
    let field = types.field_type(schema, type_prefix, "Body")?;
    let encode = match media_type.as_str() {
        "application/json" => "json",
        "application/x-www-form-urlencoded" => "form",
        other => bail!("request bodies of {other} are not supported"),
    };
    Ok((format!(", body: &{}", field.rust), format!("crate::transport::Body::{encode}(body)?")))
}

fn success(operation: &Value, type_prefix: &str, types: &mut Types<'_>) -> Result<Success> {
    let responses = operation.get("responses").and_then(Value::as_object).context("no responses")?;
    let mut found: Option<String> = None;
    let mut raw = false;
    let mut empty = false;
    // 304 answers only a conditional GET, which the generated client never sends.
    let answered = |status: &str| (status.starts_with('2') || status.starts_with('3')) && status != "304";
    for (status, response) in responses.iter().filter(|(status, _)| answered(status)) {
        let content = response.get("content").and_then(Value::as_object);
        match content.map(|content| (content.len(), content.get("application/json"))) {
            None => {
                if status.starts_with('3') {
                    raw = true;
                } else {
                    empty = true;
                }
            }
            Some((1, Some(media))) => {
                let schema = media.get("schema").context("a response without schema")?;
                let rust = types.field_type(schema, type_prefix, "Response")?.rust;
                match &found {
                    Some(previous) if *previous != rust => bail!("2xx answers of different types"),
                    _ => found = Some(rust),
                }
            }
            Some(_) => raw = true,
        }
    }
    match (found, raw, empty) {
        (Some(rust), false, false) => Ok(Success::Json(rust)),
        (None, false, true) => Ok(Success::Empty),
        (None, _, _) | (Some(_), true, _) => Ok(Success::Raw),
        (Some(_), false, true) => bail!("an answer that is JSON or empty"),
    }
}
