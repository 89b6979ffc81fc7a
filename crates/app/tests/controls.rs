//! A control's status by the use case's clock: an uploaded file passes until the frequency's
//! period has passed to the microsecond, then is stale; `asOf` answers for any moment up to the
//! clock's now, and refuses a later one.

use compliance_app::AppError;
use compliance_domain::comment::NewAttachment;
use compliance_domain::control::{ControlFrequency, ControlStatus, EvidenceKind, NewControl};
use compliance_ports::Clock;
use time::Duration;

use crate::support::World;

fn report() -> NewAttachment {
    NewAttachment {
        file_name: Some("restore-test.txt".into()),
        file_type: Some("text/plain".into()),
        file_data: Some("cmVzdG9yZWQ=".into()),
        ..NewAttachment::default()
    }
}

#[tokio::test]
async fn an_upload_goes_stale_exactly_when_the_monthly_period_has_passed() {
    let world = World::new();
    let tenant = world.tenant().await;
    let owner = &tenant.owner;
    let input = NewControl {
        name: Some("Backups".into()),
        frequency: Some(ControlFrequency::Monthly),
        ..NewControl::default()
    };
    let control = world.app.controls.create_control(owner, input).await.unwrap();
    assert_eq!(control.status.status, ControlStatus::NotStarted);
    let id = control.control.id.clone();
    let status = |as_of| world.app.controls.control_status(owner, &id, as_of);

    let uploaded = world.app.controls.upload_evidence(owner, &id, report()).await.unwrap();
    let collected = uploaded.evidence.collected_at;
    assert_eq!(collected, world.clock.now());
    assert!(uploaded.link.is_some());
    assert_eq!(status(None).await.unwrap().status, ControlStatus::Passing);

    world.clock.advance(Duration::days(31) - Duration::microseconds(1));
    assert_eq!(status(None).await.unwrap().status, ControlStatus::Passing, "one microsecond before the period ends");
    world.clock.advance(Duration::microseconds(1));
    let stale = status(None).await.unwrap();
    assert_eq!(stale.status, ControlStatus::Stale);
    let decided = stale.decided_by.unwrap();
    assert_eq!(decided.kind, EvidenceKind::File);
    assert!(decided.reason.contains("monthly"), "{}", decided.reason);

    // The past, from the recorded evidence: passing at the upload, not started just before it.
    assert_eq!(status(Some(collected)).await.unwrap().status, ControlStatus::Passing);
    let before = collected.plus(-Duration::microseconds(1));
    assert_eq!(status(Some(before)).await.unwrap().status, ControlStatus::NotStarted);
    // Now is allowed; a moment after the clock's now is not.
    assert_eq!(status(Some(world.clock.now())).await.unwrap().status, ControlStatus::Stale);
    let later = world.clock.now().plus(Duration::microseconds(1));
    match status(Some(later)).await {
        Err(AppError::Validation(errors)) => assert_eq!(errors.0[0].field, "asOf"),
        other => panic!("a future asOf answered {other:?}"),
    }

    // A new upload makes it pass again.
    world.app.controls.upload_evidence(owner, &id, report()).await.unwrap();
    assert_eq!(status(None).await.unwrap().status, ControlStatus::Passing);
}
