//! Adopting a framework template with the library: which controls, mappings, policies, tasks and
//! evidence links an organization gets, and which of them it already has.
//!
//! [`plan`] is pure: the store reads what the organization holds ([`Holdings`]) inside the
//! adoption's transaction, under the organization's lock, and writes the [`Adoption`] it answers,
//! so two adoptions never make the same template's record twice.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{ControlTemplate, Library, LibraryOrigin, PolicyTemplate, TaskTemplate};
use crate::control::{Control, ControlFrequency, EvidenceSource, NewControl, SourceKind, check_source_id};
use crate::framework::FrameworkWithRequirements;
use crate::framework_status::RequirementMapping;
use crate::policy::{NewPolicy, Policy, PolicyFrequency};
use crate::task::{NewTask, Task};
use crate::validation::ValidationErrors;
use crate::{ConnectionId, ControlId, PolicyId, TaskId, Timestamp};

/// What an adoption brings besides the framework (`POST /v1/framework-templates/{key}/adopt`'s
/// body; each defaults to true, and an empty or missing body means all three).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AdoptionOptions {
    /// The library's controls answering the framework's requirements, mapped to them (made once
    /// per organization: a second framework reuses them). False: the framework alone, as
    /// adoption was before the library.
    pub with_controls: bool,
    /// The policies those controls rely on, as drafts (only with `withControls`).
    pub policies: bool,
    /// The recurring evidence tasks those controls rely on (only with `withControls`).
    pub tasks: bool,
}

impl Default for AdoptionOptions {
    fn default() -> Self {
        Self { with_controls: true, policies: true, tasks: true }
    }
}

/// What the organization already has that an adoption reuses or links to.
#[derive(Debug, Clone, Default)]
pub struct Holdings {
    /// Its controls made from the library, by template id.
    pub controls: BTreeMap<String, ControlId>,
    /// Its policies made from the library, by template id.
    pub policies: BTreeMap<String, PolicyId>,
    /// Its tasks made from the library, by template id.
    pub tasks: BTreeMap<String, TaskId>,
    /// Its connections that are not disconnected, with their provider.
    pub connections: Vec<(ConnectionId, String)>,
}

/// A record made from a template, with the fields as the template made them: the base of a later
/// three-way merge with a newer version of the template.
#[derive(Debug, Clone)]
pub struct Made<T> {
    /// The record.
    pub record: T,
    /// The template's fields as they made it (JSON).
    pub base: Value,
}

/// What an adoption writes, and what it found already there.
#[derive(Debug, Clone)]
pub struct Adoption {
    /// The framework with its requirements.
    pub framework: FrameworkWithRequirements,
    /// The controls made.
    pub controls: Vec<Made<Control>>,
    /// The organization's controls the framework's requirements are mapped to as well.
    pub reused_controls: Vec<ControlId>,
    /// The policies made (drafts).
    pub policies: Vec<Made<Policy>>,
    /// The organization's policies the controls are linked to.
    pub reused_policies: Vec<PolicyId>,
    /// The tasks made.
    pub tasks: Vec<Made<Task>>,
    /// The organization's tasks the controls are linked to.
    pub reused_tasks: Vec<TaskId>,
    /// The framework's requirements mapped to the controls.
    pub mappings: Vec<RequirementMapping>,
    /// The evidence sources linked: a control to its policies, its tasks, and the checks of the
    /// organization's connections it suggests.
    pub sources: Vec<EvidenceSource>,
}

