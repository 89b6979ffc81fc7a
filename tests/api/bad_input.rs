//! A bad-input corpus against every write route: malformed JSON, non-object bodies, wrong types,
//! nulls, huge numbers, deep nesting, invalid UTF-8, over-long strings, NUL characters, unknown
//! enum values and fields, malformed ids in bodies and paths, and wrong media types. Every answer
//! must be a 4xx `application/problem+json` whose `status` matches, never a 5xx, and the tenant's
//! data must read the same before and after. The connect page's form POSTs get malformed forms.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reqwest::Method;
use reqwest::header::CONTENT_TYPE;
use serde_json::{Map, Value, json};

use crate::harness::{Env, TestServer};
use crate::tenant::Tenant;

api_tests!(every_write_route_refuses_bad_json with LOOPBACK, the_connect_form_refuses_malformed_bodies);

/// Automations may target loopback, so the real automation can be created without the network.
const LOOPBACK: Env = &[("AUTOMATION_ALLOWED_HOSTS", "127.0.0.1")];

/// The default JSON body limit (docs/api.md: 1 MiB).
const BODY_LIMIT: usize = 1024 * 1024;
const JSON: &str = "application/json";

/// What a field holds on the wire; decides which values are of the wrong type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    /// Free text with a documented maximum length (0: none documented).
    Str(usize),
    Enum,
    Bool,
    Int,
    /// An id that must carry this prefix.
    Id(&'static str),
    /// An array of strings (context `tags`).
    Strings,
    /// Policy content: an array of rich-text nodes.
    Nodes,
    Timestamp,
    /// An object of strings (`credentials`, `customSettings`).
    StrMap,
    /// Comment attachments: an array of objects.
    Attachments,
    /// Chat messages: an array of objects.
    Messages,
}

#[derive(Debug, Clone)]
struct Field {
    name: &'static str,
    ty: Ty,
    /// `null` is a valid value (so it is not sent).
    nullable: bool,
    /// Further invalid values, as JSON text.
    bad: Vec<String>,
}

fn f(name: &'static str, ty: Ty) -> Field {
    Field { name, ty, nullable: false, bad: Vec::new() }
}

fn nullable(name: &'static str, ty: Ty) -> Field {
    Field { nullable: true, ..f(name, ty) }
}

impl Field {
    fn with(mut self, bad: &[&str]) -> Self {
        self.bad.extend(bad.iter().map(|s| (*s).to_owned()));
        self
    }
}

/// A write route taking a JSON body.
#[derive(Debug, Clone)]
struct JsonRoute {
    method: Method,
    path: String,
    /// A valid body: each case breaks one thing of it.
    base: Value,
    fields: Vec<Field>,
    /// The route has the default 1 MiB limit (comments and chat have larger ones).
    default_limit: bool,
}

/// A route with an id in its path; see its use.
type PathRoute<'a> = (Method, &'a str, &'a str, &'a str, &'a str, Option<Value>);

/// What a case must be answered.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Any4xx,
    Exactly(u16),
    /// Framing the HTTP parser itself refuses before any route runs: a 4xx is all we can ask
    /// today (actix answers an empty 400; problem bodies there are issue 7's).
    FramingRefused,
}

#[derive(Debug)]
struct Case {
    method: Method,
    path: String,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    kind: String,
    expect: Expect,
}

/// Raw requests with the owner's session (cookie and `X-Organization-Id`) or, when `api_key` is
/// set, the owner's API key; records failures.
struct Prober {
    http: reqwest::Client,
    base_url: String,
    token: String,
    api_key: Option<String>,
    org: String,
    sent: usize,
    failures: Vec<String>,
}

impl Prober {
    async fn new(server: &TestServer, tenant: &Tenant) -> Self {
        let session = server.admin().create_session(&tenant.owner.id).await;
        let token = session["token"].as_str().unwrap_or_else(|| panic!("no token in {session}")).to_owned();
        Self {
            http: reqwest::Client::builder().timeout(std::time::Duration::from_secs(60)).build().unwrap(),
            base_url: server.base_url().to_owned(),
            token,
            api_key: None,
            org: tenant.org_id.clone(),
            sent: 0,
            failures: Vec::new(),
        }
    }

    async fn send(
        &mut self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> (u16, String, Vec<u8>) {
        self.sent += 1;
        let mut request = self.http.request(method.clone(), format!("{}{path}", self.base_url)).body(body);
        request = match &self.api_key {
            Some(key) => request.header("X-API-Key", key),
            None => {
                request.header("Cookie", format!("session_token={}", self.token)).header("X-Organization-Id", &self.org)
            }
        };
        if let Some(content_type) = content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(err) => return (0, String::new(), format!("transport error: {err}").into_bytes()),
        };
        let status = response.status().as_u16();
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let bytes = response.bytes().await.map(|b| b.to_vec()).unwrap_or_else(|e| format!("<read error {e}>").into());
        (status, content_type, bytes)
    }

    async fn get(&mut self, path: &str) -> Value {
        let (status, _, bytes) = self.send(Method::GET, path, None, Vec::new()).await;
        let mut body: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(lossy(&bytes, 500)));
        // Each answer has its own request id; it is not state.
        if let Some(problem) = body.as_object_mut() {
            problem.remove("requestId");
        }
        json!({"status": status, "body": body})
    }

    /// Sends `case` and records every way its answer is wrong.
    async fn probe(&mut self, case: Case) {
        let (status, content_type, bytes) =
            self.send(case.method.clone(), &case.path, case.content_type, case.body).await;
        let auth = if self.api_key.is_some() { "API key: " } else { "" };
        let what = format!("{auth}{} {} [{}]", case.method, short(&case.path), case.kind);
        self.judge(&what, case.expect, status, &content_type, &bytes);
    }

    /// Records a failure unless the answer is a 4xx (the expected one) problem whose `status`
    /// matches and which has a `detail`.
    fn judge(&mut self, what: &str, expect: Expect, status: u16, content_type: &str, bytes: &[u8]) {
        let mut wrong = Vec::new();
        if !(400..500).contains(&status) {
            wrong.push(format!("status {status} is not a 4xx"));
        } else if let Expect::Exactly(expected) = expect
            && status != expected
        {
            wrong.push(format!("status {status}, expected {expected}"));
        }
        if matches!(expect, Expect::FramingRefused) {
            if !wrong.is_empty() {
                self.failures.push(format!("{what}: {} — {status} {content_type}", wrong.join("; ")));
            }
            return;
        }
        if !content_type.starts_with("application/problem+json") {
            wrong.push(format!("Content-Type {content_type:?}"));
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(body) => {
                if body["status"] != status {
                    wrong.push(format!("body status {} != {status}", body["status"]));
                }
                if !body["detail"].is_string() {
                    wrong.push("no string `detail`".to_owned());
                }
            }
            Err(_) => wrong.push("body is not JSON".to_owned()),
        }
        if !wrong.is_empty() {
            let shown = lossy(bytes, 300);
            self.failures.push(format!("{what}: {} — {status} {content_type}: {shown}", wrong.join("; ")));
        }
    }
}

