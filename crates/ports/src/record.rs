use compliance_domain::comment::CommentEntityType;
use compliance_domain::context::{ContextEntry, ContextEntryChanges, ContextEntryPatch, NewContextEntry};
use compliance_domain::policy::{NewPolicy, Policy, PolicyChanges, PolicyPatch};
use compliance_domain::risk::{NewRisk, Risk, RiskChanges, RiskPatch};
use compliance_domain::task::{NewTask, Task, TaskChanges, TaskPatch};
use compliance_domain::vendor::{NewVendor, Vendor, VendorChanges, VendorPatch};
use compliance_domain::{
    ContextEntryId, MemberId, OrganizationId, PolicyId, RiskId, TaskId, Timestamp, ValidationErrors, VendorId,
};

use crate::ListName;

/// A record owned by one organization that is listed, read, created, patched and deleted the same
/// way as its peers (context entries, policies, vendors, risks, tasks).
pub trait TenantRecord: Clone + Send + Sync + 'static {
    type Id: Clone + Send + Sync + std::fmt::Display;
    type Patch: Send + Sync;
    /// The body of a create.
    type New: Send;
    /// The body of a PATCH, before validation.
    type Changes: Send;

    /// What the record is called in messages: "risk", "vendor", …
    const KIND: &'static str;
    /// The comment entity type of this kind, when comments can be attached to it.
    const COMMENT_ENTITY: Option<CommentEntityType>;
    /// The list whose generation a change of such a record moves.
    const LIST: ListName;

    fn create(org: OrganizationId, input: Self::New, now: Timestamp) -> Result<Self, ValidationErrors>;
    fn validate(changes: Self::Changes) -> Result<Self::Patch, ValidationErrors>;
    fn id(&self) -> &Self::Id;
    fn apply(&mut self, patch: &Self::Patch, now: Timestamp);
    /// Whether the patch changes nothing.
    fn patch_is_empty(patch: &Self::Patch) -> bool;
    /// The members the record names, with the field that names them.
    fn named_members(&self) -> Vec<(&'static str, &MemberId)>;
    /// The members a patch assigns, with the field that names them.
    fn patch_named_members(patch: &Self::Patch) -> Vec<(&'static str, &MemberId)>;
}

macro_rules! tenant_record {
    ($record:ty, $id:ty, $new:ty, $changes:ty, $patch:ty, $kind:literal, $list:ident, $comments:expr, |$r:ident| $named:expr, |$p:ident| $patch_named:expr) => {
        impl TenantRecord for $record {
            type Id = $id;
            type Patch = $patch;
            type New = $new;
            type Changes = $changes;
            const KIND: &'static str = $kind;
            const COMMENT_ENTITY: Option<CommentEntityType> = $comments;
            const LIST: ListName = ListName::$list;

            fn create(org: OrganizationId, input: $new, now: Timestamp) -> Result<Self, ValidationErrors> {
                <$record>::create(org, input, now)
            }
            fn validate(changes: $changes) -> Result<$patch, ValidationErrors> {
                <$patch>::new(changes)
            }
            fn id(&self) -> &Self::Id {
                &self.id
            }
            fn apply(&mut self, patch: &Self::Patch, now: Timestamp) {
                <$record>::apply(self, patch, now)
            }
            fn patch_is_empty(patch: &Self::Patch) -> bool {
                patch.is_empty()
            }
            fn named_members(&self) -> Vec<(&'static str, &MemberId)> {
                let $r = self;
                $named
            }
            fn patch_named_members(patch: &Self::Patch) -> Vec<(&'static str, &MemberId)> {
                let $p = patch;
                $patch_named
            }
        }
    };
}

tenant_record!(
    ContextEntry,
    ContextEntryId,
    NewContextEntry,
    ContextEntryChanges,
    ContextEntryPatch,
    "context entry",
    Context,
    None,
    |_r| Vec::new(),
    |_p| Vec::new()
);
tenant_record!(
    Policy,
    PolicyId,
    NewPolicy,
    PolicyChanges,
    PolicyPatch,
    "policy",
    Policies,
    Some(CommentEntityType::Policy),
    |r| r.named_members().collect(),
    |p| p.named_members().collect()
);
tenant_record!(
    Vendor,
    VendorId,
    NewVendor,
    VendorChanges,
    VendorPatch,
    "vendor",
    Vendors,
    Some(CommentEntityType::Vendor),
    |r| r.assignee_id.iter().map(|m| ("assigneeId", m)).collect(),
    |p| p.assignee().map(|m| ("assigneeId", m)).into_iter().collect()
);
tenant_record!(
    Risk,
    RiskId,
    NewRisk,
    RiskChanges,
    RiskPatch,
    "risk",
    Risks,
    Some(CommentEntityType::Risk),
    |r| r.assignee_id.iter().map(|m| ("assigneeId", m)).collect(),
    |p| p.assignee().map(|m| ("assigneeId", m)).into_iter().collect()
);
tenant_record!(
    Task,
    TaskId,
    NewTask,
    TaskChanges,
    TaskPatch,
    "task",
    Tasks,
    Some(CommentEntityType::Task),
    |r| r.assignee_id.iter().map(|m| ("assigneeId", m)).collect(),
    |p| p.assignee().map(|m| ("assigneeId", m)).into_iter().collect()
);