/// The adoption of `framework` (made from the template `key`) into an organization holding
/// `holdings`, with `options`, at `now`; policies name the organization `organization`.
/// An error is a template that does not make a valid record: a defect of the library, which its
/// tests rule out.
pub fn plan(
    library: &Library,
    key: &str,
    framework: FrameworkWithRequirements,
    options: AdoptionOptions,
    holdings: &Holdings,
    organization: &str,
    now: Timestamp,
) -> Result<Adoption, (String, ValidationErrors)> {
    let org = framework.framework.organization_id.clone();
    let mut adoption = Adoption {
        framework,
        controls: Vec::new(),
        reused_controls: Vec::new(),
        policies: Vec::new(),
        reused_policies: Vec::new(),
        tasks: Vec::new(),
        reused_tasks: Vec::new(),
        mappings: Vec::new(),
        sources: Vec::new(),
    };
    if !options.with_controls {
        return Ok(adoption);
    }
    let templates: Vec<&ControlTemplate> = library.controls_for(key).collect();

    // The policies and tasks the controls rely on, each once: the organization's, or made now.
    let mut policies: BTreeMap<&str, PolicyId> = BTreeMap::new();
    let mut tasks: BTreeMap<&str, TaskId> = BTreeMap::new();
    for template in &templates {
        for id in &template.policies {
            if policies.contains_key(id.as_str()) {
                continue;
            }
            if let Some(held) = holdings.policies.get(id) {
                policies.insert(id, held.clone());
                adoption.reused_policies.push(held.clone());
            } else if options.policies
                && let Some(policy) = library.policy(id)
            {
                let made = policy_of(policy, &org, organization, now).map_err(|e| (id.clone(), e))?;
                policies.insert(id, made.record.id.clone());
                adoption.policies.push(made);
            }
        }
        for id in &template.tasks {
            if tasks.contains_key(id.as_str()) {
                continue;
            }
            if let Some(held) = holdings.tasks.get(id) {
                tasks.insert(id, held.clone());
                adoption.reused_tasks.push(held.clone());
            } else if options.tasks
                && let Some(task) = library.task(id)
            {
                let made = task_of(task, &org, now).map_err(|e| (id.clone(), e))?;
                tasks.insert(id, made.record.id.clone());
                adoption.tasks.push(made);
            }
        }
    }
    let made_policies: Vec<PolicyId> = adoption.policies.iter().map(|p| p.record.id.clone()).collect();
    let made_tasks: Vec<TaskId> = adoption.tasks.iter().map(|t| t.record.id.clone()).collect();

    let by_identifier: BTreeMap<&str, _> =
        adoption.framework.requirements.iter().map(|r| (r.identifier.as_str(), r.id.clone())).collect();
    let framework_id = adoption.framework.framework.id.clone();
    for template in templates {
        let (control_id, made) = match holdings.controls.get(&template.id) {
            Some(held) => {
                adoption.reused_controls.push(held.clone());
                (held.clone(), false)
            }
            None => {
                let made = control_of(template, &org, now).map_err(|e| (template.id.clone(), e))?;
                let id = made.record.id.clone();
                adoption.controls.push(made);
                (id, true)
            }
        };
        for identifier in template.requirements.get(key).into_iter().flatten() {
            if let Some(requirement) = by_identifier.get(identifier.as_str()) {
                adoption.mappings.push(RequirementMapping {
                    organization_id: org.clone(),
                    control_id: control_id.clone(),
                    requirement_id: requirement.clone(),
                    framework_id: framework_id.clone(),
                    created_at: now,
                    removed_at: None,
                });
            }
        }
        let link = |kind: SourceKind, source_id: String| EvidenceSource {
            control_id: control_id.clone(),
            organization_id: org.clone(),
            kind,
            source_id,
            created_at: now,
            removed_at: None,
        };
        // A control found already linked what existed when it was made; it gains only the
        // policies and tasks made now.
        for id in template.policies.iter().filter_map(|id| policies.get(id.as_str())) {
            if made || made_policies.contains(id) {
                adoption.sources.push(link(SourceKind::Policy, id.to_string()));
            }
        }
        for id in template.tasks.iter().filter_map(|id| tasks.get(id.as_str())) {
            if made || made_tasks.contains(id) {
                adoption.sources.push(link(SourceKind::Task, id.to_string()));
            }
        }
        if made {
            for (connection, check) in suggested_checks(template, &holdings.connections) {
                adoption.sources.push(link(SourceKind::Check, check_source_id(connection, check)));
            }
        }
    }
    Ok(adoption)
}

/// The checks `template` suggests that one of `connections` runs, with that connection: each
/// check once per connection of its provider.
pub fn suggested_checks<'a>(
    template: &'a ControlTemplate,
    connections: &'a [(ConnectionId, String)],
) -> impl Iterator<Item = (&'a ConnectionId, &'a str)> {
    template.checks.iter().flat_map(move |check| {
        let provider = crate::check::reading(check).map(|c| c.provider.as_str());
        connections
            .iter()
            .filter(move |(_, p)| Some(p.as_str()) == provider)
            .map(move |(connection, _)| (connection, check.as_str()))
    })
}

