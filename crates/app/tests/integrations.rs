//! The integration use cases over a fake provider (`support::FakeProvider`) and the fake clock:
//! what a check's answer makes of a connection, refreshing an expiring OAuth token once, a check
//! that loses the race with a disconnect, and a disconnect whose revocation fails.

use std::collections::BTreeMap;
use std::sync::Arc;

use compliance_app::AppError;
use compliance_app::integrations::{NewConnection, OAuthAppInput, Revocation, StartOAuth};
use compliance_credentials::{TokenError, TokenTypeHint};
use compliance_domain::etag::IfMatch;
use compliance_domain::integration::ConnectionStatus;
use compliance_domain::{ConnectionId, Timestamp};
use compliance_ports::{Clock, ProviderRequestError, SecretRepository};
use secrecy::SecretString;

use crate::support::integrations::{Asked, tokens};
use crate::support::{Tenant, World, query};

pub(crate) async fn connect_acme(world: &World, tenant: &Tenant) -> String {
    let credentials = BTreeMap::from([("api_key".to_owned(), SecretString::from("k-123"))]);
    let input = NewConnection { provider_slug: "acme".into(), credentials };
    world.app.integrations.create_connection(&tenant.owner, input).await.unwrap().id.to_string()
}

/// Connects `tokens` through the OAuth flow, the provider granting `granted`; the connection's id.
pub(crate) async fn connect_tokens(
    world: &World,
    tenant: &Tenant,
    granted: compliance_credentials::TokenSet,
) -> String {
    let integrations = &world.app.integrations;
    let app = OAuthAppInput { client_id: "cid".into(), client_secret: Some("cs".into()), custom_settings: None };
    integrations.put_oauth_app(&tenant.owner, "tokens", app, &IfMatch::Absent).await.unwrap();
    let start = StartOAuth { provider_slug: "tokens".into(), redirect_url: None };
    let url = integrations.start_oauth(&tenant.owner, start).await.unwrap();
    let state = query(&url, "state");
    let pending = integrations.take_state(&tenant.owner, Some(state.as_str())).await.unwrap();
    world.provider.grant(granted);
    let redirect = integrations.complete_oauth(&tenant.owner, pending, Some("the-code".into()), None).await.unwrap();
    assert!(redirect.0.contains("status=connected"), "{}", redirect.0);
    query(&redirect.0, "connectionId")
}

async fn stored_tokens(world: &World, tenant: &Tenant, id: &str) -> bool {
    world.secrets.get(&tenant.org, "oauth_tokens", id).await.unwrap().is_some()
}

#[tokio::test]
async fn a_check_that_passes_makes_the_connection_active_with_the_stored_key() {
    let world = World::new();
    let tenant = world.tenant().await;
    let id = connect_acme(&world, &tenant).await;
    world.clock.advance(time::Duration::minutes(1));
    let report = world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap();
    assert!(report.check.ok);
    assert_eq!((report.check.http_status, report.check.message), (Some(200), None));
    assert_eq!(report.connection.status, ConnectionStatus::Active);
    assert_eq!(report.connection.last_checked_at, Some(world.clock.now()));
    assert_eq!(world.provider.asked(), [Asked::Verify { credential: "k-123".into() }]);
}

#[tokio::test]
async fn a_check_that_fails_says_why_and_whether_to_connect_again() {
    let world = World::new();
    let tenant = world.tenant().await;
    let id = connect_acme(&world, &tenant).await;
    let (integrations, provider, owner, id) = (&world.app.integrations, &world.provider, &tenant.owner, id.as_str());
    let check = move |answer| {
        provider.verify_with(answer);
        integrations.check_connection(owner, id)
    };
    let refused = check(Ok(401)).await.unwrap();
    assert_eq!(refused.connection.status, ConnectionStatus::NeedsReauth);
    assert_eq!(refused.check.message.as_deref(), Some("the provider refused the credentials (HTTP 401)"));
    let failed = check(Ok(500)).await.unwrap();
    assert_eq!((failed.connection.status, failed.check.http_status), (ConnectionStatus::Error, Some(500)));
    let unreachable = check(Err(ProviderRequestError::Unreachable)).await.unwrap();
    assert_eq!(unreachable.check.message.as_deref(), Some("the provider could not be reached"));
    assert_eq!((unreachable.check.ok, unreachable.check.http_status), (false, None));
    assert_eq!(unreachable.connection.last_error.as_deref(), Some("the provider could not be reached"));
}

