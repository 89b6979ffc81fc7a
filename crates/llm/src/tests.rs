//! The client against a real HTTP server on loopback (wiremock): the request it sends, the
//! replies it understands, and how each failure is classified without the key or the body.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

const KEY: &str = "sk-test-key-0123456789";
/// What a misbehaving server puts in its error bodies: it must never reach an error message.
const LEAKY_BODY: &str = "upstream said: Bearer sk-test-key-0123456789 and the prompt was hunter2";

fn model(server: &MockServer) -> ChatCompletionsModel {
    ChatCompletionsModel::new(LlmSettings::new(format!("{}/v1", server.uri()), "test-model", Some(KEY.into()))).unwrap()
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "click",
        description: "Clicks an element",
        parameters: json!({"type": "object", "properties": {"ref": {"type": "integer"}}, "required": ["ref"]}),
    }]
}

async fn answer(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST")).and(path("/v1/chat/completions")).respond_with(response).mount(server).await;
}

async fn complete(server: &MockServer) -> Result<ModelReply, ModelError> {
    model(server).complete(&[ChatMessage::user("Open the settings")], &tools()).await
}

fn completion(tool_calls: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": tool_calls}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128},
    }))
}

#[track_caller]
fn assert_clean(error: &ModelError) {
    let text = error.to_string();
    for leak in [KEY, "hunter2", "upstream said"] {
        assert!(!text.contains(leak), "{text:?} contains {leak:?}");
    }
}

#[tokio::test]
async fn sends_the_conversation_and_tools_with_the_key_and_parses_tool_calls() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(completion(json!([
            {"id": "call_a", "type": "function", "function": {"name": "click", "arguments": "{\"ref\": 3}"}}
        ])))
        .mount(&server)
        .await;
    let call = ToolCall { id: "call_0".into(), name: "click".into(), arguments: json!({"ref": 1}) };
    let history = [
        ChatMessage::system("You operate a browser."),
        ChatMessage::user("Open the settings"),
        ChatMessage::assistant(&ModelReply { content: None, tool_calls: vec![call], usage: None }),
        ChatMessage::tool_result("call_0", "clicked"),
    ];
    let reply = model(&server).complete(&history, &tools()).await.unwrap();
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall { id: "call_a".into(), name: "click".into(), arguments: json!({"ref": 3}) }]
    );
    assert_eq!(reply.usage, Some(TokenUsage { prompt_tokens: 120, completion_tokens: 8 }));

    let sent: Value = server.received_requests().await.unwrap()[0].body_json().unwrap();
    assert_eq!(sent["model"], "test-model");
    assert_eq!(
        sent["tools"][0],
        json!({"type": "function", "function": {
        "name": "click", "description": "Clicks an element", "parameters": tools()[0].parameters}})
    );
    let roles: Vec<&str> = sent["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(sent["messages"][2]["tool_calls"][0]["function"]["arguments"], "{\"ref\":1}");
    assert_eq!(sent["messages"][3]["tool_call_id"], "call_0");
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_model_unavailable() {
    for status in [500, 502, 503, 429] {
        let server = MockServer::start().await;
        answer(&server, ResponseTemplate::new(status).set_body_string(LEAKY_BODY)).await;
        let error = complete(&server).await.unwrap_err();
        assert!(matches!(error, ModelError::Unavailable(_)), "{status}: {error:?}");
        assert!(error.to_string().starts_with("model unavailable: "), "{error}");
        assert!(error.to_string().contains(&status.to_string()), "{error}");
        assert_clean(&error);
    }
}

#[tokio::test]
async fn client_errors_and_redirects_are_refusals() {
    for status in [400, 401, 404, 302] {
        let server = MockServer::start().await;
        let response =
            ResponseTemplate::new(status).set_body_string(LEAKY_BODY).insert_header("location", "http://127.0.0.1:9/");
        answer(&server, response).await;
        let error = complete(&server).await.unwrap_err();
        assert!(matches!(error, ModelError::Refused(_)), "{status}: {error:?}");
        assert_clean(&error);
    }
}

#[tokio::test]
async fn a_closed_port_and_a_slow_server_are_model_unavailable() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let settings = LlmSettings::new(format!("http://127.0.0.1:{closed}/v1"), "m", Some(KEY.into()));
    let error = ChatCompletionsModel::new(settings).unwrap().complete(&[], &tools()).await.unwrap_err();
    assert!(matches!(error, ModelError::Unavailable(_)), "{error:?}");
    assert_clean(&error);

    let server = MockServer::start().await;
    answer(&server, completion(json!([])).set_delay(Duration::from_secs(5))).await;
    let mut settings = LlmSettings::new(format!("{}/v1", server.uri()), "m", None);
    settings.timeout = Duration::from_millis(200);
    let error = ChatCompletionsModel::new(settings).unwrap().complete(&[], &tools()).await.unwrap_err();
    assert_eq!(error, ModelError::Unavailable("no answer in time".into()));
}

#[tokio::test]
async fn malformed_answers_and_tool_calls_are_named_without_quoting_them() {
    let cases = [
        (ResponseTemplate::new(200).set_body_string(LEAKY_BODY), "not a chat completion"),
        (ResponseTemplate::new(200).set_body_json(json!({"choices": []})), "no choices"),
        (completion(json!([{"id": "c", "function": {"name": "click", "arguments": "{ref: hunter2"}}])), "not JSON"),
        (
            completion(json!([{"id": "c", "function": {"name": "click", "arguments": "[\"hunter2\"]"}}])),
            "not a JSON object",
        ),
        (completion(json!([{"id": "c", "function": {"arguments": "{}"}}])), "no function name"),
        (completion(json!([{"id": "c", "type": "function"}])), "no function"),
    ];
    for (response, expected) in cases {
        let server = MockServer::start().await;
        answer(&server, response).await;
        let error = complete(&server).await.unwrap_err();
        assert!(matches!(error, ModelError::Malformed(_)), "{expected}: {error:?}");
        assert!(error.to_string().contains(expected), "{error} lacks {expected:?}");
        assert_clean(&error);
    }
}

#[test]
fn settings_are_checked_and_the_key_never_shows() {
    let bad = |url: &str| ChatCompletionsModel::new(LlmSettings::new(url, "m", None)).unwrap_err();
    for url in ["ftp://x.test/v1", "http://user:pw@x.test/v1", "not a url", "http://x.test/v1?key=1"] {
        assert!(matches!(bad(url), LlmConfigError::InvalidUrl), "{url}");
    }
    assert!(matches!(
        ChatCompletionsModel::new(LlmSettings::new("http://x.test", " ", None)).unwrap_err(),
        LlmConfigError::MissingModel
    ));
    let model = ChatCompletionsModel::new(LlmSettings::new("http://x.test/v1/", "m", Some(KEY.into()))).unwrap();
    assert_eq!(model.endpoint.as_str(), "http://x.test/v1/chat/completions");
    assert!(!format!("{model:?}").contains(KEY));
    let exact = ChatCompletionsModel::new(LlmSettings::new("http://x.test/v1/chat/completions", "m", None)).unwrap();
    assert_eq!(exact.endpoint.as_str(), "http://x.test/v1/chat/completions");
}
