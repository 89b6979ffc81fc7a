//! `Idempotency-Key` decisions over time, with the fake clock: the lease that blocks a repeat,
//! the retry that takes over a dead attempt, the applied change that is never run again, and
//! the keys' expiry and pruning.

use compliance_app::Decision;
use compliance_domain::idempotency::{IdempotencyClaim, IdempotencyKey};
use compliance_ports::{Clock, StoredResponse};

use crate::support::{Tenant, World};

const ROUTE: &str = "POST /v1/risks";

fn created() -> StoredResponse {
    StoredResponse {
        status: 201,
        content_type: Some("application/json".into()),
        location: None,
        etag: Some("\"0123456789abcdef\"".into()),
        body: br#"{"id":"rsk_1"}"#.to_vec(),
    }
}

async fn reserve(world: &World, tenant: &Tenant, key: &str, fingerprint: &str) -> Decision {
    let key = IdempotencyKey::parse(key).unwrap();
    world.app.idempotency.reserve(&tenant.owner, &key, ROUTE, fingerprint.into()).await.unwrap()
}

fn claim(decision: Decision) -> IdempotencyClaim {
    match decision {
        Decision::Run(claim) => claim,
        other => panic!("expected to run, got {other:?}"),
    }
}

#[tokio::test]
async fn a_repeat_waits_for_the_lease_then_replays_the_kept_answer() {
    let world = World::new();
    let tenant = world.tenant().await;
    let first = claim(reserve(&world, &tenant, "k-1", "f").await);
    let Decision::InFlight { retry_after } = reserve(&world, &tenant, "k-1", "f").await else {
        panic!("not in flight")
    };
    assert!(retry_after <= world.app.settings.idempotency.lease && !retry_after.is_zero(), "{retry_after:?}");
    assert!(matches!(reserve(&world, &tenant, "k-1", "another body").await, Decision::Reused));
    world.app.idempotency.finish(&tenant.org, &first, created(), false).await.unwrap();
    let Decision::Replay(replayed) = reserve(&world, &tenant, "k-1", "f").await else { panic!("no replay") };
    assert_eq!(replayed, created());
}

#[tokio::test]
async fn a_dead_attempt_is_taken_over_after_its_lease_and_cannot_mark_the_key_any_more() {
    let world = World::new();
    let tenant = world.tenant().await;
    let dead = claim(reserve(&world, &tenant, "k-2", "f").await);
    world.clock.advance(time::Duration::try_from(world.app.settings.idempotency.lease).unwrap());
    let retry = claim(reserve(&world, &tenant, "k-2", "f").await);
    assert_eq!(retry.id, dead.id);
    assert_ne!(retry.attempt, dead.attempt);
    // The first attempt's transaction would fail (nothing changed); the retry's marks the key.
    assert!(!world.idempotency.mark_applied(&dead, world.clock.now(), ("risk", "rsk_1")));
    assert!(world.idempotency.mark_applied(&retry, world.clock.now(), ("risk", "rsk_1")));
}

#[tokio::test]
async fn an_applied_change_whose_answer_was_lost_is_never_run_again() {
    let world = World::new();
    let tenant = world.tenant().await;
    let first = claim(reserve(&world, &tenant, "k-3", "f").await);
    assert!(world.idempotency.mark_applied(&first, world.clock.now(), ("risk", "rsk_9")));
    // The process died before `finish`: while the lease runs a repeat waits, then it is told.
    assert!(matches!(reserve(&world, &tenant, "k-3", "f").await, Decision::InFlight { .. }));
    world.clock.advance(time::Duration::hours(1));
    let Decision::AppliedWithoutResponse { resource } = reserve(&world, &tenant, "k-3", "f").await else {
        panic!("ran again")
    };
    assert_eq!(resource, Some(("risk".into(), "rsk_9".into())));
    // A 5xx after the change was applied does not release the key either.
    world.app.idempotency.release(&tenant.org, &first).await.unwrap();
    assert!(matches!(reserve(&world, &tenant, "k-3", "f").await, Decision::AppliedWithoutResponse { .. }));
}

#[tokio::test]
async fn server_errors_release_the_key_and_a_secret_is_never_kept() {
    let world = World::new();
    let tenant = world.tenant().await;
    let first = claim(reserve(&world, &tenant, "k-4", "f").await);
    let failed = StoredResponse { status: 503, ..created() };
    world.app.idempotency.finish(&tenant.org, &first, failed, false).await.unwrap();
    let again = claim(reserve(&world, &tenant, "k-4", "f").await);
    world.idempotency.mark_applied(&again, world.clock.now(), ("apiKey", "key_1"));
    world.app.idempotency.finish(&tenant.org, &again, created(), true).await.unwrap();
    let Decision::Withheld { resource } = reserve(&world, &tenant, "k-4", "f").await else { panic!("not withheld") };
    assert_eq!(resource, Some(("apiKey".into(), "key_1".into())));
}

#[tokio::test]
async fn keys_expire_after_their_ttl_and_the_pruner_deletes_them() {
    let world = World::new();
    let tenant = world.tenant().await;
    let first = claim(reserve(&world, &tenant, "k-5", "f").await);
    world.app.idempotency.finish(&tenant.org, &first, created(), false).await.unwrap();
    claim(reserve(&world, &tenant, "k-6", "f").await);
    let ttl = world.app.settings.idempotency.ttl;
    world.clock.advance(ttl - time::Duration::seconds(1));
    assert_eq!(world.app.idempotency.prune_expired().await.unwrap(), 0);
    assert!(matches!(reserve(&world, &tenant, "k-5", "other").await, Decision::Reused));
    world.clock.advance(time::Duration::seconds(1));
    assert_eq!(world.app.idempotency.prune_expired().await.unwrap(), 2);
    assert_eq!(world.idempotency.count(), 0);
    // Forgotten: the same key is a new request now.
    assert!(matches!(reserve(&world, &tenant, "k-5", "other").await, Decision::Run(_)));
}

#[tokio::test]
async fn a_key_is_its_callers_own_and_a_refusal_is_not_kept() {
    let world = World::new();
    let tenant = world.tenant().await;
    let key = IdempotencyKey::parse("k-shared").unwrap();
    let member = world.member(&tenant.org, "admin").await;
    let (_, owners_key) = world.api_key(&tenant.owner).await;
    // Another member reserves the key first (the squat): the owner's request still runs.
    let squatted = world.app.idempotency.reserve(&member, &key, ROUTE, "squat".into()).await.unwrap();
    claim(squatted);
    for owner in [&tenant.owner, &owners_key] {
        let decision = world.app.idempotency.reserve(owner, &key, ROUTE, "owner's".into()).await.unwrap();
        claim(decision);
    }

    // A 401 or 403 is released, not kept: once allowed, the same request runs under the same key.
    for status in [401, 403] {
        let key = format!("k-refused-{status}");
        let refused = claim(reserve(&world, &tenant, &key, "f").await);
        let answer = StoredResponse { status, ..created() };
        world.app.idempotency.finish(&tenant.org, &refused, answer, false).await.unwrap();
        claim(reserve(&world, &tenant, &key, "f").await);
    }
}
