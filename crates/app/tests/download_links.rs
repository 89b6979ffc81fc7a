//! Signed download links: valid for the configured time by the use case's clock, bound to what
//! they open, and the blob store's own presigned URLs when it makes them.

use std::time::Duration;

use compliance_app::{AppError, Principal};
use compliance_domain::comment::{CommentEntityType, NewAttachment, NewComment};
use compliance_domain::task::NewTask;
use compliance_domain::{AttachmentId, OrganizationId};
use compliance_ports::Clock;

use crate::support::{World, query, settings};

/// A task with a comment carrying one file `hello`; the file's id.
async fn attachment(world: &World, caller: &Principal) -> AttachmentId {
    let task = NewTask { title: Some("Review access".into()), ..NewTask::default() };
    let task = world.app.tasks.create_task(caller, task).await.unwrap();
    let file = NewAttachment {
        file_name: Some("hello.txt".into()),
        file_type: Some("text/plain".into()),
        file_data: Some("aGVsbG8=".into()),
        ..NewAttachment::default()
    };
    let comment = NewComment {
        content: Some("evidence".into()),
        entity_id: Some(task.id.to_string()),
        entity_type: Some(CommentEntityType::Task),
        attachments: Some(vec![file]),
        ..NewComment::default()
    };
    world.app.comments.create(caller, comment).await.unwrap().attachments[0].id.clone()
}

/// Follows a link this service signed, as `GET …/content?org=…&expires=…&signature=…` does.
async fn follow(world: &World, url: &str) -> Result<Vec<u8>, AppError> {
    let path = url.split('?').next().unwrap();
    let id = path.trim_end_matches("/content").rsplit('/').next().unwrap();
    let expires = query(url, "expires").parse().unwrap();
    let answer = world.app.comments.download(&query(url, "org"), id, expires, &query(url, "signature")).await;
    answer.map(|(_, bytes)| bytes)
}

#[tokio::test]
async fn a_link_works_until_its_expiry_second_and_not_after() {
    let world = World::with(compliance_app::Settings { download_ttl: Duration::from_secs(60), ..settings() });
    let tenant = world.tenant().await;
    let id = attachment(&world, &tenant.owner).await;

    let link = world.app.comments.download_link(&tenant.owner, &id).await.unwrap();
    assert_eq!(link.expires_in, 60);
    assert!(link.url.starts_with(&format!("https://compliance.test/v1/attachments/{id}/content?")), "{}", link.url);
    let expires: i64 = query(&link.url, "expires").parse().unwrap();
    assert_eq!(expires, world.clock.now().as_unix_seconds() + 60);
    assert_eq!(follow(&world, &link.url).await.unwrap(), b"hello");

    world.clock.advance(time::Duration::seconds(60));
    assert_eq!(follow(&world, &link.url).await.unwrap(), b"hello", "valid through its expiry second");
    world.clock.advance(time::Duration::seconds(1));
    let expired = follow(&world, &link.url).await;
    assert!(matches!(expired, Err(AppError::Forbidden(_))), "{expired:?}");

    let fresh = world.app.comments.download_link(&tenant.owner, &id).await.unwrap();
    assert_eq!(follow(&world, &fresh.url).await.unwrap(), b"hello", "a new link works again");
}

#[tokio::test]
async fn a_link_opens_only_what_it_was_signed_for() {
    let world = World::new();
    let tenant = world.tenant().await;
    let first = attachment(&world, &tenant.owner).await;
    let second = attachment(&world, &tenant.owner).await;
    let link = world.app.comments.download_link(&tenant.owner, &first).await.unwrap();
    let (expires, signature) = (query(&link.url, "expires").parse::<i64>().unwrap(), query(&link.url, "signature"));
    let org = tenant.org.as_str();
    let refused = |answer: Result<_, AppError>| matches!(answer, Err(AppError::Forbidden(_)));

    assert!(refused(world.app.comments.download(org, second.as_str(), expires, &signature).await), "another file");
    assert!(refused(world.app.comments.download(org, first.as_str(), expires + 3600, &signature).await), "later");
    let elsewhere = OrganizationId::generate();
    assert!(refused(world.app.comments.download(elsewhere.as_str(), first.as_str(), expires, &signature).await));
    assert!(refused(world.app.comments.download(org, first.as_str(), expires, "00").await), "a forged signature");
    assert!(world.app.comments.download(org, first.as_str(), expires, &signature).await.is_ok());
}

#[tokio::test]
async fn a_store_that_presigns_answers_with_its_own_url() {
    let world = World::new();
    world.blobs.presign();
    let tenant = world.tenant().await;
    let id = attachment(&world, &tenant.owner).await;
    let link = world.app.comments.download_link(&tenant.owner, &id).await.unwrap();
    assert_eq!(link.url, format!("https://bucket.test/{}/{id}?ttl=900", tenant.org));
    assert_eq!(link.expires_in, 900);
}