/// The library's controls suggesting a check of `provider`, with those checks: what a new
/// connection to `provider` links to the organization's controls made from them.
pub fn checks_of_provider(library: &Library, provider: &str) -> Vec<(String, Vec<String>)> {
    library
        .controls
        .values()
        .filter_map(|template| {
            let checks: Vec<String> = template
                .checks
                .iter()
                .filter(|check| crate::check::reading(check).is_some_and(|c| c.provider == provider))
                .cloned()
                .collect();
            (!checks.is_empty()).then(|| (template.id.clone(), checks))
        })
        .collect()
}

/// How often a control made from `template` must be proven again. Our frequencies are monthly,
/// quarterly and yearly: what operates continuously, daily or weekly is proven monthly; what
/// operates per event (a change, an incident, a hire) at least yearly, as an audit period
/// samples it.
fn control_frequency(template: &ControlTemplate) -> ControlFrequency {
    match template.frequency.as_str() {
        "continuous" | "daily" | "weekly" | "monthly" => ControlFrequency::Monthly,
        "quarterly" => ControlFrequency::Quarterly,
        _ => ControlFrequency::Yearly,
    }
}

/// The control's description: what is done, then what it achieves.
fn control_description(template: &ControlTemplate) -> String {
    format!("{}\n\nObjective: {}", template.description, template.objective)
}

fn origin(id: &str, version: u32) -> Option<LibraryOrigin> {
    Some(LibraryOrigin { id: id.to_owned(), version })
}

fn control_of(
    template: &ControlTemplate,
    org: &crate::OrganizationId,
    now: Timestamp,
) -> Result<Made<Control>, ValidationErrors> {
    let input = NewControl {
        name: Some(template.name.clone()),
        description: Some(control_description(template)),
        owner_id: None,
        frequency: Some(control_frequency(template)),
    };
    let mut record = Control::create(org.clone(), input, now)?;
    record.library = origin(&template.id, template.version);
    Ok(Made { base: control_base(template), record })
}

/// A control template's fields as they make a control.
pub fn control_base(template: &ControlTemplate) -> Value {
    json!({
        "name": template.name,
        "description": control_description(template),
        "frequency": control_frequency(template).as_str(),
        "requirements": template.requirements,
    })
}

fn policy_of(
    template: &PolicyTemplate,
    org: &crate::OrganizationId,
    organization: &str,
    now: Timestamp,
) -> Result<Made<Policy>, ValidationErrors> {
    let content = super::markdown::to_nodes(&template.text.replace(super::ORGANIZATION_NAME, organization));
    let input = NewPolicy {
        name: Some(template.name.clone()),
        description: Some(template.description.clone()),
        content: Some(content.clone()),
        frequency: Some(policy_frequency(template)),
        department: Some(template.department),
        policy_template_id: Some(template.id.clone()),
        ..NewPolicy::default()
    };
    let mut record = Policy::create(org.clone(), input, now)?;
    record.library = origin(&template.id, template.version);
    Ok(Made { base: policy_base(template, content), record })
}

/// A policy template's fields as they make a policy, `content` its text as rich-text nodes.
pub fn policy_base(template: &PolicyTemplate, content: Vec<Value>) -> Value {
    json!({
        "name": template.name,
        "description": template.description,
        "content": content,
        "frequency": policy_frequency(template).as_str(),
        "department": template.department.as_str(),
    })
}

fn policy_frequency(template: &PolicyTemplate) -> PolicyFrequency {
    match template.frequency {
        crate::frequency::Frequency::Monthly => PolicyFrequency::Monthly,
        crate::frequency::Frequency::Quarterly => PolicyFrequency::Quarterly,
        crate::frequency::Frequency::Yearly => PolicyFrequency::Yearly,
    }
}

/// A task made from `template` is first due one period after the adoption.
fn task_of(
    template: &TaskTemplate,
    org: &crate::OrganizationId,
    now: Timestamp,
) -> Result<Made<Task>, ValidationErrors> {
    let input = NewTask {
        title: Some(template.title.clone()),
        description: Some(template.description.clone()),
        frequency: Some(template.frequency),
        due_at: Some(template.frequency.next_due(None, now)),
        ..NewTask::default()
    };
    let mut record = Task::create(org.clone(), input, now)?;
    record.library = origin(&template.id, template.version);
    Ok(Made { base: task_base(template), record })
}

