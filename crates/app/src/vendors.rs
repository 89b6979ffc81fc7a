//! Vendors: the third parties the organization depends on, and how they are assessed.

use std::sync::Arc;

use compliance_domain::VendorId;
use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::etag::IfMatch;
use compliance_domain::vendor::{NewVendor, Vendor, VendorChanges, VendorPatch};
use compliance_ports::{Clock, MemberRepository, Page, VendorQuery, VendorRepository};

use crate::access::require;
use crate::assignees::{assignee, require_active_members};
use crate::audit::{AuditTrail, Provenance, Subject};
use crate::bulk::{self, ActiveMembers, BulkOperation, Steps};
use crate::{AppError, CommentService, Ports, Principal};

/// Vendors: their assessment and review dates.
pub struct VendorService {
    vendors: Arc<dyn VendorRepository>,
    members: Arc<dyn MemberRepository>,
    clock: Arc<dyn Clock>,
    /// Removes the bytes of the attachments deleted with a vendor.
    comments: Arc<CommentService>,
    audit: Arc<AuditTrail>,
}

/// Vendors in the audit trail: descriptions are rich text, shown by length.
pub(crate) const VENDOR: Subject<Vendor> = Subject {
    resource_type: "vendor",
    id: |vendor| vendor.id.to_string(),
    render: |renderer, vendor| renderer.vendor(vendor),
    redaction: Redaction { secret: &[], rich_text: &["description"] },
    evidence: None,
};

impl VendorService {
    pub(crate) fn new(ports: &Ports, comments: Arc<CommentService>, audit: Arc<AuditTrail>) -> Self {
        Self {
            vendors: ports.vendors.clone(),
            members: ports.members.clone(),
            clock: ports.clock.clone(),
            comments,
            audit,
        }
    }

    /// A page of the caller's organization's vendors, newest first.
    pub async fn list_vendors(&self, caller: &Principal, query: &VendorQuery) -> Result<Page<Vendor>, AppError> {
        require(caller, Family::Vendors, Action::Read)?;
        Ok(self.vendors.list_vendors(&caller.organization_id, query).await?)
    }

    /// One vendor of the caller's organization.
    pub async fn get_vendor(&self, caller: &Principal, id: &VendorId) -> Result<Vendor, AppError> {
        require(caller, Family::Vendors, Action::Read)?;
        self.vendors.get_vendor(&caller.organization_id, id).await.map_err(not_found)
    }

    /// A new vendor; a bad field is [`AppError::Validation`] naming it.
    pub async fn create_vendor(&self, caller: &Principal, input: NewVendor) -> Result<Vendor, AppError> {
        require(caller, Family::Vendors, Action::Write)?;
        let created = Vendor::create(caller.organization_id.clone(), input, self.clock.now())?;
        require_active_members(self.members.as_ref(), &caller.organization_id, assignee(created.assignee_id.as_ref()))
            .await?;
        self.vendors.insert_vendor(&created, &self.audit.change(caller, "vendor.created", &VENDOR)).await?;
        Ok(created)
    }

    /// Changes only the fields the body names; an empty body answers the vendor unchanged.
    pub async fn update_vendor(
        &self,
        caller: &Principal,
        id: &VendorId,
        changes: VendorChanges,
        if_match: &IfMatch,
    ) -> Result<Vendor, AppError> {
        require(caller, Family::Vendors, Action::Write)?;
        let patch = VendorPatch::new(changes)?;
        if patch.is_empty() {
            // Nothing to write, but the precondition still decides the answer.
            let current = self.get_vendor(caller, id).await?;
            if_match.check(&current.etag())?;
            return Ok(current);
        }
        require_active_members(self.members.as_ref(), &caller.organization_id, assignee(patch.assignee())).await?;
        let audit = self.audit.change(caller, "vendor.updated", &VENDOR);
        self.vendors
            .update_vendor(&caller.organization_id, id, &patch, self.clock.now(), if_match, &audit)
            .await
            .map_err(not_found)
    }

    /// Deletes the vendor for good, with its comments and their attachments, and returns what it was.
    pub async fn delete_vendor(
        &self,
        caller: &Principal,
        id: &VendorId,
        if_match: &IfMatch,
    ) -> Result<Vendor, AppError> {
        require(caller, Family::Vendors, Action::Write)?;
        let audit = self.audit.change(caller, "vendor.deleted", &VENDOR);
        let deleted =
            self.vendors.delete_vendor(&caller.organization_id, id, if_match, &audit).await.map_err(not_found)?;
        self.comments.remove_attachments(&deleted.attachments).await;
        Ok(deleted.record)
    }

    /// Applies a bulk request's operations (see [`crate::bulk`]): when `atomic`, all validated
    /// first and then written in one transaction, or nothing and [`AppError::BulkFailed`]; else
    /// one by one through the single writes, each with its own result. Answers each operation's
    /// vendor, in order (for a delete, the vendor as it was).
    pub async fn bulk_vendors(
        &self,
        caller: &Principal,
        operations: Vec<BulkOperation<NewVendor, VendorChanges, VendorId>>,
        atomic: bool,
    ) -> Result<Vec<Result<Vendor, AppError>>, AppError> {
        require(caller, Family::Vendors, Action::Write)?;
        let (org, now) = (&caller.organization_id, self.clock.now());
        let members = &ActiveMembers::new(self.members.as_ref(), org);
        let actions = bulk::action_of(["vendor.created", "vendor.updated", "vendor.deleted"]);
        let audit = self.audit.change_by(Provenance::of(caller), actions, &VENDOR);
        let steps = Steps {
            what: "vendor",
            create: Box::new(move |input| Box::pin(self.create_vendor(caller, input))),
            update: Box::new(move |(id, changes)| {
                Box::pin(async move { self.update_vendor(caller, &id, changes, &IfMatch::Absent).await })
            }),
            delete: Box::new(move |id| {
                Box::pin(async move { self.delete_vendor(caller, &id, &IfMatch::Absent).await })
            }),
            check_create: Box::new(move |input| {
                Box::pin(async move {
                    let vendor = Vendor::create(org.clone(), input, now)?;
                    members.require_all(assignee(vendor.assignee_id.as_ref())).await?;
                    Ok(vendor)
                })
            }),
            check_update: Box::new(move |changes| {
                Box::pin(async move {
                    let patch = VendorPatch::new(changes)?;
                    members.require_all(assignee(patch.assignee())).await?;
                    Ok(patch)
                })
            }),
            find: Box::new(move |id| {
                Box::pin(async move { self.vendors.get_vendor(org, &id).await.map_err(not_found) })
            }),
            write: Box::new(move |writes| {
                Box::pin(async move { self.vendors.apply_vendor_bulk(org, &writes, now, &audit).await })
            }),
        };
        bulk::apply(operations, atomic, &self.comments, steps).await
    }
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "vendor")
}
