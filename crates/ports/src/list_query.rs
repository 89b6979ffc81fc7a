//! What a list is asked for: its filters, time ranges, search words and sort, with the page.
//!
//! One [`ListQuery`] per list, typed by the list's own filter (`RiskFilter`, …) and sortable
//! fields (`RiskSort`, …). The HTTP layer builds it from the query string (rejecting anything it
//! does not know); the repository applies every part of it, the organization's filter first.

use compliance_domain::access::Role;
use compliance_domain::automation::{RunStatus, RunTrigger};
use compliance_domain::integration::ConnectionStatus;
use compliance_domain::policy::{PolicyFrequency, PolicyStatus};
use compliance_domain::risk::{RiskCategory, RiskStatus, TreatmentStrategy};
use compliance_domain::task::TaskStatus;
use compliance_domain::vendor::{VendorCategory, VendorStatus};
use compliance_domain::{Department, Impact, Likelihood, MemberId, Timestamp, UserId};

use crate::PageRequest;

/// A list's query: every part narrows or orders the rows; an empty part does nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListQuery<Filter, Field> {
    /// The list's own filters: within a field, any of the values; across fields, all of them.
    pub filter: Filter,
    pub times: TimeRange,
    /// The words of `q`; the store applies them (with relevance order when `sort` is empty).
    pub search: Option<Search>,
    /// The sort keys in order; empty for the default (newest first, or by relevance with a
    /// search). The id always breaks ties, in the last key's direction.
    pub sort: Vec<SortKey<Field>>,
    pub page: PageRequest,
}

impl<Filter: Default, Field> ListQuery<Filter, Field> {
    /// Every row, newest first, in pages of `page`.
    pub fn unfiltered(page: PageRequest) -> Self {
        Self { filter: Filter::default(), times: TimeRange::default(), search: None, sort: Vec::new(), page }
    }
}

impl<Filter: Clone, Field: Clone> ListQuery<Filter, Field> {
    /// The same filters, search and sort, for `limit` rows after `after` (an export's batches),
    /// uncounted: an export never shows the total, and counting each batch would read every
    /// matching row once per batch.
    pub fn batch(&self, limit: usize, after: Option<crate::Cursor>) -> Self {
        Self { page: PageRequest { after, ..PageRequest::first(limit) }.uncounted(), ..self.clone() }
    }
}

impl<Filter, Field: Copy> ListQuery<Filter, Field> {
    /// The keys the rows are ordered by: the sort asked for, else `created` descending (newest
    /// first). A search without a sort is ordered by relevance where the store ranks its matches.
    pub fn sort_keys(&self, created: Field) -> Vec<SortKey<Field>> {
        match self.sort.is_empty() {
            true => vec![SortKey { field: created, descending: true }],
            false => self.sort.clone(),
        }
    }
}

/// `createdAfter` / `createdBefore` / `updatedAfter` / `updatedBefore`: after is inclusive
/// (`>=`), before is exclusive (`<`), so that adjacent ranges neither overlap nor leave a gap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TimeRange {
    pub created_after: Option<Timestamp>,
    pub created_before: Option<Timestamp>,
    pub updated_after: Option<Timestamp>,
    pub updated_before: Option<Timestamp>,
}

/// The words of `q`: lowercase, at least one, each matched as a whole word but the last, which
/// is matched as a prefix ("back" finds "backups").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Search {
    pub words: Vec<String>,
}

/// One sort key: a field of the list and its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SortKey<Field> {
    pub field: Field,
    pub descending: bool,
}

/// One value of a row's sort key, as a cursor holds it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SortValue {
    Text(String),
    Time(Timestamp),
    /// A whole number (e.g. a relevance rank scaled to an integer by the store).
    Integer(i64),
}

/// `assigneeId=`: a member, or `none` for the records assigned to nobody.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Assignee {
    Nobody,
    Member(MemberId),
}

/// Risks: `status`, `category`, `department`, `assigneeId`, `likelihood`, `impact`,
/// `treatmentStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RiskFilter {
    pub status: Vec<RiskStatus>,
    pub category: Vec<RiskCategory>,
    pub department: Vec<Department>,
    pub assignee: Vec<Assignee>,
    pub likelihood: Vec<Likelihood>,
    pub impact: Vec<Impact>,
    pub treatment_strategy: Vec<TreatmentStrategy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RiskSort {
    CreatedAt,
    UpdatedAt,
    Title,
    Status,
}

pub type RiskQuery = ListQuery<RiskFilter, RiskSort>;

/// Vendors: `status`, `category`, `assigneeId`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct VendorFilter {
    pub status: Vec<VendorStatus>,
    pub category: Vec<VendorCategory>,
    pub assignee: Vec<Assignee>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VendorSort {
    CreatedAt,
    UpdatedAt,
    Name,
    Status,
}

pub type VendorQuery = ListQuery<VendorFilter, VendorSort>;

/// Policies: `status`, `frequency`, `department`, `isArchived`, `assigneeId`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PolicyFilter {
    pub status: Vec<PolicyStatus>,
    pub frequency: Vec<PolicyFrequency>,
    pub department: Vec<Department>,
    pub is_archived: Option<bool>,
    pub assignee: Vec<Assignee>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicySort {
    CreatedAt,
    UpdatedAt,
    Name,
    Status,
}

pub type PolicyQuery = ListQuery<PolicyFilter, PolicySort>;

/// Context entries: `tag` (an entry with any of the tags).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ContextFilter {
    pub tag: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContextSort {
    CreatedAt,
    UpdatedAt,
    Question,
}

pub type ContextQuery = ListQuery<ContextFilter, ContextSort>;

/// Tasks: `status`, `assigneeId`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TaskFilter {
    pub status: Vec<TaskStatus>,
    pub assignee: Vec<Assignee>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskSort {
    CreatedAt,
    UpdatedAt,
    Title,
    Status,
}

pub type TaskQuery = ListQuery<TaskFilter, TaskSort>;

/// People: `role` (a member holding any of the roles), `isActive`, `department`. Members have no
/// update time: `updatedAfter`/`updatedBefore` are not parameters of this list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PersonFilter {
    pub role: Vec<Role>,
    pub is_active: Option<bool>,
    pub department: Vec<Department>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PersonSort {
    CreatedAt,
    Name,
    Email,
}

pub type PersonQuery = ListQuery<PersonFilter, PersonSort>;

/// Comments (of one entity, which the list's parameters already name): `authorId` (a user id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CommentFilter {
    pub author: Vec<UserId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommentSort {
    CreatedAt,
    UpdatedAt,
}

pub type CommentQuery = ListQuery<CommentFilter, CommentSort>;

/// An automation's runs: `status`, `trigger`. Runs have no update time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RunFilter {
    pub status: Vec<RunStatus>,
    pub trigger: Vec<RunTrigger>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunSort {
    CreatedAt,
    Status,
}

pub type RunQuery = ListQuery<RunFilter, RunSort>;

/// Connections: `status`, `provider` (a provider slug).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ConnectionFilter {
    pub status: Vec<ConnectionStatus>,
    pub provider: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionSort {
    CreatedAt,
    UpdatedAt,
    Provider,
    Status,
}

pub type ConnectionQuery = ListQuery<ConnectionFilter, ConnectionSort>;
