//! Where a framework stands: the controls mapped to each of its requirements, each requirement's
//! status rolled up from those controls' statuses ([`crate::control::status`]), and the share of
//! requirements passing. Pure: the caller reads the mappings and computes the controls' statuses.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;

use crate::control::ControlStatus;
use crate::framework::Requirement;
use crate::validation::{FieldError, ValidationErrors, required};
use crate::{ControlId, FrameworkId, OrganizationId, RequirementId, Timestamp, required_non_null};

/// The body of `POST /v1/controls/{id}/requirements`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewRequirementMapping {
    /// Required: the id (`req_…`) of a requirement of one of the organization's frameworks.
    #[cfg_attr(feature = "openapi", schema(value_type = RequirementId, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub requirement_id: Option<String>,
}

impl NewRequirementMapping {
    /// The requirement named, checked for shape (its existence is the use case's to check).
    pub fn requirement(self) -> Result<RequirementId, ValidationErrors> {
        let id = required("requirementId", self.requirement_id)?;
        Ok(RequirementId::parse(&id)
            .map_err(|_| FieldError::new("requirementId", "must be a requirement id (req_…)"))?)
    }
}

/// A control mapped to a requirement: the control is one way the organization satisfies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementMapping {
    /// The organization of both.
    pub organization_id: OrganizationId,
    /// The control.
    pub control_id: ControlId,
    /// The requirement.
    pub requirement_id: RequirementId,
    /// The requirement's framework.
    pub framework_id: FrameworkId,
    /// When it was mapped; a status at an earlier moment leaves it out.
    pub created_at: Timestamp,
    /// When it was unmapped (`None` while it is mapped); a status at this moment or later leaves
    /// it out, one at an earlier moment still counts it.
    pub removed_at: Option<Timestamp>,
}

impl RequirementMapping {
    /// Whether the mapping was in force at `moment` (see [`crate::control::in_force`]).
    pub fn in_force_at(&self, moment: Timestamp) -> bool {
        crate::control::in_force(self.created_at, self.removed_at, moment)
    }
}

crate::string_enum! {
    /// A requirement's status: its mapped controls' worst, `unmapped` when no control is mapped,
    /// or `not_applicable` when the organization stated it does not apply (Statement of
    /// Applicability).
    RequirementStatus {
        Passing = "passing",
        Failing = "failing",
        Stale = "stale",
        NotStarted = "not_started",
        Unmapped = "unmapped",
        NotApplicable = "not_applicable",
    }
}

impl From<ControlStatus> for RequirementStatus {
    fn from(status: ControlStatus) -> Self {
        match status {
            ControlStatus::Passing => RequirementStatus::Passing,
            ControlStatus::Failing => RequirementStatus::Failing,
            ControlStatus::Stale => RequirementStatus::Stale,
            ControlStatus::NotStarted => RequirementStatus::NotStarted,
        }
    }
}

/// A control mapped to a requirement, with its own status at the moment asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedControl {
    /// The requirement it is mapped to.
    pub requirement_id: RequirementId,
    /// The control.
    pub control_id: ControlId,
    /// The control's name.
    pub name: String,
    /// The control's status at the moment.
    pub status: ControlStatus,
}

/// One requirement with the controls mapped to it and its rolled-up status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementState {
    /// The requirement.
    pub requirement: Requirement,
    /// Its status: the worst of its controls' (failing, stale, not started, passing), or
    /// `unmapped` without a control.
    pub status: RequirementStatus,
    /// The controls mapped to it, in the order given.
    pub controls: Vec<MappedControl>,
}

/// How many requirements have each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// Passing.
    pub passing: usize,
    /// Failing.
    pub failing: usize,
    /// Stale.
    pub stale: usize,
    /// Not started.
    pub not_started: usize,
    /// Without a mapped control.
    pub unmapped: usize,
    /// Stated not to apply: counted apart, outside [`StatusCounts::total`] and the share passing.
    pub not_applicable: usize,
}

impl StatusCounts {
    fn add(&mut self, status: RequirementStatus) {
        let count = match status {
            RequirementStatus::Passing => &mut self.passing,
            RequirementStatus::Failing => &mut self.failing,
            RequirementStatus::Stale => &mut self.stale,
            RequirementStatus::NotStarted => &mut self.not_started,
            RequirementStatus::Unmapped => &mut self.unmapped,
            RequirementStatus::NotApplicable => &mut self.not_applicable,
        };
        *count += 1;
    }

    /// Every requirement that applies.
    pub fn total(&self) -> usize {
        self.passing + self.failing + self.stale + self.not_started + self.unmapped
    }

    /// The share of requirements passing, in percent, rounded **down** to one decimal, so that
    /// `100` means every requirement passes (999 of 1,000 is 99.9, never 100).
    pub fn percent_passing(&self) -> f64 {
        let total = self.total();
        if total == 0 {
            return 0.0;
        }
        let tenths = self.passing.saturating_mul(1000) / total;
        // At most 1,000 tenths: exact in an f64.
        f64::from(u32::try_from(tenths).unwrap_or(1000)) / 10.0
    }
}

/// A framework's requirements with their statuses at a moment.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameworkStatus {
    /// The moment the statuses are for.
    pub as_of: Timestamp,
    /// Every requirement, in catalog order.
    pub requirements: Vec<RequirementState>,
    /// How many requirements have each status.
    pub counts: StatusCounts,
}

impl FrameworkStatus {
    /// The share of requirements passing, in percent (see [`StatusCounts::percent_passing`]).
    pub fn percent_passing(&self) -> f64 {
        self.counts.percent_passing()
    }
}

