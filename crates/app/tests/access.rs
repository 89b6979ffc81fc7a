//! The permission matrix as the use cases apply it: roles, "own only" rules, API-key scopes, and a
//! revocation made by another instance taking effect at once.

use compliance_app::{App, AppError, Principal};
use compliance_domain::people::NewApiKey;
use compliance_domain::risk::{NewRisk, RiskCategory};
use compliance_domain::task::NewTask;
use compliance_ports::{ListName, PageRequest};

use crate::support::{World, api_key};

fn risk() -> NewRisk {
    NewRisk {
        title: Some("Laptop theft".into()),
        description: Some("Disks are not encrypted".into()),
        category: Some(RiskCategory::Technology),
        ..NewRisk::default()
    }
}

fn task(assignee: Option<&Principal>) -> NewTask {
    NewTask {
        title: Some("Rotate keys".into()),
        assignee_id: assignee.map(|p| p.member_id.clone()),
        ..NewTask::default()
    }
}

/// The 403 detail, or a panic naming what came instead.
fn denied<T: std::fmt::Debug>(answer: Result<T, AppError>) -> String {
    match answer {
        Err(AppError::Denied(why)) => why,
        other => panic!("expected a 403 naming the rule, got {other:?}"),
    }
}

fn page<F: Default, S>() -> compliance_ports::ListQuery<F, S> {
    compliance_ports::ListQuery::unfiltered(keys_page())
}

fn keys_page() -> PageRequest {
    PageRequest::first(50)
}

async fn key_with(app: &App, by: &Principal, scopes: &[&str]) -> Result<Principal, AppError> {
    let input = NewApiKey {
        name: Some("ci".into()),
        expires_at: None,
        scopes: Some(scopes.iter().map(|s| s.to_string()).collect()),
    };
    let issued = app.api_keys.create(by, input).await?;
    app.auth.authenticate(api_key(&issued.secret)).await
}

#[tokio::test]
async fn auditors_read_everything_and_write_nothing() {
    let world = World::new();
    let tenant = world.tenant().await;
    let auditor = world.member(&tenant.org, "auditor").await;
    world.app.risks.create_risk(&tenant.owner, risk()).await.unwrap();
    assert_eq!(world.app.risks.list_risks(&auditor, &page()).await.unwrap().total, 1);
    assert_eq!(denied(world.app.risks.create_risk(&auditor, risk()).await), "role auditor may not write risks");
    assert_eq!(denied(world.app.tasks.create_task(&auditor, task(None)).await), "role auditor may not write tasks");
    assert!(world.app.people.list(&auditor, false, &page()).await.is_ok());
}

#[tokio::test]
async fn employees_read_only_the_tasks_assigned_to_them() {
    let world = World::new();
    let tenant = world.tenant().await;
    let employee = world.member(&tenant.org, "employee").await;
    let theirs = world.app.tasks.create_task(&tenant.owner, task(Some(&employee))).await.unwrap();
    let others = world.app.tasks.create_task(&tenant.owner, task(Some(&tenant.owner))).await.unwrap();
    world.app.tasks.create_task(&tenant.owner, task(None)).await.unwrap();

    let listed = world.app.tasks.list_tasks(&employee, &page()).await.unwrap();
    assert_eq!(listed.items.iter().map(|t| &t.id).collect::<Vec<_>>(), vec![&theirs.id]);
    assert_eq!(listed.total, 1);
    assert_eq!(world.app.tasks.get_task(&employee, &theirs.id).await.unwrap().id, theirs.id);
    assert_eq!(
        denied(world.app.tasks.get_task(&employee, &others.id).await),
        "role employee may read only tasks assigned to them"
    );
    assert_eq!(world.app.tasks.list_tasks(&tenant.owner, &page()).await.unwrap().total, 3, "owners read all");
    assert_eq!(denied(world.app.risks.list_risks(&employee, &page()).await), "role employee may not read risks");
    assert_eq!(denied(world.app.people.list(&employee, false, &page()).await), "role employee may not read people");
}

#[tokio::test]
async fn several_roles_hold_the_union_and_unknown_words_grant_nothing() {
    let world = World::new();
    let tenant = world.tenant().await;
    let both = world.member(&tenant.org, "Employee, AUDITOR").await;
    assert!(world.app.risks.list_risks(&both, &page()).await.is_ok(), "the auditor part reads risks");
    assert!(world.app.risks.create_risk(&both, risk()).await.is_err());
    let viewer = world.member(&tenant.org, "viewer").await;
    assert_eq!(denied(world.app.risks.list_risks(&viewer, &page()).await), "role viewer may not read risks");
    assert_eq!(denied(world.app.organization.get(&viewer).await), "role viewer may not read organization");
}

