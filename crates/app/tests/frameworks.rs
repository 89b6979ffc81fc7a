//! Who sees a framework's mapped controls: its requirements and statuses are a framework read,
//! the controls' names and statuses a controls read.

use compliance_app::Principal;
use compliance_domain::FrameworkId;
use compliance_domain::access::Scopes;
use compliance_domain::control::NewControl;
use compliance_domain::framework::{NewFramework, NewRequirement};
use compliance_domain::framework_status::{NewRequirementMapping, RequirementStatus};

use crate::support::{World, api_key};

/// A framework of one requirement, mapped to the control "Disk encryption".
async fn mapped_framework(world: &World, owner: &Principal) -> FrameworkId {
    let requirement = NewRequirement {
        identifier: Some("CC6.1".into()),
        title: Some("Logical access".into()),
        ..NewRequirement::default()
    };
    let input = NewFramework {
        name: Some("SOC 2".into()),
        version: Some("2022".into()),
        requirements: Some(vec![requirement]),
    };
    let framework = world.app.frameworks.create_framework(owner, input).await.unwrap();
    let control = NewControl { name: Some("Disk encryption".into()), ..NewControl::default() };
    let control = world.app.controls.create_control(owner, control).await.unwrap().control;
    let mapping = NewRequirementMapping { requirement_id: Some(framework.requirements[0].id.to_string()) };
    world.app.control_requirements.map_requirement(owner, &control.id, mapping).await.unwrap();
    framework.framework.id
}

/// The names of the controls each requirement of the view shows, and the requirements' statuses.
async fn seen(world: &World, caller: &Principal, id: &FrameworkId) -> (Vec<Vec<String>>, Vec<RequirementStatus>) {
    let now = world.app.frameworks.get_framework(caller, id).await.unwrap();
    let status = world.app.frameworks.framework_status(caller, id, None).await.unwrap();
    assert_eq!(now.status.requirements, status.status.requirements, "both routes show the same");
    let requirements = &now.status.requirements;
    let names = requirements.iter().map(|r| r.controls.iter().map(|c| c.name.clone()).collect()).collect();
    (names, requirements.iter().map(|r| r.status).collect())
}

#[tokio::test]
async fn only_callers_who_may_read_controls_see_the_mapped_controls() {
    let world = World::new();
    let tenant = world.tenant().await;
    let id = mapped_framework(&world, &tenant.owner).await;
    let (names, statuses) = seen(&world, &tenant.owner, &id).await;
    assert_eq!(names, [vec!["Disk encryption".to_owned()]], "the owner reads controls");
    assert_ne!(statuses, [RequirementStatus::Unmapped]);

    // An employee reads frameworks but not controls; so does a key scoped to frameworks:read.
    let employee = world.member(&tenant.org, "employee").await;
    let scopes = Scopes::parse("scopes", &["frameworks:read"]).unwrap();
    let issued = world
        .app
        .admin
        .create_api_key(tenant.org.clone(), tenant.owner.user_id.clone(), None, None, Some(scopes))
        .await
        .unwrap();
    let narrow_key = world.app.auth.authenticate(api_key(&issued.secret)).await.unwrap();
    for caller in [&employee, &narrow_key] {
        let (names, seen_statuses) = seen(&world, caller, &id).await;
        assert_eq!(names, [Vec::<String>::new()], "no control's name or status");
        assert_eq!(seen_statuses, statuses, "the requirement's own status is still shown");
    }
}
