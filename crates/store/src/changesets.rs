//! The columns a PATCH sets, for the records whose patch is plain field assignment. Such a patch is
//! one `UPDATE … SET … RETURNING *`: one round trip, no lock held between a read and a write, and
//! concurrent patches of different fields cannot overwrite each other. The statement has one
//! shape per table (see [`Assignments`]), so each connection prepares it once.

use compliance_domain::Timestamp;
use compliance_domain::context::ContextEntryPatch;
use compliance_domain::risk::RiskPatch;
use compliance_domain::task::TaskPatch;
use compliance_domain::vendor::VendorPatch;

use crate::prepared::Assignments;
use crate::rows::{json_text, naive};
use crate::schema::{context_entries, risks, tasks, vendors};

/// A changed value as its column stores it (enums and ids by their text).
fn text<T: ToString>(change: &Option<T>) -> Option<String> {
    change.as_ref().map(ToString::to_string)
}

/// A changed nullable value as its column stores it.
fn nullable_text<T: ToString>(change: &Option<Option<T>>) -> Option<Option<String>> {
    change.as_ref().map(|value| value.as_ref().map(ToString::to_string))
}

pub(crate) fn risk(patch: &RiskPatch, now: Timestamp) -> Assignments<risks::table> {
    let c = patch.changes();
    Assignments::new(naive(now))
        .required(risks::title, c.title.clone())
        .required(risks::description, c.description.clone())
        .required(risks::category, text(&c.category))
        .nullable(risks::department, nullable_text(&c.department))
        .required(risks::status, text(&c.status))
        .required(risks::likelihood, text(&c.likelihood))
        .required(risks::impact, text(&c.impact))
        .required(risks::residual_likelihood, text(&c.residual_likelihood))
        .required(risks::residual_impact, text(&c.residual_impact))
        .nullable(risks::treatment_strategy_description, c.treatment_strategy_description.clone())
        .required(risks::treatment_strategy, text(&c.treatment_strategy))
        .nullable(risks::assignee_id, nullable_text(&c.assignee_id))
}

pub(crate) fn vendor(patch: &VendorPatch, now: Timestamp) -> Assignments<vendors::table> {
    let c = patch.changes();
    Assignments::new(naive(now))
        .required(vendors::name, c.name.clone())
        .required(vendors::description, c.description.clone())
        .required(vendors::category, text(&c.category))
        .required(vendors::status, text(&c.status))
        .required(vendors::inherent_probability, text(&c.inherent_probability))
        .required(vendors::inherent_impact, text(&c.inherent_impact))
        .required(vendors::residual_probability, text(&c.residual_probability))
        .required(vendors::residual_impact, text(&c.residual_impact))
        .nullable(vendors::website, c.website.clone())
        .nullable(vendors::assignee_id, nullable_text(&c.assignee_id))
}

pub(crate) fn context_entry(patch: &ContextEntryPatch, now: Timestamp) -> Assignments<context_entries::table> {
    let c = patch.changes();
    Assignments::new(naive(now))
        .required(context_entries::question, c.question.clone())
        .required(context_entries::answer, c.answer.clone())
        .required(context_entries::tags, c.tags.as_ref().map(json_text))
}

pub(crate) fn task(patch: &TaskPatch, now: Timestamp) -> Assignments<tasks::table> {
    let c = patch.changes();
    Assignments::new(naive(now))
        .required(tasks::title, c.title.clone())
        .required(tasks::description, c.description.clone())
        .required(tasks::status, text(&c.status))
        .nullable(tasks::assignee_id, nullable_text(&c.assignee_id))
}
