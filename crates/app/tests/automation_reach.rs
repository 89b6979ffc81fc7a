//! Where an automation's runs may go and what they may type there: a connection's credentials are
//! handed to an automation only by a caller who may write integrations (role and key scope), a
//! secret is typed only on the origin of `targetUrl`, and a run's page goes only to that origin and
//! the automation's `allowedOrigins`, whatever a step or the model asks for.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use compliance_app::{AppError, AutomationWorker, Principal};
use compliance_domain::access::Scopes;
use compliance_domain::automation::{
    AutomationChanges, AutomationRun, BrowserAutomation, NewAutomation, RunStatus, StepOutcome, VerdictOutcome,
};
use compliance_domain::automation_secret::SecretInput;
use compliance_domain::etag::IfMatch;
use compliance_domain::task::NewTask;
use compliance_domain::{ConnectionId, OrganizationId};
use compliance_ports::{
    AgentModel, CONNECTION_CREDENTIALS_OWNER_KIND, ChatMessage, Clock, ModelError, ModelReply, SecretCipher,
    SecretOwner, SecretRepository, StoredSecret, ToolCall, ToolSpec,
};
use secrecy::SecretString;
use serde_json::{Value, json};

use crate::support::{BindingCipher, World, api_key, settings};

const TARGET: &str = "https://admin.example.com/login";
const TARGET_ORIGIN: &str = "https://admin.example.com";
/// The identity provider the login passes through, when the automation allows it.
const PARTNER: &str = "https://partner.example.net";
const PASSWORD: &str = "correct-horse-battery-staple";

/// An API key of `by` holding only `scopes`, as the principal it authenticates.
async fn scoped_key(world: &World, by: &Principal, scopes: &[&str]) -> Principal {
    let scopes = Scopes::parse("scopes", scopes).unwrap();
    let org = by.organization_id.clone();
    let issued = world.app.admin.create_api_key(org, by.user_id.clone(), None, None, Some(scopes)).await.unwrap();
    world.app.auth.authenticate(api_key(&issued.secret)).await.unwrap()
}

/// Creates, as `caller`, an automation opening [`TARGET`] on a new task (made by `owner`).
async fn create(
    world: &World,
    owner: &Principal,
    caller: &Principal,
    adjust: impl FnOnce(&mut NewAutomation),
) -> Result<BrowserAutomation, AppError> {
    let task = NewTask { title: Some("Sign in to the admin console".into()), ..NewTask::default() };
    let task = world.app.tasks.create_task(owner, task).await.unwrap();
    let mut input = NewAutomation {
        task_id: Some(task.id.to_string()),
        name: Some("Admin console".into()),
        target_url: Some(TARGET.into()),
        instruction: Some("screenshot".into()),
        ..NewAutomation::default()
    };
    adjust(&mut input);
    world.app.automations.create(caller, input).await
}

/// Seals `fields` as the connection's credentials, as the integration use cases store them.
async fn seal_credentials(world: &World, org: &OrganizationId, connection: &ConnectionId, fields: Value) {
    let owner = SecretOwner {
        organization_id: org,
        owner_kind: CONNECTION_CREDENTIALS_OWNER_KIND,
        owner_id: connection.as_str(),
    };
    let ciphertext = BindingCipher.seal(&SecretString::from(fields.to_string()), owner).unwrap();
    let stored = StoredSecret {
        organization_id: org.clone(),
        owner_kind: CONNECTION_CREDENTIALS_OWNER_KIND.to_owned(),
        owner_id: connection.to_string(),
        key_id: BindingCipher.current_key_id(),
        ciphertext,
        updated_at: world.clock.now(),
    };
    world.secrets.put(&stored).await.unwrap();
}

#[track_caller]
fn assert_denied(result: Result<BrowserAutomation, AppError>, rule: &str) {
    match result {
        Err(AppError::Denied(why)) => assert!(why.contains(rule), "{why:?} does not name {rule:?}"),
        other => panic!("expected a refusal naming {rule:?}, got {other:?}"),
    }
}

