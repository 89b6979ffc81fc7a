//! Browser automations of a task, and their runs.

mod evidence;
mod grammar;
mod instruction;
mod origins;

use serde::Deserialize;

pub use evidence::{MAX_RUN_STEPS, RunStep, StepOutcome, Verdict, VerdictOutcome};
pub use grammar::PRESSABLE_KEYS;
pub use instruction::{Executor, Instruction, MAX_STEPS, Step, StepError, parse};
pub use origins::{ALLOWED_ORIGINS_MAX, is_on, origin_of};

use crate::schedule::Schedule;
use crate::validation::{
    Checked, FieldError, ValidationErrors, http_url, map_nullable, map_present, required, set, text,
};
use crate::{
    AutomationId, AutomationRunId, ConnectionId, OrganizationId, TaskId, Timestamp, UserId, nullable, required_non_null,
};

/// The longest name, in characters.
pub const NAME_MAX: usize = 255;
/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 2_000;
/// The longest instruction, in characters.
pub const INSTRUCTION_MAX: usize = 10_000;

crate::string_enum! {
    /// `pending → running → completed | failed`.
    RunStatus { Pending = "pending", Running = "running", Completed = "completed", Failed = "failed" }
}

crate::string_enum! {
    /// What started a run.
    RunTrigger { Manual = "manual", Schedule = "schedule" }
}

/// A browser automation of a task: what to open, what to do there, and when to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserAutomation {
    /// The automation's id.
    pub id: AutomationId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// The task whose evidence it gathers.
    pub task_id: TaskId,
    /// 1 to [`NAME_MAX`] characters.
    pub name: String,
    /// Up to [`DESCRIPTION_MAX`] characters, if any.
    pub description: Option<String>,
    /// The http(s) URL a run opens first.
    pub target_url: String,
    /// What a run does there: a step list or free text for the model.
    pub instruction: String,
    /// When it runs by itself (cron, UTC); `None`: only when started by hand.
    pub schedule: Option<Schedule>,
    /// Whether its schedule fires; a disabled automation can still be run by hand.
    pub is_enabled: bool,
    /// When the schedule next fires; `None` without a schedule or while disabled.
    pub next_run_at: Option<Timestamp>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Who created it: the author of the comments its runs post on the task. `None` for
    /// automations created before creators were recorded (their runs post no comment).
    pub created_by: Option<UserId>,
    /// An integration connection whose credential fields `type secret "NAME"` may read.
    pub connection_id: Option<ConnectionId>,
    /// Whether a completed run posts its verdict and final screenshot as a comment on the task.
    pub post_result_to_task: bool,
    /// Origins besides the target's that a run's page may go to (`https://login.example.com`),
    /// as [`origin_of`] writes them; a navigation anywhere else is refused.
    pub allowed_origins: Vec<String>,
}

/// `POST /v1/browser/automations`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewAutomation {
    /// A task of the caller's organization; a well-formed id of no such task is a 400 naming `taskId`.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(value_type = crate::TaskId, required = true))]
    pub task_id: Option<String>,
    /// Required: 1 to 255 characters.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name, required = true))]
    pub name: Option<String>,
    /// Required: an http(s) URL the browser may open.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::target_url, required = true))]
    pub target_url: Option<String>,
    /// Required: a step list or free text.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::instruction, required = true))]
    pub instruction: Option<String>,
    /// Up to 2,000 characters.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    pub description: Option<String>,
    /// A cron expression (5 or 6 fields, UTC); omitted: runs only when started.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::new_schedule))]
    pub schedule: Option<String>,
    /// A connection of the caller's organization (400 naming `connectionId` otherwise).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ConnectionId>))]
    pub connection_id: Option<String>,
    /// Default `true`.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    pub post_result_to_task: Option<bool>,
    /// Origins besides the target's that a run's page may go to; default none.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::allowed_origins))]
    pub allowed_origins: Option<Vec<String>>,
}

