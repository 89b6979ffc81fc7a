//! Memberships: a user joins an organization only by accepting an invitation (or through the
//! operator); no tenant links an existing user by id.

use compliance_app::AppError;
use compliance_app::bulk::BulkOperation;
use compliance_domain::etag::IfMatch;
use compliance_domain::people::{MemberChanges, NewMember};
use compliance_ports::Clock;

use crate::support::World;

fn invalid_field<T: std::fmt::Debug>(answer: Result<T, AppError>, field: &str) {
    match answer {
        Err(AppError::Validation(errors)) => assert!(format!("{errors:?}").contains(field), "{errors:?}"),
        other => panic!("expected a 400 naming {field}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_membership_never_moves_to_another_user() {
    let world = World::new();
    let (ours, theirs) = (world.tenant().await, world.tenant().await);
    let employee = world.member(&ours.org, "employee").await;
    let people = &world.app.people;
    let to =
        |user: &compliance_domain::UserId| MemberChanges { user_id: Some(user.clone()), ..MemberChanges::default() };

    // Another tenant's owner, whose sign-ins the organization would then see.
    invalid_field(
        people.update(&ours.owner, &employee.member_id, to(&theirs.owner.user_id), &IfMatch::Absent).await,
        "userId",
    );
    let person = people.get(&ours.owner, &employee.member_id).await.unwrap();
    assert_eq!(person.member.user_id, employee.user_id);
    people.update(&ours.owner, &employee.member_id, to(&employee.user_id), &IfMatch::Absent).await.unwrap();
}

#[tokio::test]
async fn people_are_not_created_by_naming_a_user() {
    let world = World::new();
    let (ours, theirs) = (world.tenant().await, world.tenant().await);
    let input = NewMember {
        user_id: Some(theirs.owner.user_id.clone()),
        role: Some("employee".into()),
        ..NewMember::default()
    };
    for atomic in [true, false] {
        let answer =
            world.app.people.bulk_people(&ours.owner, vec![BulkOperation::Create(input.clone())], atomic).await;
        match answer {
            Err(AppError::BulkFailed(failed)) => {
                invalid_field(Err::<(), _>(failed.into_iter().next().unwrap().1), "op")
            }
            Ok(mut results) => invalid_field(results.remove(0), "op"),
            other => panic!("{other:?}"),
        }
    }
    let listed = world
        .app
        .people
        .list(&ours.owner, true, &compliance_ports::PersonQuery::unfiltered(compliance_ports::PageRequest::first(50)))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1, "only the owner");
}

#[tokio::test]
async fn last_login_is_the_organizations_own() {
    let world = World::new();
    let (ours, theirs) = (world.tenant().await, world.tenant().await);
    // A user of both organizations whose session comes only to theirs.
    let user = world.member(&theirs.org, "employee").await;
    world.app.admin.add_member(ours.org.clone(), user.user_id.clone(), "employee".into(), None).await.unwrap();

    let seen_by_them = world.app.people.get(&theirs.owner, &user.member_id).await.unwrap();
    assert_eq!(seen_by_them.member.last_login, Some(world.clock.now()));
    let ours_member = world
        .app
        .people
        .list(&ours.owner, true, &compliance_ports::PersonQuery::unfiltered(compliance_ports::PageRequest::first(50)))
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| p.user.id == user.user_id)
        .unwrap();
    assert_eq!(ours_member.member.last_login, None, "a sign-in to use another organization is not ours to see");
}