#[track_caller]
fn assert_invalid(result: Result<BrowserAutomation, AppError>, field: &str, message: &str) {
    match result {
        Err(AppError::Validation(errors)) => {
            assert_eq!(errors.0[0].field, field, "{errors:?}");
            assert!(errors.0[0].message.contains(message), "{errors:?}");
        }
        other => panic!("expected a 400 naming {field}, got {other:?}"),
    }
}

fn worker(world: &mut World) -> Arc<AutomationWorker> {
    Arc::new(world.app.take_worker().unwrap())
}

/// Starts a run of `automation` and lets the worker carry it out; the run.
async fn run(
    world: &World,
    worker: &Arc<AutomationWorker>,
    caller: &Principal,
    automation: &BrowserAutomation,
) -> AutomationRun {
    let started = world.app.automations.start_run(caller, &automation.id).await.unwrap();
    worker.tick().await;
    world.automations.all_runs().into_iter().find(|r| r.id == started.run.id).unwrap()
}

fn rename() -> AutomationChanges {
    AutomationChanges { name: Some("Renamed".into()), ..AutomationChanges::default() }
}

#[tokio::test]
async fn a_key_scoped_to_automations_write_may_not_attach_a_connection_nor_change_an_automation_that_has_one() {
    let world = World::new();
    let tenant = world.tenant().await;
    let owner = &tenant.owner;
    let connection = world.connections.add(&tenant.org, &owner.user_id, world.clock.now());
    let key = scoped_key(&world, owner, &["automations:write"]).await;
    let attach = |input: &mut NewAutomation| input.connection_id = Some(connection.to_string());

    let rule = "the API key lacks scope integrations:write";
    assert_denied(create(&world, owner, &key, attach).await, rule);
    let attached = create(&world, owner, owner, attach).await.unwrap();
    assert_eq!(attached.connection_id.as_ref(), Some(&connection));

    // Whatever it would change (where the run goes, what it does, the connection itself).
    let changes = [
        rename(),
        AutomationChanges { target_url: Some("https://elsewhere.example.org/".into()), ..AutomationChanges::default() },
        AutomationChanges {
            instruction: Some("type secret \"password\" into \"Search\"".into()),
            ..Default::default()
        },
        AutomationChanges { allowed_origins: Some(vec!["https://elsewhere.example.org".into()]), ..Default::default() },
        AutomationChanges { connection_id: Some(None), ..AutomationChanges::default() },
    ];
    for change in changes {
        assert_denied(world.app.automations.update(&key, &attached.id, change, &IfMatch::Absent).await, rule);
    }
    assert_eq!(world.automations.automation(&attached.id), attached, "nothing changed");

    // A key that may also write integrations may, as its creator may.
    let both = scoped_key(&world, owner, &["automations:write", "integrations:write"]).await;
    let renamed = world.app.automations.update(&both, &attached.id, rename(), &IfMatch::Absent).await.unwrap();
    assert_eq!(renamed.name, "Renamed");

    // Without a connection, automations:write is all a change needs; attaching one is not.
    let plain = create(&world, owner, &key, |_| {}).await.unwrap();
    world.app.automations.update(&key, &plain.id, rename(), &IfMatch::Absent).await.unwrap();
    let attach = AutomationChanges { connection_id: Some(Some(connection.to_string())), ..Default::default() };
    assert_denied(world.app.automations.update(&key, &plain.id, attach, &IfMatch::Absent).await, rule);
    assert_eq!(world.automations.automation(&plain.id).connection_id, None);
}

