//! What a list is asked for: its filters, time ranges, search words and sort, with the page.
//!
//! One [`ListQuery`] per list, typed by the list's own filter (`RiskFilter`, …) and sortable
//! fields (`RiskSort`, …). The HTTP layer builds it from the query string (rejecting anything it
//! does not know); the repository applies every part of it, the organization's filter first.

use compliance_domain::access::Role;
use compliance_domain::automation::{RunStatus, RunTrigger};
use compliance_domain::frequency::Frequency;
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
    /// `createdAfter`, `createdBefore`, `updatedAfter`, `updatedBefore`.
    pub times: TimeRange,
    /// The words of `q`; the store applies them (with relevance order when `sort` is empty).
    pub search: Option<Search>,
    /// The sort keys in order; empty for the default (newest first, or by relevance with a
    /// search). The id always breaks ties, in the last key's direction.
    pub sort: Vec<SortKey<Field>>,
    /// How many rows, after which cursor.
    pub page: PageRequest,
}

impl<Filter: Default, Field> ListQuery<Filter, Field> {
    /// Every row, newest first, in pages of `page`.
    pub fn unfiltered(page: PageRequest) -> Self {
        Self { filter: Filter::default(), times: TimeRange::default(), search: None, sort: Vec::new(), page }
    }
}

impl<Filter: Default + PartialEq, Field> ListQuery<Filter, Field> {
    /// Whether the query keeps every row of the list: no filter, time range or search (sort and
    /// page do not change which rows match). Its `count` is then the list's size, which the store
    /// keeps rather than counts.
    pub fn narrows_nothing(&self) -> bool {
        self.filter == Filter::default() && self.times == TimeRange::default() && self.search.is_none()
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
    /// `createdAfter`: created at or after this instant.
    pub created_after: Option<Timestamp>,
    /// `createdBefore`: created before this instant.
    pub created_before: Option<Timestamp>,
    /// `updatedAfter`: last changed at or after this instant.
    pub updated_after: Option<Timestamp>,
    /// `updatedBefore`: last changed before this instant.
    pub updated_before: Option<Timestamp>,
}

/// The words of `q`: lowercase, at least one, each matched as a whole word but the last, which
/// is matched as a prefix ("back" finds "backups").
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Search {
    /// The words, in the order given.
    pub words: Vec<String>,
}

/// One sort key: a field of the list and its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SortKey<Field> {
    /// The field.
    pub field: Field,
    /// `true` for `-field` (largest or latest first).
    pub descending: bool,
}

/// One value of a row's sort key, as a cursor holds it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SortValue {
    /// A text field, compared as the store collates it.
    Text(String),
    /// A time field.
    Time(Timestamp),
    /// A whole number (e.g. a relevance rank scaled to an integer by the store).
    Integer(i64),
}

/// `assigneeId=`: a member, or `none` for the records assigned to nobody.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Assignee {
    /// `none`: assigned to nobody.
    Nobody,
    /// That member.
    Member(MemberId),
}

/// Risks: `status`, `category`, `department`, `assigneeId`, `likelihood`, `impact`,
/// `treatmentStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RiskFilter {
    /// `status=`: rows with any of these (empty: all).
    pub status: Vec<RiskStatus>,
    /// `category=`: rows with any of these (empty: all).
    pub category: Vec<RiskCategory>,
    /// `department=`: rows with any of these (empty: all).
    pub department: Vec<Department>,
    /// `assigneeId=`: rows with any of these (empty: all).
    pub assignee: Vec<Assignee>,
    /// `likelihood=`: rows with any of these (empty: all).
    pub likelihood: Vec<Likelihood>,
    /// `impact=`: rows with any of these (empty: all).
    pub impact: Vec<Impact>,
    /// `treatmentStrategy=`: rows with any of these (empty: all).
    pub treatment_strategy: Vec<TreatmentStrategy>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RiskSort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `updatedAt` (`-updatedAt`: descending).
    UpdatedAt,
    /// `title` (`-title`: descending).
    Title,
    /// `status` (`-status`: descending).
    Status,
}

/// What a list of risks is asked for.
pub type RiskQuery = ListQuery<RiskFilter, RiskSort>;

/// Vendors: `status`, `category`, `assigneeId`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct VendorFilter {
    /// `status=`: rows with any of these (empty: all).
    pub status: Vec<VendorStatus>,
    /// `category=`: rows with any of these (empty: all).
    pub category: Vec<VendorCategory>,
    /// `assigneeId=`: rows with any of these (empty: all).
    pub assignee: Vec<Assignee>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VendorSort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `updatedAt` (`-updatedAt`: descending).
    UpdatedAt,
    /// `name` (`-name`: descending).
    Name,
    /// `status` (`-status`: descending).
    Status,
}

/// What a list of vendors is asked for.
pub type VendorQuery = ListQuery<VendorFilter, VendorSort>;