#[tokio::test]
async fn a_key_holds_its_scopes_within_its_creators_role() {
    let world = World::new();
    let tenant = world.tenant().await;
    let reader = key_with(&world.app, &tenant.owner, &["risks:read"]).await.unwrap();
    assert!(world.app.risks.list_risks(&reader, &page()).await.is_ok());
    assert_eq!(denied(world.app.risks.create_risk(&reader, risk()).await), "the API key lacks scope risks:write");
    assert_eq!(denied(world.app.vendors.list_vendors(&reader, &page()).await), "the API key lacks scope vendors:read");

    let writer = key_with(&world.app, &tenant.owner, &["risks:write"]).await.unwrap();
    assert!(world.app.risks.list_risks(&writer, &page()).await.is_ok(), "write includes read");
    assert!(world.app.risks.create_risk(&writer, risk()).await.is_ok());

    // Never more than the creator's role, nor than the key that makes it.
    let auditor = world.member(&tenant.org, "auditor").await;
    let too_wide = key_with(&world.app, &auditor, &["risks:write"]).await;
    assert!(denied(too_wide).contains("role auditor may not write risks"));
    assert!(key_with(&world.app, &auditor, &["*:read"]).await.is_ok());
    let employee = world.member(&tenant.org, "employee").await;
    let broad = key_with(&world.app, &employee, &["*"]).await.unwrap();
    assert!(world.app.policies.list_policies(&broad, &page()).await.is_ok(), "`*` is what the role allows");
    assert_eq!(denied(world.app.risks.list_risks(&broad, &page()).await), "role employee may not read risks");
    let named = key_with(&world.app, &employee, &["risks:read"]).await;
    assert!(denied(named).contains("may not hold scope risks:read"));
    let keys_only = key_with(&world.app, &tenant.owner, &["api-keys:write"]).await.unwrap();
    let escalated = key_with(&world.app, &keys_only, &["risks:read"]).await;
    assert!(denied(escalated).contains("the API key lacks scope risks:read"));

    let unknown = key_with(&world.app, &tenant.owner, &["risks:eat"]).await;
    assert!(
        matches!(unknown, Err(AppError::Validation(ref e)) if format!("{e:?}").contains("risks:eat")),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn members_other_than_owners_and_admins_manage_only_their_own_keys() {
    let world = World::new();
    let tenant = world.tenant().await;
    let auditor = world.member(&tenant.org, "auditor").await;
    let employee = world.member(&tenant.org, "employee").await;
    let owners = world.app.api_keys.create(&tenant.owner, named(&["*"])).await.unwrap().key;
    let employees = world.app.api_keys.create(&employee, named(&["policies:read"])).await.unwrap().key;

    let listed = world.app.api_keys.list(&employee, &keys_page()).await.unwrap();
    assert_eq!(listed.items.iter().map(|k| &k.id).collect::<Vec<_>>(), vec![&employees.id]);
    assert_eq!(world.app.api_keys.list(&tenant.owner, &keys_page()).await.unwrap().total, 2);
    assert_eq!(
        denied(world.app.api_keys.revoke(&auditor, &owners.id).await),
        "role auditor may write only the API keys they created"
    );
    assert!(world.app.api_keys.revoke(&employee, &employees.id).await.unwrap().revoked_at.is_some());
    assert!(world.app.api_keys.revoke(&tenant.owner, &owners.id).await.is_ok(), "owners revoke any key");
}

fn named(scopes: &[&str]) -> NewApiKey {
    NewApiKey { name: Some("k".into()), expires_at: None, scopes: Some(scopes.iter().map(|s| s.to_string()).collect()) }
}

/// The cache remembers a caller only while the organization's access generation is unchanged:
/// a revocation by another instance (which the database's trigger counts) is refused at once.
#[tokio::test]
async fn a_revocation_by_another_instance_is_refused_at_once() {
    let world = World::new();
    let tenant = world.tenant().await;
    let (issued, _) = world.api_key(&tenant.owner).await;
    let lookups = world.credentials.lookups();
    world.app.auth.authenticate(api_key(&issued.secret)).await.unwrap();
    assert_eq!(world.credentials.lookups(), lookups, "remembered: no lookup");

    let other = world.another_instance();
    other.api_keys.revoke(&tenant.owner, &issued.key.id).await.unwrap();
    world.generations.bump(&tenant.org, ListName::Access); // the trigger of the revoking UPDATE
    let refused = world.app.auth.authenticate(api_key(&issued.secret)).await;
    assert!(matches!(refused, Err(AppError::Unauthenticated(_))), "no clock moved: {refused:?}");
    assert!(world.app.auth.remembered(&api_key(&issued.secret)).await.is_none());
}