/// `PATCH /v1/browser/automations/{id}`: absent fields stay; `description` and `schedule` may be
/// `null` to clear them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutomationChanges {
    /// Absent: unchanged; `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::name))]
    pub name: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::target_url))]
    pub target_url: Option<String>,
    /// Absent: unchanged; `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::instruction))]
    pub instruction: Option<String>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    pub description: Option<Option<String>>,
    /// A cron expression; `null` stops scheduled runs.
    #[serde(default, deserialize_with = "nullable")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::changed_schedule))]
    pub schedule: Option<Option<String>>,
    /// Whether the schedule fires.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    pub is_enabled: Option<bool>,
    /// A connection of the caller's organization, or `null` for none.
    #[serde(default, deserialize_with = "nullable")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ConnectionId>))]
    pub connection_id: Option<Option<String>>,
    /// Whether a completed run posts its verdict and screenshot as a comment on the task.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    pub post_result_to_task: Option<bool>,
    /// Replaces the list (`[]` empties it); `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::allowed_origins))]
    pub allowed_origins: Option<Vec<String>>,
}

/// Validated changes to an automation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutomationPatch {
    name: Option<String>,
    target_url: Option<String>,
    instruction: Option<String>,
    description: Option<Option<String>>,
    schedule: Option<Option<Schedule>>,
    is_enabled: Option<bool>,
    connection_id: Option<Option<ConnectionId>>,
    post_result_to_task: Option<bool>,
    allowed_origins: Option<Vec<String>>,
}

impl AutomationPatch {
    /// Validates `changes`; the first wrong field is the error.
    pub fn new(changes: AutomationChanges) -> Result<Self, ValidationErrors> {
        Ok(Self {
            name: map_present(changes.name, |n| text("name", n, 1, NAME_MAX))?,
            target_url: map_present(changes.target_url, |u| http_url("targetUrl", u))?,
            instruction: map_present(changes.instruction, instruction_text)?,
            description: map_nullable(changes.description, |d| text("description", d, 0, DESCRIPTION_MAX))?,
            schedule: map_nullable(changes.schedule, |s| schedule(&s))?,
            is_enabled: changes.is_enabled,
            connection_id: map_nullable(changes.connection_id, |c| connection_id(&c))?,
            post_result_to_task: changes.post_result_to_task,
            allowed_origins: map_present(changes.allowed_origins, origins::allowed_origins)?,
        })
    }

    /// Whether no field is to change.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// The new schedule, when the patch sets one.
    pub fn schedule(&self) -> Option<&Schedule> {
        self.schedule.as_ref().and_then(Option::as_ref)
    }

    /// The new connection, when the patch sets one (it must be checked to be the organization's).
    pub fn connection_id(&self) -> Option<&ConnectionId> {
        self.connection_id.as_ref().and_then(Option::as_ref)
    }

    /// The new target, when the patch changes it (it must be checked before it is stored).
    pub fn target_url(&self) -> Option<&str> {
        self.target_url.as_deref()
    }

    /// The new `allowedOrigins`, when the patch replaces them (each must be checked as a target is).
    pub fn allowed_origins(&self) -> Option<&[String]> {
        self.allowed_origins.as_deref()
    }
}

/// An instruction of the right length that, when it is a step list, parses: a bad step is a 400
/// naming `instruction`, the line and what was expected there.
fn instruction_text(value: String) -> Checked<String> {
    let value = text("instruction", value, 1, INSTRUCTION_MAX)?;
    parse(&value).map_err(|error| FieldError::new("instruction", error.to_string()))?;
    Ok(value)
}

fn schedule(expression: &str) -> Checked<Schedule> {
    Schedule::parse(expression).map_err(|e| FieldError::new("schedule", e.to_string()))
}

fn connection_id(raw: &str) -> Checked<ConnectionId> {
    ConnectionId::parse(raw).map_err(|e| FieldError::new("connectionId", e.to_string()))
}

impl BrowserAutomation {
    /// The entity tag of this state of the automation: the scheduler moves `nextRunAt` without
    /// `updatedAt` when it claims a run, so both count
    /// ([`ETag::of_state`](crate::etag::ETag::of_state)).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of_state(self.id.as_str(), &(self.updated_at, self.next_run_at))
    }
}

