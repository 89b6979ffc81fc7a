//! The agent executor: carries out a free-text instruction with an OpenAI-compatible model that
//! drives the page through tools, bounded in steps, tokens and time.
//!
//! Each turn the model gets a compact snapshot of the page (URL, title, visible text, the
//! interactive elements with their references) and calls one tool: `navigate`, `click`, `type`,
//! `type_secret`, `press`, `scroll` or `finish`. The runner carries the call out on the page,
//! records it as a run step, and tells the model what happened. The model never sees a secret:
//! it names one (`type_secret`), the runner types the value, and any value typed so far is masked
//! out of every later snapshot, tool result and step.

use std::sync::Arc;
use std::time::Instant;

use compliance_domain::automation::{BrowserAutomation, StepOutcome, Verdict, is_on};
use compliance_ports::{
    AgentModel, BrowserPage, ChatMessage, ChatRole, Clickable, Field, ModelReply, PageError, PageSnapshot,
    ScrollDirection, ToolCall, ToolSpec,
};
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::automation_recorder::{RunRecorder, StepRecord};
use crate::automation_secrets::{AutomationSecrets, NotTyped, TypedSecrets};
use crate::automation_steps::off_origins;
use crate::{AutomationSettings, Ports};

/// The message of a free-text run when no model is configured.
pub(crate) const NO_MODEL: &str = "free-text instructions need AUTOMATION_LLM_URL";

/// Bounds of an agent run, besides the run's own timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentSettings {
    /// `AUTOMATION_AGENT_MAX_STEPS`: the most turns (one tool call each) a run may take.
    pub max_steps: usize,
    /// `AUTOMATION_AGENT_MAX_TOKENS`: the most tokens (prompt and completion, as the server counts
    /// them in `usage`) a run may use.
    pub max_tokens: u64,
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self { max_steps: 20, max_tokens: 200_000 }
    }
}

pub(crate) struct AgentExecutor {
    model: Option<Arc<dyn AgentModel>>,
    settings: AgentSettings,
}

/// What one agent run works with.
pub(crate) struct AgentRun<'a> {
    pub page: &'a mut dyn BrowserPage,
    pub automation: &'a BrowserAutomation,
    pub instruction: &'a str,
    pub recorder: &'a mut RunRecorder,
    pub secrets: &'a AutomationSecrets,
    /// The run's deadline: the agent stops before it.
    pub deadline: Instant,
    /// Where `navigate` may go: the target's origin and the automation's `allowedOrigins`.
    pub origins: &'a [String],
}

impl AgentExecutor {
    pub(crate) fn new(ports: &Ports, settings: &AutomationSettings) -> Self {
        Self { model: ports.agent_model.clone(), settings: settings.agent }
    }

    /// `Ok(verdict)` when the model finished; `Err(message)` when the run could not be carried
    /// out (no model configured, the model failed, the budget ran out).
    pub(crate) async fn run(&self, run: AgentRun<'_>) -> Result<Verdict, String> {
        let Some(model) = &self.model else { return Err(NO_MODEL.to_owned()) };
        let names = run.secrets.names(run.automation).await;
        let mut agent = Agent {
            model: model.as_ref(),
            settings: self.settings,
            page: run.page,
            automation: run.automation,
            recorder: run.recorder,
            secrets: run.secrets,
            deadline: run.deadline,
            origins: run.origins,
            conversation: vec![ChatMessage::system(system_prompt(&names)), ChatMessage::user(task(run.instruction))],
            typed: TypedSecrets::default(),
            tokens: 0,
        };
        agent.work().await
    }
}

/// One run of the loop.
struct Agent<'a> {
    model: &'a dyn AgentModel,
    settings: AgentSettings,
    page: &'a mut dyn BrowserPage,
    automation: &'a BrowserAutomation,
    recorder: &'a mut RunRecorder,
    secrets: &'a AutomationSecrets,
    deadline: Instant,
    origins: &'a [String],
    conversation: Vec<ChatMessage>,
    /// The secrets typed so far, masked out of everything the model reads and every step.
    typed: TypedSecrets,
    tokens: u64,
}

/// What a turn came to.
enum Turn {
    Finished(Verdict),
    Continue,
}

