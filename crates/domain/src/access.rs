//! The words of access control: roles, resource families, actions and API-key scopes.
//!
//! Which role may do what is the application's permission matrix (`compliance_app::access`);
//! this module only names the parts and parses them.

use std::fmt;

use crate::validation::FieldError;

/// A role a member can hold. A member's role text may name several (see [`roles`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// `owner`: everything; only an owner may make or change an owner.
    Owner,
    /// `admin`: everything but making or changing an owner.
    Admin,
    /// `auditor`: reads everything, writes nothing but their own API keys.
    Auditor,
    /// `employee`: reads policies, their own tasks and devices; comments on what they can read.
    Employee,
}

impl Role {
    /// Every role, from most to least powerful: the matrix's column order.
    pub const ALL: [Role; 4] = [Role::Owner, Role::Admin, Role::Auditor, Role::Employee];

    /// The role's wire name (`owner`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Auditor => "auditor",
            Role::Employee => "employee",
        }
    }
}

/// The roles a member's free-text role names: the words split on commas and white space,
/// compared without case. Words that name no role grant nothing and are left out.
pub fn roles(text: &str) -> Vec<Role> {
    let mut found: Vec<Role> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter_map(|word| Role::ALL.into_iter().find(|role| word.eq_ignore_ascii_case(role.as_str())))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Whether the role text names `role`.
pub fn holds(text: &str, role: Role) -> bool {
    roles(text).contains(&role)
}

/// A family of resources that permissions and scopes speak about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// Risks.
    Risks,
    /// Vendors.
    Vendors,
    /// Members.
    People,
    /// Policies, their versions and signatures.
    Policies,
    /// Context entries.
    Context,
    /// Tasks.
    Tasks,
    /// Comments and attachments.
    Comments,
    /// Devices.
    Devices,
    /// Browser automations and runs.
    Automations,
    /// Integration connections.
    Integrations,
    /// The organization itself.
    Organization,
    /// API keys.
    ApiKeys,
    /// The audit trail.
    Audit,
    /// Webhooks.
    Webhooks,
    /// Frameworks and their requirements.
    Frameworks,
    /// Controls, their evidence sources and evidence.
    Controls,
    /// The catalog of checks the providers ship, and the runs of a connection's checks.
    Checks,
    /// Findings: the resources checks failed, their exceptions and tasks.
    Findings,
}

impl Family {
    /// Every family, in the matrix's row order.
    pub const ALL: [Family; 18] = [
        Family::Risks,
        Family::Vendors,
        Family::People,
        Family::Policies,
        Family::Context,
        Family::Tasks,
        Family::Comments,
        Family::Devices,
        Family::Automations,
        Family::Integrations,
        Family::Organization,
        Family::ApiKeys,
        Family::Audit,
        Family::Webhooks,
        Family::Frameworks,
        Family::Controls,
        Family::Checks,
        Family::Findings,
    ];

    /// The family's name in scopes (`risks`, `apiKeys`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Risks => "risks",
            Family::Vendors => "vendors",
            Family::People => "people",
            Family::Policies => "policies",
            Family::Context => "context",
            Family::Tasks => "tasks",
            Family::Comments => "comments",
            Family::Devices => "devices",
            Family::Automations => "automations",
            Family::Integrations => "integrations",
            Family::Organization => "organization",
            Family::ApiKeys => "api-keys",
            Family::Audit => "audit",
            Family::Webhooks => "webhooks",
            Family::Frameworks => "frameworks",
            Family::Controls => "controls",
            Family::Checks => "checks",
            Family::Findings => "findings",
        }
    }

    fn parse(text: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|family| family.as_str() == text)
    }
}

/// Reading, or changing (create, update, delete, and actions such as starting a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// Reading (GET).
    Read,
    /// Changing (POST, PATCH, PUT, DELETE).
    Write,
}

impl Action {
    /// Both actions.
    pub const ALL: [Action; 2] = [Action::Read, Action::Write];

    /// `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::Write => "write",
        }
    }
}

/// What an API key may be used for: `risks:read`, `risks:write`, `*:read` or `*`.
/// `<family>:write` includes reading that family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// `*`: everything its creator's role allows.
    All,
    /// `*:read`: reading everything its creator's role allows.
    ReadAll,
    /// `<family>:<action>`.
    Of(Family, Action),
}

impl Scope {
    /// Whether this scope lets a key do `action` on `family`.
    pub fn covers(self, family: Family, action: Action) -> bool {
        match self {
            Scope::All => true,
            Scope::ReadAll => action == Action::Read,
            Scope::Of(own, own_action) => own == family && (own_action == action || own_action == Action::Write),
        }
    }

    /// Every (family, action) pair this scope covers.
    pub fn pairs(self) -> impl Iterator<Item = (Family, Action)> {
        Family::ALL
            .into_iter()
            .flat_map(|family| Action::ALL.into_iter().map(move |action| (family, action)))
            .filter(move |&(family, action)| self.covers(family, action))
    }

