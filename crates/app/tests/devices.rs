//! Device labels: only the operator assigns them, never one of the device management system's
//! built-in labels, and no tenant learns which labels other tenants use.

use compliance_app::{AppError, DeviceLabelAssigned};
use compliance_domain::etag::IfMatch;
use compliance_domain::organization::OrganizationChanges;
use compliance_domain::people::MemberChanges;

use crate::support::World;

/// FleetDM's built-in label of every host.
const ALL_HOSTS: i64 = 6;
const ACME: i64 = 42;

fn world() -> World {
    let world = World::new();
    world.devices.add_label(ALL_HOSTS, "All Hosts", true, &[1, 2, 3, 4]);
    world.devices.add_label(ACME, "acme", false, &[1, 2]);
    world
}

fn denied<T: std::fmt::Debug>(answer: Result<T, AppError>) -> String {
    match answer {
        Err(AppError::Denied(why)) => why,
        other => panic!("expected a 403 naming the rule, got {other:?}"),
    }
}

fn invalid_field<T: std::fmt::Debug>(answer: Result<T, AppError>, field: &str) -> String {
    match answer {
        Err(AppError::Validation(errors)) => {
            let text = format!("{errors:?}");
            assert!(text.contains(field), "{text}");
            text
        }
        other => panic!("expected a 400 naming {field}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_tenant_cannot_choose_the_organizations_device_label() {
    let world = world();
    let tenant = world.tenant().await;
    let organization = &world.app.organization;
    let set = |label| OrganizationChanges { device_manager_label_id: Some(label), ..OrganizationChanges::default() };

    let why = denied(organization.update(&tenant.owner, set(Some(ALL_HOSTS)), &IfMatch::Absent).await);
    assert!(why.contains("deviceManagerLabelId") && why.contains("operator"), "{why}");
    assert_eq!(organization.get(&tenant.owner).await.unwrap().device_manager_label_id, None);
    assert!(world.app.devices.list(&tenant.owner).await.unwrap().is_empty());

    // Writing back what was read is no change, and allowed.
    organization.update(&tenant.owner, set(None), &IfMatch::Absent).await.unwrap();
    world.app.admin.set_device_label(tenant.org.clone(), None, Some(ACME)).await.unwrap();
    organization.update(&tenant.owner, set(Some(ACME)), &IfMatch::Absent).await.unwrap();
    denied(organization.update(&tenant.owner, set(None), &IfMatch::Absent).await);
    assert_eq!(world.app.devices.list(&tenant.owner).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_tenant_cannot_choose_a_members_device_label() {
    let world = world();
    let tenant = world.tenant().await;
    let employee = world.member(&tenant.org, "employee").await;
    let set = |label| MemberChanges { device_manager_label_id: Some(label), ..MemberChanges::default() };
    let people = &world.app.people;

    let why = denied(people.update(&tenant.owner, &employee.member_id, set(Some(ALL_HOSTS)), &IfMatch::Absent).await);
    assert!(why.contains("deviceManagerLabelId"), "{why}");
    let bulk = people
        .bulk_people(
            &tenant.owner,
            vec![compliance_app::bulk::BulkOperation::Update(employee.member_id.clone(), set(Some(ALL_HOSTS)))],
            true,
        )
        .await;
    assert!(matches!(bulk, Err(AppError::BulkFailed(_))), "{bulk:?}");
    assert!(world.app.devices.for_member(&tenant.owner, &employee.member_id).await.unwrap().is_empty());
    assert_eq!(world.devices.host_lookups(), 0);
    people.update(&tenant.owner, &employee.member_id, set(None), &IfMatch::Absent).await.unwrap();

    let assigned = world.app.admin.set_device_label(tenant.org.clone(), Some(employee.member_id.clone()), Some(ACME));
    let DeviceLabelAssigned::Member(person) = assigned.await.unwrap() else { panic!("the member's label") };
    assert_eq!(person.member.device_manager_label_id, Some(ACME));
    assert_eq!(world.app.devices.for_member(&tenant.owner, &employee.member_id).await.unwrap().len(), 2);
}

#[tokio::test]
async fn has_access_is_read_only() {
    let world = world();
    let tenant = world.tenant().await;
    let set = |value| OrganizationChanges { has_access: Some(value), ..OrganizationChanges::default() };
    let organization = &world.app.organization;
    let why = denied(organization.update(&tenant.owner, set(false), &IfMatch::Absent).await);
    assert!(why.contains("hasAccess"), "{why}");
    assert!(organization.get(&tenant.owner).await.unwrap().has_access);
    organization.update(&tenant.owner, set(true), &IfMatch::Absent).await.unwrap();
}

#[tokio::test]
async fn the_operator_never_assigns_a_built_in_unknown_or_taken_label() {
    let world = world();
    let (ours, theirs) = (world.tenant().await, world.tenant().await);
    let admin = &world.app.admin;

    let why = invalid_field(admin.set_device_label(ours.org.clone(), None, Some(ALL_HOSTS)).await, "label");
    assert!(why.contains("All Hosts") && why.contains("built-in"), "{why}");
    invalid_field(admin.set_device_label(ours.org.clone(), None, Some(999)).await, "label");
    invalid_field(admin.set_device_label(ours.org.clone(), None, Some(0)).await, "label");

    admin.set_device_label(theirs.org.clone(), None, Some(ACME)).await.unwrap();
    let taken = admin.set_device_label(ours.org.clone(), None, Some(ACME)).await;
    assert!(matches!(taken, Err(AppError::Conflict(_))), "{taken:?}");
    assert!(world.app.devices.list(&ours.owner).await.unwrap().is_empty());

    // Cleared, the label is free again.
    admin.set_device_label(theirs.org.clone(), None, None).await.unwrap();
    admin.set_device_label(ours.org.clone(), None, Some(ACME)).await.unwrap();
    assert_eq!(world.app.devices.list(&ours.owner).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_label_that_turns_out_built_in_lists_nothing() {
    let world = world();
    let tenant = world.tenant().await;
    world.app.admin.set_device_label(tenant.org.clone(), None, Some(ACME)).await.unwrap();
    // As a label stored before only the operator assigned them: the system says it is built in.
    world.devices.add_label(ACME, "All Hosts", true, &[1, 2, 3, 4]);
    let refused = world.app.devices.list(&tenant.owner).await;
    assert!(matches!(&refused, Err(AppError::Conflict(why)) if why.contains("built-in")), "{refused:?}");
    assert_eq!(world.devices.host_lookups(), 0);
}