impl Agent<'_> {
    async fn work(&mut self) -> Result<Verdict, String> {
        for turn in 1..=self.settings.max_steps {
            if Instant::now() >= self.deadline {
                return Err("the agent did not finish within the run's time limit".to_owned());
            }
            if self.tokens >= self.settings.max_tokens {
                return Err(format!(
                    "the agent used its budget of {} tokens without finishing",
                    self.settings.max_tokens
                ));
            }
            if self.recorder.is_full() {
                return Err("the agent recorded as many steps as a run may hold without finishing".to_owned());
            }
            let snapshot = self.page.snapshot().await.map_err(|e| format!("the page could not be read: {e}"))?;
            self.show(self.render(&snapshot, turn));
            let reply = self.ask().await?;
            if let Turn::Finished(verdict) = self.act(&reply, &snapshot).await? {
                return Ok(verdict);
            }
        }
        Err(format!("the agent did not finish within {} steps", self.settings.max_steps))
    }

    /// Adds a page view; earlier views are cut to a line, so the prompt stays the size of one page.
    fn show(&mut self, view: String) {
        for message in self.conversation.iter_mut().skip(2) {
            if message.role == ChatRole::User && message.content.starts_with(VIEW_HEADER) {
                message.content = format!("{VIEW_HEADER} (an earlier view, replaced by the newer one below)");
            }
        }
        self.conversation.push(ChatMessage::user(view));
    }

    async fn ask(&mut self) -> Result<ModelReply, String> {
        let deadline = tokio::time::Instant::from_std(self.deadline);
        let reply = match tokio::time::timeout_at(deadline, self.model.complete(&self.conversation, &tools())).await {
            Ok(answer) => answer.map_err(|e| e.to_string())?,
            Err(_) => return Err("the agent did not finish within the run's time limit".to_owned()),
        };
        self.tokens = self.tokens.saturating_add(reply.usage.map_or(0, |u| u.total()));
        self.conversation.push(ChatMessage::assistant(&reply));
        Ok(reply)
    }

    /// Carries out the turn's first tool call; further calls of the same turn are answered as not
    /// carried out (the page they were chosen for may have changed).
    async fn act(&mut self, reply: &ModelReply, snapshot: &PageSnapshot) -> Result<Turn, String> {
        let Some((call, rest)) = reply.tool_calls.split_first() else {
            let started = Instant::now();
            self.record("none", None, StepOutcome::Failed, "the model called no tool".into(), started, false).await;
            self.conversation.push(ChatMessage::user("Call exactly one of the tools."));
            return Ok(Turn::Continue);
        };
        let action = Action::parse(call).map_err(|why| format!("the model's answer is malformed: {why}"))?;
        let turn = self.carry_out(&call.id, action, snapshot).await?;
        for skipped in rest {
            self.conversation.push(ChatMessage::tool_result(&skipped.id, "Not carried out: one tool call per turn."));
        }
        Ok(turn)
    }

    async fn carry_out(&mut self, call_id: &str, action: Action, snapshot: &PageSnapshot) -> Result<Turn, String> {
        let started = Instant::now();
        let name = action.name();
        let target = self.mask(&action.target(snapshot));
        let result = match &action {
            Action::Finish(verdict) => {
                let reason = self.mask(&verdict.reason);
                let verdict = Verdict { outcome: verdict.outcome, reason };
                let detail = format!("{}: {}", verdict.outcome.as_str(), verdict.reason);
                self.record(name, None, StepOutcome::Ok, detail, started, false).await;
                return Ok(Turn::Finished(verdict));
            }
            // A page the model read may have told it where to go: it goes nowhere else than where
            // the automation's owner allowed, and learns that it was refused.
            Action::Navigate(url) if !is_on(url, self.origins) => Err(PageError::NotFound(off_origins(url))),
            Action::Navigate(url) => self.page.navigate(url).await.map(|()| "navigated".to_owned()),
            Action::Click(reference) => {
                self.page.click(Clickable::Reference(reference)).await.map(|()| "clicked".to_owned())
            }
            Action::Type { reference, text } => {
                let value = SecretString::from(text.clone());
                let typed = self.page.type_into(Field::Reference(reference), &value).await;
                typed.map(|()| format!("typed {} characters", text.chars().count()))
            }
            Action::TypeSecret { reference, name } => self.type_secret(reference, name).await,
            Action::Press(key) => self.page.press(key).await.map(|()| format!("pressed {key}")),
            Action::Scroll(direction) => self.page.scroll(*direction).await.map(|()| "scrolled".to_owned()),
        };
        let (outcome, detail) = match result {
            Ok(detail) => (StepOutcome::Ok, detail),
            Err(error) if error.is_recoverable() => (StepOutcome::Failed, error.to_string()),
            Err(error) => {
                let detail = self.mask(&error.to_string());
                self.record(name, Some(target), StepOutcome::Failed, detail.clone(), started, false).await;
                return Err(detail);
            }
        };
        let detail = self.mask(&detail);
        let changed = outcome == StepOutcome::Ok && action.changes_page();
        self.record(name, Some(target), outcome, detail.clone(), started, changed).await;
        let result = match outcome {
            StepOutcome::Ok => format!("Done: {detail}."),
            StepOutcome::Failed => format!("Failed: {detail}."),
        };
        self.conversation.push(ChatMessage::tool_result(call_id, result));
        Ok(Turn::Continue)
    }

    /// Types the named secret; an unknown name is a failed step the model can recover from.
    async fn type_secret(&mut self, reference: &str, name: &str) -> Result<String, PageError> {
        // A page the agent reads may tell it to carry a secret to another site: secrets are typed
        // only on the origin of the automation's own target.
        let value = match self.secrets.for_page(self.page, self.automation, name).await {
            Ok(value) => value,
            Err(NotTyped::Refused(why)) => return Err(PageError::NotFound(why)),
            Err(NotTyped::Page(error)) => return Err(error),
        };
        self.page.type_into(Field::Reference(reference), &value).await?;
        self.typed.remember(name, value);
        Ok(format!("typed the secret {name}"))
    }

    async fn record(
        &mut self,
        action: &str,
        target: Option<String>,
        outcome: StepOutcome,
        detail: String,
        started: Instant,
        changed_page: bool,
    ) {
        let step = StepRecord { action: action.to_owned(), target, outcome, detail, started, changed_page };
        self.recorder.record(self.page, step).await;
    }

    fn mask(&self, text: &str) -> String {
        self.typed.mask(text)
    }

    /// The page as the model reads it (masked).
    fn render(&self, snapshot: &PageSnapshot, turn: usize) -> String {
        let mut view = format!(
            "{VIEW_HEADER} (step {turn} of at most {}):\nURL: {}\nTitle: {}\nInteractive elements:\n",
            self.settings.max_steps, snapshot.url, snapshot.title
        );
        for element in &snapshot.elements {
            view.push_str(&format!("[{}] {} \"{}\"\n", element.reference, element.role, element.name));
        }
        if snapshot.elements.is_empty() {
            view.push_str("(none)\n");
        }
        view.push_str("Visible text:\n");
        view.push_str(&snapshot.text);
        self.mask(&view)
    }
}

