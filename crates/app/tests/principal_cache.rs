//! The in-process memory of authenticated credentials (`AUTH_CACHE_SECONDS`): it spares the store
//! for its TTL, by the use case's clock; changes made through this instance take effect at once,
//! changes made elsewhere within the TTL.

use compliance_app::{AppError, Settings};
use compliance_domain::etag::IfMatch;
use compliance_domain::people::MemberChanges;

use crate::support::{World, api_key, settings};

#[tokio::test]
async fn a_credential_is_looked_up_again_once_its_ttl_is_over() {
    let world = World::new();
    let tenant = world.tenant().await;
    let (issued, principal) = world.api_key(&tenant.owner).await;
    let secret = issued.secret;
    let lookups = world.credentials.lookups();

    for _ in 0..3 {
        assert_eq!(world.app.auth.authenticate(api_key(&secret)).await.unwrap(), principal);
    }
    assert_eq!(world.credentials.lookups(), lookups, "answered from memory within the TTL");
    world.clock.advance(time::Duration::milliseconds(4999));
    world.app.auth.authenticate(api_key(&secret)).await.unwrap();
    assert_eq!(world.credentials.lookups(), lookups, "4.999 s: still remembered");
    world.clock.advance(time::Duration::milliseconds(1));
    world.app.auth.authenticate(api_key(&secret)).await.unwrap();
    assert_eq!(
        world.credentials.lookups(),
        lookups + 2,
        "5 s: the store is asked again (the key read around the access generation)"
    );
}

#[tokio::test]
async fn a_member_deactivated_elsewhere_is_refused_once_the_ttl_is_over() {
    let world = World::new();
    let tenant = world.tenant().await;
    let secret = world.api_key(&tenant.owner).await.0.secret;
    // Another instance (or the admin CLI) deactivates the key's maker: this one cannot know.
    world.members.set_active(&tenant.owner.user_id, false);
    world.clock.advance(time::Duration::seconds(4));
    assert!(world.app.auth.authenticate(api_key(&secret)).await.is_ok(), "remembered for at most the TTL");
    world.clock.advance(time::Duration::seconds(1));
    let refused = world.app.auth.authenticate(api_key(&secret)).await;
    assert!(matches!(refused, Err(AppError::Unauthenticated(_))), "{refused:?}");
}

#[tokio::test]
async fn changes_through_this_instance_take_effect_at_once() {
    let world = World::new();
    let tenant = world.tenant().await;
    let owner_key = world.api_key(&tenant.owner).await.0.secret;
    let auditor = world.member(&tenant.org, "auditor").await;
    let auditor_key = world.api_key(&auditor).await.0.secret;

    let (revoked, _) = world.api_key(&tenant.owner).await;
    world.app.admin.revoke_api_key(&revoked.key.id).await.unwrap();
    let refused = world.app.auth.authenticate(api_key(&revoked.secret)).await;
    assert!(matches!(refused, Err(AppError::Unauthenticated(_))), "a revoked key, no clock moved: {refused:?}");

    let person = world
        .app
        .people
        .list(&tenant.owner, false, &compliance_ports::ListQuery::unfiltered(compliance_ports::PageRequest::first(10)))
        .await
        .unwrap();
    let member = person.items.iter().find(|p| p.user.id == auditor.user_id).unwrap().member.id.clone();
    let off = MemberChanges { is_active: Some(false), ..MemberChanges::default() };
    world.app.people.update(&tenant.owner, &member, off, &IfMatch::Absent).await.unwrap();
    let refused = world.app.auth.authenticate(api_key(&auditor_key)).await;
    assert!(matches!(refused, Err(AppError::Unauthenticated(_))), "a deactivated member's key: {refused:?}");
    assert!(world.app.auth.authenticate(api_key(&owner_key)).await.is_ok(), "the others' keys still work");
}

#[tokio::test]
async fn a_zero_ttl_asks_the_store_every_time() {
    let world = World::with(Settings { auth_cache_ttl: std::time::Duration::ZERO, ..settings() });
    let tenant = world.tenant().await;
    let secret = world.api_key(&tenant.owner).await.0.secret;
    let lookups = world.credentials.lookups();
    for _ in 0..3 {
        world.app.auth.authenticate(api_key(&secret)).await.unwrap();
    }
    assert_eq!(world.credentials.lookups(), lookups + 3);
}