    /// Every scope there is: `*`, `*:read`, then each family's read and write.
    pub fn every() -> impl Iterator<Item = Scope> {
        [Scope::All, Scope::ReadAll].into_iter().chain(
            Family::ALL.into_iter().flat_map(|family| Action::ALL.into_iter().map(move |a| Scope::Of(family, a))),
        )
    }

    /// A scope's text (`*`, `*:read`, `risks:write`, …); `None` for anything else.
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "*" => Some(Scope::All),
            "*:read" => Some(Scope::ReadAll),
            _ => {
                let (family, action) = text.split_once(':')?;
                let action = Action::ALL.into_iter().find(|a| a.as_str() == action)?;
                Some(Scope::Of(Family::parse(family)?, action))
            }
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::All => f.write_str("*"),
            Scope::ReadAll => f.write_str("*:read"),
            Scope::Of(family, action) => write!(f, "{}:{}", family.as_str(), action.as_str()),
        }
    }
}

/// An API key's scopes: at least one, no duplicates, in a stable order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Scopes(Vec<Scope>);

impl Scopes {
    /// What keys made by the CLI, and keys made before scopes existed, hold.
    pub fn everything() -> Self {
        Self(vec![Scope::All])
    }

    /// Parses the scopes of a request body; an unknown one is a 400 naming it.
    pub fn parse<S: AsRef<str>>(field: &str, texts: &[S]) -> Result<Self, FieldError> {
        if texts.is_empty() {
            return Err(FieldError::new(field, "must name at least one scope"));
        }
        let mut scopes = Vec::with_capacity(texts.len());
        for text in texts {
            let text = text.as_ref();
            let scope = Scope::parse(text).ok_or_else(|| {
                FieldError::new(
                    field,
                    format!("unknown scope `{text}`: expected `<resource>:read`, `<resource>:write`, `*:read` or `*`"),
                )
            })?;
            scopes.push(scope);
        }
        scopes.sort();
        scopes.dedup();
        Ok(Self(scopes))
    }

    /// The stored form: the scopes separated by single spaces.
    pub fn to_text(&self) -> String {
        self.0.iter().map(Scope::to_string).collect::<Vec<_>>().join(" ")
    }

    /// Reads the stored form; words that are no scope (never written by this version) are dropped,
    /// which only ever narrows a key.
    pub fn from_text(text: &str) -> Self {
        let mut scopes: Vec<Scope> = text.split_whitespace().filter_map(Scope::parse).collect();
        scopes.sort();
        scopes.dedup();
        Self(scopes)
    }

    /// Whether any of the scopes allows `action` on `family`.
    pub fn covers(&self, family: Family, action: Action) -> bool {
        self.0.iter().any(|scope| scope.covers(family, action))
    }

    /// The scopes, sorted, without repeats.
    pub fn iter(&self) -> impl Iterator<Item = Scope> + '_ {
        self.0.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_words_in_any_case_and_unknown_words_grant_nothing() {
        assert_eq!(roles("owner"), vec![Role::Owner]);
        assert_eq!(roles("Auditor, ADMIN employee"), vec![Role::Admin, Role::Auditor, Role::Employee]);
        assert_eq!(roles("viewer, co-owner, administrator"), vec![]);
        assert_eq!(roles(""), vec![]);
    }

    #[test]
    fn scopes_parse_print_and_cover() {
        for text in ["*", "*:read", "risks:read", "risks:write", "api-keys:write", "audit:read"] {
            assert_eq!(Scope::parse(text).map(|s| s.to_string()).as_deref(), Some(text));
        }
        for text in ["", "risks", "risks:delete", "*:write", "risk:read", "Risks:read", " risks:read"] {
            assert_eq!(Scope::parse(text), None, "{text}");
        }
        let write = Scope::parse("risks:write").unwrap();
        assert!(write.covers(Family::Risks, Action::Read), "write includes read");
        assert!(!write.covers(Family::Vendors, Action::Read));
        assert!(!Scope::ReadAll.covers(Family::Risks, Action::Write));
        // Every family (webhooks, frameworks, controls, checks and findings included) read and written; read only.
        assert_eq!(Scope::All.pairs().count(), 36);
        assert_eq!(Scope::ReadAll.pairs().count(), 18);
    }

    #[test]
    fn scope_lists_name_the_unknown_scope_and_round_trip() {
        let error = Scopes::parse("scopes", &["risks:read", "risks:eat"]).unwrap_err();
        assert!(error.message.contains("risks:eat"), "{error:?}");
        assert!(Scopes::parse::<&str>("scopes", &[]).is_err());
        let scopes = Scopes::parse("scopes", &["vendors:write", "risks:read", "risks:read"]).unwrap();
        assert_eq!(scopes.to_text(), "risks:read vendors:write");
        assert_eq!(Scopes::from_text(&scopes.to_text()), scopes);
        assert_eq!(Scopes::from_text("*"), Scopes::everything());
    }
}