impl BrowserAutomation {
    /// `task_id` is the parsed task the caller checked belongs to the organization; `created_by`
    /// the caller's user.
    pub fn create(
        organization_id: OrganizationId,
        task_id: TaskId,
        created_by: UserId,
        input: NewAutomation,
        now: Timestamp,
    ) -> Result<Self, ValidationErrors> {
        let schedule = input.schedule.filter(|s| !s.trim().is_empty()).map(|s| schedule(&s)).transpose()?;
        let mut automation = Self {
            id: AutomationId::generate(),
            organization_id,
            task_id,
            name: text("name", required("name", input.name)?, 1, NAME_MAX)?,
            description: input.description.map(|d| text("description", d, 0, DESCRIPTION_MAX)).transpose()?,
            target_url: http_url("targetUrl", required("targetUrl", input.target_url)?)?,
            instruction: instruction_text(required("instruction", input.instruction)?)?,
            schedule,
            is_enabled: true,
            next_run_at: None,
            created_at: now,
            updated_at: now,
            created_by: Some(created_by),
            connection_id: input.connection_id.as_deref().map(connection_id).transpose()?,
            post_result_to_task: input.post_result_to_task.unwrap_or(true),
            allowed_origins: origins::allowed_origins(input.allowed_origins.unwrap_or_default())?,
        };
        automation.reschedule(now);
        Ok(automation)
    }

    /// The origins a run's page may be on: the target's, then `allowed_origins`.
    pub fn navigable_origins(&self) -> Vec<String> {
        let mut origins: Vec<String> = origin_of(&self.target_url).into_iter().collect();
        for origin in &self.allowed_origins {
            if !origins.contains(origin) {
                origins.push(origin.clone());
            }
        }
        origins
    }

    /// How the instruction will be carried out (a stored instruction always parses).
    pub fn executor(&self) -> Executor {
        self.parsed_instruction().executor()
    }

    /// The instruction as steps or free text.
    pub fn parsed_instruction(&self) -> Instruction {
        parse(&self.instruction).unwrap_or_else(|_| Instruction::FreeText(self.instruction.clone()))
    }

    /// Parses the `taskId` of a create: a malformed one is a 400 naming the field.
    pub fn task_id(input: &NewAutomation) -> Result<TaskId, ValidationErrors> {
        let raw = required("taskId", input.task_id.as_deref())?;
        Ok(TaskId::parse(raw).map_err(|e| FieldError::new("taskId", e.to_string()))?)
    }

    /// Applies a validated patch; an empty patch changes nothing, not even `updated_at`.
    pub fn apply(&mut self, patch: &AutomationPatch, now: Timestamp) {
        if patch.is_empty() {
            return;
        }
        set(&mut self.name, &patch.name);
        set(&mut self.target_url, &patch.target_url);
        set(&mut self.instruction, &patch.instruction);
        set(&mut self.description, &patch.description);
        set(&mut self.schedule, &patch.schedule);
        set(&mut self.is_enabled, &patch.is_enabled);
        set(&mut self.connection_id, &patch.connection_id);
        set(&mut self.post_result_to_task, &patch.post_result_to_task);
        set(&mut self.allowed_origins, &patch.allowed_origins);
        self.updated_at = now;
        // Only a new schedule or switch moves the next run: a rename must not skip a firing.
        if patch.schedule.is_some() || patch.is_enabled.is_some() {
            self.reschedule(now);
        }
    }

    /// Sets `next_run_at` to the schedule's next time after `now`, or none when there is no
    /// schedule or the automation is disabled.
    pub fn reschedule(&mut self, now: Timestamp) {
        self.next_run_at = match (&self.schedule, self.is_enabled) {
            (Some(schedule), true) => schedule.next_after(now),
            _ => None,
        };
    }
}

