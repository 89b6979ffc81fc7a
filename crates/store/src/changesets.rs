//! The columns a PATCH sets, for the records whose patch is plain field assignment. Such a patch is
//! one `UPDATE … SET … RETURNING *`: one round trip, no lock held between a read and a write, and
//! concurrent patches of different fields cannot overwrite each other. The statement has one
//! shape per table (see [`Assignments`]), so each connection prepares it once.
//!
//! Each function takes the changes apart field by field, without `..`: a field added to a patch
//! does not compile until it is written here too.

use compliance_domain::Timestamp;
use compliance_domain::context::{ContextEntryChanges, ContextEntryPatch};
use compliance_domain::risk::{RiskChanges, RiskPatch};
use compliance_domain::task::{TaskChanges, TaskPatch};
use compliance_domain::vendor::{VendorChanges, VendorPatch};

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
    let RiskChanges {
        title,
        description,
        category,
        department,
        status,
        likelihood,
        impact,
        residual_likelihood,
        residual_impact,
        treatment_strategy_description,
        treatment_strategy,
        assignee_id,
    } = patch.changes();
    Assignments::new(risks::updated_at, naive(now))
        .required(risks::title, title.clone())
        .required(risks::description, description.clone())
        .required(risks::category, text(category))
        .nullable(risks::department, nullable_text(department))
        .required(risks::status, text(status))
        .required(risks::likelihood, text(likelihood))
        .required(risks::impact, text(impact))
        .required(risks::residual_likelihood, text(residual_likelihood))
        .required(risks::residual_impact, text(residual_impact))
        .nullable(risks::treatment_strategy_description, treatment_strategy_description.clone())
        .required(risks::treatment_strategy, text(treatment_strategy))
        .nullable(risks::assignee_id, nullable_text(assignee_id))
}

pub(crate) fn vendor(patch: &VendorPatch, now: Timestamp) -> Assignments<vendors::table> {
    let VendorChanges {
        name,
        description,
        category,
        status,
        inherent_probability,
        inherent_impact,
        residual_probability,
        residual_impact,
        website,
        assignee_id,
    } = patch.changes();
    Assignments::new(vendors::updated_at, naive(now))
        .required(vendors::name, name.clone())
        .required(vendors::description, description.clone())
        .required(vendors::category, text(category))
        .required(vendors::status, text(status))
        .required(vendors::inherent_probability, text(inherent_probability))
        .required(vendors::inherent_impact, text(inherent_impact))
        .required(vendors::residual_probability, text(residual_probability))
        .required(vendors::residual_impact, text(residual_impact))
        .nullable(vendors::website, website.clone())
        .nullable(vendors::assignee_id, nullable_text(assignee_id))
}

pub(crate) fn context_entry(patch: &ContextEntryPatch, now: Timestamp) -> Assignments<context_entries::table> {
    let ContextEntryChanges { question, answer, tags } = patch.changes();
    Assignments::new(context_entries::updated_at, naive(now))
        .required(context_entries::question, question.clone())
        .required(context_entries::answer, answer.clone())
        .required(context_entries::tags, tags.as_ref().map(json_text))
}

pub(crate) fn task(patch: &TaskPatch, now: Timestamp) -> Assignments<tasks::table> {
    let TaskChanges { title, description, status, assignee_id } = patch.changes();
    Assignments::new(tasks::updated_at, naive(now))
        .required(tasks::title, title.clone())
        .required(tasks::description, description.clone())
        .required(tasks::status, text(status))
        .nullable(tasks::assignee_id, nullable_text(assignee_id))
}