/// Rolls `mapped` (the controls mapped to requirements, with their statuses at `as_of`) up over
/// `requirements`; those in `excluded` (stated not to apply at `as_of`) are `not_applicable`,
/// their controls still listed. **Choice:** each requirement stands on its own: a parent (an
/// OSCAL control an enhancement refines) is not derived from its children, since a catalog asks
/// each of them separately.
pub fn roll_up(
    requirements: Vec<Requirement>,
    mapped: &[MappedControl],
    excluded: &HashSet<RequirementId>,
    as_of: Timestamp,
) -> FrameworkStatus {
    let mut by_requirement: HashMap<&RequirementId, Vec<MappedControl>> = HashMap::new();
    for control in mapped {
        by_requirement.entry(&control.requirement_id).or_default().push(control.clone());
    }
    let mut counts = StatusCounts::default();
    let requirements = requirements
        .into_iter()
        .map(|requirement| {
            let controls = by_requirement.remove(&requirement.id).unwrap_or_default();
            let status = controls
                .iter()
                .map(|c| c.status)
                .min_by_key(|s| rank(*s))
                .map_or(RequirementStatus::Unmapped, RequirementStatus::from);
            let status = if excluded.contains(&requirement.id) { RequirementStatus::NotApplicable } else { status };
            counts.add(status);
            RequirementState { requirement, status, controls }
        })
        .collect();
    FrameworkStatus { as_of, requirements, counts }
}

/// The order of badness, worst first, as a control takes its sources' worst.
fn rank(status: ControlStatus) -> u8 {
    match status {
        ControlStatus::Failing => 0,
        ControlStatus::Stale => 1,
        ControlStatus::NotStarted => 2,
        ControlStatus::Passing => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(identifier: &str) -> Requirement {
        Requirement::named(identifier, identifier)
    }

    fn mapped(requirement: &Requirement, status: ControlStatus) -> MappedControl {
        MappedControl {
            requirement_id: requirement.id.clone(),
            control_id: ControlId::generate(),
            name: "control".into(),
            status,
        }
    }

    #[test]
    fn a_requirement_takes_its_worst_control_and_none_is_unmapped() {
        let (a, b, c, d) = (requirement("A"), requirement("B"), requirement("C"), requirement("D"));
        let mappings = [
            mapped(&a, ControlStatus::Passing),
            mapped(&a, ControlStatus::Stale),
            mapped(&b, ControlStatus::Passing),
            mapped(&c, ControlStatus::NotStarted),
            mapped(&c, ControlStatus::Failing),
        ];
        let status = roll_up(vec![a, b, c, d], &mappings, &HashSet::new(), Timestamp::now());
        let statuses: Vec<_> = status.requirements.iter().map(|r| r.status).collect();
        assert_eq!(
            statuses,
            [
                RequirementStatus::Stale,
                RequirementStatus::Passing,
                RequirementStatus::Failing,
                RequirementStatus::Unmapped
            ]
        );
        assert_eq!(status.requirements[0].controls.len(), 2);
        assert_eq!(
            status.counts,
            StatusCounts { passing: 1, failing: 1, stale: 1, not_started: 0, unmapped: 1, not_applicable: 0 }
        );
        assert!((status.percent_passing() - 25.0).abs() < f64::EPSILON);
    }

    #[test]
    fn a_requirement_that_does_not_apply_leaves_the_share() {
        let (a, b, c) = (requirement("A"), requirement("B"), requirement("C"));
        let mappings = [mapped(&a, ControlStatus::Passing), mapped(&b, ControlStatus::Failing)];
        let excluded: HashSet<RequirementId> = [b.id.clone(), c.id.clone()].into();
        let status = roll_up(vec![a, b, c], &mappings, &excluded, Timestamp::now());
        let statuses: Vec<_> = status.requirements.iter().map(|r| r.status).collect();
        assert_eq!(
            statuses,
            [RequirementStatus::Passing, RequirementStatus::NotApplicable, RequirementStatus::NotApplicable]
        );
        // Its controls are still shown; it counts apart, neither passing nor in the total.
        assert_eq!(status.requirements[1].controls.len(), 1);
        assert_eq!((status.counts.not_applicable, status.counts.total()), (2, 1));
        assert!((status.percent_passing() - 100.0).abs() < f64::EPSILON);
    }

    #[test]
    fn percent_passing_rounds_down_so_only_all_is_a_hundred() {
        let counts = |passing, unmapped| StatusCounts { passing, unmapped, ..StatusCounts::default() };
        assert!((counts(999, 1).percent_passing() - 99.9).abs() < 1e-9);
        assert!((counts(1999, 1).percent_passing() - 99.9).abs() < 1e-9);
        assert!((counts(1, 2).percent_passing() - 33.3).abs() < 1e-9);
        assert!((counts(3, 0).percent_passing() - 100.0).abs() < f64::EPSILON);
        assert!(counts(0, 0).percent_passing().abs() < f64::EPSILON);
    }

    #[test]
    fn a_mapping_names_a_requirement_by_a_well_formed_id() {
        let missing = NewRequirementMapping::default().requirement().unwrap_err();
        assert_eq!(missing.0[0].field, "requirementId");
        let bad = NewRequirementMapping { requirement_id: Some("ctl_x".into()) }.requirement().unwrap_err();
        assert_eq!(bad.0[0].field, "requirementId");
        let id = RequirementId::generate();
        let good = NewRequirementMapping { requirement_id: Some(id.to_string()) }.requirement().unwrap();
        assert_eq!(good, id);
    }
}
