//! The permission matrix: which role may read or write which family of resources, and how an API
//! key's scopes narrow it. Every use case asks [`require`] first; docs/api.md shows the same table
//! (a unit test below prints it and compares).
//!
//! A member's role text may name several roles (`"auditor, employee"`): they hold the union of
//! those roles' grants. Words that name no role grant nothing. An API key acts with its creator's
//! current role, narrowed to the key's scopes.

pub use compliance_domain::access::holds;
use compliance_domain::access::{Action, Family, Role, Scope, Scopes, roles};

use compliance_ports::ListName;

use crate::{AppError, Principal};

/// What a role may do with a family of resources for one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grant {
    /// Nothing: the call is refused.
    None,
    /// Only the caller's own records: tasks assigned to them, their own devices, their own
    /// comments (as author), their own API keys.
    Own,
    /// Every record of the organization.
    All,
}

/// How far an allowed caller reaches: a service whose family has an `Own` grant restricts itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The whole family: no restriction.
    All,
    /// Only the caller's own records (see [`Grant::Own`]).
    Own,
}

use Grant::{All as A, None as N, Own as O};

/// One family's grants, in the order of [`Role::ALL`]: owner, admin, auditor, employee.
struct Row {
    family: Family,
    read: [Grant; 4],
    write: [Grant; 4],
}

/// The matrix. Owners and admins do everything (only an owner may make or change an owner, see
/// people.rs); auditors read everything and write nothing but their own API keys; employees read
/// policies, the tasks assigned to them and their own devices, and comment on what they can read.
#[rustfmt::skip]
const MATRIX: [Row; 18] = [
    //                                      read: owner admin auditor employee    write: owner admin auditor employee
    Row { family: Family::Risks,        read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::Vendors,      read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::People,       read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::Policies,     read: [A, A, A, A], write: [A, A, N, N] },
    Row { family: Family::Context,      read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::Tasks,        read: [A, A, A, O], write: [A, A, N, N] },
    Row { family: Family::Comments,     read: [A, A, A, A], write: [A, A, N, O] },
    Row { family: Family::Devices,      read: [A, A, A, O], write: [A, A, N, N] },
    Row { family: Family::Automations,  read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::Integrations, read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::Organization, read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::ApiKeys,      read: [A, A, A, O], write: [A, A, O, O] },
    Row { family: Family::Audit,        read: [A, A, A, N], write: [N, N, N, N] },
    Row { family: Family::Webhooks,     read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::Frameworks,   read: [A, A, A, A], write: [A, A, N, N] },
    Row { family: Family::Controls,     read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::Checks,       read: [A, A, A, N], write: [A, A, N, N] },
    Row { family: Family::Findings,     read: [A, A, A, N], write: [A, A, N, N] },
];

/// What `role` may do with `family` for `action`.
pub fn grant(role: Role, family: Family, action: Action) -> Grant {
    let Some(row) = MATRIX.iter().find(|row| row.family == family) else { return Grant::None };
    let column = Role::ALL.iter().position(|r| *r == role).unwrap_or(0);
    match action {
        Action::Read => row.read[column],
        Action::Write => row.write[column],
    }
}

/// The widest grant any of the roles named in `role_text` has.
pub fn grant_of(role_text: &str, family: Family, action: Action) -> Grant {
    roles(role_text).into_iter().map(|role| grant(role, family, action)).max().unwrap_or(Grant::None)
}

/// The check at the top of every use case: the caller's role must allow `action` on `family`,
/// and an API key's scopes must cover it. Denied: a 403 naming the rule.
pub fn require(caller: &Principal, family: Family, action: Action) -> Result<Reach, AppError> {
    let reach = match grant_of(&caller.role, family, action) {
        Grant::None => {
            return Err(AppError::Denied(format!(
                "role {} may not {} {}",
                role_name(&caller.role),
                action.as_str(),
                family.as_str()
            )));
        }
        Grant::Own => Reach::Own,
        Grant::All => Reach::All,
    };
    if let Some(scopes) = &caller.scopes
        && !scopes.covers(family, action)
    {
        return Err(AppError::Denied(format!("the API key lacks scope {}:{}", family.as_str(), action.as_str())));
    }
    Ok(reach)
}

/// The key-scope half of [`require`] alone, for actions whose role rule is decided from the record
/// (a policy's assignee submits it, its approver approves it, any member signs it): an API key
/// must hold a scope that covers `action` on `family`.
pub fn require_scope(caller: &Principal, family: Family, action: Action) -> Result<(), AppError> {
    match &caller.scopes {
        Some(scopes) if !scopes.covers(family, action) => {
            Err(AppError::Denied(format!("the API key lacks scope {}:{}", family.as_str(), action.as_str())))
        }
        _ => Ok(()),
    }
}

