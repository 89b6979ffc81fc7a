//! Comments: all-or-nothing storage of a comment and its attachments, and who may write, change
//! and delete one.

use compliance_app::{AppError, Principal};
use compliance_domain::comment::{CommentEdit, CommentEntityType, NewAttachment, NewComment};
use compliance_domain::etag::IfMatch;
use compliance_domain::risk::{NewRisk, RiskCategory};
use compliance_domain::{RiskId, UserId};
use compliance_ports::{Clock, PageRequest};

use crate::support::{World, query};

async fn risk(world: &World, caller: &Principal) -> RiskId {
    let input = NewRisk {
        title: Some("Laptops are not encrypted".into()),
        description: Some("Two laptops without disk encryption".into()),
        category: Some(RiskCategory::Operations),
        ..NewRisk::default()
    };
    world.app.risks.create_risk(caller, input).await.unwrap().id
}

/// A file of a new comment; `data` is base64.
fn file(name: &str, data: &str) -> NewAttachment {
    NewAttachment {
        file_name: Some(name.into()),
        file_type: Some("text/plain".into()),
        file_data: Some(data.into()),
        ..NewAttachment::default()
    }
}

fn comment_on(risk: &RiskId, content: &str, attachments: Vec<NewAttachment>) -> NewComment {
    NewComment {
        content: Some(content.into()),
        entity_id: Some(risk.to_string()),
        entity_type: Some(CommentEntityType::Risk),
        attachments: Some(attachments),
        ..NewComment::default()
    }
}

fn edit(content: &str) -> CommentEdit {
    CommentEdit { content: Some(content.into()) }
}

async fn comments_on(world: &World, caller: &Principal, risk: &RiskId) -> Vec<String> {
    let page = world
        .app
        .comments
        .list(
            caller,
            CommentEntityType::Risk,
            risk.as_str(),
            &compliance_ports::ListQuery::unfiltered(PageRequest::first(50)),
        )
        .await;
    page.unwrap().items.into_iter().map(|view| view.comment.content).collect()
}

