//! The policy review worker over in-memory policies and the fake clock: a published policy whose
//! review date has passed moves to `needs_review` once, with its entry by the worker; others stay.

use compliance_app::PolicyReviewWorker;
use compliance_domain::audit::ActorType;
use compliance_domain::policy::{NewPolicy, Policy, PolicyStatus};
use compliance_domain::{OrganizationId, UserId};
use compliance_ports::Clock as _;
use serde_json::json;

use crate::support::{Tenant, World};

/// A policy of `org` published a day before now, to be reviewed `review_in` from now.
fn published(world: &World, org: &OrganizationId, review_in: time::Duration) -> Policy {
    let now = world.clock.now();
    let input: NewPolicy = serde_json::from_value(json!({"name": "Access", "content": []})).unwrap();
    let mut policy = Policy::create(org.clone(), input, now.plus(-time::Duration::days(2))).unwrap();
    policy.publish(&UserId::generate(), None, now.plus(-time::Duration::days(1)));
    policy.review_date = now.plus(review_in);
    policy
}

fn worker(world: &World) -> PolicyReviewWorker {
    world.another_instance().take_policy_review_worker().unwrap()
}

#[tokio::test]
async fn a_passed_review_date_needs_review_once() {
    let world = World::new();
    let Tenant { org, .. } = world.tenant().await;
    let due = published(&world, &org, -time::Duration::hours(1));
    let on_the_minute = published(&world, &org, time::Duration::ZERO);
    let future = published(&world, &org, time::Duration::days(3));
    let mut archived = published(&world, &org, -time::Duration::hours(1));
    archived.is_archived = true;
    let mut draft = published(&world, &org, -time::Duration::hours(1));
    draft.status = PolicyStatus::Draft;
    for policy in [&due, &on_the_minute, &future, &archived, &draft] {
        world.policies.put(policy.clone());
    }

    let (first, second) = (worker(&world), worker(&world));
    assert_eq!(first.tick().await.unwrap(), 2);
    assert_eq!(second.tick().await.unwrap(), 0, "another instance finds nothing left to move");
    assert_eq!(first.tick().await.unwrap(), 0, "nor does the next tick");
    assert_eq!(world.policies.status(&due.id), PolicyStatus::NeedsReview);
    assert_eq!(world.policies.status(&on_the_minute.id), PolicyStatus::NeedsReview);
    assert_eq!(world.policies.status(&future.id), PolicyStatus::Published);
    assert_eq!(world.policies.status(&archived.id), PolicyStatus::Published, "archived policies are left alone");
    assert_eq!(world.policies.status(&draft.id), PolicyStatus::Draft);

    let entries = world.drafts.all();
    assert_eq!(entries.len(), 2);
    for entry in &entries {
        assert_eq!(entry.action, "policy.review_requested");
        assert_eq!(entry.organization_id, org);
        assert_eq!((entry.actor.actor_type, entry.actor.id.as_str()), (ActorType::System, "policy-review-worker"));
        assert_eq!(entry.created_at, world.clock.now());
        assert_eq!(entry.request_id, None);
    }
}

#[tokio::test]
async fn the_review_date_is_read_by_the_clock() {
    let world = World::new();
    let Tenant { org, .. } = world.tenant().await;
    let later = published(&world, &org, time::Duration::days(3));
    world.policies.put(later.clone());
    let worker = worker(&world);
    assert_eq!(worker.tick().await.unwrap(), 0);
    world.clock.advance(time::Duration::days(3) - time::Duration::seconds(1));
    assert_eq!(worker.tick().await.unwrap(), 0, "a second early");
    world.clock.advance(time::Duration::seconds(1));
    assert_eq!(worker.tick().await.unwrap(), 1);
    assert_eq!(world.policies.status(&later.id), PolicyStatus::NeedsReview);
    let moved = world.drafts.all()[0].clone();
    assert_eq!(moved.resource_id, later.id.to_string());
    assert_eq!(moved.created_at, world.clock.now());
}

#[tokio::test]
async fn each_organization_gets_its_own_entries() {
    let world = World::new();
    let (a, b) = (world.tenant().await.org, world.tenant().await.org);
    for org in [&a, &b] {
        world.policies.put(published(&world, org, -time::Duration::minutes(1)));
    }
    assert_eq!(worker(&world).tick().await.unwrap(), 2);
    let mut orgs: Vec<OrganizationId> = world.drafts.all().iter().map(|e| e.organization_id.clone()).collect();
    orgs.sort_by(|x, y| x.as_str().cmp(y.as_str()));
    let mut expected = vec![a, b];
    expected.sort_by(|x, y| x.as_str().cmp(y.as_str()));
    assert_eq!(orgs, expected);
}
