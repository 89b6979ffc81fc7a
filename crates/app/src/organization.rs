//! The caller's own organization, and new organizations made by signed-in users.

use std::future::Future;
use std::sync::Arc;

use compliance_domain::OrganizationId;
use compliance_domain::access::{Action, Family};
use compliance_domain::etag::IfMatch;
use compliance_domain::organization::{
    NewOrganization, OperatorFields, Organization, OrganizationChanges, OrganizationPatch,
};
use compliance_domain::people::{Member, NewMember};
use compliance_ports::{Clock, OrganizationRepository, RepoError};
use rand::Rng;

use crate::access::require;
use crate::audit::{AuditTrail, MEMBER, ORGANIZATION, Provenance, member_action, user_actor};
use crate::{AppError, Ports, Principal, Settings, SignedInUser};

/// The role of whoever creates an organization.
pub const OWNER_ROLE: &str = "owner";

/// The caller's organization, and creating organizations.
pub struct OrganizationService {
    organizations: Arc<dyn OrganizationRepository>,
    clock: Arc<dyn Clock>,
    settings: Arc<Settings>,
    audit: Arc<AuditTrail>,
}

impl OrganizationService {
    pub(crate) fn new(ports: &Ports, settings: Arc<Settings>) -> Self {
        Self {
            organizations: ports.organizations.clone(),
            clock: ports.clock.clone(),
            settings,
            audit: Arc::new(AuditTrail::new(ports.renderer.clone(), ports.clock.clone())),
        }
    }

    /// A new organization with the signed-in caller as its `owner`, when the deployment lets users
    /// make their own (`SELF_SERVICE_ORGANIZATIONS`).
    pub async fn create_organization(
        &self,
        caller: &SignedInUser,
        input: NewOrganization,
    ) -> Result<Organization, AppError> {
        caller.require_session("creating an organization needs a signed-in session, not an API key")?;
        if !self.settings.self_service_organizations {
            return Err(AppError::Forbidden("this deployment does not let users create organizations"));
        }
        let now = self.clock.now();
        let organization = Organization::create(input.name, input.slug.clone(), now)?;
        let (organizations, trail) = (self.organizations.clone(), self.audit.clone());
        let owner = caller.user_id.clone();
        with_free_slug(organization, input.slug.is_some(), |candidate| {
            let (organizations, owner, trail) = (organizations.clone(), owner.clone(), trail.clone());
            async move {
                let provenance = Provenance {
                    actor: user_actor(&owner, None),
                    organization_id: candidate.id.clone(),
                    request_id: None,
                    idempotency: None,
                };
                let audit_member = trail.change_by(provenance.clone(), member_action, &MEMBER);
                let audit = trail.change_by(provenance, |_, _| "organization.created", &ORGANIZATION);
                let input = NewMember { user_id: Some(owner), role: Some(OWNER_ROLE.into()), ..NewMember::default() };
                let member = Member::create(candidate.id.clone(), input, now)
                    .map_err(|_| RepoError::Internal("the owner's membership does not validate".into()))?;
                organizations.insert_with_owner(&candidate, &member, (&audit, &audit_member)).await.map(|()| candidate)
            }
        })
        .await
    }

    /// The caller's organization.
    pub async fn get(&self, caller: &Principal) -> Result<Organization, AppError> {
        require(caller, Family::Organization, Action::Read)?;
        self.organizations.get(&caller.organization_id).await.map_err(|e| AppError::from_repo(e, "organization"))
    }

    /// Conflict when the new slug belongs to another organization.
    pub async fn update(
        &self,
        caller: &Principal,
        changes: OrganizationChanges,
        if_match: &IfMatch,
    ) -> Result<Organization, AppError> {
        require(caller, Family::Organization, Action::Write)?;
        let mut patch = OrganizationPatch::new(changes)?;
        self.refuse_operator_fields(&caller.organization_id, patch.take_operator_fields()).await?;
        let audit = self.audit.change(caller, "organization.updated", &ORGANIZATION);
        self.organizations.update(&caller.organization_id, &patch, if_match, &audit).await.map_err(
            |error| match error {
                RepoError::Conflict(_) => AppError::Conflict("the slug is taken by another organization".into()),
                other => AppError::from_repo(other, "organization"),
            },
        )
    }
}

impl OrganizationService {
    /// A tenant may send `deviceManagerLabelId` and `hasAccess` back as they are (a client that
    /// writes what it read), never change them: the operator sets them.
    async fn refuse_operator_fields(&self, org: &OrganizationId, asked: OperatorFields) -> Result<(), AppError> {
        if asked == OperatorFields::default() {
            return Ok(());
        }
        let current = self.organizations.get(org).await.map_err(|e| AppError::from_repo(e, "organization"))?;
        if asked.device_manager_label_id.is_some_and(|label| label != current.device_manager_label_id) {
            return Err(crate::devices::operator_sets("deviceManagerLabelId", "admin set-device-label"));
        }
        if asked.has_access.is_some_and(|has_access| has_access != current.has_access) {
            return Err(AppError::Denied("hasAccess is read-only: no tenant sets its own access".into()));
        }
        Ok(())
    }
}

/// Runs `insert` with the organization, and again with a random suffix on its slug while the
/// slug is taken, unless the slug was given explicitly (then taken is a 409).
pub(crate) async fn with_free_slug<F, Fut>(
    mut organization: Organization,
    explicit: bool,
    insert: F,
) -> Result<Organization, AppError>
where
    F: Fn(Organization) -> Fut,
    Fut: Future<Output = Result<Organization, RepoError>>,
{
    for _ in 0..5 {
        match insert(organization.clone()).await {
            Err(RepoError::Conflict(_)) if !explicit => {
                let suffix: u32 = rand::rng().random_range(0x1000_0000..=0xffff_ffff);
                organization.slug =
                    format!("{}-{suffix:08x}", compliance_domain::organization::slugify(&organization.name));
            }
            Err(RepoError::Conflict(_)) => return Err(AppError::Conflict("the slug is taken".into())),
            other => return other.map_err(AppError::from),
        }
    }
    Err(AppError::Conflict("could not find a free slug".into()))
}