#[tokio::test]
async fn a_failed_blob_write_leaves_neither_bytes_nor_rows() {
    let world = World::new();
    let tenant = world.tenant().await;
    let risk = risk(&world, &tenant.owner).await;
    // The first file is stored, the second is not: the first must be removed again.
    world.blobs.fail_after(1);
    let files = vec![file("a.txt", "QQ=="), file("b.txt", "Qg=="), file("c.txt", "Qw==")];
    let refused = world.app.comments.create(&tenant.owner, comment_on(&risk, "see attached", files)).await;

    assert!(matches!(refused, Err(AppError::Unavailable(_))), "{refused:?}");
    assert_eq!(world.blobs.keys(), Vec::<String>::new(), "the bytes written before the failure are removed");
    assert_eq!(world.comments.all_comments(), [], "no comment row");
    assert_eq!(world.comments.all_attachments(), [], "no attachment row");
    assert_eq!(comments_on(&world, &tenant.owner, &risk).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_failed_row_insert_removes_the_bytes_already_stored() {
    let world = World::new();
    let tenant = world.tenant().await;
    let risk = risk(&world, &tenant.owner).await;
    world.comments.fail_next_insert();
    let files = vec![file("a.txt", "QQ=="), file("b.txt", "Qg==")];
    let refused = world.app.comments.create(&tenant.owner, comment_on(&risk, "see attached", files.clone())).await;

    assert!(matches!(refused, Err(AppError::Unavailable(_))), "{refused:?}");
    assert_eq!(world.blobs.keys(), Vec::<String>::new(), "both files were written, then removed");
    assert_eq!((world.comments.all_comments(), world.comments.all_attachments()), (vec![], vec![]));

    // The same request once the database is back stores everything.
    let stored = world.app.comments.create(&tenant.owner, comment_on(&risk, "see attached", files)).await.unwrap();
    let mut keys: Vec<String> = stored.attachments.iter().map(|a| a.blob_key()).collect();
    keys.sort();
    assert_eq!(world.blobs.keys(), keys);
    assert_eq!(world.blobs.bytes(&keys[0]).map(|b| b.len()), Some(1));
}

#[tokio::test]
async fn a_comment_on_a_record_the_caller_cannot_see_stores_nothing() {
    let world = World::new();
    let mine = world.tenant().await;
    let theirs = world.tenant().await;
    let their_risk = risk(&world, &theirs.owner).await;
    let attempt = comment_on(&their_risk, "hello", vec![file("a.txt", "QQ==")]);
    let refused = world.app.comments.create(&mine.owner, attempt).await;
    assert!(matches!(refused, Err(AppError::NotFound("entity"))), "{refused:?}");
    assert_eq!(world.blobs.keys(), Vec::<String>::new(), "the record is checked before any byte is written");
    assert_eq!(world.comments.all_comments(), []);
}

#[tokio::test]
async fn only_the_author_may_edit_or_delete_a_comment() {
    let world = World::new();
    let tenant = world.tenant().await;
    let admin = world.member(&tenant.org, "admin").await;
    let writer = world.member(&tenant.org, "admin").await; // writers write nothing
    let risk = risk(&world, &tenant.owner).await;
    let written = world.app.comments.create(&writer, comment_on(&risk, "first draft", vec![])).await.unwrap();
    assert_eq!(written.comment.author_id, writer.user_id, "with a session, the session's user writes");
    let id = written.comment.id.clone();

    // Not even the owner or an administrator may change someone else's words.
    for other in [&tenant.owner, &admin] {
        let edited = world.app.comments.edit(other, &id, edit("rewritten"), &IfMatch::Absent).await;
        assert!(matches!(edited, Err(AppError::Forbidden(_))), "{edited:?}");
        let deleted = world.app.comments.delete(other, &id, &IfMatch::Absent).await;
        assert!(matches!(deleted, Err(AppError::Forbidden(_))), "{deleted:?}");
    }
    assert_eq!(comments_on(&world, &tenant.owner, &risk).await, ["first draft"], "refused changes change nothing");

    world.clock.advance(time::Duration::minutes(5));
    let edited = world.app.comments.edit(&writer, &id, edit("final"), &IfMatch::Absent).await.unwrap();
    assert_eq!(edited.comment.content, "final");
    assert_eq!(edited.comment.updated_at, world.clock.now(), "stamped with the use case's clock");
    assert_eq!(edited.comment.created_at, written.comment.created_at);

    let deleted = world.app.comments.delete(&writer, &id, &IfMatch::Absent).await.unwrap();
    assert_eq!(deleted.comment.content, "final", "the answer is the comment as it was");
    assert_eq!(comments_on(&world, &tenant.owner, &risk).await, Vec::<String>::new());
    let again = world.app.comments.delete(&writer, &id, &IfMatch::Absent).await;
    assert!(matches!(again, Err(AppError::NotFound("comment"))), "{again:?}");
}

#[tokio::test]
async fn another_organizations_comment_is_missing_not_forbidden() {
    let world = World::new();
    let a = world.tenant().await;
    let b = world.tenant().await;
    let risk = risk(&world, &a.owner).await;
    let id = world.app.comments.create(&a.owner, comment_on(&risk, "ours", vec![])).await.unwrap().comment.id;
    let edited = world.app.comments.edit(&b.owner, &id, edit("theirs"), &IfMatch::Absent).await;
    assert!(matches!(edited, Err(AppError::NotFound("comment"))), "{edited:?}");
    let deleted = world.app.comments.delete(&b.owner, &id, &IfMatch::Absent).await;
    assert!(matches!(deleted, Err(AppError::NotFound("comment"))), "{deleted:?}");
}

#[tokio::test]
async fn with_an_api_key_the_author_is_the_keys_creator() {
    let world = World::new();
    let tenant = world.tenant().await;
    let other = world.member(&tenant.org, "admin").await;
    let (_, key) = world.api_key(&tenant.owner).await;
    let risk = risk(&world, &tenant.owner).await;
    let by = |user: Option<UserId>| NewComment { user_id: user, ..comment_on(&risk, "from CI", vec![]) };

    // An admin's key may not write in another member's name (nor a stranger's).
    for named in [other.user_id.clone(), UserId::generate()] {
        let refused = world.app.comments.create(&key, by(Some(named))).await;
        assert!(matches!(&refused, Err(AppError::Validation(e)) if e.0[0].field == "userId"), "{refused:?}");
    }
    assert_eq!(world.comments.all_comments(), [], "a refused comment is not stored");

    let unnamed = world.app.comments.create(&key, by(None)).await.unwrap();
    assert_eq!(unnamed.comment.author_id, tenant.owner.user_id, "without userId the key's creator writes");
    let named = world.app.comments.create(&key, by(Some(tenant.owner.user_id.clone()))).await.unwrap();
    assert_eq!(named.comment.author_id, tenant.owner.user_id, "the creator's own id is accepted");
    let edited = world.app.comments.edit(&other, &named.comment.id, edit("mine now"), &IfMatch::Absent).await;
    assert!(matches!(edited, Err(AppError::Forbidden(_))), "{edited:?}");

    // With a session the body's userId is ignored.
    let own = world.app.comments.create(&tenant.owner, by(Some(other.user_id.clone()))).await.unwrap();
    assert_eq!(own.comment.author_id, tenant.owner.user_id);
}

#[tokio::test]
async fn deleting_a_comment_removes_its_files_and_their_links() {
    let world = World::new();
    let tenant = world.tenant().await;
    let risk = risk(&world, &tenant.owner).await;
    let doomed = comment_on(&risk, "doomed", vec![file("a.txt", "QQ=="), file("b.txt", "Qg==")]);
    let doomed = world.app.comments.create(&tenant.owner, doomed).await.unwrap();
    let kept = comment_on(&risk, "kept", vec![file("c.txt", "Qw==")]);
    let kept = world.app.comments.create(&tenant.owner, kept).await.unwrap();
    assert_eq!(world.blobs.keys().len(), 3);
    let attachment = &doomed.attachments[0];
    let link = world.app.comments.download_link(&tenant.owner, &attachment.id).await.unwrap();

    world.app.comments.delete(&tenant.owner, &doomed.comment.id, &IfMatch::Absent).await.unwrap();
    assert_eq!(world.blobs.keys(), [kept.attachments[0].blob_key()]);
    let gone = world.app.comments.download_link(&tenant.owner, &attachment.id).await;
    assert!(matches!(gone, Err(AppError::NotFound("attachment"))), "{gone:?}");
    let (expires, signature) = (query(&link.url, "expires").parse().unwrap(), query(&link.url, "signature"));
    let stale = world.app.comments.download(tenant.org.as_str(), attachment.id.as_str(), expires, &signature).await;
    assert!(matches!(stale, Err(AppError::NotFound("attachment"))), "a link outlives no deleted file: {stale:?}");
}
