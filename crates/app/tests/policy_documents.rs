//! PDF documents of published versions and the shared browsers: a version is printed once and kept
//! in the blob store for every instance; one organization prints at most its bound at once, and
//! beyond it waits a bounded time and is refused as busy, while other organizations print.

use std::time::Duration;

use compliance_app::{AppError, DocumentFormat, DocumentSettings, Principal};
use compliance_domain::policy::{NewPolicy, Policy};
use compliance_domain::{OrganizationId, PolicyId};
use compliance_ports::Clock as _;
use serde_json::json;

use crate::support::{Tenant, World, settings};

/// A policy of `org` published as version 1, put into the store.
fn published(world: &World, org: &OrganizationId, owner: &Principal, name: &str) -> PolicyId {
    let now = world.clock.now();
    let input: NewPolicy = serde_json::from_value(json!({"name": name, "content": []})).unwrap();
    let mut policy = Policy::create(org.clone(), input, now).unwrap();
    let version = policy.publish(&owner.user_id, None, now);
    let id = policy.id.clone();
    world.policies.put(policy);
    world.policies.put_version(version);
    id
}

async fn pdf(world: &World, caller: &Principal, id: &PolicyId) -> Result<Vec<u8>, AppError> {
    let document = world.app.policy_documents.get_policy_version_document(caller, id, 1, DocumentFormat::Pdf).await;
    document.map(|document| document.bytes)
}

#[tokio::test]
async fn a_published_versions_pdf_is_printed_once_and_kept_for_every_instance() {
    let world = World::new();
    let Tenant { org, owner } = world.tenant().await;
    let id = published(&world, &org, &owner, "Access");
    let first = pdf(&world, &owner, &id).await.unwrap();
    assert_eq!(world.printer.started(), 1);
    assert_eq!(pdf(&world, &owner, &id).await.unwrap(), first, "the kept PDF");
    let another = world.another_instance();
    let kept = another.policy_documents.get_policy_version_document(&owner, &id, 1, DocumentFormat::Pdf).await;
    assert_eq!(kept.unwrap().bytes, first, "another instance serves the kept PDF");
    assert_eq!(world.printer.started(), 1, "printed once");
    let keys = world.blobs.keys();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys[0].starts_with(&format!("{org}/{id}_v1_pdf_")), "kept under its organization: {keys:?}");
    let html = world.app.policy_documents.get_policy_version_document(&owner, &id, 1, DocumentFormat::Html).await;
    assert!(html.is_ok());
    assert_eq!(world.printer.started(), 1, "HTML needs no print");
}

#[tokio::test]
async fn an_organization_over_its_print_bound_is_busy_while_another_organization_prints() {
    let documents = DocumentSettings { prints_per_organization: 1, print_wait: Duration::from_millis(50) };
    let world = World::with(compliance_app::Settings { documents, ..settings() });
    let a = world.tenant().await;
    let b = world.tenant().await;
    let (a1, a2) = (published(&world, &a.org, &a.owner, "One"), published(&world, &a.org, &a.owner, "Two"));
    let b1 = published(&world, &b.org, &b.owner, "Theirs");
    world.printer.hold();
    let held = tokio::spawn({
        let (service, owner) = (world.app.policy_documents.clone(), a.owner.clone());
        async move { service.get_policy_version_document(&owner, &a1, 1, DocumentFormat::Pdf).await }
    });
    world.printer.until_started(1).await;
    let refused = pdf(&world, &a.owner, &a2).await.unwrap_err();
    let AppError::Busy { retry_after, detail } = refused else { panic!("busy: {refused:?}") };
    assert!(!retry_after.is_zero(), "a time to retry after");
    assert!(detail.contains("this organization"), "{detail}");
    assert_eq!(world.printer.started(), 1, "refused without printing");
    let theirs = tokio::spawn({
        let (service, owner) = (world.app.policy_documents.clone(), b.owner.clone());
        async move { service.get_policy_version_document(&owner, &b1, 1, DocumentFormat::Pdf).await }
    });
    world.printer.until_started(2).await;
    world.printer.release(3); // and one for the print after them
    assert!(held.await.unwrap().is_ok());
    assert!(theirs.await.unwrap().is_ok(), "another organization printed while the first held its slot");
    assert!(pdf(&world, &a.owner, &a2).await.is_ok(), "the slot is free again");
}
