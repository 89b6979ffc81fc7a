//! What an automation's instruction says to do: a list of steps the runner carries out itself, or
//! free text for the agent executor.
//!
//! The grammar (keywords case-insensitive, one step a line, an optional leading `1.` or `-`):
//! `go to "URL"` · `click "visible text"` · `click css "selector"` ·
//! `type "value" into "label, placeholder or name"` · `type secret "NAME" into "…"` ·
//! `press "Enter"` · `wait for "text"` · `expect text "…"` · `expect no text "…"` ·
//! `expect url contains "…"` · `screenshot`.

/// The most steps one instruction may hold.
pub const MAX_STEPS: usize = 100;

/// How an instruction is carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instruction {
    /// A script, run deterministically without a model.
    Steps(Vec<Step>),
    /// Anything else: handed to the agent executor.
    FreeText(String),
}

crate::string_enum! {
    /// Which executor runs an instruction.
    Executor { Steps = "steps", Agent = "agent" }
}

impl Instruction {
    /// Which executor carries the instruction out.
    pub fn executor(&self) -> Executor {
        match self {
            Instruction::Steps(_) => Executor::Steps,
            Instruction::FreeText(_) => Executor::Agent,
        }
    }
}

/// One line of a step list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `go to URL`: opens the URL.
    GoTo {
        /// An absolute http(s) URL.
        url: String,
    },
    /// A button, link or label showing this text.
    ClickText {
        /// The text shown.
        text: String,
    },
    /// `click css SELECTOR`: the first element the CSS selector matches.
    ClickCss {
        /// A CSS selector.
        selector: String,
    },
    /// `field` is a label's text, a placeholder or a `name`.
    Type {
        /// The text typed.
        value: String,
        /// Which field.
        field: String,
    },
    /// Types the automation's secret `name`; the value is looked up when the run executes.
    TypeSecret {
        /// The secret's name.
        name: String,
        /// Which field (as for [`Step::Type`]).
        field: String,
    },
    /// `press KEY`: a key on the focused element.
    Press {
        /// A name of [`PRESSABLE_KEYS`](crate::automation::PRESSABLE_KEYS) or one character.
        key: String,
    },
    /// Waits, at most until the run's deadline, until the page shows the text.
    WaitFor {
        /// The text awaited (case-sensitive).
        text: String,
    },
    /// `expect text`: the step fails unless the page shows the text now.
    ExpectText {
        /// The text expected (case-sensitive).
        text: String,
    },
    /// `expect no text`: the step fails if the page shows the text now.
    ExpectNoText {
        /// The text that must be absent (case-sensitive).
        text: String,
    },
    /// `expect url contains`: the step fails unless the page's URL contains the text.
    ExpectUrlContains {
        /// The part of the URL expected.
        text: String,
    },
    /// `screenshot`: a screenshot of the page now.
    Screenshot,
}

impl Step {
    /// The step's keyword as a run records it (`go to`, `click css`, `type secret`, …).
    pub fn action(&self) -> &'static str {
        match self {
            Step::GoTo { .. } => "go to",
            Step::ClickText { .. } => "click",
            Step::ClickCss { .. } => "click css",
            Step::Type { .. } => "type",
            Step::TypeSecret { .. } => "type secret",
            Step::Press { .. } => "press",
            Step::WaitFor { .. } => "wait for",
            Step::ExpectText { .. } => "expect text",
            Step::ExpectNoText { .. } => "expect no text",
            Step::ExpectUrlContains { .. } => "expect url contains",
            Step::Screenshot => "screenshot",
        }
    }

    /// What the step acts on, as a run records it. For `type` and `type secret` this is the
    /// field: the value typed is never recorded.
    pub fn target(&self) -> Option<&str> {
        match self {
            Step::GoTo { url } => Some(url),
            Step::ClickText { text } | Step::WaitFor { text } => Some(text),
            Step::ExpectText { text } | Step::ExpectNoText { text } | Step::ExpectUrlContains { text } => Some(text),
            Step::ClickCss { selector } => Some(selector),
            Step::Type { field, .. } | Step::TypeSecret { field, .. } => Some(field),
            Step::Press { key } => Some(key),
            Step::Screenshot => None,
        }
    }

    /// Whether the step may change what the page shows, so that a run keeps a screenshot after
    /// it: `go to`, `click`, `type`, `press` and `screenshot` do; waits and expectations only look.
    pub fn changes_page(&self) -> bool {
        !matches!(
            self,
            Step::WaitFor { .. } | Step::ExpectText { .. } | Step::ExpectNoText { .. } | Step::ExpectUrlContains { .. }
        )
    }
}

/// Why a step list does not parse: the line (1-based, counting blank lines) and what was expected
/// there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {expected}")]
pub struct StepError {
    /// The line of the step list, from 1.
    pub line: usize,
    /// What the line should look like.
    pub expected: String,
}

/// Reads an instruction: a step list when its first non-empty line starts with a step keyword
/// (then every non-empty line must be a step, or the [`StepError`] names the first that is not),
/// free text otherwise.
pub fn parse(text: &str) -> Result<Instruction, StepError> {
    super::grammar::parse(text)
}