/// One run of an automation, from `pending` to its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutomationRun {
    /// The run's id.
    pub id: AutomationRunId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// The automation it ran.
    pub automation_id: AutomationId,
    /// `pending`, `running`, then `completed` or `failed`.
    pub status: RunStatus,
    /// What started it: `manual` or `schedule`.
    pub trigger: RunTrigger,
    /// When it was queued.
    pub created_at: Timestamp,
    /// When a worker started it.
    pub started_at: Option<Timestamp>,
    /// When it finished.
    pub completed_at: Option<Timestamp>,
    /// From start to finish, in milliseconds.
    pub duration_ms: Option<i64>,
    /// Where the screenshot is in the blob store.
    pub screenshot_key: Option<String>,
    /// Why the run failed, fit to show the user.
    pub error: Option<String>,
    /// The judgement of a completed run.
    pub verdict: Option<Verdict>,
    /// What the run carried out, in order (at most [`MAX_RUN_STEPS`]).
    pub steps: Vec<RunStep>,
}

impl AutomationRun {
    /// A new run of `automation`, waiting for a worker.
    pub fn pending(automation: &BrowserAutomation, trigger: RunTrigger, now: Timestamp) -> Self {
        Self {
            id: AutomationRunId::generate(),
            organization_id: automation.organization_id.clone(),
            automation_id: automation.id.clone(),
            status: RunStatus::Pending,
            trigger,
            created_at: now,
            started_at: None,
            completed_at: None,
            duration_ms: None,
            screenshot_key: None,
            error: None,
            verdict: None,
            steps: Vec::new(),
        }
    }

    /// Where the run's screenshot goes in the blob store: `ORG/ID` like attachments; the `run_`
    /// prefix keeps the two apart.
    pub fn screenshot_blob_key(&self) -> String {
        format!("{}/{}", self.organization_id, self.id)
    }

    /// Where the screenshot taken after step `index` goes: beside the run's own.
    pub fn step_screenshot_blob_key(&self, index: u32) -> String {
        format!("{}/{}_s{index}", self.organization_id, self.id)
    }

    /// Every blob the run points at: its screenshot and its steps' (to remove with the run).
    pub fn blob_keys(&self) -> impl Iterator<Item = &str> {
        self.screenshot_key
            .iter()
            .chain(self.steps.iter().filter_map(|s| s.screenshot_key.as_ref()))
            .map(String::as_str)
    }

    /// Marks the run `running` from `now`.
    pub fn start(&mut self, now: Timestamp) {
        self.status = RunStatus::Running;
        self.started_at = Some(now);
    }

    /// Ends the run: `Ok(verdict)` completes it, `Err(message)` fails it (it could not be carried
    /// out). `screenshot_key` is the final screenshot, kept either way when there is one.
    pub fn finish(&mut self, outcome: Result<Verdict, String>, screenshot_key: Option<String>, now: Timestamp) {
        let started = self.started_at.unwrap_or(now);
        self.completed_at = Some(now);
        self.duration_ms =
            Some((now.to_offset() - started.to_offset()).whole_milliseconds().try_into().unwrap_or(i64::MAX));
        self.screenshot_key = screenshot_key;
        match outcome {
            Ok(verdict) => {
                self.status = RunStatus::Completed;
                self.verdict = Some(verdict);
            }
            Err(message) => {
                self.status = RunStatus::Failed;
                self.error = Some(message);
            }
        }
    }

    /// Fails a run whose instance stopped while it ran, as of `at` (the worker's cutoff, never
    /// before the run started); how long it ran is unknown.
    pub fn interrupt(&mut self, error: &str, at: Timestamp) {
        self.status = RunStatus::Failed;
        self.completed_at = Some(at);
        self.duration_ms = None;
        self.error = Some(error.to_owned());
    }
}