#[tokio::test]
async fn an_expiring_token_is_refreshed_once_before_the_check_and_then_used() {
    let world = World::new();
    let tenant = world.tenant().await;
    let soon = world.clock.now().plus(time::Duration::minutes(2));
    let id = connect_tokens(&world, &tenant, tokens("at-old", Some("rt-old"), Some(soon))).await;
    let later = world.clock.now().plus(time::Duration::hours(1));
    world.provider.refresh_with(Ok(tokens("at-new", None, Some(later))));

    let report = world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap();
    assert!(report.check.ok);
    assert_eq!(report.connection.token_expires_at.map(Timestamp::to_offset), Some(later.to_offset()));
    // Checked again: the fresh token is not due.
    world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap();
    assert_eq!(
        world.provider.asked(),
        [
            Asked::Exchange,
            Asked::Refresh { refresh_token: "rt-old".into() },
            Asked::Verify { credential: "at-new".into() },
            Asked::Verify { credential: "at-new".into() },
        ]
    );
}

#[tokio::test]
async fn callers_of_two_instances_cause_one_refresh() {
    let world = World::new();
    let tenant = world.tenant().await;
    let soon = world.clock.now().plus(time::Duration::minutes(1));
    let id = connect_tokens(&world, &tenant, tokens("at-old", Some("rt-old"), Some(soon))).await;
    let later = world.clock.now().plus(time::Duration::hours(1));
    world.provider.refresh_with(Ok(tokens("at-new", Some("rt-new"), Some(later))));
    let instances = [Arc::new(world.another_instance()), Arc::new(world.another_instance())];
    let mut checks = tokio::task::JoinSet::new();
    for n in 0..20 {
        let (app, caller, id) = (instances[n % 2].clone(), tenant.owner.clone(), id.clone());
        // Concurrent checks of one connection: some lose the race to record theirs (409), none
        // refreshes a second time.
        checks.spawn(async move { app.integrations.check_connection(&caller, &id).await.map(|r| r.check.ok) });
    }
    while let Some(result) = checks.join_next().await {
        assert!(matches!(result.unwrap(), Ok(true) | Err(AppError::Conflict(_))));
    }
    assert_eq!(world.provider.refreshes(), 1, "one refresh across both instances");
    assert!(world.leases.0.lock().unwrap().is_empty(), "the lease is released");
    let verified = world.provider.asked().into_iter().filter(|a| matches!(a, Asked::Verify { .. }));
    assert!(verified.into_iter().all(|a| a == Asked::Verify { credential: "at-new".into() }));
}

#[tokio::test]
async fn a_refused_refresh_asks_to_connect_again_and_transient_ones_back_off() {
    let world = World::new();
    let tenant = world.tenant().await;
    let soon = world.clock.now().plus(time::Duration::minutes(1));
    let id = connect_tokens(&world, &tenant, tokens("at-old", Some("rt-old"), Some(soon))).await;
    let (integrations, owner, id) = (&world.app.integrations, &tenant.owner, id.as_str());
    let check = move || integrations.check_connection(owner, id);

    // 503 (the fake's default): retryable, so the provider is left alone a while.
    for _ in 0..3 {
        let report = check().await.unwrap();
        assert_eq!(report.connection.status, ConnectionStatus::Error);
    }
    assert_eq!(world.provider.refreshes(), 1, "asked once, then left alone");
    world.clock.advance(time::Duration::seconds(2));
    world.provider.refresh_with(Err(TokenError::InvalidGrant));
    let report = check().await.unwrap();
    assert_eq!(world.provider.refreshes(), 2, "asked again after the back-off");
    assert_eq!(report.connection.status, ConnectionStatus::NeedsReauth);
    assert_eq!(report.check.message.as_deref(), Some("the connection must be authorised again"));
    assert!(!world.provider.asked().iter().any(|a| matches!(a, Asked::Verify { .. })), "nothing sent without a token");
}

