//! Frameworks: catalogs of requirements an organization adopts, from an OSCAL catalog, our own
//! JSON shape or a shipped template.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::applicability::{self, Applicability, NewApplicability};
use compliance_domain::audit::Redaction;
use compliance_domain::control::{Control, Evidence};
use compliance_domain::etag::IfMatch;
use compliance_domain::framework::{
    Framework, FrameworkDraft, FrameworkSource, FrameworkWithRequirements, NewFramework, Template,
};
use compliance_domain::framework_status::{self, FrameworkStatus, MappedControl};
use compliance_domain::library::adoption::{self, Adoption, AdoptionOptions, Holdings};
use compliance_domain::library::library;
use compliance_domain::oscal::{self, assessment_results};
use compliance_domain::{ControlId, FrameworkId, OrganizationId, RequirementId, Timestamp};
use compliance_ports::{
    AdoptionAudits, Clock, ControlRepository, ControlRequirementRepository, FrameworkQuery, FrameworkRepository,
    LibraryRepository, OrganizationRepository, Page, RepoError,
};

use crate::access::require;
use crate::audit::{AuditTrail, Subject};
use crate::control_requirements::REQUIREMENT_MAPPING;
use crate::controls::{CONTROL, EVIDENCE_SOURCE, moment, statuses};
use crate::policies::POLICY;
use crate::printing::Printing;
use crate::tasks::TASK;
use crate::{AppError, Ports, Principal, Settings};

/// Frameworks and their requirements.
pub struct FrameworkService {
    frameworks: Arc<dyn FrameworkRepository>,
    mappings: Arc<dyn ControlRequirementRepository>,
    controls: Arc<dyn ControlRepository>,
    library: Arc<dyn LibraryRepository>,
    organizations: Arc<dyn OrganizationRepository>,
    clock: Arc<dyn Clock>,
    settings: Arc<Settings>,
    audit: Arc<AuditTrail>,
    printing: Printing,
}

/// A framework with each requirement's mapped controls and status at a moment.
#[derive(Debug, Clone)]
pub struct FrameworkView {
    /// The framework.
    pub framework: Framework,
    /// Its requirements in catalog order, each with its controls and status, and the roll-up.
    pub status: FrameworkStatus,
}

/// A framework's status with the evidence that decides it: what an assessment-results export
/// is written from.
struct Assessed {
    view: FrameworkView,
    evidence: Vec<Evidence>,
    /// The statements of applicability in force then.
    statements: Vec<Applicability>,
}

/// The Statement of Applicability of a framework at a moment: its status then, the statements
/// in force then, and the organization's name for the document's header.
#[derive(Debug, Clone)]
pub struct StatementOfApplicability {
    /// The framework and its requirements' statuses (`not_applicable` where so stated).
    pub view: FrameworkView,
    /// The statements in force at the moment; a requirement without one applies.
    pub statements: Vec<Applicability>,
    /// The organization's name.
    pub organization: String,
}