/// The schemas of the inputs' fields, stating what the validation above accepts.
#[cfg(feature = "openapi")]
mod schemas {
    use utoipa::openapi::Object;
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};

    use crate::openapi::text;

    /// An https origin of a host name of [`URL_PATTERN`]'s kind: a part of what the server accepts.
    const ORIGIN_PATTERN: &str = "^https://(?:[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\\.)+[A-Za-z]{2,63}(?::[1-9][0-9]{0,3})?$";

    /// Host names whose last label is letters (so never an IP address) and with no `--` (so never an
    /// IDNA label), an optional port, then printable ASCII: a subset of the absolute http(s) URLs `validation::http_url` accepts.
    const URL_PATTERN: &str =
        "^https?://(?:[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\\.)+[A-Za-z]{2,63}(?::[1-9][0-9]{0,3})?(?:[/?#][!-~]*)?$";

    /// Cron expressions the server surely accepts: five fields of single values or `*`, firing at
    /// most hourly, or a macro.
    const CRON_PATTERN: &str = "^(?:@(?:hourly|daily|midnight|weekly|monthly|yearly|annually)|(?:[0-9]|[1-5][0-9]) (?:\\*|[0-9]|1[0-9]|2[0-3]) (?:\\*|[1-9]|1[0-9]|2[0-8]) (?:\\*|[1-9]|1[0-2]) (?:\\*|[0-6]))$";

    /// White space only (Rust's `char::is_whitespace`), which a create takes as no schedule.
    const BLANK_OR_CRON_PATTERN: &str = "^(?:[\\u0009-\\u000d\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*|@(?:hourly|daily|midnight|weekly|monthly|yearly|annually)|(?:[0-9]|[1-5][0-9]) (?:\\*|[0-9]|1[0-9]|2[0-3]) (?:\\*|[1-9]|1[0-9]|2[0-8]) (?:\\*|[1-9]|1[0-2]) (?:\\*|[0-6]))$";

    const SCHEDULE: &str = "A cron expression in UTC: 5 fields (minute hour day-of-month month day-of-week) or 6 \
        with leading seconds, each `*`, a number, a range, a step, a list, or month and weekday names; or \
        `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`. At most 200 characters. The pattern lists \
        only a part of the valid expressions: the server also accepts the rest of the grammar, and answers \
        400 naming `schedule` for an invalid expression or one that fires more often than \
        `AUTOMATION_MIN_INTERVAL_SECONDS` (60 by default).";

    fn nullable(builder: ObjectBuilder) -> ObjectBuilder {
        builder.schema_type(SchemaType::from_iter([Type::String, Type::Null]))
    }

    pub(super) fn name() -> Object {
        text(1, super::NAME_MAX).build()
    }

    pub(super) fn instruction() -> Object {
        text(1, super::INSTRUCTION_MAX)
            .description(Some(
                "A step list or free text. It is a step list when its first non-empty line (after an optional \
                 `1.` or `-`) starts with a step keyword (`go`, `click`, `type`, `press`, `wait`, `expect`, \
                 `screenshot`, any case) and holds a `\"`, or is `screenshot` alone; then every non-empty line \
                 must be a step (`go to \"URL\"`, `click \"text\"`, `click css \"selector\"`, `type \"value\" \
                 into \"field\"`, `type secret \"NAME\" into \"field\"`, `press \"Enter\"`, `wait for \"text\"`, \
                 `expect text \"…\"`, `expect no text \"…\"`, `expect url contains \"…\"`, `screenshot`), else \
                 the answer is a 400 naming `instruction`, the line and what was expected there. Anything \
                 else is free text for the agent.",
            ))
            .build()
    }

    pub(super) fn description() -> Object {
        nullable(text(0, super::DESCRIPTION_MAX)).description(Some("`null` for none.")).build()
    }

    pub(super) fn target_url() -> Object {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(crate::validation::URL_MAX))
            .pattern(Some(URL_PATTERN))
            .description(Some(
                "An absolute http(s) URL of at most 2048 characters (the pattern lists a safe part of them). A \
                 host that resolves to a loopback, private, link-local, CGNAT or metadata address is a 400 \
                 naming `targetUrl` unless `AUTOMATION_ALLOWED_HOSTS` names it.",
            ))
            .build()
    }

    pub(super) fn allowed_origins() -> utoipa::openapi::schema::Array {
        let origin = ObjectBuilder::new().schema_type(Type::String).pattern(Some(ORIGIN_PATTERN)).description(Some(
            "An origin: a scheme, a host and an optional port, nothing after (the pattern lists a safe part).",
        ));
        utoipa::openapi::schema::ArrayBuilder::new()
            .items(origin.build())
            .max_items(Some(super::ALLOWED_ORIGINS_MAX))
            .description(Some(
                "Origins besides the origin of `targetUrl` that a run's page may go to (an identity provider                  the login passes through, say); at most 20. A navigation anywhere else (the agent's                  `navigate`, a `go to` step, a link, a redirect, a script) is refused and the run reports it.                  Each must be an `https` origin, or an `http` one whose host `AUTOMATION_ALLOWED_HOSTS`                  names, and must pass the checks of `targetUrl`; else a 400 naming `allowedOrigins`.                  Secrets are typed only on the origin of `targetUrl`.",
            ))
            .build()
    }

    pub(super) fn new_schedule() -> Object {
        let description = format!("{SCHEDULE} Blank text or `null` means no schedule.");
        nullable(ObjectBuilder::new()).pattern(Some(BLANK_OR_CRON_PATTERN)).description(Some(description)).build()
    }

    pub(super) fn changed_schedule() -> Object {
        let description = format!("{SCHEDULE} `null` removes the schedule; blank text is a 400.");
        nullable(ObjectBuilder::new())
            .max_length(Some(200))
            .pattern(Some(CRON_PATTERN))
            .description(Some(description))
            .build()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn input() -> NewAutomation {
        NewAutomation {
            task_id: Some(TaskId::generate().to_string()),
            name: Some("Login page".into()),
            target_url: Some("https://example.com/login".into()),
            instruction: Some("Check the login form".into()),
            description: None,
            schedule: Some("*/5 * * * *".into()),
            connection_id: None,
            post_result_to_task: None,
            allowed_origins: None,
        }
    }

    fn create(input: NewAutomation) -> Result<BrowserAutomation, ValidationErrors> {
        let task = BrowserAutomation::task_id(&input)?;
        BrowserAutomation::create(OrganizationId::generate(), task, UserId::generate(), input, Timestamp::now())
    }

    #[test]
    fn a_scheduled_automation_starts_enabled_with_its_next_run() {
        let automation = create(input()).unwrap();
        assert!(automation.is_enabled);
        let next = automation.next_run_at.unwrap();
        assert!(next > automation.created_at);
    }

    #[test]
    fn required_fields_bad_urls_and_bad_schedules_name_their_field() {
        type Spoil = fn(&mut NewAutomation);
        let cases: [(&str, Spoil); 5] = [
            ("taskId", |i| i.task_id = Some("rsk_1".into())),
            ("name", |i| i.name = None),
            ("targetUrl", |i| i.target_url = Some("ftp://example.com".into())),
            ("instruction", |i| i.instruction = Some("   ".into())),
            ("schedule", |i| i.schedule = Some("61 * * * *".into())),
        ];
        for (field, spoil) in cases {
            let mut bad = input();
            spoil(&mut bad);
            let errors = create(bad).unwrap_err();
            assert_eq!(errors.0[0].field, field);
        }
    }

    #[test]
    fn disabling_or_clearing_the_schedule_stops_it_and_enabling_resumes() {
        let mut automation = create(input()).unwrap();
        let off = AutomationPatch::new(AutomationChanges { is_enabled: Some(false), ..Default::default() }).unwrap();
        automation.apply(&off, Timestamp::now());
        assert_eq!(automation.next_run_at, None);
        let on = AutomationPatch::new(AutomationChanges { is_enabled: Some(true), ..Default::default() }).unwrap();
        automation.apply(&on, Timestamp::now());
        assert!(automation.next_run_at.is_some());
        let cleared = AutomationPatch::new(AutomationChanges { schedule: Some(None), ..Default::default() }).unwrap();
        automation.apply(&cleared, Timestamp::now());
        assert_eq!((automation.schedule.clone(), automation.next_run_at), (None, None));
    }

    #[test]
    fn a_run_records_its_outcome_and_duration() {
        let automation = create(input()).unwrap();
        let start = Timestamp::now();
        let mut run = AutomationRun::pending(&automation, RunTrigger::Manual, start);
        run.start(start);
        run.finish(Err("the page answered HTTP 404".into()), None, start.plus(time::Duration::milliseconds(1500)));
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.duration_ms, Some(1500));
        assert_eq!(run.error.as_deref(), Some("the page answered HTTP 404"));
    }
}
