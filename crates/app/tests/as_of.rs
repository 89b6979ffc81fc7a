//! `asOf` tells the past as it was: a control's status, a framework's roll-up and its OSCAL export
//! at a past moment count the evidence-source links and the requirement mappings in force then,
//! removed ones included, and never those made later. The fake clock moves an hour between the
//! changes; each moment is asked for afterwards, when the links and mappings have changed again.

use compliance_app::Principal;
use compliance_domain::control::{ControlStatus, NewControl, NewEvidenceSource, StatusReport};
use compliance_domain::etag::IfMatch;
use compliance_domain::framework::{NewFramework, NewRequirement};
use compliance_domain::framework_status::{NewRequirementMapping, RequirementStatus};
use compliance_domain::task::{NewTask, Task, TaskChanges, TaskStatus};
use compliance_domain::{ControlId, FrameworkId, RequirementId, Timestamp};
use compliance_ports::Clock as _;
use serde_json::Value;
use time::Duration;

use crate::support::World;

/// What one moment looked like, as `asOf` that moment answers it.
struct Seen {
    control: StatusReport,
    /// Each requirement's status (BL-1, BL-2), and the controls the framework shows mapped to it.
    requirements: Vec<(RequirementStatus, Vec<ControlId>)>,
    /// The export's findings (state per requirement) and how many observations it holds.
    export: (Vec<String>, usize),
}

struct Scene<'a> {
    world: &'a World,
    owner: &'a Principal,
    control: ControlId,
    framework: FrameworkId,
}

impl Scene<'_> {
    /// Moves the clock an hour on and answers the moment it shows.
    fn next_moment(&self) -> Timestamp {
        self.world.clock.advance(Duration::hours(1));
        self.world.clock.now()
    }

    async fn seen(&self, moment: Timestamp) -> Seen {
        let app = &self.world.app;
        let control = app.controls.control_status(self.owner, &self.control, Some(moment)).await.unwrap();
        let framework = app.frameworks.framework_status(self.owner, &self.framework, Some(moment)).await.unwrap();
        assert_eq!(framework.status.as_of, moment);
        let requirements = framework
            .status
            .requirements
            .iter()
            .map(|r| (r.status, r.controls.iter().map(|c| c.control_id.clone()).collect()))
            .collect();
        let document = app.frameworks.assessment_results(self.owner, &self.framework, Some(moment)).await.unwrap();
        let result = &document["assessment-results"]["results"][0];
        let states = result["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["target"]["status"]["state"].as_str().unwrap().to_owned())
            .collect();
        let observations = result.get("observations").and_then(Value::as_array).map_or(0, Vec::len);
        Seen { control, requirements, export: (states, observations) }
    }

    async fn link(&self, task: &Task) {
        let input = NewEvidenceSource { source_id: Some(task.id.to_string()) };
        self.world.app.controls.add_evidence_source(self.owner, &self.control, input).await.unwrap();
    }

    async fn unlink(&self, task: &Task) {
        self.world.app.controls.remove_evidence_source(self.owner, &self.control, task.id.as_str()).await.unwrap();
    }

    async fn map(&self, requirement: &RequirementId) {
        let input = NewRequirementMapping { requirement_id: Some(requirement.to_string()) };
        self.world.app.control_requirements.map_requirement(self.owner, &self.control, input).await.unwrap();
    }

    async fn unmap(&self, requirement: &RequirementId) {
        let mappings = &self.world.app.control_requirements;
        mappings.unmap_requirement(self.owner, &self.control, requirement).await.unwrap();
    }

    async fn set_status(&self, task: &Task, status: TaskStatus) {
        let changes = TaskChanges { status: Some(status), ..TaskChanges::default() };
        self.world.app.tasks.update_task(self.owner, &task.id, changes, &IfMatch::Absent).await.unwrap();
    }
}