/// The check before a list page is answered, kept or loaded: reading the list's family.
pub fn list_reach(caller: &Principal, list: ListName) -> Result<Reach, AppError> {
    let family = match list {
        ListName::Context => Family::Context,
        ListName::Policies => Family::Policies,
        ListName::Vendors => Family::Vendors,
        ListName::Risks => Family::Risks,
        ListName::Tasks => Family::Tasks,
        ListName::People => Family::People,
        ListName::Access => Family::ApiKeys,
    };
    require(caller, family, Action::Read)
}

/// The refusal of a record outside an `Own` reach, e.g. "role employee may read only tasks
/// assigned to them".
pub fn only_own(caller: &Principal, action: Action, what: &str) -> AppError {
    AppError::Denied(format!("role {} may {} only {what}", role_name(&caller.role), action.as_str()))
}

/// The scopes a key may be given by `caller`. A named scope (`risks:write`) must be allowed by the
/// caller's role (an `Own` grant counts); a wildcard (`*`, `*:read`) means "what the creator's
/// role allows", so any role may give it. When the caller is itself a key, every permission the
/// new key could use must be covered by the caller's scopes. Else a 403 naming the scope.
pub fn require_grantable(caller: &Principal, scopes: &Scopes) -> Result<(), AppError> {
    for scope in scopes.iter() {
        let named = matches!(scope, Scope::Of(..));
        for (family, action) in scope.pairs() {
            if grant_of(&caller.role, family, action) == Grant::None {
                if !named {
                    continue;
                }
                return Err(AppError::Denied(format!(
                    "role {} may not {} {}, so a key it creates may not hold scope {scope}",
                    role_name(&caller.role),
                    action.as_str(),
                    family.as_str()
                )));
            }
            if caller.scopes.as_ref().is_some_and(|own| !own.covers(family, action)) {
                return Err(AppError::Denied(format!(
                    "the API key lacks scope {}:{}, so a key it creates may not hold scope {scope}",
                    family.as_str(),
                    action.as_str()
                )));
            }
        }
    }
    Ok(())
}

fn role_name(role_text: &str) -> String {
    match role_text.trim() {
        "" => "(none)".to_owned(),
        text => text.to_owned(),
    }
}

/// The matrix as the Markdown table docs/api.md holds between its `access-matrix` markers.
pub fn matrix_markdown() -> String {
    let mut table = String::from("| resource | owner | admin | auditor | employee |\n|---|---|---|---|---|\n");
    for row in &MATRIX {
        let cells: Vec<String> = (0..4).map(|i| cell(row.read[i], row.write[i])).collect();
        table.push_str(&format!("| {} | {} |\n", row.family.as_str(), cells.join(" | ")));
    }
    table
}

fn cell(read: Grant, write: Grant) -> String {
    let part = |grant: Grant, action: &str| match grant {
        Grant::None => None,
        Grant::Own => Some(format!("{action} own")),
        Grant::All => Some(action.to_owned()),
    };
    let parts: Vec<String> = [part(read, "read"), part(write, "write")].into_iter().flatten().collect();
    if parts.is_empty() { "—".to_owned() } else { parts.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_one_row() {
        for family in Family::ALL {
            assert_eq!(MATRIX.iter().filter(|row| row.family == family).count(), 1, "{family:?}");
        }
    }

    /// Only the services that know what "own" means for their records may see an `Own` grant.
    #[test]
    fn own_grants_only_where_a_service_restricts_to_own_records() {
        let restricted = [Family::Tasks, Family::Devices, Family::Comments, Family::ApiKeys];
        for row in &MATRIX {
            let has_own = row.read.contains(&Grant::Own) || row.write.contains(&Grant::Own);
            assert!(!has_own || restricted.contains(&row.family), "{:?}", row.family);
        }
    }

    #[test]
    fn docs_api_md_shows_this_matrix() {
        let doc = include_str!("../../../docs/api.md");
        let start = doc.find("<!-- access-matrix -->\n").expect("docs/api.md has the access-matrix marker");
        let rest = &doc[start + "<!-- access-matrix -->\n".len()..];
        let end = rest.find("<!-- /access-matrix -->").expect("docs/api.md closes the access-matrix marker");
        assert_eq!(
            &rest[..end],
            matrix_markdown(),
            "docs/api.md's permission table differs from crates/app/src/access.rs; paste this between the markers"
        );
    }
}