/// How each page view starts, so that older views can be found and cut.
const VIEW_HEADER: &str = "The page now";

fn system_prompt(secret_names: &[String]) -> String {
    let secrets = match secret_names {
        [] => "No secrets are stored for this automation.".to_owned(),
        names => format!("Stored secrets you may type with type_secret: {}.", names.join(", ")),
    };
    format!(
        "You operate a web browser to collect compliance evidence. Each turn you get the current page: its URL, \
         title, interactive elements as [reference] role \"name\", and visible text. Call exactly one tool per \
         turn, using element references from the latest page only. To enter a password or another stored \
         secret, call type_secret with the secret's name: you never see secret values. When you know whether \
         the instruction's check holds, call finish with outcome \"passed\" or \"failed\" and a short reason \
         quoting what the page shows. {secrets}"
    )
}

fn task(instruction: &str) -> String {
    format!("Instruction:\n{instruction}")
}

/// A tool call, checked.
#[derive(Debug, Clone, PartialEq)]
enum Action {
    Navigate(String),
    Click(String),
    Type { reference: String, text: String },
    TypeSecret { reference: String, name: String },
    Press(String),
    Scroll(ScrollDirection),
    Finish(Verdict),
}

impl Action {
    /// The call's action, or what is wrong with it (naming the tool and the argument).
    fn parse(call: &ToolCall) -> Result<Self, String> {
        let text = |key: &str| -> Result<String, String> {
            match call.arguments.get(key) {
                Some(Value::String(value)) if !value.trim().is_empty() => Ok(value.clone()),
                _ => Err(format!("the tool call `{}` lacks the text argument `{key}`", call.name)),
            }
        };
        Ok(match call.name.as_str() {
            "navigate" => Action::Navigate(text("url")?),
            "click" => Action::Click(text("ref")?),
            "type" => Action::Type { reference: text("ref")?, text: text("text")? },
            "type_secret" => Action::TypeSecret { reference: text("ref")?, name: text("name")? },
            "press" => Action::Press(text("key")?),
            "scroll" => Action::Scroll(match text("direction")?.as_str() {
                "up" => ScrollDirection::Up,
                "down" => ScrollDirection::Down,
                _ => return Err("the tool call `scroll` needs `direction` \"up\" or \"down\"".to_owned()),
            }),
            "finish" => {
                let reason = text("reason")?;
                match text("outcome")?.as_str() {
                    "passed" => Action::Finish(Verdict::passed(reason)),
                    "failed" => Action::Finish(Verdict::failed(reason)),
                    _ => return Err("the tool call `finish` needs `outcome` \"passed\" or \"failed\"".to_owned()),
                }
            }
            other => return Err(format!("there is no tool `{}`", other.chars().take(64).collect::<String>())),
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Action::Navigate(_) => "navigate",
            Action::Click(_) => "click",
            Action::Type { .. } => "type",
            Action::TypeSecret { .. } => "type_secret",
            Action::Press(_) => "press",
            Action::Scroll(_) => "scroll",
            Action::Finish(_) => "finish",
        }
    }

    /// What the step acted on, for the run's record: never a typed value.
    fn target(&self, snapshot: &PageSnapshot) -> String {
        let element = |reference: &str| match snapshot.elements.iter().find(|e| e.reference == reference) {
            Some(found) => format!("{reference} {} \"{}\"", found.role, found.name),
            None => reference.to_owned(),
        };
        match self {
            Action::Navigate(url) => url.clone(),
            Action::Click(reference) | Action::Type { reference, .. } => element(reference),
            Action::TypeSecret { reference, name } => format!("{} (secret {name})", element(reference)),
            Action::Press(key) => key.clone(),
            Action::Scroll(ScrollDirection::Up) => "up".to_owned(),
            Action::Scroll(ScrollDirection::Down) => "down".to_owned(),
            Action::Finish(_) => String::new(),
        }
    }

    /// Whether a screenshot is worth keeping after it.
    fn changes_page(&self) -> bool {
        !matches!(self, Action::Finish(_) | Action::Type { .. } | Action::TypeSecret { .. })
    }
}

/// The tools the model may call, with the JSON Schema of their arguments.
fn tools() -> Vec<ToolSpec> {
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
    let reference = json!({"type": "string", "description": "An element reference from the latest page, such as e12"});
    vec![
        ToolSpec {
            name: "navigate",
            description: "Opens a URL in the browser: only on the sites this automation may visit.",
            parameters: object(json!({"url": {"type": "string"}}), &["url"]),
        },
        ToolSpec {
            name: "click",
            description: "Clicks an element of the latest page.",
            parameters: object(json!({"ref": reference}), &["ref"]),
        },
        ToolSpec {
            name: "type",
            description: "Types text into a field of the latest page (not for passwords: use type_secret).",
            parameters: object(json!({"ref": reference, "text": {"type": "string"}}), &["ref", "text"]),
        },
        ToolSpec {
            name: "type_secret",
            description: "Types the stored secret of this name into a field; you never see its value.",
            parameters: object(json!({"ref": reference, "name": {"type": "string"}}), &["ref", "name"]),
        },
        ToolSpec {
            name: "press",
            description: "Presses a key, such as Enter, Tab or Escape.",
            parameters: object(json!({"key": {"type": "string"}}), &["key"]),
        },
        ToolSpec {
            name: "scroll",
            description: "Scrolls the page up or down.",
            parameters: object(json!({"direction": {"type": "string", "enum": ["up", "down"]}}), &["direction"]),
        },
        ToolSpec {
            name: "finish",
            description: "Ends the run with the verdict: passed when the instruction's check holds, failed otherwise.",
            parameters: object(
                json!({"outcome": {"type": "string", "enum": ["passed", "failed"]}, "reason": {"type": "string"}}),
                &["outcome", "reason"],
            ),
        },
    ]
}

#[cfg(test)]
mod tests {

    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall { id: "c1".into(), name: name.into(), arguments }
    }