/// Policies: `status`, `frequency`, `department`, `isArchived`, `assigneeId`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PolicyFilter {
    /// `status=`: rows with any of these (empty: all).
    pub status: Vec<PolicyStatus>,
    /// `frequency=`: rows with any of these (empty: all).
    pub frequency: Vec<PolicyFrequency>,
    /// `department=`: rows with any of these (empty: all).
    pub department: Vec<Department>,
    /// `isArchived=`: only rows where it is this value; `None`: all.
    pub is_archived: Option<bool>,
    /// `assigneeId=`: rows with any of these (empty: all).
    pub assignee: Vec<Assignee>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicySort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `updatedAt` (`-updatedAt`: descending).
    UpdatedAt,
    /// `name` (`-name`: descending).
    Name,
    /// `status` (`-status`: descending).
    Status,
}

/// What a list of policies is asked for.
pub type PolicyQuery = ListQuery<PolicyFilter, PolicySort>;

/// Context entries: `tag` (an entry with any of the tags).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ContextFilter {
    /// `tag=`: rows with any of these (empty: all).
    pub tag: Vec<String>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContextSort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `updatedAt` (`-updatedAt`: descending).
    UpdatedAt,
    /// `question` (`-question`: descending).
    Question,
}

/// What a list of context entries is asked for.
pub type ContextQuery = ListQuery<ContextFilter, ContextSort>;

/// Tasks: `status`, `assigneeId`, `approverId`, `frequency`, `dueAfter`, `dueBefore`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TaskFilter {
    /// `status=`: rows with any of these (empty: all).
    pub status: Vec<TaskStatus>,
    /// `assigneeId=`: rows with any of these (empty: all).
    pub assignee: Vec<Assignee>,
    /// `approverId=`: rows with any of these (`Assignee::Nobody`: no approver; empty: all).
    pub approver: Vec<Assignee>,
    /// `frequency=`: recurring rows with any of these (empty: all).
    pub frequency: Vec<Frequency>,
    /// `dueAfter` / `dueBefore`: rows due in the range (a row without `dueAt` is in none).
    pub due: DueRange,
}

/// `dueAfter` (inclusive, `>=`) / `dueBefore` (exclusive, `<`), like the time ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DueRange {
    /// `dueAfter`: due at or after this instant.
    pub after: Option<Timestamp>,
    /// `dueBefore`: due before this instant.
    pub before: Option<Timestamp>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskSort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `updatedAt` (`-updatedAt`: descending).
    UpdatedAt,
    /// `title` (`-title`: descending).
    Title,
    /// `status` (`-status`: descending).
    Status,
    /// `dueAt` (`-dueAt`: descending); tasks without a due date sort as due at the end of time.
    DueAt,
}

/// What a list of tasks is asked for.
pub type TaskQuery = ListQuery<TaskFilter, TaskSort>;

/// People: `role` (a member holding any of the roles), `isActive`, `department`. Members have no
/// update time: `updatedAfter`/`updatedBefore` are not parameters of this list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PersonFilter {
    /// `role=`: rows with any of these (empty: all).
    pub role: Vec<Role>,
    /// `isActive=`: only rows where it is this value; `None`: all.
    pub is_active: Option<bool>,
    /// `department=`: rows with any of these (empty: all).
    pub department: Vec<Department>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PersonSort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `name` (`-name`: descending).
    Name,
    /// `email` (`-email`: descending).
    Email,
}

/// What a list of people (members) is asked for.
pub type PersonQuery = ListQuery<PersonFilter, PersonSort>;

/// Comments (of one entity, which the list's parameters already name): `authorId` (a user id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CommentFilter {
    /// `authorId=`: rows with any of these (empty: all).
    pub author: Vec<UserId>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommentSort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `updatedAt` (`-updatedAt`: descending).
    UpdatedAt,
}

/// What a list of comments is asked for.
pub type CommentQuery = ListQuery<CommentFilter, CommentSort>;

/// An automation's runs: `status`, `trigger`. Runs have no update time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RunFilter {
    /// `status=`: rows with any of these (empty: all).
    pub status: Vec<RunStatus>,
    /// `trigger=`: rows with any of these (empty: all).
    pub trigger: Vec<RunTrigger>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunSort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `status` (`-status`: descending).
    Status,
}

/// What a list of an automation's runs is asked for.
pub type RunQuery = ListQuery<RunFilter, RunSort>;

/// Connections: `status`, `provider` (a provider slug).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ConnectionFilter {
    /// `status=`: rows with any of these (empty: all).
    pub status: Vec<ConnectionStatus>,
    /// `provider=`: rows with any of these (empty: all).
    pub provider: Vec<String>,
}

/// The fields this list sorts by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionSort {
    /// `createdAt` (`-createdAt`: descending).
    CreatedAt,
    /// `updatedAt` (`-updatedAt`: descending).
    UpdatedAt,
    /// `provider` (`-provider`: descending).
    Provider,
    /// `status` (`-status`: descending).
    Status,
}

/// What a list of connections is asked for.
pub type ConnectionQuery = ListQuery<ConnectionFilter, ConnectionSort>;