/// A task template's fields as they make a task.
pub fn task_base(template: &TaskTemplate) -> Value {
    json!({
        "title": template.title,
        "description": template.description,
        "frequency": template.frequency.as_str(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
    use super::*;
    use crate::OrganizationId;
    use crate::framework::template;

    fn adopt(key: &str, options: AdoptionOptions, holdings: &Holdings) -> Adoption {
        let framework = FrameworkWithRequirements::create(
            OrganizationId::generate(),
            template(key).unwrap().draft.clone(),
            Timestamp::now(),
        );
        plan(super::super::library(), key, framework, options, holdings, "Acme", Timestamp::now()).unwrap()
    }

    #[test]
    fn every_template_of_both_frameworks_makes_a_valid_record() {
        for key in ["soc2-2017", "iso27001-2022"] {
            let adoption = adopt(key, AdoptionOptions::default(), &Holdings::default());
            let answering = super::super::library().controls_for(key).count();
            assert_eq!(adoption.controls.len(), answering, "{key}");
            // Every requirement a control names exists in the framework.
            let named: usize = super::super::library().controls_for(key).map(|c| c.requirements[key].len()).sum();
            assert_eq!(adoption.mappings.len(), named, "{key}");
            assert!(adoption.policies.iter().all(|p| p.record.library.is_some() && p.base["content"].is_array()));
        }
    }

    #[test]
    fn a_held_control_is_reused_and_gains_only_the_records_made_now() {
        let first = adopt(
            "soc2-2017",
            AdoptionOptions { policies: false, tasks: false, ..AdoptionOptions::default() },
            &Holdings::default(),
        );
        assert!(first.sources.is_empty() && first.policies.is_empty());
        let holdings = Holdings {
            controls: first
                .controls
                .iter()
                .map(|c| (c.record.library.clone().unwrap().id, c.record.id.clone()))
                .collect(),
            ..Holdings::default()
        };
        let second = adopt("iso27001-2022", AdoptionOptions::default(), &holdings);
        assert!(second.controls.iter().all(|c| !holdings.controls.contains_key(&c.record.library.clone().unwrap().id)));
        assert_eq!(
            second.controls.len() + second.reused_controls.len(),
            super::super::library().controls_for("iso27001-2022").count()
        );
        // A reused control is linked to the policies made now.
        let mfa = &holdings.controls["LIB-AC-01"];
        let links: Vec<_> = second.sources.iter().filter(|s| &s.control_id == mfa).collect();
        assert_eq!(links.len(), 2);
        assert!(links.iter().all(|s| s.kind == SourceKind::Policy));
    }

    #[test]
    fn checks_are_linked_for_the_connections_that_run_them() {
        let fleet = (ConnectionId::generate(), "fleetdm".to_owned());
        let holdings = Holdings { connections: vec![fleet.clone()], ..Holdings::default() };
        let adoption = adopt("soc2-2017", AdoptionOptions::default(), &holdings);
        let checks: Vec<_> = adoption.sources.iter().filter(|s| s.kind == SourceKind::Check).collect();
        let suggested = checks_of_provider(super::super::library(), "fleetdm");
        let soc2: Vec<&str> = super::super::library().controls_for("soc2-2017").map(|c| c.id.as_str()).collect();
        let expected: usize = suggested.iter().filter(|(t, _)| soc2.contains(&t.as_str())).map(|(_, c)| c.len()).sum();
        assert!(expected > 0);
        assert_eq!(checks.len(), expected);
        assert!(checks.iter().all(|s| s.source_id.starts_with(&format!("{}:fleetdm.", fleet.0))));
    }

    #[test]
    fn without_controls_the_framework_comes_alone() {
        let options = AdoptionOptions { with_controls: false, ..AdoptionOptions::default() };
        let adoption = adopt("soc2-2017", options, &Holdings::default());
        assert!(adoption.controls.is_empty() && adoption.mappings.is_empty() && adoption.policies.is_empty());
    }
}