/// A statement of applicability in the audit trail: an entry of the framework's.
const APPLICABILITY: Subject<Applicability> = Subject {
    resource_type: "framework",
    id: |statement| statement.framework_id.to_string(),
    render: |_, a| {
        serde_json::json!({
            "frameworkId": a.framework_id, "requirementId": a.requirement_id, "applicable": a.applicable,
            "justification": a.justification, "createdAt": a.created_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// Frameworks in the audit trail: the framework as the list shows it, with `requirementCount`
/// rather than its requirements (a catalog of a thousand requirements would make every entry,
/// and every webhook delivery of it, hundreds of kilobytes; they never change after the import).
pub(crate) const FRAMEWORK: Subject<Framework> = Subject {
    resource_type: "framework",
    id: |framework| framework.id.to_string(),
    render: |_, f| {
        serde_json::json!({
            "id": f.id, "organizationId": f.organization_id, "name": f.name, "version": f.version,
            "source": f.source.as_str(), "requirementCount": f.requirement_count,
            "createdAt": f.created_at, "updatedAt": f.updated_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

impl FrameworkService {
    pub(crate) fn new(ports: &Ports, settings: Arc<Settings>, audit: Arc<AuditTrail>, printing: Printing) -> Self {
        Self {
            frameworks: ports.frameworks.clone(),
            mappings: ports.control_requirements.clone(),
            controls: ports.controls.clone(),
            library: ports.library.clone(),
            organizations: ports.organizations.clone(),
            clock: ports.clock.clone(),
            settings,
            audit,
            printing,
        }
    }

    /// A page of the caller's organization's frameworks, newest first, without their requirements.
    pub async fn list_frameworks(
        &self,
        caller: &Principal,
        query: &FrameworkQuery,
    ) -> Result<Page<Framework>, AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        Ok(self.frameworks.list_frameworks(&caller.organization_id, query).await?)
    }

    /// One framework of the caller's organization with its requirements in catalog order, each
    /// with the controls mapped to it and its status now.
    pub async fn get_framework(&self, caller: &Principal, id: &FrameworkId) -> Result<FrameworkView, AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        let view = self.assess(&caller.organization_id, id, self.clock.now()).await?.view;
        Ok(without_unreadable_controls(caller, view))
    }

    /// The framework's status at `as_of` (now when `None`; a future moment is refused): each
    /// requirement's from the controls mapped to it then, and the share passing. A past moment is
    /// answered from the evidence recorded up to then and the mappings and links in force then
    /// (removed ones included, if removed later).
    pub async fn framework_status(
        &self,
        caller: &Principal,
        id: &FrameworkId,
        as_of: Option<Timestamp>,
    ) -> Result<FrameworkView, AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        let moment = moment(self.clock.now(), as_of)?;
        let view = self.assess(&caller.organization_id, id, moment).await?.view;
        Ok(without_unreadable_controls(caller, view))
    }

    /// The framework's status at `as_of` as an OSCAL assessment-results document
    /// ([`assessment_results::document`]): a finding per requirement, an observation per evidence
    /// item that decides a mapped control's status. It needs `controls:read` besides
    /// `frameworks:read`: its observations carry the evidence's reasons (a check's error text, a
    /// run's verdict), which only those who read controls see.
    pub async fn assessment_results(
        &self,
        caller: &Principal,
        id: &FrameworkId,
        as_of: Option<Timestamp>,
    ) -> Result<serde_json::Value, AppError> {
        require(caller, Family::Controls, Action::Read)?;
        require(caller, Family::Frameworks, Action::Read)?;
        let now = self.clock.now();
        let assessed = self.assess(&caller.organization_id, id, moment(now, as_of)?).await?;
        Ok(assessment_results::document(&assessment_results::Assessment {
            framework: &assessed.view.framework,
            status: &assessed.view.status,
            evidence: &assessed.evidence,
            generated_at: now,
            base_url: &self.settings.public_url,
        }))
    }

    /// A framework from an OSCAL catalog document (`json`, the request's body as sent). A bad
    /// value is [`AppError::Validation`] naming its JSON path; the permission is checked before the
    /// document is read.
    pub async fn import_framework(
        &self,
        caller: &Principal,
        json: &str,
    ) -> Result<FrameworkWithRequirements, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        let draft = oscal::catalog::read(json)?.validate()?;
        self.create(caller, draft).await
    }

    /// A framework from our own JSON shape.
    pub async fn create_framework(
        &self,
        caller: &Principal,
        input: NewFramework,
    ) -> Result<FrameworkWithRequirements, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        let draft = input.into_draft(FrameworkSource::Custom)?.validate()?;
        self.create(caller, draft).await
    }

    /// The framework manifests this service ships.
    pub fn list_framework_templates(&self, caller: &Principal) -> Result<&'static [Template], AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        Ok(compliance_domain::framework::templates())
    }

    /// Adopts the shipped template `key` into the caller's organization with what `options` ask
    /// of the library, in one transaction ([`adoption::plan`]): the controls answering its
    /// requirements (made once per organization, reused by a later framework), their mappings,
    /// the policies and tasks they rely on, and their links to those and to the checks of the
    /// organization's connections. Each family written needs its own permission (a key its
    /// scope): frameworks, then controls, policies and tasks as `options` ask for them.
    pub async fn adopt_framework_template(
        &self,
        caller: &Principal,
        key: &str,
        options: AdoptionOptions,
    ) -> Result<Adoption, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        if options.with_controls {
            require(caller, Family::Controls, Action::Write)?;
            if options.policies {
                require(caller, Family::Policies, Action::Write)?;
            }
            if options.tasks {
                require(caller, Family::Tasks, Action::Write)?;
            }
        }
        let template = compliance_domain::framework::template(key).ok_or(AppError::NotFound("framework template"))?;
        let org = &caller.organization_id;
        // Policies are written for the organization by name; read before the transaction (a
        // rename meanwhile is a rename after the adoption).
        let name = match options.with_controls && options.policies {
            true => self.organizations.get(org).await.map_err(|e| AppError::from_repo(e, "organization"))?.name,
            false => String::new(),
        };
        let now = self.clock.now();
        let framework = FrameworkWithRequirements::create(org.clone(), template.draft.clone(), now);
        let plan = |holdings: &Holdings| {
            adoption::plan(library(), key, framework.clone(), options, holdings, &name, now).map_err(|(id, errors)| {
                RepoError::Internal(format!("library template {id} does not make a valid record: {errors:?}"))
            })
        };
        let audits = AdoptionAudits {
            framework: &self.audit.change(caller, "framework.created", &FRAMEWORK),
            control: &self.audit.change(caller, "control.created", &CONTROL),
            policy: &self.audit.change(caller, "policy.created", &POLICY),
            task: &self.audit.change(caller, "task.created", &TASK),
            mapping: &self.audit.change(caller, "control.requirement_mapped", &REQUIREMENT_MAPPING),
            source: &self.audit.change(caller, "control.evidence_source_added", &EVIDENCE_SOURCE),
        };
        Ok(self.library.adopt(org, &plan, &audits).await?)
    }

    /// States whether requirement `requirement` of the framework applies to the caller's
    /// organization, and why (Statement of Applicability); answers the statement. Needs what
    /// adoption needs of a framework's program: `frameworks` and `controls` write.
    pub async fn state_applicability(
        &self,
        caller: &Principal,
        framework: &FrameworkId,
        requirement: &RequirementId,
        input: NewApplicability,
    ) -> Result<Applicability, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        require(caller, Family::Controls, Action::Write)?;
        let org = caller.organization_id.clone();
        let statement = Applicability::state(org, framework.clone(), requirement.clone(), input, self.clock.now())?;
        let audit = self.audit.change(caller, "framework.applicability_stated", &APPLICABILITY);
        self.frameworks
            .state_applicability(&statement, &audit)
            .await
            .map_err(|error| AppError::from_repo(error, "requirement"))?;
        Ok(statement)
    }

    /// The framework's Statement of Applicability at `as_of` (now when `None`): every requirement
    /// with whether it applies and why, as stated then, and its implementation from the controls
    /// mapped to it then. Read as the framework is (the controls left out for a caller who may not
    /// read them).
    pub async fn statement_of_applicability(
        &self,
        caller: &Principal,
        id: &FrameworkId,
        as_of: Option<Timestamp>,
    ) -> Result<StatementOfApplicability, AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        let moment = moment(self.clock.now(), as_of)?;
        let org = &caller.organization_id;
        let Assessed { view, statements, .. } = self.assess(org, id, moment).await?;
        let view = without_unreadable_controls(caller, view);
        let organization = self.organizations.get(org).await.map_err(|e| AppError::from_repo(e, "organization"))?.name;
        Ok(StatementOfApplicability { view, statements, organization })
    }

    /// The statement printed as a PDF document, in one of the organization's print slots; read as
    /// the statement is, so that no caller prints what it may not read.
    pub async fn statement_pdf(
        &self,
        caller: &Principal,
        statement: &StatementOfApplicability,
    ) -> Result<Vec<u8>, AppError> {
        require(caller, Family::Frameworks, Action::Read)?;
        let lines = applicability::lines(&statement.view.status, &statement.statements);
        let html = applicability::html(
            &statement.view.framework,
            &statement.organization,
            statement.view.status.as_of,
            &lines,
        );
        let _slot = self.printing.slot(&caller.organization_id).await?;
        self.printing.print(&html).await
    }

    /// Deletes the framework with its requirements and returns what it was.
    pub async fn delete_framework(
        &self,
        caller: &Principal,
        id: &FrameworkId,
        if_match: &IfMatch,
    ) -> Result<Framework, AppError> {
        require(caller, Family::Frameworks, Action::Write)?;
        let audit = self.audit.change(caller, "framework.deleted", &FRAMEWORK);
        self.frameworks.delete_framework(&caller.organization_id, id, if_match, &audit).await.map_err(not_found)
    }

    async fn create(&self, caller: &Principal, draft: FrameworkDraft) -> Result<FrameworkWithRequirements, AppError> {
        let created = FrameworkWithRequirements::create(caller.organization_id.clone(), draft, self.clock.now());
        let audit = self.audit.change(caller, "framework.created", &FRAMEWORK);
        self.frameworks.insert_framework(&created, &audit).await?;
        Ok(created)
    }
}

