//! The step executor: carries out a step list on an open page, line by line, and judges the run
//! by its expectations.
//!
//! A step that cannot find its element (a click, a field) or an `expect` that does not hold ends
//! the run as completed with a failed verdict naming the step: the page was reached and did not
//! show what the automation expects. A page that cannot be reached or loaded in time, a refused
//! navigation, a browser failure or a missing secret end it as failed: no evidence was collected.

use std::time::Instant;

use compliance_domain::automation::{BrowserAutomation, Step, StepOutcome, Verdict, is_on};
use compliance_ports::{BrowserPage, Clickable, Field, PageError};
use secrecy::SecretString;

use crate::automation_recorder::{RunRecorder, StepRecord};
use crate::automation_secrets::{AutomationSecrets, NotTyped, TypedSecrets};

pub(crate) struct StepExecutor<'a> {
    pub page: &'a mut dyn BrowserPage,
    pub automation: &'a BrowserAutomation,
    pub secrets: &'a AutomationSecrets,
    pub recorder: &'a mut RunRecorder,
    /// `wait for` gives up here.
    pub deadline: Instant,
    /// Where `go to` may go: the target's origin and the automation's `allowedOrigins`.
    pub origins: &'a [String],
    /// The secrets typed so far, masked out of every step's detail and the run's error: a page
    /// or the browser may echo a typed value in an error text.
    pub typed: TypedSecrets,
}

/// How a step went wrong.
enum Failure {
    /// The page did not show what the step expects: the verdict fails with this reason.
    Evidence(String),
    /// The run cannot go on: it fails with this error.
    Run(String),
}

impl StepExecutor<'_> {
    pub(crate) async fn run(mut self, steps: &[Step]) -> Result<Verdict, String> {
        let mut expectations = 0;
        for (number, step) in (1..).zip(steps) {
            let started = Instant::now();
            let result = match self.step(step).await {
                Ok(detail) => Ok(self.typed.mask(&detail)),
                Err(Failure::Evidence(why)) => Err(Failure::Evidence(self.typed.mask(&why))),
                Err(Failure::Run(why)) => Err(Failure::Run(self.typed.mask(&why))),
            };
            let (outcome, detail) = match &result {
                Ok(detail) => (StepOutcome::Ok, detail.clone()),
                Err(Failure::Evidence(why) | Failure::Run(why)) => (StepOutcome::Failed, why.clone()),
            };
            let record = StepRecord {
                action: step.action().to_owned(),
                target: step.target().map(str::to_owned),
                outcome,
                detail,
                started,
                changed_page: step.changes_page() && result.is_ok(),
            };
            self.recorder.record(self.page, record).await;
            let named = format!("step {number} ({})", describe(step));
            match result {
                Ok(_) => expectations += usize::from(is_expectation(step)),
                Err(Failure::Evidence(why)) => return Ok(Verdict::failed(format!("{named}: {why}"))),
                Err(Failure::Run(why)) => return Err(format!("{named}: {why}")),
            }
        }
        Ok(Verdict::passed(match expectations {
            0 => format!("all {} steps were carried out (the list has no expect step)", steps.len()),
            n => format!("all {n} expectations held"),
        }))
    }

    /// Carries out one step: what happened, or why it failed. Never holds a typed value.
    async fn step(&mut self, step: &Step) -> Result<String, Failure> {
        let page = &mut *self.page;
        match step {
            Step::GoTo { url } if !is_on(url, self.origins) => Err(Failure::Run(off_origins(url))),
            Step::GoTo { url } => page.navigate(url).await.map(|()| "the page loaded".to_owned()).map_err(failure),
            Step::ClickText { text } => page.click(Clickable::Text(text)).await.map(|()| clicked()).map_err(failure),
            Step::ClickCss { selector } => {
                page.click(Clickable::Css(selector)).await.map(|()| clicked()).map_err(failure)
            }
            Step::Type { value, field } => {
                let value = SecretString::from(value.clone());
                page.type_into(Field::Named(field), &value).await.map(|()| typed()).map_err(failure)
            }
            Step::TypeSecret { name, field } => {
                let value = match self.secrets.for_page(page, self.automation, name).await {
                    Ok(value) => value,
                    Err(NotTyped::Refused(why)) => return Err(Failure::Run(why)),
                    Err(NotTyped::Page(error)) => return Err(failure(error)),
                };
                self.typed.remember(name, value.clone());
                page.type_into(Field::Named(field), &value).await.map(|()| typed()).map_err(failure)
            }
            Step::Press { key } => page.press(key).await.map(|()| format!("pressed {key}")).map_err(failure),
            Step::WaitFor { text } => {
                page.wait_for_text(text, self.deadline).await.map(|()| "the text appeared".to_owned()).map_err(failure)
            }
            Step::ExpectText { text } => match page.contains_text(text).await.map_err(failure)? {
                true => Ok("the page shows the text".to_owned()),
                false => Err(Failure::Evidence("the page does not show the text".to_owned())),
            },
            Step::ExpectNoText { text } => match page.contains_text(text).await.map_err(failure)? {
                false => Ok("the page does not show the text".to_owned()),
                true => Err(Failure::Evidence("the page shows the text".to_owned())),
            },
            Step::ExpectUrlContains { text } => {
                let url = page.current_url().await.map_err(failure)?;
                // The query is left out of what the run records: a form sent by GET puts what was
                // typed into it, secrets included.
                let shown = url.split(['?', '#']).next().unwrap_or_default();
                match url.contains(text.as_str()) {
                    true => Ok(format!("the URL is {shown}")),
                    false => Err(Failure::Evidence(format!("the URL is {shown}"))),
                }
            }
            Step::Screenshot => Ok("taken".to_owned()),
        }
    }
}

/// A missing element is evidence (the page does not offer what the script expects); anything else
/// stops the run.
fn failure(error: PageError) -> Failure {
    match error.is_recoverable() {
        true => Failure::Evidence(error.to_string()),
        false => Failure::Run(error.to_string()),
    }
}

/// Why a navigation to `url` is not made (the agent's `navigate` says the same).
pub(crate) fn off_origins(url: &str) -> String {
    let origin = compliance_domain::automation::origin_of(url).unwrap_or_else(|| "this address".to_owned());
    format!(
        "refused to go to {origin}: it is neither the origin of targetUrl nor one of the automation's allowedOrigins"
    )
}

fn clicked() -> String {
    "clicked".to_owned()
}

fn typed() -> String {
    "typed into the field".to_owned()
}

fn is_expectation(step: &Step) -> bool {
    matches!(step, Step::ExpectText { .. } | Step::ExpectNoText { .. } | Step::ExpectUrlContains { .. })
}

/// The step as its line reads (without a typed value).
fn describe(step: &Step) -> String {
    match step.target() {
        Some(target) => format!("{} \"{target}\"", step.action()),
        None => step.action().to_owned(),
    }
}