fn lossy(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.chars().count() > max { format!("{}…", text.chars().take(max).collect::<String>()) } else { text.into() }
}

fn short(path: &str) -> String {
    if path.len() > 120 { format!("{}…({} chars)", &path[..100], path.len()) } else { path.to_owned() }
}

/// `object` as JSON text with `name` set to the raw JSON text `raw` (last, replacing any value).
fn with_raw(object: &Value, name: &str, raw: &str) -> Vec<u8> {
    let mut parts: Vec<String> = object
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.as_str() != name)
        .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
        .collect();
    parts.push(format!("{}:{raw}", Value::String(name.to_owned())));
    format!("{{{}}}", parts.join(",")).into_bytes()
}

/// Wrong-type, null and out-of-range values for a field, each with a label.
fn bad_values(field: &Field) -> Vec<(String, String)> {
    let mut values: Vec<(&str, String)> = vec![
        ("string", "\"text\"".into()),
        ("integer", "7".into()),
        ("float", "1.5".into()),
        ("bool", "true".into()),
        ("object", "{\"a\":1}".into()),
        ("array", "[1]".into()),
        ("empty array", "[]".into()),
        ("null", "null".into()),
        ("1e400", "1e400".into()),
        ("2^64", "18446744073709551616".into()),
        ("-2^63-1", "-9223372036854775809".into()),
        ("deep array", format!("{}{}", "[".repeat(10_000), "]".repeat(10_000))),
        ("lone surrogate", "\"\\ud800\"".into()),
    ];
    let ty = field.ty;
    values.retain(|(label, _)| match *label {
        "string" | "lone surrogate" => !matches!(ty, Ty::Str(_)),
        "integer" => ty != Ty::Int,
        "empty array" => !matches!(ty, Ty::Strings | Ty::Nodes | Ty::Attachments | Ty::Messages),
        "bool" => ty != Ty::Bool,
        "array" => true,
        "object" => ty != Ty::StrMap,
        "null" => !field.nullable,
        _ => true,
    });
    let mut out: Vec<(String, String)> = values.into_iter().map(|(l, v)| (l.to_owned(), v)).collect();
    match ty {
        Ty::Str(limit) => {
            out.push(("escaped NUL".into(), "\"a\\u0000b\"".into()));
            if limit > 0 {
                out.push((format!("{} chars", limit + 1), Value::String("a".repeat(limit + 1)).to_string()));
            }
        }
        Ty::Enum => {
            for v in ["\"no_such_value\"", "\"\"", "\"TECHNOLOGY\"", "\"a\\u0000b\""] {
                out.push((format!("enum {v}"), v.into()));
            }
        }
        Ty::Bool => out.push(("string \"true\"".into(), "\"true\"".into())),
        Ty::Int => {
            // `1.0e2` is not here: JSON Schema counts 100.0 as an integer, and so does the API.
            for v in ["\"5\"", "1.5e0", "0", "-1"] {
                out.push((format!("int {v}"), v.into()));
            }
        }
        Ty::Id(prefix) => {
            let other = if prefix == "vnd_" { "rsk_" } else { "vnd_" };
            for v in [
                format!("{other}{}", "0".repeat(32)),
                format!("{prefix}{}", "!".repeat(32)),
                prefix.to_owned(),
                format!("{}{}", prefix.to_uppercase(), "0".repeat(32)),
                format!("{prefix}{}", "0".repeat(33)),
                format!("{prefix}{}", "u".repeat(32)),
                "x".into(),
                String::new(),
                format!("{prefix}a\u{0}b"),
            ] {
                out.push((format!("id {v:?}"), Value::String(v).to_string()));
            }
        }
        Ty::Strings => {
            out.push(("tags [1]".into(), "[1]".into()));
            out.push(("tags [null]".into(), "[null]".into()));
            out.push(("tags 100000 entries".into(), format!("[{}]", vec!["\"t\""; 100_000].join(","))));
            out.push(("invalid tag with NUL".into(), "[\"a\\u0000b\"]".into()));
        }
        Ty::Nodes => {
            for v in ["[1]", "[{}]", "[{\"type\":1}]", "[{\"type\":\"text\"}]", "[null]"] {
                out.push((format!("content {v}"), v.into()));
            }
            let deep = format!("{}{}", "{\"type\":\"p\",\"content\":[".repeat(40), "]}".repeat(40));
            out.push(("content nodes 40 deep".into(), format!("[{deep}]")));
            out.push(("content with 1e400".into(), "[{\"type\":\"p\",\"attrs\":{\"n\":1e400}}]".into()));
            out.push(("invalid text node with NUL".into(), "[{\"type\":\"text\",\"text\":\"a\\u0000b\"}]".into()));
            out.push(("invalid node type with NUL".into(), "[{\"type\":\"p\\u0000\"}]".into()));
            out.push(("invalid attrs key with NUL".into(), "[{\"type\":\"p\",\"attrs\":{\"a\\u0000\":1}}]".into()));
        }
        Ty::Timestamp => {
            for v in ["\"not a date\"", "\"2024-13-45T00:00:00Z\"", "\"\"", "\"99999-01-01T00:00:00Z\""] {
                out.push((format!("timestamp {v}"), v.into()));
            }
        }
        Ty::StrMap => {
            out.push(("map of numbers".into(), "{\"k\":1}".into()));
            out.push(("map of null".into(), "{\"k\":null}".into()));
            out.push(("invalid map value with NUL".into(), "{\"k\":\"a\\u0000b\"}".into()));
        }
        Ty::Attachments => {
            for v in [
                "[1]",
                "[{}]",
                "[{\"fileName\":\"a.exe\",\"fileType\":\"application/x-msdownload\",\"fileData\":\"AAAA\"}]",
                "[{\"fileName\":\"a/b.txt\",\"fileType\":\"text/plain\",\"fileData\":\"AAAA\"}]",
                "[{\"fileName\":\"a.txt\",\"fileType\":\"text/plain\",\"fileData\":\"!!!\"}]",
                "[{\"fileName\":\"a.txt\",\"fileType\":\"nonsense\",\"fileData\":\"AAAA\"}]",
                "[{\"fileName\":\"a.txt\",\"fileType\":\"text/plain\",\"fileData\":\"AAAA\",\"userId\":\"x\"}]",
                "[{\"fileName\":\"a.txt\",\"fileType\":\"text/plain\",\"fileData\":\"AAAA\",\"zz\":1}]",
            ] {
                out.push((format!("attachments {v}"), v.into()));
            }
        }
        Ty::Messages => {
            for v in [
                "[1]",
                "[{}]",
                "[{\"id\":\"m\",\"role\":\"robot\",\"text\":\"t\",\"createdAt\":1}]",
                "[{\"id\":\"m\",\"role\":\"user\",\"text\":\"t\",\"createdAt\":-1}]",
                "[{\"id\":\"m\",\"role\":\"user\",\"text\":\"t\",\"createdAt\":1e400}]",
                "[{\"id\":\"m\",\"role\":\"user\",\"text\":\"t\",\"createdAt\":\"now\"}]",
                "[{\"id\":\"\",\"role\":\"user\",\"text\":\"t\",\"createdAt\":1}]",
                "[{\"id\":1,\"role\":\"user\",\"text\":\"t\",\"createdAt\":1}]",
                "[{\"id\":\"m\",\"role\":\"user\",\"text\":null,\"createdAt\":1}]",
                "[{\"id\":\"m\",\"role\":\"user\",\"text\":\"t\",\"createdAt\":1,\"zz\":1}]",
            ] {
                out.push((format!("messages {v}"), v.into()));
            }
        }
    }
    out.extend(field.bad.iter().map(|v| (format!("invalid {}", lossy(v.as_bytes(), 60)), v.clone())));
    out
}

