//! The rule every record that names members shares: a named member is an active member of the
//! caller's organization.

use compliance_domain::{MemberId, OrganizationId};
use compliance_ports::{MemberRepository, RepoError};

use crate::AppError;

/// Why a named member is refused.
pub(crate) const NOT_ACTIVE: &str = "must name an active member of the organization";

/// Every `(field, member)` must name an active member of `org`; else a 400 naming the field.
pub(crate) async fn require_active_members<'a>(
    members: &dyn MemberRepository,
    org: &OrganizationId,
    named: impl IntoIterator<Item = (&'static str, &'a MemberId)>,
) -> Result<(), AppError> {
    for (field, member) in named {
        match members.get(org, member).await {
            Ok(person) if person.member.is_active => {}
            Ok(_) | Err(RepoError::NotFound) => {
                return Err(AppError::invalid(field, NOT_ACTIVE));
            }
            Err(other) => return Err(other.into()),
        }
    }
    Ok(())
}

/// The `assigneeId` a record or patch names, for [`require_active_members`].
pub(crate) fn assignee(member: Option<&MemberId>) -> Option<(&'static str, &MemberId)> {
    member.map(|member| ("assigneeId", member))
}
