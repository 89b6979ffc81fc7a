//! A key made with an API key cannot outlive the key that made it: its expiry is capped at its
//! parent's, it records its parent, and revoking the parent revokes it (and what it made).

use compliance_app::{AppError, IssuedApiKey, Principal};
use compliance_domain::people::NewApiKey;
use compliance_domain::{ApiKeyId, Timestamp};
use compliance_ports::Clock;

use crate::support::{World, api_key};

fn expiring(at: Option<Timestamp>) -> NewApiKey {
    NewApiKey { name: Some("ci".into()), expires_at: at, scopes: Some(vec!["*".into()]) }
}

async fn signed_in(world: &World, issued: &IssuedApiKey) -> Result<Principal, AppError> {
    world.app.auth.authenticate(api_key(&issued.secret)).await
}

#[tokio::test]
async fn a_child_key_expires_no_later_than_its_parent() {
    let world = World::new();
    let tenant = world.tenant().await;
    let now = world.clock.now();
    let (day, week) = (now.plus(time::Duration::days(1)), now.plus(time::Duration::days(7)));
    let parent = world.app.api_keys.create(&tenant.owner, expiring(Some(day))).await.unwrap();
    assert_eq!(parent.key.parent_id, None, "made with a session: no parent");
    let as_parent = signed_in(&world, &parent).await.unwrap();

    for (asked, expected) in
        [(None, day), (Some(week), day), (Some(now.plus(time::Duration::hours(1))), now.plus(time::Duration::hours(1)))]
    {
        let child = world.app.api_keys.create(&as_parent, expiring(asked)).await.unwrap();
        assert_eq!(child.key.expires_at, Some(expected), "asked {asked:?}");
        assert_eq!(child.key.parent_id.as_ref(), Some(&parent.key.id));
    }

    // When the parent expires, so has every key it made.
    let child = world.app.api_keys.create(&as_parent, expiring(None)).await.unwrap();
    world.clock.advance(time::Duration::days(1));
    assert!(signed_in(&world, &child).await.is_err(), "the child outlived its parent");
}

#[tokio::test]
async fn revoking_a_key_revokes_every_key_made_from_it() {
    let world = World::new();
    let tenant = world.tenant().await;
    let parent = world.app.api_keys.create(&tenant.owner, expiring(None)).await.unwrap();
    let sibling = world.app.api_keys.create(&tenant.owner, expiring(None)).await.unwrap();
    let as_parent = signed_in(&world, &parent).await.unwrap();
    let child = world.app.api_keys.create(&as_parent, expiring(None)).await.unwrap();
    let as_child = signed_in(&world, &child).await.unwrap();
    let grandchild = world.app.api_keys.create(&as_child, expiring(None)).await.unwrap();
    assert_eq!(grandchild.key.parent_id.as_ref(), Some(&child.key.id));
    // Each is remembered by this instance's principal cache before the revocation.
    signed_in(&world, &grandchild).await.unwrap();

    world.app.api_keys.revoke(&tenant.owner, &parent.key.id).await.unwrap();
    for (issued, what) in [(&parent, "parent"), (&child, "child"), (&grandchild, "grandchild")] {
        assert!(signed_in(&world, issued).await.is_err(), "the {what} still authenticates");
    }
    signed_in(&world, &sibling).await.expect("a key not made from it keeps working");
    let listed = world.app.api_keys.list(&tenant.owner, &compliance_ports::PageRequest::first(50)).await.unwrap();
    let revoked: Vec<&ApiKeyId> = listed.items.iter().filter(|k| k.revoked_at.is_some()).map(|k| &k.id).collect();
    assert_eq!(revoked.len(), 3, "{revoked:?}");
}
