//! Internal hosts the operator grants to one organization: its webhooks and automations reach
//! them, another organization's do not, and a grant for one use is not one for the other.

use compliance_app::AppError;
use compliance_domain::OrganizationId;
use compliance_domain::allowed_host::AllowedHostUse;
use compliance_domain::automation::NewAutomation;
use compliance_domain::task::NewTask;
use compliance_domain::webhook::NewWebhook;

use crate::support::{Tenant, World};

/// A private address: refused by the webhook URL rules unless allowed.
const HOOK_HOST: &str = "10.0.0.8";
/// A host the fake browser treats as internal.
const APP_HOST: &str = "intranet.acme.test";

async fn hook(world: &World, tenant: &Tenant) -> Result<(), AppError> {
    let input = NewWebhook {
        url: Some(format!("http://{HOOK_HOST}:8080/hook")),
        events: Some(vec!["*".into()]),
        description: None,
    };
    world.app.webhooks.create(&tenant.owner, input).await.map(|_| ())
}

async fn automation(world: &World, tenant: &Tenant) -> Result<(), AppError> {
    let task = NewTask { title: Some("Check the intranet".into()), ..NewTask::default() };
    let task = world.app.tasks.create_task(&tenant.owner, task).await.unwrap();
    let input = NewAutomation {
        task_id: Some(task.id.to_string()),
        name: Some("Intranet".into()),
        target_url: Some(format!("http://{APP_HOST}/status")),
        instruction: Some("screenshot".into()),
        ..NewAutomation::default()
    };
    world.app.automations.create(&tenant.owner, input).await.map(|_| ())
}

#[track_caller]
fn refused(result: Result<(), AppError>, field: &str) {
    match result {
        Err(AppError::Validation(errors)) => assert_eq!(errors.0[0].field, field, "{errors:?}"),
        other => panic!("expected a 400 naming {field}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_host_granted_to_one_organization_is_reachable_by_it_only() {
    let world = World::new();
    world.browser.make_internal(APP_HOST);
    let (a, b) = (world.tenant().await, world.tenant().await);
    refused(hook(&world, &a).await, "url");
    refused(automation(&world, &a).await, "targetUrl");

    let grants = &world.app.allowed_hosts;
    grants.grant(&a.org, AllowedHostUse::Webhooks, HOOK_HOST).await.unwrap();
    grants.grant(&a.org, AllowedHostUse::Automations, " Intranet.ACME.test. ").await.unwrap();
    hook(&world, &a).await.unwrap();
    automation(&world, &a).await.unwrap();
    // B reaches neither.
    refused(hook(&world, &b).await, "url");
    refused(automation(&world, &b).await, "targetUrl");

    // A grant is for one use: the webhook host is not the automations', nor the other way round.
    let listed = grants.list(&a.org).await.unwrap();
    let shown: Vec<(AllowedHostUse, &str)> = listed.iter().map(|g| (g.used_for, g.host.as_str())).collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown.contains(&(AllowedHostUse::Webhooks, HOOK_HOST)), "{shown:?}");
    assert!(shown.contains(&(AllowedHostUse::Automations, APP_HOST)), "spelled one way: {shown:?}");
    assert!(grants.list(&b.org).await.unwrap().is_empty());

    // Withdrawn, the host is refused again.
    assert!(grants.revoke(&a.org, AllowedHostUse::Webhooks, HOOK_HOST).await.unwrap());
    assert!(!grants.revoke(&a.org, AllowedHostUse::Webhooks, HOOK_HOST).await.unwrap());
    refused(hook(&world, &a).await, "url");
}

#[tokio::test]
async fn a_grant_names_a_host_of_an_organization_that_exists() {
    let world = World::new();
    let tenant = world.tenant().await;
    let grants = &world.app.allowed_hosts;
    for bad in ["http://10.0.0.8/", "10.0.0.8:8080", "", "a host"] {
        let result = grants.grant(&tenant.org, AllowedHostUse::Webhooks, bad).await;
        assert!(matches!(result, Err(AppError::Validation(_))), "{bad}: {result:?}");
    }
    let nobody = OrganizationId::generate();
    let result = grants.grant(&nobody, AllowedHostUse::Webhooks, HOOK_HOST).await;
    assert!(matches!(result, Err(AppError::NotFound(_))), "{result:?}");
}