#[tokio::test]
async fn a_step_types_a_secret_only_on_the_origin_of_the_target() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let owner = &tenant.owner;
    let connection = world.connections.add(&tenant.org, &owner.user_id, world.clock.now());
    seal_credentials(&world, &tenant.org, &connection, json!({"password": PASSWORD})).await;
    let worker = worker(&mut world);
    let on_partner = format!("go to \"{PARTNER}/login\"\ntype secret \"password\" into \"Password\"");
    let automation = create(&world, owner, owner, |input| {
        input.instruction = Some(on_partner);
        input.connection_id = Some(connection.to_string());
        input.allowed_origins = Some(vec![PARTNER.into()]);
    })
    .await
    .unwrap();

    let refused = run(&world, &worker, owner, &automation).await;
    assert_eq!(refused.status, RunStatus::Failed, "{refused:?}");
    assert_eq!(
        refused.error.as_deref(),
        Some(
            "step 2 (type secret \"Password\"): the secret password may be typed only on the origin of targetUrl \
             (https://admin.example.com), not on the page's origin https://partner.example.net"
        )
    );
    assert_eq!(world.browser.log().visited, [format!("{PARTNER}/login")], "the page did go there");
    assert_eq!(world.browser.log().typed, Vec::<(String, String)>::new(), "nothing was typed on the partner's page");

    // The automation's own secrets stay on the target's origin as well.
    let secrets = &world.app.automation_secrets;
    let pin = SecretInput { value: Some("2468-1357".to_owned().into()) };
    secrets.put(owner, &automation.id, "PIN", pin, &IfMatch::Absent).await.unwrap();
    let own = format!("go to \"{PARTNER}/login\"\ntype secret \"PIN\" into \"PIN\"");
    let changes = AutomationChanges { instruction: Some(own), ..AutomationChanges::default() };
    world.app.automations.update(owner, &automation.id, changes, &IfMatch::Absent).await.unwrap();
    let refused = run(&world, &worker, owner, &automation).await;
    assert!(refused.error.as_deref().unwrap_or_default().contains("the secret PIN may be typed only"), "{refused:?}");
    assert_eq!(world.browser.log().typed, Vec::<(String, String)>::new());

    // On the target's own origin the credential is typed: the refusal above is the origin's.
    let home = "type secret \"password\" into \"Password\"".to_owned();
    let changes = AutomationChanges { instruction: Some(home), ..AutomationChanges::default() };
    world.app.automations.update(owner, &automation.id, changes, &IfMatch::Absent).await.unwrap();
    let typed = run(&world, &worker, owner, &automation).await;
    assert_eq!(typed.status, RunStatus::Completed, "{typed:?}");
    assert_eq!(world.browser.log().typed, [(TARGET.to_owned(), PASSWORD.to_owned())]);
}

#[tokio::test]
async fn a_go_to_step_outside_the_allowed_origins_is_refused_and_reported() {
    let mut world = World::new();
    let tenant = world.tenant().await;
    let owner = &tenant.owner;
    let worker = worker(&mut world);
    let away = "https://collector.example.org/c?seen=MFA";
    let script = format!("go to \"{away}\"\nscreenshot");
    let automation = create(&world, owner, owner, |input| input.instruction = Some(script)).await.unwrap();
    assert_eq!(automation.allowed_origins, Vec::<String>::new());

    let refused = run(&world, &worker, owner, &automation).await;
    assert_eq!(refused.status, RunStatus::Failed, "{refused:?}");
    let reason = "refused to go to https://collector.example.org: it is neither the origin of targetUrl nor one of \
                  the automation's allowedOrigins";
    assert_eq!(refused.error, Some(format!("step 1 (go to \"{away}\"): {reason}")));
    assert_eq!(refused.steps[0].outcome, StepOutcome::Failed);
    let log = world.browser.log();
    assert_eq!(log.visited, Vec::<String>::new(), "not followed");
    assert_eq!(log.kept_to, [vec![TARGET_ORIGIN.to_owned()]], "the page itself was kept to the target's origin");

    // Allowed, it is followed, and the page is kept to both origins.
    let allow = AutomationChanges {
        allowed_origins: Some(vec!["https://Collector.example.org:443".into()]),
        ..AutomationChanges::default()
    };
    let allowed = world.app.automations.update(owner, &automation.id, allow, &IfMatch::Absent).await.unwrap();
    assert_eq!(allowed.allowed_origins, ["https://collector.example.org"], "stored as a browser writes it");
    let followed = run(&world, &worker, owner, &automation).await;
    assert_eq!(followed.status, RunStatus::Completed, "{followed:?}");
    let log = world.browser.log();
    assert_eq!(log.visited, [away]);
    assert_eq!(log.kept_to[1], [TARGET_ORIGIN, "https://collector.example.org"]);
}

