//! An automation's login secrets: sealed for the organization and the automation, listed by name
//! only, bounded in number.

use compliance_app::{AppError, Principal};
use compliance_domain::automation::{BrowserAutomation, NewAutomation};
use compliance_domain::automation_secret::{PER_AUTOMATION_MAX, SecretInput};
use compliance_domain::etag::IfMatch;
use compliance_domain::task::NewTask;

use crate::support::World;

const VALUE: &str = "correct-horse-battery-staple";

async fn automation(world: &World, caller: &Principal) -> BrowserAutomation {
    let task = NewTask { title: Some("Log in".into()), ..NewTask::default() };
    let task = world.app.tasks.create_task(caller, task).await.unwrap();
    let input = NewAutomation {
        task_id: Some(task.id.to_string()),
        name: Some("Admin console".into()),
        target_url: Some("https://admin.example.com/".into()),
        instruction: Some("Sign in and check the settings.".into()),
        ..NewAutomation::default()
    };
    world.app.automations.create(caller, input).await.unwrap()
}

fn value(text: &str) -> SecretInput {
    SecretInput { value: Some(text.to_owned().into()) }
}

#[tokio::test]
async fn a_value_is_sealed_for_its_automation_and_listed_by_name_only() {
    let world = World::new();
    let tenant = world.tenant().await;
    let (first, second) = (automation(&world, &tenant.owner).await, automation(&world, &tenant.owner).await);
    let secrets = &world.app.automation_secrets;
    let written = secrets.put(&tenant.owner, &first.id, "password", value(VALUE), &IfMatch::Absent).await.unwrap();
    assert!(written.created);
    assert!(!secrets.put(&tenant.owner, &first.id, "password", value(VALUE), &IfMatch::Absent).await.unwrap().created);
    secrets.put(&tenant.owner, &second.id, "password", value("another"), &IfMatch::Absent).await.unwrap();

    // The store holds ciphertexts bound to each automation, never the value.
    let stored = world.secrets.ciphertexts();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|c| !String::from_utf8_lossy(c).contains(VALUE)));
    let owners: Vec<String> =
        stored.iter().map(|c| String::from_utf8_lossy(c).split('\0').next().unwrap().into()).collect();
    assert!(owners.iter().any(|o| o.ends_with(&format!("{}/password", first.id))), "{owners:?}");
    assert!(owners.iter().any(|o| o.ends_with(&format!("{}/password", second.id))), "{owners:?}");

    let listed = secrets.list(&tenant.owner, &first.id).await.unwrap();
    assert_eq!(listed.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["password"]);
    assert!(!format!("{listed:?}").contains(VALUE));
    assert_eq!(
        secrets.delete(&tenant.owner, &first.id, "password", &IfMatch::Absent).await.unwrap().as_str(),
        "password"
    );
    assert!(matches!(
        secrets.delete(&tenant.owner, &first.id, "password", &IfMatch::Absent).await,
        Err(AppError::NotFound("secret"))
    ));
    assert_eq!(secrets.list(&tenant.owner, &second.id).await.unwrap().len(), 1, "the other automation's stays");
}

#[tokio::test]
async fn an_automation_keeps_a_bounded_number_of_secrets() {
    let world = World::new();
    let tenant = world.tenant().await;
    let automation = automation(&world, &tenant.owner).await;
    let secrets = &world.app.automation_secrets;
    for i in 0..PER_AUTOMATION_MAX {
        secrets.put(&tenant.owner, &automation.id, &format!("s{i}"), value("v"), &IfMatch::Absent).await.unwrap();
    }
    let refused =
        secrets.put(&tenant.owner, &automation.id, "one_more", value("v"), &IfMatch::Absent).await.unwrap_err();
    assert!(matches!(&refused, AppError::Validation(e) if e.0[0].field == "name"), "{refused:?}");
    // Replacing one that exists is still allowed.
    secrets.put(&tenant.owner, &automation.id, "s0", value("w"), &IfMatch::Absent).await.unwrap();
}

#[tokio::test]
async fn another_organization_finds_no_automation() {
    let world = World::new();
    let (a, b) = (world.tenant().await, world.tenant().await);
    let automation = automation(&world, &a.owner).await;
    let secrets = &world.app.automation_secrets;
    let refused = secrets.put(&b.owner, &automation.id, "password", value(VALUE), &IfMatch::Absent).await.unwrap_err();
    assert!(matches!(refused, AppError::NotFound("automation")), "{refused:?}");
    assert!(matches!(secrets.list(&b.owner, &automation.id).await, Err(AppError::NotFound("automation"))));
    assert!(world.secrets.ciphertexts().is_empty());
}