impl FrameworkService {
    /// The framework with its requirements' statuses at `moment`, and the evidence deciding them:
    /// one read of the framework, one of its mappings and one of its statements of applicability
    /// in force at `moment`, then the mapped controls' statuses from one read of their links and
    /// evidence: a fixed number of statements, however many requirements, controls and links.
    async fn assess(&self, org: &OrganizationId, id: &FrameworkId, moment: Timestamp) -> Result<Assessed, AppError> {
        let framework = self.frameworks.get_framework(org, id).await.map_err(not_found)?;
        let mapped = self.mappings.framework_controls(org, id, moment).await?;
        // Each mapped control once (a control serving three requirements is read three times).
        let mut controls: Vec<Control> = Vec::new();
        let mut index: HashMap<ControlId, usize> = HashMap::new();
        for (_, control) in &mapped {
            index.entry(control.id.clone()).or_insert_with(|| {
                controls.push(control.clone());
                controls.len() - 1
            });
        }
        let states = statuses(self.controls.as_ref(), org, &controls, moment).await?;
        let mapped: Vec<MappedControl> = mapped
            .into_iter()
            .filter_map(|(requirement_id, control)| {
                let (report, _) = states.get(*index.get(&control.id)?)?;
                Some(MappedControl {
                    requirement_id,
                    control_id: control.id,
                    name: control.name,
                    status: report.status,
                })
            })
            .collect();
        // The evidence the statuses were computed from: the latest of each link in force, and the
        // latest file.
        let evidence = states
            .into_iter()
            .flat_map(|(_, state)| {
                let counted = |e: &Evidence| {
                    state.sources.iter().any(|s| {
                        Some(s.source_id.as_str()) == e.source_id.as_deref()
                            && s.in_force_at(moment)
                            && s.counts(e, moment)
                    })
                };
                let latest: Vec<Evidence> = state.latest.iter().filter(|e| counted(e)).cloned().collect();
                latest.into_iter().chain(state.latest_file)
            })
            .collect();
        let statements = self.frameworks.applicability(org, id, moment).await?;
        let excluded: HashSet<RequirementId> =
            statements.iter().filter(|s| !s.applicable).map(|s| s.requirement_id.clone()).collect();
        let status = framework_status::roll_up(framework.requirements, &mapped, &excluded, moment);
        Ok(Assessed { view: FrameworkView { framework: framework.framework, status }, evidence, statements })
    }
}

/// The view as `caller` may see it: a caller who may not read controls (an employee, a key
/// without `controls:read`) gets each requirement's status and the counts, but not the mapped
/// controls' names and statuses.
fn without_unreadable_controls(caller: &Principal, mut view: FrameworkView) -> FrameworkView {
    if require(caller, Family::Controls, Action::Read).is_err() {
        for requirement in &mut view.status.requirements {
            requirement.controls.clear();
        }
    }
    view
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "framework")
}