/// Every bad body for one JSON route.
fn cases_for(route: &JsonRoute) -> Vec<Case> {
    let base = route.base.to_string();
    let first_text = route.fields.iter().find(|f| matches!(f.ty, Ty::Str(_))).map_or("zz", |f| f.name);
    let mut bodies: Vec<(String, Option<&'static str>, Vec<u8>, Expect)> = Vec::new();
    let mut push = |kind: &str, body: Vec<u8>, expect: Expect| bodies.push((kind.to_owned(), Some(JSON), body, expect));
    let e400 = Expect::Exactly(400);
    push("truncated", base.as_bytes()[..base.len() - 1].to_vec(), e400);
    push("truncated key", b"{\"".to_vec(), e400);
    push("trailing garbage", format!("{base}x").into_bytes(), e400);
    push("two objects", format!("{base} {{}}").into_bytes(), e400);
    push("{\"a\":}", b"{\"a\":}".to_vec(), e400);
    push("trailing comma", format!("{},}}", &base[..base.len() - 1]).into_bytes(), e400);
    push("single quotes", b"{'a':1}".to_vec(), e400);
    push("empty body", Vec::new(), e400);
    push("whitespace body", b"  \n ".to_vec(), e400);
    push("array", b"[]".to_vec(), e400);
    push("array of base", format!("[{base}]").into_bytes(), e400);
    push("string", b"\"text\"".to_vec(), e400);
    push("number", b"42".to_vec(), e400);
    push("null", b"null".to_vec(), e400);
    push("true", b"true".to_vec(), e400);
    push("1e400", b"1e400".to_vec(), e400);
    push("10000 x [", "[".repeat(10_000).into_bytes(), e400);
    push("10000 x [ ]", format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(), e400);
    push("10000 x {\"a\":", "{\"a\":".repeat(10_000).into_bytes(), e400);
    push("10000 nested objects", format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)).into_bytes(), e400);
    push(
        "200 nested in unknown field",
        with_raw(&route.base, "zz", &format!("{}{}", "[".repeat(200), "]".repeat(200))),
        e400,
    );
    push("invalid UTF-8 body", vec![0xff, 0xfe, 0xfd], e400);
    let mut utf8 = format!("{{\"{first_text}\":\"").into_bytes();
    utf8.extend_from_slice(&[0xc3, 0x28, 0xff]);
    utf8.extend_from_slice(b"\"}");
    push("invalid UTF-8 in a string", utf8, e400);
    push("UTF-8 BOM", [&[0xef, 0xbb, 0xbf][..], base.as_bytes()].concat(), Expect::Any4xx);
    push("raw NUL in a string", format!("{{\"{first_text}\":\"a\u{0}b\"}}").into_bytes(), e400);
    push("NUL byte after body", [base.as_bytes(), b"\0"].concat(), e400);
    push("unknown field", with_raw(&route.base, "zzUnknown", "1"), e400);
    push("unknown field with NUL", with_raw(&route.base, &format!("{first_text}\u{0}"), "\"x\""), e400);
    push("__proto__ field", with_raw(&route.base, "__proto__", "{}"), e400);
    push("field in snake_case", with_raw(&route.base, "created_at", "\"x\""), e400);
    if let Some(first) = route.fields.first() {
        let value = route.base.get(first.name).map_or("\"x\"".to_owned(), Value::to_string);
        let mut dup = String::from_utf8(with_raw(&route.base, first.name, &value)).unwrap();
        dup.insert_str(1, &format!("\"{}\":{value},", first.name));
        push("duplicate field", dup.into_bytes(), e400);
    }
    // A text field of 1 MiB minus a little: within the body limit, over every field limit.
    if let Some(field) = route.fields.iter().find(|f| matches!(f.ty, Ty::Str(l) if l > 0)) {
        let overhead = with_raw(&route.base, field.name, "\"\"").len();
        let text = "a".repeat(BODY_LIMIT - overhead - 16);
        push("1 MiB text field", with_raw(&route.base, field.name, &format!("\"{text}\"")), Expect::Any4xx);
    }
    // A body one byte over the 1 MiB limit.
    {
        let name = route.fields.iter().find(|f| matches!(f.ty, Ty::Str(_))).map_or("zz", |f| f.name);
        let overhead = with_raw(&route.base, name, "\"\"").len();
        let text = "a".repeat(BODY_LIMIT + 1 - overhead);
        let body = with_raw(&route.base, name, &format!("\"{text}\""));
        assert_eq!(body.len(), BODY_LIMIT + 1);
        let expect = if route.default_limit { Expect::Exactly(413) } else { Expect::Any4xx };
        push("1 MiB + 1 byte body", body, expect);
    }
    for field in &route.fields {
        for (label, raw) in bad_values(field) {
            let semantic = label.starts_with("invalid ") || label == "escaped NUL";
            let expect = if semantic { Expect::Any4xx } else { e400 };
            push(&format!("{} = {label}", field.name), with_raw(&route.base, field.name, &raw), expect);
        }
    }
    for content_type in
        ["text/plain", "application/x-www-form-urlencoded", "application/jsonx", "json", "application/xml"]
    {
        bodies.push((
            format!("Content-Type {content_type}"),
            Some(content_type),
            base.clone().into_bytes(),
            Expect::Exactly(415),
        ));
    }
    bodies.push(("no Content-Type".into(), None, base.clone().into_bytes(), Expect::Exactly(415)));
    bodies.push((
        "Content-Type with a non-ASCII byte".into(),
        Some("application/json; charset=\u{ff}"),
        base.into_bytes(),
        Expect::Any4xx,
    ));
    bodies
        .into_iter()
        .map(|(kind, content_type, body, expect)| Case {
            method: route.method.clone(),
            path: route.path.clone(),
            content_type,
            body,
            kind,
            expect,
        })
        .collect()
}