fn sources(report: &StatusReport) -> Vec<(String, ControlStatus)> {
    report.sources.iter().map(|s| (s.id.clone().unwrap_or_default(), s.status)).collect()
}

#[tokio::test]
async fn as_of_counts_the_links_and_mappings_in_force_at_that_moment() {
    use ControlStatus::{NotStarted, Passing};
    use RequirementStatus::{Passing as Met, Unmapped};

    let world = World::new();
    let tenant = world.tenant().await;
    let owner = &tenant.owner;
    let requirement = |identifier: &str| NewRequirement {
        identifier: Some(identifier.into()),
        title: Some(format!("{identifier} title")),
        ..NewRequirement::default()
    };
    let framework = NewFramework {
        name: Some("Baseline".into()),
        version: Some("1".into()),
        requirements: Some(vec![requirement("BL-1"), requirement("BL-2")]),
    };
    let framework = world.app.frameworks.create_framework(owner, framework).await.unwrap();
    let (bl1, bl2) = (framework.requirements[0].id.clone(), framework.requirements[1].id.clone());
    let control = NewControl { name: Some("Backups".into()), ..NewControl::default() };
    let control = world.app.controls.create_control(owner, control).await.unwrap().control;
    let drill = NewTask { title: Some("Restore drill".into()), ..NewTask::default() };
    let drill = world.app.tasks.create_task(owner, drill).await.unwrap();
    let scene = Scene { world: &world, owner, control: control.id.clone(), framework: framework.framework.id.clone() };
    let me = control.id.clone();
    let task = drill.id.to_string();

    // The history, an hour apart.
    let linked = scene.next_moment();
    scene.link(&drill).await;
    let done = scene.next_moment();
    scene.set_status(&drill, TaskStatus::Done).await;
    let mapped = scene.next_moment();
    scene.map(&bl1).await;
    let unlinked = scene.next_moment();
    scene.unlink(&drill).await;
    let failed_unlinked = scene.next_moment();
    scene.set_status(&drill, TaskStatus::Failed).await;
    let relinked = scene.next_moment();
    scene.link(&drill).await;
    let moved = scene.next_moment();
    scene.unmap(&bl1).await;
    scene.map(&bl2).await;
    let done_again = scene.next_moment();
    scene.set_status(&drill, TaskStatus::Done).await;
    let unmapped = scene.next_moment();
    scene.unmap(&bl2).await;
    let remapped = scene.next_moment();
    scene.map(&bl2).await;
    scene.next_moment();

    let before = |moment: Timestamp| moment.plus(-Duration::microseconds(1));

    // Before the link: nothing to prove, nothing mapped.
    let seen = scene.seen(before(linked)).await;
    assert_eq!((seen.control.status, seen.control.sources.len()), (NotStarted, 0));
    assert_eq!(seen.requirements, [(Unmapped, vec![]), (Unmapped, vec![])]);

    // Linked: the task counts, without evidence yet.
    let seen = scene.seen(linked).await;
    assert_eq!(sources(&seen.control), [(task.clone(), NotStarted)]);

    // Done: the control passes; the framework maps nothing yet.
    let seen = scene.seen(done).await;
    assert_eq!((seen.control.status, sources(&seen.control)), (Passing, vec![(task.clone(), Passing)]));
    assert_eq!(seen.requirements, [(Unmapped, vec![]), (Unmapped, vec![])]);
    assert_eq!(seen.export, (vec!["not-satisfied".into(), "not-satisfied".into()], 0), "no control mapped");

    // Mapped to BL-1: BL-1 passes by the control, and the export says so with the task's evidence.
    let seen = scene.seen(mapped).await;
    assert_eq!(seen.requirements, [(Met, vec![me.clone()]), (Unmapped, vec![])]);
    assert_eq!(seen.export, (vec!["satisfied".into(), "not-satisfied".into()], 1));

    // The link was in force up to its removal, not at it.
    let seen = scene.seen(before(unlinked)).await;
    assert_eq!(seen.control.status, Passing, "the removed link, asked for before its removal");
    assert_eq!(seen.requirements[0].0, Met);
    let seen = scene.seen(unlinked).await;
    assert_eq!((seen.control.status, seen.control.sources.len()), (NotStarted, 0));
    assert_eq!(seen.control.decided_by, None);
    assert_eq!(seen.requirements, [(RequirementStatus::NotStarted, vec![me.clone()]), (Unmapped, vec![])]);
    assert_eq!(seen.export, (vec!["not-satisfied".into(), "not-satisfied".into()], 0));

    // While unlinked the task failed: nothing recorded for the control.
    let seen = scene.seen(failed_unlinked).await;
    assert_eq!((seen.control.status, seen.control.sources.len()), (NotStarted, 0));

    // Linked again: the task starts over; the evidence of the first link is not its.
    let seen = scene.seen(relinked).await;
    assert_eq!(sources(&seen.control), [(task.clone(), NotStarted)]);
    assert_eq!(seen.export.1, 0);

    // Moved from BL-1 to BL-2.
    let seen = scene.seen(moved).await;
    assert_eq!(
        seen.requirements,
        [(Unmapped, vec![]), (RequirementStatus::NotStarted, vec![me.clone()])],
        "BL-1's mapping was removed when BL-2's was made"
    );

    // Done again: BL-2 passes.
    let seen = scene.seen(done_again).await;
    assert_eq!(sources(&seen.control), [(task.clone(), Passing)]);
    assert_eq!(seen.requirements, [(Unmapped, vec![]), (Met, vec![me.clone()])]);
    assert_eq!(seen.export, (vec!["not-satisfied".into(), "satisfied".into()], 1));

    // Unmapped, then mapped again: the same mapping made again, with the gap between.
    let seen = scene.seen(unmapped).await;
    assert_eq!(seen.requirements, [(Unmapped, vec![]), (Unmapped, vec![])]);
    let seen = scene.seen(remapped).await;
    assert_eq!(seen.requirements, [(Unmapped, vec![]), (Met, vec![me.clone()])]);

    // Now, without asOf: only what is in force shows, as before links kept their history.
    let now = world.app.controls.get_control(owner, &me, None).await.unwrap();
    assert_eq!(sources(&now.status), [(task.clone(), Passing)], "one link, the one in force");
    let status = world.app.frameworks.get_framework(owner, &scene.framework).await.unwrap().status;
    let now: Vec<_> = status.requirements.iter().map(|r| (r.status, r.controls.len())).collect();
    assert_eq!(now, [(Unmapped, 0), (Met, 1)]);
    let mappings = world.app.control_requirements.list_control_requirements(owner, &me).await.unwrap();
    let listed: Vec<_> = mappings.iter().map(|m| (m.identifier.as_str(), m.mapping.created_at)).collect();
    assert_eq!(listed, [("BL-2", remapped)], "the removed mappings are not listed");
    let evidence = world.app.controls.list_evidence(owner, &me, &compliance_ports::PageRequest::first(10)).await;
    let collected: Vec<_> = evidence.unwrap().items.iter().map(|e| e.evidence.collected_at).collect();
    assert_eq!(collected, [done_again, done], "the failure while unlinked recorded nothing");

    // A link or mapping in force cannot be made twice; removed, it can be made again (above).
    let input = NewEvidenceSource { source_id: Some(task.clone()) };
    let again = world.app.controls.add_evidence_source(owner, &me, input).await;
    assert!(matches!(again, Err(compliance_app::AppError::Conflict(_))), "{again:?}");
    let input = NewRequirementMapping { requirement_id: Some(bl2.to_string()) };
    let again = world.app.control_requirements.map_requirement(owner, &me, input).await;
    assert!(matches!(again, Err(compliance_app::AppError::Conflict(_))), "{again:?}");
}