    #[test]
    fn tool_calls_parse_into_actions_or_name_what_is_wrong() {
        assert_eq!(
            Action::parse(&call("type_secret", json!({"ref": "e3", "name": "password"}))).unwrap(),
            Action::TypeSecret { reference: "e3".into(), name: "password".into() }
        );
        assert_eq!(
            Action::parse(&call("finish", json!({"outcome": "failed", "reason": "MFA is optional"}))).unwrap(),
            Action::Finish(Verdict::failed("MFA is optional"))
        );
        let refused = [
            (call("click", json!({})), "`click` lacks the text argument `ref`"),
            (call("click", json!({"ref": 3})), "`click` lacks the text argument `ref`"),
            (call("finish", json!({"outcome": "maybe", "reason": "x"})), "`outcome` \"passed\" or \"failed\""),
            (call("scroll", json!({"direction": "left"})), "\"up\" or \"down\""),
            (call("download", json!({})), "there is no tool `download`"),
        ];
        for (call, expected) in refused {
            let error = Action::parse(&call).unwrap_err();
            assert!(error.contains(expected), "{error:?} lacks {expected:?}");
        }
    }

    #[test]
    fn every_tool_the_prompt_offers_parses() {
        let names: Vec<&str> = tools().iter().map(|t| t.name).collect();
        assert_eq!(names, ["navigate", "click", "type", "type_secret", "press", "scroll", "finish"]);
        for tool in tools() {
            let required = tool.parameters["required"].as_array().unwrap();
            let mut arguments = serde_json::Map::new();
            for key in required {
                let value = match key.as_str().unwrap() {
                    "outcome" => "passed",
                    "direction" => "down",
                    _ => "e1",
                };
                arguments.insert(key.as_str().unwrap().to_owned(), json!(value));
            }
            assert_eq!(Action::parse(&call(tool.name, Value::Object(arguments))).unwrap().name(), tool.name);
        }
    }
}