/// Path ids that name nothing of the route's kind: another kind's real id, a well-formed id of
/// no record, and malformed ones.
fn wrong_ids(prefix: &str, real: &str, other_kind: &str) -> Vec<(String, String)> {
    let tail = real.split_once('_').map_or(real, |(_, t)| t);
    let ids: Vec<(String, String)> = vec![
        ("another kind's id".into(), other_kind.to_owned()),
        ("no such id".into(), format!("{prefix}{}", "0".repeat(32))),
        ("wrong prefix".into(), format!("xyz_{tail}")),
        ("no prefix".into(), tail.to_owned()),
        ("prefix only".into(), prefix.to_owned()),
        ("upper case".into(), real.to_uppercase()),
        ("one char more".into(), format!("{real}0")),
        ("bad characters".into(), format!("{prefix}{}", "!".repeat(32))),
        ("percent NUL".into(), format!("{real}%00")),
        ("percent-encoded invalid UTF-8".into(), format!("{prefix}%FF%FE")),
        ("bad percent-encoding".into(), format!("{prefix}%ZZ")),
        ("encoded slash".into(), format!("..%2F{real}")),
        ("4000 chars".into(), format!("{prefix}{}", "a".repeat(4000))),
    ];
    ids.into_iter().filter(|(_, id)| id != real).collect()
}

async fn create(server_client: &crate::client::Client, path: &str, body: Value) -> String {
    let created = server_client.post(path, body).await.ok(201);
    created["id"].as_str().unwrap_or_else(|| panic!("no id in {created}")).to_owned()
}

/// The tenant's data as the GET endpoints show it.
async fn snapshot(prober: &mut Prober, ids: &Ids) -> Vec<(String, Value)> {
    let mut paths: Vec<String> = [
        "/v1/risks",
        "/v1/vendors",
        "/v1/policies",
        "/v1/context",
        "/v1/people?includeInactive=true",
        "/v1/tasks",
        "/v1/integrations/connections",
        "/v1/organization",
        "/v1/assistant-chat/history",
        "/v1/integrations/oauth-apps/github",
    ]
    .iter()
    .map(|p| (*p).to_owned())
    .collect();
    for (kind, id) in [("task", &ids.task), ("risk", &ids.risk), ("vendor", &ids.vendor), ("policy", &ids.policy)] {
        paths.push(format!("/v1/comments?entityId={id}&entityType={kind}"));
    }
    paths.push(format!("/v1/browser/automations/task/{}", ids.task));
    paths.push(format!("/v1/browser/automations/{}/runs", ids.automation));
    for id in [&ids.risk, &ids.vendor, &ids.policy, &ids.context, &ids.task, &ids.member] {
        let collection = match &id[..4] {
            "rsk_" => "risks",
            "vnd_" => "vendors",
            "pol_" => "policies",
            "ctx_" => "context",
            "tsk_" => "tasks",
            _ => "people",
        };
        paths.push(format!("/v1/{collection}/{id}"));
    }
    let mut out = Vec::new();
    for path in paths {
        let value = prober.get(&path).await;
        out.push((path, value));
    }
    out
}

struct Ids {
    task: String,
    risk: String,
    vendor: String,
    policy: String,
    context: String,
    comment: String,
    automation: String,
    member: String,
    connection: String,
}