/// A model that calls the scripted tools in order, then finishes `passed`, and keeps what it was
/// told.
#[derive(Default)]
struct ScriptedModel {
    calls: Mutex<VecDeque<(&'static str, Value)>>,
    /// Each turn's conversation, as the model got it.
    heard: Mutex<Vec<Vec<String>>>,
}

#[async_trait]
impl AgentModel for ScriptedModel {
    async fn complete(&self, messages: &[ChatMessage], _tools: &[ToolSpec]) -> Result<ModelReply, ModelError> {
        self.heard.lock().unwrap().push(messages.iter().map(|m| m.content.clone()).collect());
        let (name, arguments) = self
            .calls
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(("finish", json!({"outcome": "passed", "reason": "done"})));
        let call = ToolCall { id: "call".into(), name: name.into(), arguments };
        Ok(ModelReply { content: None, tool_calls: vec![call], usage: None })
    }
}

#[tokio::test]
async fn the_models_navigate_goes_only_to_the_allowed_origins_and_it_is_told_so() {
    let model = Arc::new(ScriptedModel::default());
    let away = "https://collector.example.org/c?seen=MFA-optional";
    model.calls.lock().unwrap().push_back(("navigate", json!({"url": away})));
    let mut world = World::with_model(settings(), model.clone());
    let tenant = world.tenant().await;
    let owner = &tenant.owner;
    let worker = worker(&mut world);
    let instruction = "Check that two-factor authentication is enforced".to_owned();
    let automation = create(&world, owner, owner, |input| input.instruction = Some(instruction)).await.unwrap();

    let done = run(&world, &worker, owner, &automation).await;
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert_eq!(done.verdict.as_ref().map(|v| v.outcome), Some(VerdictOutcome::Passed));
    let navigate = &done.steps[0];
    assert_eq!((navigate.action.as_str(), navigate.outcome), ("navigate", StepOutcome::Failed), "{done:?}");
    assert!(navigate.detail.starts_with("refused to go to https://collector.example.org"), "{navigate:?}");
    assert_eq!(world.browser.log().visited, Vec::<String>::new(), "not followed");
    let second_turn = model.heard.lock().unwrap()[1].clone();
    let told = "Failed: refused to go to https://collector.example.org";
    assert!(second_turn.iter().any(|m| m.starts_with(told)), "{second_turn:?}");
}

#[tokio::test]
async fn allowed_origins_are_bare_https_origins_or_http_on_an_allowed_host() {
    let mut settings = settings();
    settings.automations.allowed_hosts = vec!["127.0.0.1".into()];
    let world = World::with(settings);
    let tenant = world.tenant().await;
    let owner = &tenant.owner;
    let origins = |list: &[&str]| {
        let list: Vec<String> = list.iter().map(|o| (*o).to_owned()).collect();
        move |input: &mut NewAutomation| input.allowed_origins = Some(list)
    };
    let bare = "must be an origin such as https://login.example.com";
    assert_invalid(
        create(&world, owner, owner, origins(&["https://login.example.com/path"])).await,
        "allowedOrigins",
        bare,
    );
    assert_invalid(create(&world, owner, owner, origins(&["login.example.com"])).await, "allowedOrigins", bare);
    let http = "http://login.example.com must use https (http only for a host AUTOMATION_ALLOWED_HOSTS names or the \
                operator granted to this organization)";
    assert_invalid(create(&world, owner, owner, origins(&["http://login.example.com"])).await, "allowedOrigins", http);
    let fine = create(&world, owner, owner, origins(&["http://127.0.0.1:8080", "https://login.example.com"])).await;
    assert_eq!(fine.unwrap().allowed_origins, ["http://127.0.0.1:8080", "https://login.example.com"]);
}