#[tokio::test]
async fn a_check_that_loses_the_race_with_a_disconnect_keeps_no_tokens() {
    let world = World::new();
    let tenant = world.tenant().await;
    let soon = world.clock.now().plus(time::Duration::minutes(1));
    let id = connect_tokens(&world, &tenant, tokens("at-old", Some("rt-old"), Some(soon))).await;
    let later = world.clock.now().plus(time::Duration::hours(1));
    world.provider.refresh_with(Ok(tokens("at-new", Some("rt-new"), Some(later))));
    // While the provider refreshes, another request disconnects (and destroys what it finds).
    let (connections, secrets, org) = (world.connections.clone(), world.secrets.clone(), tenant.org.clone());
    let (connection, now) = (ConnectionId::parse(&id).unwrap(), world.clock.now());
    world.provider.during_next_refresh(move || {
        connections.disconnect_behind_the_back(&connection, now);
        ready_now(secrets.delete(&org, "oauth_tokens", connection.as_str())).unwrap();
    });

    let error = world.app.integrations.check_connection(&tenant.owner, &id).await.unwrap_err();
    assert!(matches!(error, AppError::Conflict(ref why) if why == "the connection was disconnected during the check"));
    assert!(!stored_tokens(&world, &tenant, &id).await, "the refreshed tokens did not outlive the disconnect");
    assert_eq!(world.connections.row(&ConnectionId::parse(&id).unwrap()).status, ConnectionStatus::Disconnected);
}

#[tokio::test]
async fn a_failing_revocation_still_disconnects_and_destroys_the_tokens() {
    let world = World::new();
    let tenant = world.tenant().await;
    let id = connect_tokens(&world, &tenant, tokens("at-1", Some("rt-1"), None)).await;
    world.provider.revoke_with(Err(TokenError::Transient { status: Some(503) }));

    let disconnected =
        world.app.integrations.disconnect_connection(&tenant.owner, &id, &IfMatch::Absent).await.unwrap();
    assert_eq!(disconnected.revocation, Revocation::Failed);
    assert_eq!(disconnected.connection.status, ConnectionStatus::Disconnected);
    assert!(!stored_tokens(&world, &tenant, &id).await);
    // The refresh token is the one revoked: revoking it ends the grant.
    let revoked = Asked::Revoke { token: "rt-1".into(), hint: TokenTypeHint::RefreshToken };
    assert_eq!(world.provider.asked().last(), Some(&revoked));
    // Disconnecting again answers the same, and asks the provider nothing.
    let again = world.app.integrations.disconnect_connection(&tenant.owner, &id, &IfMatch::Absent).await.unwrap();
    assert_eq!(again.revocation, Revocation::NotSupported);
    assert_eq!(world.provider.asked().iter().filter(|a| matches!(a, Asked::Revoke { .. })).count(), 1);
}

#[tokio::test]
async fn a_revocation_that_passes_is_reported() {
    let world = World::new();
    let tenant = world.tenant().await;
    let id = connect_tokens(&world, &tenant, tokens("at-1", None, None)).await;
    let disconnected =
        world.app.integrations.disconnect_connection(&tenant.owner, &id, &IfMatch::Absent).await.unwrap();
    assert_eq!(disconnected.revocation, Revocation::Revoked);
    let revoked = Asked::Revoke { token: "at-1".into(), hint: TokenTypeHint::AccessToken };
    assert_eq!(world.provider.asked().last(), Some(&revoked));
}

/// The secret store's futures are ready at once (it is in memory): polled once, done.
fn ready_now<F: std::future::Future>(future: F) -> F::Output {
    let waker = std::task::Waker::noop();
    let mut context = std::task::Context::from_waker(waker);
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => panic!("an in-memory store does not wait"),
    }
}