async fn every_write_route_refuses_bad_json(server: &TestServer) {
    let tenant = server.tenant().await;
    let api = &tenant.session;
    let task = create(api, "/v1/tasks", json!({"title": "Task"})).await;
    let risk = create(api, "/v1/risks", json!({"title": "Risk", "description": "d", "category": "technology"})).await;
    let vendor = create(api, "/v1/vendors", json!({"name": "Vendor", "description": "d"})).await;
    let content = json!([{"type": "paragraph", "content": [{"type": "text", "text": "hi"}]}]);
    let policy = create(api, "/v1/policies", json!({"name": "Policy", "content": content})).await;
    let context = create(api, "/v1/context", json!({"question": "Q?", "answer": "A."})).await;
    let comment = create(api, "/v1/comments", json!({"content": "c", "entityId": task, "entityType": "task"})).await;
    let automation = create(
        api,
        "/v1/browser/automations",
        json!({"taskId": task, "name": "A", "targetUrl": "http://127.0.0.1:9/", "instruction": "i"}),
    )
    .await;
    let shodan = api.get("/v1/integrations/providers/shodan").await.ok(200);
    let key_field = shodan["credentialFields"][0]["id"].as_str().unwrap_or_else(|| panic!("{shodan}")).to_owned();
    let mut credentials = Map::new();
    credentials.insert(key_field.clone(), json!("k-123"));
    let connection = create(
        api,
        "/v1/integrations/connections",
        json!({"providerSlug": "shodan", "credentials": credentials.clone()}),
    )
    .await;
    let ids = Ids {
        task,
        risk,
        vendor,
        policy,
        context,
        comment,
        automation,
        member: tenant.owner_member_id.clone(),
        connection,
    };

    let mut prober = Prober::new(server, &tenant).await;
    let before = snapshot(&mut prober, &ids).await;

    let routes = json_routes(&ids, &key_field, None);
    let mut cases: Vec<Case> = routes.iter().flat_map(cases_for).collect();

    // Path routes with ids that name nothing of their kind, with a valid, a malformed and a
    // mistyped body; and the body-less routes with them, with no body and with garbage.
    // (method, path before the id, the id's prefix, a real id, a real id of another kind, a valid body)
    let path_routes: Vec<PathRoute> = vec![
        (Method::PATCH, "/v1/risks/", "rsk_", &ids.risk, &ids.vendor, Some(json!({}))),
        (Method::PATCH, "/v1/vendors/", "vnd_", &ids.vendor, &ids.risk, Some(json!({}))),
        (Method::PATCH, "/v1/policies/", "pol_", &ids.policy, &ids.risk, Some(json!({}))),
        (Method::PATCH, "/v1/context/", "ctx_", &ids.context, &ids.risk, Some(json!({}))),
        (Method::PATCH, "/v1/tasks/", "tsk_", &ids.task, &ids.risk, Some(json!({}))),
        (Method::PATCH, "/v1/people/", "mem_", &ids.member, &ids.risk, Some(json!({}))),
        (Method::PUT, "/v1/comments/", "cmt_", &ids.comment, &ids.task, Some(json!({"content": "x"}))),
        (Method::PATCH, "/v1/browser/automations/", "aut_", &ids.automation, &ids.task, Some(json!({}))),
        (
            Method::PUT,
            "/v1/integrations/oauth-apps/",
            "",
            "github",
            "shodan",
            Some(json!({"clientId": "c", "clientSecret": "s"})),
        ),
        (Method::DELETE, "/v1/risks/", "rsk_", &ids.risk, &ids.vendor, None),
        (Method::DELETE, "/v1/vendors/", "vnd_", &ids.vendor, &ids.risk, None),
        (Method::DELETE, "/v1/policies/", "pol_", &ids.policy, &ids.risk, None),
        (Method::DELETE, "/v1/context/", "ctx_", &ids.context, &ids.risk, None),
        (Method::DELETE, "/v1/tasks/", "tsk_", &ids.task, &ids.risk, None),
        (Method::DELETE, "/v1/comments/", "cmt_", &ids.comment, &ids.task, None),
        (Method::DELETE, "/v1/browser/automations/", "aut_", &ids.automation, &ids.task, None),
        (Method::DELETE, "/v1/integrations/connections/", "con_", &ids.connection, &ids.task, None),
        (Method::DELETE, "/v1/integrations/oauth-apps/", "", "github", "shodan", None),
    ];
    for (method, prefix_path, prefix, real, other, body) in &path_routes {
        for (label, id) in wrong_ids(prefix, real, other) {
            let path = format!("{prefix_path}{id}");
            let mut push = |kind: String, content_type: Option<&'static str>, body: Vec<u8>| {
                cases.push(Case {
                    method: method.clone(),
                    path: path.clone(),
                    content_type,
                    body,
                    kind,
                    expect: Expect::Any4xx,
                });
            };
            match body {
                Some(valid) => {
                    push(format!("{label} in path, valid body"), Some(JSON), valid.to_string().into_bytes());
                    push(format!("{label} in path, {{\"a\":}}"), Some(JSON), b"{\"a\":}".to_vec());
                    push(format!("{label} in path, text/plain"), Some("text/plain"), valid.to_string().into_bytes());
                }
                None => {
                    push(format!("{label} in path, no body"), None, Vec::new());
                    push(format!("{label} in path, garbage body"), Some(JSON), b"{\"a\":}".to_vec());
                }
            }
        }
    }
    for (suffix, other) in [("/runs", &ids.task)] {
        for (label, id) in wrong_ids("aut_", &ids.automation, other) {
            for (kind, content_type, body) in
                [("no body", None, Vec::new()), ("garbage body", Some(JSON), b"[".to_vec())]
            {
                cases.push(Case {
                    method: Method::POST,
                    path: format!("/v1/browser/automations/{id}{suffix}"),
                    content_type,
                    body,
                    kind: format!("{label} in path, {kind}"),
                    expect: Expect::Any4xx,
                });
            }
        }
    }
    for (label, id) in wrong_ids("con_", &ids.connection, &ids.task) {
        for (kind, content_type, body) in [("no body", None, Vec::new()), ("garbage body", Some(JSON), b"[".to_vec())] {
            cases.push(Case {
                method: Method::POST,
                path: format!("/v1/integrations/connections/{id}/check"),
                content_type,
                body,
                kind: format!("{label} in path, {kind}"),
                expect: Expect::Any4xx,
            });
        }
    }

    let mut total = cases.len();
    for case in cases {
        prober.probe(case).await;
    }
    total += transport_cases(&mut prober, &ids).await;
    // The JSON routes once more with the owner's API key (chat history takes sessions only).
    let key = server.admin().create_api_key(&tenant.org_id, &tenant.owner.id).await;
    prober.api_key = Some(key["key"].as_str().unwrap_or_else(|| panic!("no key in {key}")).to_owned());
    let routes = json_routes(&ids, &key_field, Some(&tenant.owner.id));
    let api_cases: Vec<Case> =
        routes.iter().filter(|r| !r.path.contains("assistant-chat")).flat_map(cases_for).collect();
    total += api_cases.len();
    for case in api_cases {
        prober.probe(case).await;
    }
    prober.api_key = None;
    let after = snapshot(&mut prober, &ids).await;
    let mut failures = std::mem::take(&mut prober.failures);
    for ((path, was), (_, now)) in before.iter().zip(&after) {
        if was != now {
            failures.push(format!(
                "STATE CHANGED: GET {path}\n  before: {}\n  after:  {}",
                lossy(was.to_string().as_bytes(), 1500),
                lossy(now.to_string().as_bytes(), 1500)
            ));
        }
    }
    eprintln!("bad_input: {total} corpus requests, {} requests in all, {} failures", prober.sent, failures.len());
    assert!(
        failures.is_empty(),
        "{} of {total} bad requests were answered wrongly:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The JSON write routes, each with a valid body and its fields.
/// `author`: the `userId` comments need with an API key.
fn json_routes(ids: &Ids, key_field: &str, author: Option<&str>) -> Vec<JsonRoute> {
    let mut comment = json!({"content": "c2", "entityId": ids.task, "entityType": "task"});
    if let Some(author) = author {
        comment["userId"] = json!(author);
    }
    let mem = Ty::Id("mem_");
    let risk_fields = || {
        vec![
            f("title", Ty::Str(255)).with(&["\"\"", "\"   \""]),
            f("description", Ty::Str(10_000)),
            f("category", Ty::Enum),
            Field { nullable: true, ..f("department", Ty::Enum) },
            f("status", Ty::Enum),
            f("likelihood", Ty::Enum),
            f("impact", Ty::Enum),
            f("residualLikelihood", Ty::Enum),
            f("residualImpact", Ty::Enum),
            nullable("treatmentStrategyDescription", Ty::Str(10_000)),
            f("treatmentStrategy", Ty::Enum),
            nullable("assigneeId", mem),
        ]
    };
    let vendor_fields = || {
        vec![
            f("name", Ty::Str(255)).with(&["\"\""]),
            f("description", Ty::Str(10_000)),
            f("category", Ty::Enum),
            f("status", Ty::Enum),
            f("inherentProbability", Ty::Enum),
            f("inherentImpact", Ty::Enum),
            f("residualProbability", Ty::Enum),
            f("residualImpact", Ty::Enum),
            nullable("website", Ty::Str(2048)).with(&["\"notaurl\"", "\"ftp://x.test/\"", "\"javascript:alert(1)\""]),
            nullable("assigneeId", mem),
        ]
    };
    let policy_fields = || {
        vec![
            f("name", Ty::Str(255)).with(&["\"\""]),
            f("description", Ty::Str(10_000)),
            f("status", Ty::Enum),
            f("content", Ty::Nodes),
            f("frequency", Ty::Enum),
            f("department", Ty::Enum),
            f("isRequiredToSign", Ty::Bool),
            f("reviewDate", Ty::Timestamp),
            f("isArchived", Ty::Bool),
            nullable("assigneeId", mem),
            nullable("approverId", mem),
            nullable("policyTemplateId", Ty::Str(0)),
            f("signedBy", Ty::Strings).with(&["[\"usr_x\"]"]),
        ]
    };
    let context_fields = || {
        let many: Vec<String> = (0..51).map(|i| format!("\"t{i}\"")).collect();
        let many = format!("[{}]", many.join(","));
        let long_tag = format!("[\"{}\"]", "a".repeat(65));
        vec![
            f("question", Ty::Str(2_000)).with(&["\"\""]),
            f("answer", Ty::Str(20_000)).with(&["\"\""]),
            f("tags", Ty::Strings).with(&["[\"a\",\"a\"]", "[\"\"]", &many, &long_tag]),
        ]
    };
    let task_fields = || {
        vec![
            f("title", Ty::Str(255)).with(&["\"\""]),
            f("description", Ty::Str(10_000)),
            f("status", Ty::Enum),
            nullable("assigneeId", mem),
        ]
    };
    let label = || nullable("deviceManagerLabelId", Ty::Int);
    let automation_fields = |patch: bool| {
        let mut fields = vec![
            f("name", Ty::Str(255)).with(&["\"\""]),
            f("targetUrl", Ty::Str(2048)).with(&[
                "\"notaurl\"",
                "\"ftp://127.0.0.1/\"",
                "\"http://169.254.169.254/latest\"",
                "\"http://10.0.0.1/\"",
                "\"file:///etc/passwd\"",
            ]),
            f("instruction", Ty::Str(10_000)).with(&["\"\""]),
            nullable("description", Ty::Str(2_000)),
            nullable("schedule", Ty::Str(0)).with(&[
                "\"not cron\"",
                "\"* * * * * * *\"",
                "\"@never\"",
                "\"* * * * * *\"",
                "\"61 * * * *\"",
            ]),
        ];
        if patch {
            fields.push(f("isEnabled", Ty::Bool));
        } else {
            fields.insert(0, f("taskId", Ty::Id("tsk_")));
        }
        fields
    };
    let route = |method: Method, path: String, base: Value, fields: Vec<Field>| JsonRoute {
        method,
        path,
        base,
        fields,
        default_limit: true,
    };
    let content = json!([{"type": "paragraph", "content": [{"type": "text", "text": "hi"}]}]);
    let mut credentials = Map::new();
    credentials.insert(key_field.to_owned(), json!("k-456"));
    vec![
        route(
            Method::POST,
            "/v1/risks".into(),
            json!({"title": "New", "description": "d", "category": "technology"}),
            risk_fields(),
        ),
        route(Method::PATCH, format!("/v1/risks/{}", ids.risk), json!({}), risk_fields()),
        route(Method::POST, "/v1/vendors".into(), json!({"name": "New", "description": "d"}), vendor_fields()),
        route(Method::PATCH, format!("/v1/vendors/{}", ids.vendor), json!({}), vendor_fields()),
        route(Method::POST, "/v1/policies".into(), json!({"name": "New", "content": content}), policy_fields()),
        route(Method::PATCH, format!("/v1/policies/{}", ids.policy), json!({}), policy_fields()),
        route(Method::POST, "/v1/context".into(), json!({"question": "Q2?", "answer": "A2"}), context_fields()),
        route(Method::PATCH, format!("/v1/context/{}", ids.context), json!({}), context_fields()),
        route(Method::POST, "/v1/tasks".into(), json!({"title": "New"}), task_fields()),
        route(Method::PATCH, format!("/v1/tasks/{}", ids.task), json!({}), task_fields()),
        route(
            Method::PATCH,
            format!("/v1/people/{}", ids.member),
            json!({}),
            vec![
                f("userId", Ty::Id("usr_")),
                f("role", Ty::Str(100)).with(&["\"\""]),
                f("department", Ty::Enum),
                f("isActive", Ty::Bool),
                label(),
            ],
        ),
        route(
            Method::PATCH,
            "/v1/organization".into(),
            json!({}),
            vec![
                f("name", Ty::Str(255)).with(&["\"\""]),
                f("slug", Ty::Str(64)).with(&["\"\"", "\"Bad Slug\"", "\"-x-\"", "\"ä\""]),
                nullable("logo", Ty::Str(2048)).with(&["\"notaurl\"", "\"ftp://x.test/\""]),
                nullable("metadata", Ty::Str(10_000)).with(&["\"{not json\""]),
                nullable("website", Ty::Str(2048)).with(&["\"notaurl\""]),
                f("onboardingCompleted", Ty::Bool),
                f("hasAccess", Ty::Bool),
                nullable("deviceManagerLabelId", Ty::Int),
                f("isDeviceManagerSetupCompleted", Ty::Bool),
                nullable("primaryColor", Ty::Str(7)).with(&["\"red\"", "\"#12345\"", "\"#ggg\""]),
            ],
        ),
        JsonRoute {
            default_limit: false,
            ..route(
                Method::POST,
                "/v1/comments".into(),
                comment,
                vec![
                    f("content", Ty::Str(2_000)).with(&["\"\""]),
                    f("entityId", Ty::Id("tsk_")).with(&[&Value::String(ids.risk.clone()).to_string()]),
                    f("entityType", Ty::Enum),
                    nullable("contextUrl", Ty::Str(2048)).with(&["\"notaurl\"", "\"javascript:alert(1)\""]),
                    nullable("attachments", Ty::Attachments),
                    nullable("userId", Ty::Id("usr_")),
                ],
            )
        },
        route(
            Method::PUT,
            format!("/v1/comments/{}", ids.comment),
            json!({"content": "edited"}),
            vec![f("content", Ty::Str(2_000)).with(&["\"\""])],
        ),
        JsonRoute {
            default_limit: false,
            ..route(
                Method::PUT,
                "/v1/assistant-chat/history".into(),
                json!({"messages": []}),
                vec![f("messages", Ty::Messages)],
            )
        },
        route(
            Method::POST,
            "/v1/browser/automations".into(),
            json!({"taskId": ids.task, "name": "New", "targetUrl": "http://127.0.0.1:9/", "instruction": "i"}),
            automation_fields(false),
        ),
        route(Method::PATCH, format!("/v1/browser/automations/{}", ids.automation), json!({}), automation_fields(true)),
        route(
            Method::PUT,
            "/v1/integrations/oauth-apps/github".into(),
            json!({"clientId": "cid", "clientSecret": "secret"}),
            vec![
                f("clientId", Ty::Str(0)),
                nullable("clientSecret", Ty::Str(0)),
                nullable("customSettings", Ty::StrMap).with(&["{\"NO_SUCH_SETTING\":\"x\"}"]),
            ],
        ),
        route(
            Method::PUT,
            "/v1/integrations/oauth-apps/shodan".into(),
            json!({"clientId": "cid", "clientSecret": "secret"}),
            vec![f("clientId", Ty::Str(0))],
        ),
        route(
            Method::POST,
            "/v1/integrations/oauth/start".into(),
            json!({"providerSlug": "github"}),
            vec![
                f("providerSlug", Ty::Str(0)).with(&["\"no-such-provider\"", "\"shodan\"", "\"\"", "\"../github\""]),
                nullable("redirectUrl", Ty::Str(0)).with(&["\"https://evil.test/\"", "\"notaurl\"", "\"//evil.test\""]),
            ],
        ),
        route(
            Method::POST,
            "/v1/integrations/connections".into(),
            json!({"providerSlug": "shodan", "credentials": credentials}),
            vec![
                f("providerSlug", Ty::Str(0)).with(&["\"no-such-provider\"", "\"github\"", "\"\""]),
                f("credentials", Ty::StrMap).with(&["{}", "{\"zz\":\"x\"}"]),
            ],
        ),
    ]
}

/// The connect page's form POSTs with malformed forms: 4xx HTML pages, never a 5xx, nothing stored.
async fn the_connect_form_refuses_malformed_bodies(server: &TestServer) {
    let tenant = server.tenant().await;
    let mut prober = Prober::new(server, &tenant).await;
    let org = tenant.org_id.clone();
    let shodan = tenant.session.get("/v1/integrations/providers/shodan").await.ok(200);
    let key = shodan["credentialFields"][0]["id"].as_str().unwrap_or_else(|| panic!("{shodan}")).to_owned();
    let page_path = format!("/integrations/shodan/connect?organizationId={org}");
    let (status, _, page) = prober.send(Method::GET, &page_path, None, Vec::new()).await;
    assert_eq!(status, 200, "GET {page_path}: {}", lossy(&page, 500));
    let page = String::from_utf8_lossy(&page).into_owned();
    let csrf = csrf_token(&page).unwrap_or_else(|| panic!("no csrf_token in the page:\n{page}"));
    let csrf = url::form_urlencoded::byte_serialize(csrf.as_bytes()).collect::<String>();
    let connections_before = prober.get("/v1/integrations/connections").await;

    let big = format!("csrf_token={csrf}&cred.{key}={}", "a".repeat(70 * 1024));
    let huge = format!("csrf_token={csrf}&cred.{key}={}", "a".repeat(300 * 1024));
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("invalid percent-encoding, no token", b"%ZZ%=%&cred.x=%G1%".to_vec()),
        ("invalid percent-encoding in value", format!("csrf_token={csrf}&cred.{key}=%ZZ%G1%").into_bytes()),
        ("invalid percent-encoding in name", format!("csrf_token={csrf}&cred.{key}%ZZ=1&%=%").into_bytes()),
        ("percent-encoded invalid UTF-8", format!("csrf_token={csrf}&cred.{key}=%FF%FE%C3%28").into_bytes()),
        (
            "raw invalid UTF-8",
            [format!("csrf_token={csrf}&cred.{key}=").as_bytes(), &[0xff, 0xfe, 0xc3, 0x28]].concat(),
        ),
        ("percent-encoded token broken", format!("csrf_token=%ZZ{csrf}&cred.{key}=k").into_bytes()),
        ("only separators", format!("csrf_token={csrf}&&&===&").into_bytes()),
        ("70 KiB body", big.into_bytes()),
        ("300 KiB body", huge.into_bytes()),
        ("JSON body", format!("{{\"csrf_token\":\"{csrf}\"}}").into_bytes()),
        ("empty body", Vec::new()),
    ];
    let mut total = 0;
    for (path, content_type) in [
        (page_path.clone(), Some("application/x-www-form-urlencoded")),
        (format!("/integrations/github/connect/oauth?organizationId={org}"), Some("application/x-www-form-urlencoded")),
        ("/integrations/shodan/connect?organizationId=%ZZ".to_owned(), Some("application/x-www-form-urlencoded")),
        ("/integrations/shodan/connect?organizationId=org_%FF".to_owned(), None),
        ("/integrations/%FF/connect?organizationId=x".to_owned(), Some("text/plain")),
    ] {
        for (kind, body) in &bodies {
            total += 1;
            let (status, got_type, bytes) = prober.send(Method::POST, &path, content_type, body.clone()).await;
            if (200..300).contains(&status) {
                // Keep the cases independent: a live connection would turn the next ones into 409s.
                disconnect_all(&mut prober).await;
            }
            let mut wrong = Vec::new();
            if !(400..500).contains(&status) {
                wrong.push(format!("status {status} is not a 4xx"));
            }
            if kind.ends_with("KiB body") && status != 413 {
                wrong.push(format!("status {status}, expected 413"));
            }
            if !got_type.starts_with("text/html") {
                wrong.push(format!("Content-Type {got_type:?}"));
            }
            if !wrong.is_empty() {
                prober.failures.push(format!(
                    "POST {} [{kind}]: {} — {status} {got_type}: {}",
                    short(&path),
                    wrong.join("; "),
                    lossy(&bytes, 200)
                ));
            }
        }
    }
    let connections_after = prober.get("/v1/integrations/connections").await;
    let mut failures = std::mem::take(&mut prober.failures);
    if connections_before != connections_after {
        failures
            .push(format!("STATE CHANGED: connections\n  before: {connections_before}\n  after:  {connections_after}"));
    }
    eprintln!("bad_input connect form: {total} requests, {} failures", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {total} malformed forms were answered wrongly:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The value of the page's `csrf_token` input.
fn csrf_token(page: &str) -> Option<String> {
    let at = page.find("name=\"csrf_token\"")?;
    let tag_start = page[..at].rfind('<')?;
    let tag_end = at + page[at..].find('>')?;
    let tag = &page[tag_start..tag_end];
    let value_at = tag.find("value=\"")? + 7;
    let value_end = value_at + tag[value_at..].find('"')?;
    Some(tag[value_at..value_end].replace("&amp;", "&"))
}

/// Framing a client library would never send: chunked bodies over the limit or broken, and
/// `Content-Length` values that lie. Sent over a raw TCP connection; returns how many were sent.
async fn transport_cases(prober: &mut Prober, ids: &Ids) -> usize {
    let over = format!("{{\"title\":\"{}\"}}", "a".repeat(BODY_LIMIT));
    let chunked_over = {
        let mut body = Vec::new();
        for chunk in over.as_bytes().chunks(64 * 1024) {
            body.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            body.extend_from_slice(chunk);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(b"0\r\n\r\n");
        body
    };
    let cases: Vec<(&str, &str, Vec<u8>, Expect)> = vec![
        ("chunked body over 1 MiB", "Transfer-Encoding: chunked\r\n", chunked_over, Expect::Exactly(413)),
        (
            "chunked, bad chunk size",
            "Transfer-Encoding: chunked\r\n",
            b"zz\r\n{}\r\n0\r\n\r\n".to_vec(),
            Expect::Any4xx,
        ),
        ("chunked, truncated", "Transfer-Encoding: chunked\r\n", b"10\r\n{\"ti".to_vec(), Expect::Any4xx),
        ("Content-Length 2^64", "Content-Length: 18446744073709551616\r\n", b"{}".to_vec(), Expect::FramingRefused),
        ("Content-Length negative", "Content-Length: -1\r\n", b"{}".to_vec(), Expect::FramingRefused),
        ("Content-Length 2 GiB, short body", "Content-Length: 2147483648\r\n", b"{}".to_vec(), Expect::Exactly(413)),
        ("Content-Length longer than body", "Content-Length: 100\r\n", b"{\"title\":\"x\"}".to_vec(), Expect::Any4xx),
        (
            "Content-Length twice, different",
            "Content-Length: 2\r\nContent-Length: 13\r\n",
            b"{\"title\":\"x\"}".to_vec(),
            Expect::FramingRefused,
        ),
    ];
    let routes = [(Method::POST, "/v1/tasks".to_owned()), (Method::PATCH, format!("/v1/tasks/{}", ids.task))];
    let mut sent = 0;
    for (method, path) in &routes {
        for (kind, headers, body, expect) in &cases {
            sent += 1;
            prober.sent += 1;
            let head = format!(
                "{method} {path} HTTP/1.1\r\nHost: {host}\r\nCookie: session_token={token}\r\nX-Organization-Id: {org}\r\n\
                 Content-Type: application/json\r\nConnection: close\r\n{headers}\r\n",
                host = prober.base_url.trim_start_matches("http://"),
                token = prober.token,
                org = prober.org,
            );
            let (status, content_type, bytes) = raw_exchange(&prober.base_url, [head.as_bytes(), body].concat()).await;
            prober.judge(&format!("{method} {path} [raw: {kind}]"), *expect, status, &content_type, &bytes);
        }
    }
    sent
}

/// Writes `request` to the server over a new connection and reads the answer until it closes (or
/// 10 s pass). Status 0: no HTTP answer at all.
async fn raw_exchange(base_url: &str, request: Vec<u8>) -> (u16, String, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base_url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    // The server may answer and close before the whole body is written: that is fine.
    let _ = stream.write_all(&request).await;
    let _ = stream.shutdown().await;
    let mut response = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    if read.is_err() && response.is_empty() {
        return (0, String::new(), b"no answer within 10 s".to_vec());
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return (0, String::new(), response);
    };
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let content_type = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("content-type")).map(|(_, v)| v.trim()))
        .unwrap_or_default()
        .to_owned();
    (status, content_type, body.as_bytes().to_vec())
}

/// Disconnects every live connection of the prober's organization.
async fn disconnect_all(prober: &mut Prober) {
    let list = prober.get("/v1/integrations/connections").await;
    for connection in list["body"]["data"].as_array().cloned().unwrap_or_default() {
        if connection["status"] != "disconnected" {
            let id = connection["id"].as_str().unwrap_or_default();
            prober.send(Method::DELETE, &format!("/v1/integrations/connections/{id}"), None, Vec::new()).await;
        }
    }
}
