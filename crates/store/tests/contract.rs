//! The contract every repository port promises, run against both backends.
//!
//! Each test gets its own SQLite file, or its own PostgreSQL database created from the admin URL in
//! `DATABASE_URL` (which `cargo xtask ci` provides), so the tests run in parallel.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use compliance_domain::automation::{
    AutomationPatch, AutomationRun, BrowserAutomation, NewAutomation, RunStatus, RunStep, RunTrigger, StepOutcome,
    Verdict,
};
use compliance_domain::check::CheckSeverity;
use compliance_domain::check_result::{CheckResult, CheckedResource};
use compliance_domain::check_run::{CheckRun, CheckRunStatus};
use compliance_domain::comment::{AttachmentLimits, CommentDraft, CommentEntityType, NewComment};
use compliance_domain::context::{ContextEntry, ContextEntryPatch};
use compliance_domain::etag::{ETag, IfMatch};
use compliance_domain::finding::{Finding, FindingDeadlines, FindingException, FindingStatus, RunContext, reconcile};
use compliance_domain::integration::{CheckOutcome, Connection, ConnectionStatus};
use compliance_domain::merkle::NodeId;
use compliance_domain::organization::{Organization, OrganizationPatch};
use compliance_domain::people::{ApiKey, Member, MemberPatch, NewMember, Person, Session, User};
use compliance_domain::policy::{Policy, PolicyPatch};
use compliance_domain::risk::{Risk, RiskPatch};
use compliance_domain::task::{Task, TaskPatch};
use compliance_domain::vendor::{Vendor, VendorPatch};
use compliance_domain::{ApiKeyId, AutomationId, AutomationRunId, ConnectionId, OrganizationId, SessionId, Timestamp};
use compliance_ports::{
    AuditRepository, AutomationRepository, CheckRunQuery, CheckRunRepository, CommentRepository, ConnectionRepository,
    ControlRepository, CredentialRepository, FindingQuery, HealthCheck, ListGenerations, ListName, MemberRepository,
    OAuthStateRecord, OAuthStateRepository, OrganizationRepository, Page, PageRequest, RefreshLeases, RepoError,
    RiskRepository, SecretRepository, StoredSecret, TaskRepository, UserRepository,
};
use compliance_store::{DatabaseUrl, PoolOptions, Store};
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use futures_util::future::join_all;
use serde_json::json;

/// A migrated, empty database of one backend, removed when dropped.
struct TestDb {
    url: DatabaseUrl,
    store: Store,
    cleanup: Cleanup,
}

enum Cleanup {
    Dir(std::path::PathBuf),
    Database { admin: String, name: String },
}

impl TestDb {
    async fn sqlite() -> Self {
        let dir = std::env::temp_dir().join(format!("store-contract-{}", hex_suffix()));
        let url = DatabaseUrl::Sqlite(dir.join("test.db"));
        Self::open(url, Cleanup::Dir(dir)).await
    }

    async fn postgres() -> Self {
        let admin = std::env::var("DATABASE_URL")
            .ok()
            .filter(|url| url.starts_with("postgres"))
            .expect("set DATABASE_URL=postgres://… to run the PostgreSQL contract tests; `cargo xtask ci` does this");
        let name = format!("contract_{}", hex_suffix());
        let mut conn = AsyncPgConnection::establish(&admin).await.expect("connect to the admin database");
        conn.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("create the test database");
        let url = match admin.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{name}"),
            None => panic!("DATABASE_URL has no database name"),
        };
        Self::open(DatabaseUrl::Postgres(url), Cleanup::Database { admin, name }).await
    }

    async fn open(url: DatabaseUrl, cleanup: Cleanup) -> Self {
        compliance_store::migrate(&url).await.expect("migrate");
        let store = Store::connect(&url, &PoolOptions::default()).await.expect("connect");
        Self { url, store, cleanup }
    }

    async fn drop_async(self) {
        self.store.close();
        match self.cleanup {
            Cleanup::Dir(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::Database { admin, name } => {
                if let Ok(mut conn) = AsyncPgConnection::establish(&admin).await {
                    let _ = conn.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
                }
            }
        }
    }
}

fn hex_suffix() -> String {
    OrganizationId::generate().as_str()[4..].to_owned()
}

/// Runs a contract on SQLite and on PostgreSQL.
macro_rules! contract {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let db = super::TestDb::sqlite().await;
                super::$name(&db).await;
                db.drop_async().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let db = super::TestDb::postgres().await;
                super::$name(&db).await;
                db.drop_async().await;
            }
        }
    };
}

async fn organization(store: &Store, name: &str) -> Organization {
    let org = Organization::create(name.into(), None, Timestamp::now()).unwrap();
    OrganizationRepository::insert(store, &org, &unaudited).await.unwrap();
    org
}

async fn person(store: &Store, org: &Organization, email: &str) -> Person {
    let user = User::create(email.into(), "Someone".into(), Timestamp::now()).unwrap();
    UserRepository::insert(store, &user).await.unwrap();
    let input = NewMember { user_id: Some(user.id.clone()), role: Some("owner".into()), ..NewMember::default() };
    let member = Member::create(org.id.clone(), input, Timestamp::now()).unwrap();
    MemberRepository::insert(store, &member, &unaudited).await.unwrap();
    Person { member, user }
}

/// The five record repositories seen one way, so that [`record_contract`] runs against each: a
/// test's view, the store has no such trait.
#[async_trait::async_trait]
trait StoredRecord: Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    type Id: Sync;
    type Patch: Sync;
    const LIST: ListName;
    fn id(&self) -> &Self::Id;
    fn apply(&mut self, patch: &Self::Patch, now: Timestamp);
    /// The record's entity tag (its `etag()`).
    fn tag(&self) -> ETag;
    async fn list(store: &Store, org: &OrganizationId, page: &PageRequest) -> Result<Page<Self>, RepoError>;
    async fn get(store: &Store, org: &OrganizationId, id: &Self::Id) -> Result<Self, RepoError>;
    async fn insert(store: &Store, record: &Self) -> Result<(), RepoError>;
    async fn update(
        store: &Store,
        org: &OrganizationId,
        id: &Self::Id,
        patch: &Self::Patch,
        now: Timestamp,
        if_match: &IfMatch,
    ) -> Result<Self, RepoError>;
    /// The deleted record and how many attachments went with it.
    async fn delete(
        store: &Store,
        org: &OrganizationId,
        id: &Self::Id,
        if_match: &IfMatch,
    ) -> Result<(Self, usize), RepoError>;
}

/// A connection's check links where the organization has no library control to link.
fn no_links() -> compliance_ports::SuggestedChecks<'static> {
    compliance_ports::SuggestedChecks { checks: Vec::new(), audit: &unaudited }
}

/// [`unaudited`] for a change written in each of a user's organizations.
fn unaudited_each<T>(
    _: &compliance_domain::OrganizationId,
    before: Option<&T>,
    after: Option<&T>,
) -> compliance_domain::audit::AuditDraft {
    unaudited(before, after)
}

/// An audit entry for writes whose entries these tests do not look at (tests/contract audit
/// tests and tests/api/audit.rs do).
fn unaudited<T>(_: Option<&T>, _: Option<&T>) -> compliance_domain::audit::AuditDraft {
    compliance_domain::audit::AuditDraft {
        id: compliance_domain::AuditEntryId::generate(),
        organization_id: compliance_domain::OrganizationId::generate(),
        actor: compliance_domain::audit::Actor::system("contract-test"),
        action: "test.changed".into(),
        resource_type: "test".into(),
        resource_id: "x".into(),
        changes: compliance_domain::audit::JsonText::of(&serde_json::json!({})),
        data: None,
        request_id: None,
        created_at: Timestamp::now(),
        idempotency: None,
        evidence: None,
    }
}

macro_rules! stored_record {
    ($record:ty, $id:ty, $patch:ty, $list:ident, $repo:ident, $l:ident, $g:ident, $i:ident, $u:ident, $d:ident, |$deleted:ident| $parts:expr) => {
        #[async_trait::async_trait]
        impl StoredRecord for $record {
            type Id = $id;
            type Patch = $patch;
            const LIST: ListName = ListName::$list;
            fn id(&self) -> &$id {
                &self.id
            }
            fn tag(&self) -> ETag {
                <$record>::etag(self)
            }
            fn apply(&mut self, patch: &$patch, now: Timestamp) {
                // a policy's `apply` answers whether the patch publishes, which the contract's
                // patch does not
                let _ = <$record>::apply(self, patch, now);
            }
            async fn list(store: &Store, org: &OrganizationId, page: &PageRequest) -> Result<Page<Self>, RepoError> {
                compliance_ports::$repo::$l(store, org, &unfiltered(page)).await
            }
            async fn get(store: &Store, org: &OrganizationId, id: &$id) -> Result<Self, RepoError> {
                compliance_ports::$repo::$g(store, org, id).await
            }
            async fn insert(store: &Store, record: &Self) -> Result<(), RepoError> {
                compliance_ports::$repo::$i(store, record, &unaudited).await
            }
            async fn update(
                store: &Store,
                org: &OrganizationId,
                id: &$id,
                patch: &$patch,
                now: Timestamp,
                if_match: &IfMatch,
            ) -> Result<Self, RepoError> {
                compliance_ports::$repo::$u(store, org, id, patch, now, if_match, &unaudited).await
            }
            async fn delete(
                store: &Store,
                org: &OrganizationId,
                id: &$id,
                if_match: &IfMatch,
            ) -> Result<(Self, usize), RepoError> {
                let $deleted = compliance_ports::$repo::$d(store, org, id, if_match, &unaudited).await?;
                Ok($parts)
            }
        }
    };
}

stored_record!(
    Risk,
    compliance_domain::RiskId,
    RiskPatch,
    Risks,
    RiskRepository,
    list_risks,
    get_risk,
    insert_risk,
    update_risk,
    delete_risk,
    |d| (d.record, d.attachments.len())
);
stored_record!(
    Vendor,
    compliance_domain::VendorId,
    VendorPatch,
    Vendors,
    VendorRepository,
    list_vendors,
    get_vendor,
    insert_vendor,
    update_vendor,
    delete_vendor,
    |d| (d.record, d.attachments.len())
);
stored_record!(
    Task,
    compliance_domain::TaskId,
    TaskPatch,
    Tasks,
    TaskRepository,
    list_tasks,
    get_task,
    insert_task,
    update_task,
    delete_task,
    |d| (d.record, d.attachments.len())
);
stored_record!(
    Policy,
    compliance_domain::PolicyId,
    PolicyPatch,
    Policies,
    PolicyRepository,
    list_policies,
    get_policy,
    insert_policy,
    update_policy,
    delete_policy,
    |d| (d.record, d.attachments.len())
);
stored_record!(
    ContextEntry,
    compliance_domain::ContextEntryId,
    ContextEntryPatch,
    Context,
    ContextRepository,
    list_context_entries,
    get_context_entry,
    insert_context_entry,
    update_context_entry,
    delete_context_entry,
    |d| (d, 0)
);

/// What every tenant record repository does, for any record kind.
async fn record_contract<R>(store: &Store, build: impl Fn(&OrganizationId) -> R, patch: R::Patch)
where
    R: StoredRecord,
{
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let generations =
        async || (generation(store, &ours.id, R::LIST).await, generation(store, &theirs.id, R::LIST).await);
    assert_eq!(generations().await, (0, 0), "a list never written is at generation 0");
    let first = build(&ours.id);
    std::thread::sleep(std::time::Duration::from_millis(2));
    let second = build(&ours.id);
    let foreign = build(&theirs.id);
    for record in [&first, &second, &foreign] {
        R::insert(store, record).await.unwrap();
    }
    let (ours_inserted, theirs_inserted) = generations().await;
    assert!(ours_inserted >= 2 && theirs_inserted >= 1, "every insert counts: {ours_inserted}, {theirs_inserted}");

    let listed = R::list(store, &ours.id, &all()).await.unwrap().items;
    assert_eq!(listed, vec![second.clone(), first.clone()], "newest first, only our organization's");
    assert_eq!(R::get(store, &ours.id, first.id()).await.unwrap(), first, "round trip is exact");

    let missing = R::get(store, &ours.id, foreign.id()).await;
    assert!(matches!(missing, Err(RepoError::NotFound)), "another organization's record reads as missing");
    let later = Timestamp::now().plus(time::Duration::seconds(1));
    let foreign_update = R::update(store, &ours.id, foreign.id(), &patch, later, &IfMatch::Absent).await;
    assert!(matches!(foreign_update, Err(RepoError::NotFound)));
    assert!(matches!(R::delete(store, &ours.id, foreign.id(), &IfMatch::Any).await, Err(RepoError::NotFound)));
    assert_eq!(R::get(store, &theirs.id, foreign.id()).await.unwrap(), foreign, "untouched");
    assert_eq!(generations().await, (ours_inserted, theirs_inserted), "reads and refused writes count nothing");

    // A stale `If-Match` writes nothing: not the change, not the delete, not the generation.
    let stale = IfMatch::Tags(vec!["0000000000000000".into()]);
    let refused = R::update(store, &ours.id, first.id(), &patch, later, &stale).await;
    assert!(matches!(&refused, Err(RepoError::PreconditionFailed(f)) if f.current == Some(first.tag())), "{refused:?}");
    let refused = R::delete(store, &ours.id, first.id(), &stale).await;
    assert!(matches!(&refused, Err(RepoError::PreconditionFailed(f)) if f.current == Some(first.tag())), "{refused:?}");
    assert_eq!(R::get(store, &ours.id, first.id()).await.unwrap(), first, "a refused write changes nothing");
    assert_eq!(generations().await, (ours_inserted, theirs_inserted), "a refused write counts nothing");

    let current = IfMatch::Tags(vec![first.tag().as_str().to_owned()]);
    let updated = R::update(store, &ours.id, first.id(), &patch, later, &current).await.unwrap();
    let mut expected = first.clone();
    expected.apply(&patch, later);
    assert_eq!(updated, expected);
    assert_eq!(R::get(store, &ours.id, first.id()).await.unwrap(), expected, "stored");
    // the second patch runs the statement the connection kept prepared, with new values
    let even_later = later.plus(time::Duration::seconds(1));
    let again = R::update(store, &ours.id, first.id(), &patch, even_later, &IfMatch::Absent).await.unwrap();
    expected.apply(&patch, even_later);
    assert_eq!(again, expected);
    let (ours_updated, theirs_updated) = generations().await;
    assert!(ours_updated > ours_inserted, "an update counts");
    assert_eq!(theirs_updated, theirs_inserted, "in its own organization only");

    let (deleted, attachments) =
        R::delete(store, &ours.id, first.id(), &IfMatch::Tags(vec![expected.tag().as_str().to_owned()])).await.unwrap();
    assert_eq!(deleted, expected);
    assert_eq!(attachments, 0, "nothing was attached");
    assert!(matches!(R::get(store, &ours.id, first.id()).await, Err(RepoError::NotFound)));
    assert_eq!(R::list(store, &ours.id, &all()).await.unwrap().items, vec![second]);
    assert!(generations().await.0 > ours_updated, "a delete counts");
}

/// The generation of `org`'s `list`.
async fn generation(store: &Store, org: &OrganizationId, list: ListName) -> u64 {
    ListGenerations::generation(store, org, list).await.unwrap()
}

/// Every run of an automation, newest first, in one page.
async fn runs_of(store: &Store, org: &OrganizationId, automation: &AutomationId) -> Vec<AutomationRun> {
    let page = store.runs(org, automation, &every()).await.unwrap();
    assert_eq!(page.total, page.items.len() as u64);
    page.items
}

/// Every row of the small lists these tests make, in one page.
fn all() -> PageRequest {
    PageRequest::first(100)
}

/// The query of every row of a small list, in one page.
fn every<F: Default, S>() -> compliance_ports::ListQuery<F, S> {
    unfiltered(&all())
}

/// The query of `page` of a list, unfiltered and newest first.
fn unfiltered<F: Default, S>(page: &PageRequest) -> compliance_ports::ListQuery<F, S> {
    compliance_ports::ListQuery::unfiltered(page.clone())
}

/// Pages of two through five risks, three of them created at the same microsecond: ties are broken
/// by id, so none is skipped or repeated; every page counts them all; the last has no cursor; and
/// a cursor reaches only the organization it is used with.
async fn keyset_pages(db: &TestDb) {
    let store = &db.store;
    let (ours, theirs) = (organization(store, "Ours").await, organization(store, "Theirs").await);
    let risk = |org: &OrganizationId, at: Timestamp| {
        Risk::create(org.clone(), from_json(json!({"title": "R", "description": "d", "category": "people"})), at)
            .unwrap()
    };
    let (early, tie) = (Timestamp::parse("2026-01-01T00:00:00Z").unwrap(), Timestamp::now());
    let mut expected = vec![
        risk(&ours.id, early),
        risk(&ours.id, tie),
        risk(&ours.id, tie),
        risk(&ours.id, tie),
        risk(&ours.id, early),
    ];
    let foreign = risk(&theirs.id, early);
    for record in expected.iter().chain([&foreign]) {
        RiskRepository::insert_risk(store, record, &unaudited).await.unwrap();
    }
    expected.sort_by(|a, b| (b.created_at, b.id.as_str()).cmp(&(a.created_at, a.id.as_str())));

    let (mut seen, mut request, mut pages) = (Vec::new(), PageRequest::first(2), 0);
    loop {
        let page = RiskRepository::list_risks(store, &ours.id, &unfiltered(&request)).await.unwrap();
        assert_eq!(page.total, 5, "page {pages}");
        seen.extend(page.items);
        pages += 1;
        match page.next {
            Some(next) => request.after = Some(next),
            None => break,
        }
    }
    assert_eq!((seen, pages), (expected.clone(), 3));

    let after_ours = PageRequest {
        after: Some(compliance_ports::Cursor::newest_first(tie, "rsk_~".into())),
        ..PageRequest::first(9)
    };
    let page = RiskRepository::list_risks(store, &theirs.id, &unfiltered(&after_ours)).await.unwrap();
    assert_eq!((page.items, page.total, page.next), (vec![foreign], 1, None), "only their own rows");

    let exact = PageRequest::first(5);
    let page = RiskRepository::list_risks(store, &ours.id, &unfiltered(&exact)).await.unwrap();
    assert_eq!((page.items.len(), page.total, page.next), (5, 5, None), "a page that fits has no cursor");
}
contract!(keyset_pages);

/// SQLite's search indexes merge (`Store::merge_search_indexes`, which the server runs every
/// `SEARCH_MERGE_MILLIS`): rows written one transaction at a time leave an index of several
/// segments; merged, it has fewer, answers the same search the same way, passes FTS5's integrity
/// check and keeps taking writes. PostgreSQL has nothing to merge.
async fn search_indexes_merge(db: &TestDb) {
    let store = &db.store;
    let (ours, theirs) = (organization(store, "Ours").await, organization(store, "Theirs").await);
    let insert = |org: OrganizationId, n: usize| async move {
        insert_risk_about(store, org, &format!("Backup {n}"), &format!("Nightly copies, batch {n}")).await;
    };
    for n in 0..24 {
        insert(ours.id.clone(), n).await;
        insert(theirs.id.clone(), n).await;
    }
    let before = RiskRepository::list_risks(store, &ours.id, &search(&["nightly", "cop"])).await.unwrap();
    assert_eq!(before.total, 24);
    let segments_before = search_segments(db).await;

    let steps = store.merge_search_indexes().await.unwrap();
    let after = RiskRepository::list_risks(store, &ours.id, &search(&["nightly", "cop"])).await.unwrap();
    assert_eq!(after.items, before.items, "the same rows in the same order");
    match (segments_before, search_segments(db).await) {
        (Some(before), Some(after)) => {
            assert!(before >= 2, "48 single-row transactions left {before} segment(s)");
            assert!(steps > 0 && after < before, "{steps} steps: {before} -> {after} segments");
        }
        (None, None) => assert_eq!(steps, 0, "PostgreSQL has nothing to merge"),
        other => panic!("segments {other:?}"),
    }
    assert_eq!(store.merge_search_indexes().await.unwrap(), 0, "nothing is left to merge");

    insert(ours.id.clone(), 99).await;
    let found = RiskRepository::list_risks(store, &ours.id, &search(&["batch", "99"])).await.unwrap();
    assert_eq!(found.items.iter().map(|risk| risk.title.as_str()).collect::<Vec<_>>(), ["Backup 99"]);
}
contract!(search_indexes_merge);

/// Two organizations whose ids end alike share SQLite's range of FTS rowids (the bucket is taken
/// from an id's last six characters): each one's search still finds its own rows only.
async fn organizations_sharing_a_search_bucket(db: &TestDb) {
    let store = &db.store;
    let mut alike = Vec::new();
    for name in ["Ours", "Theirs"] {
        let mut org = Organization::create(name.into(), None, Timestamp::now()).unwrap();
        let id = org.id.as_str();
        org.id = OrganizationId::parse(&format!("{}zzzzzz", &id[..id.len() - 6])).unwrap();
        OrganizationRepository::insert(store, &org, &unaudited).await.unwrap();
        insert_risk_about(store, org.id.clone(), &format!("Backup of {name}"), "d").await;
        alike.push((org.id, name));
    }
    for (org, name) in alike {
        let page = RiskRepository::list_risks(store, &org, &search(&["backup"])).await.unwrap();
        let titles: Vec<_> = page.items.iter().map(|risk| risk.title.clone()).collect();
        assert_eq!((titles, page.total), (vec![format!("Backup of {name}")], 1));
    }
}
contract!(organizations_sharing_a_search_bucket);

/// A risk of `org` with this title and description, written in a transaction of its own.
async fn insert_risk_about(store: &Store, org: OrganizationId, title: &str, description: &str) {
    let input = from_json(json!({"title": title, "description": description, "category": "technology"}));
    RiskRepository::insert_risk(store, &Risk::create(org, input, Timestamp::now()).unwrap(), &unaudited).await.unwrap();
}

/// A search for `words`, every match in one page, by relevance.
fn search<F: Default, S>(words: &[&str]) -> compliance_ports::ListQuery<F, S> {
    let words = words.iter().map(|word| (*word).to_owned()).collect();
    compliance_ports::ListQuery { search: Some(compliance_ports::Search { words }), ..every() }
}

/// The segments of SQLite's risks search index, after FTS5's integrity check; `None` on PostgreSQL.
async fn search_segments(db: &TestDb) -> Option<i64> {
    use diesel::{Connection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Segments {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        segments: i64,
    }
    let DatabaseUrl::Sqlite(path) = &db.url else { return None };
    let mut conn = diesel::SqliteConnection::establish(&path.to_string_lossy()).unwrap();
    diesel::sql_query("INSERT INTO risks_search (risks_search) VALUES ('integrity-check')").execute(&mut conn).unwrap();
    let count = diesel::sql_query("SELECT count(DISTINCT segid) AS segments FROM risks_search_idx");
    Some(count.get_result::<Segments>(&mut conn).unwrap().segments)
}

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

async fn risks(db: &TestDb) {
    let build = |org: &OrganizationId| {
        let input = from_json(json!({"title": "Phishing", "description": "Clicks", "category": "people",
                                     "department": "it", "treatmentStrategyDescription": "Training"}));
        Risk::create(org.clone(), input, Timestamp::now()).unwrap()
    };
    let patch = RiskPatch::new(from_json(json!({"status": "closed", "department": null}))).unwrap();
    record_contract(&db.store, build, patch).await;
}
contract!(risks);

async fn vendors(db: &TestDb) {
    let build = |org: &OrganizationId| {
        let input = from_json(json!({"name": "Acme", "description": "Hosting", "website": "https://acme.test"}));
        Vendor::create(org.clone(), input, Timestamp::now()).unwrap()
    };
    let patch = VendorPatch::new(from_json(json!({"status": "assessed", "website": null}))).unwrap();
    record_contract(&db.store, build, patch).await;
}
contract!(vendors);

async fn policies(db: &TestDb) {
    let build = |org: &OrganizationId| {
        let input =
            from_json(json!({"name": "Access", "content": [{"type": "paragraph", "attrs": {"textAlign": "left"},
            "content": [{"type": "text", "text": "Least privilege", "marks": [{"type": "bold"}]}]}]}));
        Policy::create(org.clone(), input, Timestamp::now()).unwrap()
    };
    let patch = PolicyPatch::new(from_json(json!({"status": "needs_review", "isArchived": true}))).unwrap();
    record_contract(&db.store, build, patch).await;
}
contract!(policies);

async fn context_entries(db: &TestDb) {
    let build = |org: &OrganizationId| {
        let input = from_json(json!({"question": "Who?", "answer": "Us", "tags": ["a", "b"]}));
        ContextEntry::create(org.clone(), input, Timestamp::now()).unwrap()
    };
    let patch = ContextEntryPatch::new(from_json(json!({"tags": []}))).unwrap();
    record_contract(&db.store, build, patch).await;
}
contract!(context_entries);

async fn tasks(db: &TestDb) {
    let build = |org: &OrganizationId| {
        let input = from_json(json!({"title": "Rotate keys", "description": "Quarterly"}));
        Task::create(org.clone(), input, Timestamp::now()).unwrap()
    };
    let patch = TaskPatch::new(from_json(json!({"status": "done"}))).unwrap();
    record_contract(&db.store, build, patch).await;
}
contract!(tasks);

/// A comment with one attachment on `task`, written by `author`.
fn comment_on(task: &Task, author: &Person, text: &str) -> CommentDraft {
    let input: NewComment = from_json(json!({
        "content": text, "entityId": task.id, "entityType": "task",
        "attachments": [{"fileName": "a.txt", "fileType": "text/plain", "fileData": "aGk="}]
    }));
    let org = task.organization_id.clone();
    CommentDraft::new(org, author.user.id.clone(), input, AttachmentLimits::default(), Timestamp::now()).unwrap()
}

async fn comments(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let ada = person(store, &ours, "ada@ours.test").await;
    // A second owner, so that ada (an owner too) may be deactivated below.
    person(store, &ours, "bob@ours.test").await;
    let task = Task::create(ours.id.clone(), from_json(json!({"title": "T"})), Timestamp::now()).unwrap();
    TaskRepository::insert_task(store, &task, &unaudited).await.unwrap();

    let first = comment_on(&task, &ada, "first");
    let attachments: Vec<_> = first.attachments.iter().map(|d| d.attachment.clone()).collect();
    CommentRepository::insert(store, &first.comment, &attachments, &unaudited).await.unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let second = comment_on(&task, &ada, "second");
    CommentRepository::insert(store, &second.comment, &[], &unaudited).await.unwrap();

    let listed = CommentRepository::list(store, &ours.id, CommentEntityType::Task, task.id.as_str(), &every())
        .await
        .unwrap()
        .items;
    assert_eq!(listed.iter().map(|v| v.comment.content.as_str()).collect::<Vec<_>>(), ["second", "first"]);
    assert_eq!(listed[1].attachments, attachments);
    assert!(listed[0].author_active);
    assert_eq!(listed[0].author, ada.user);

    let foreign = CommentRepository::list(store, &theirs.id, CommentEntityType::Task, task.id.as_str(), &every()).await;
    assert!(foreign.unwrap().items.is_empty(), "another organization sees nothing");
    assert!(matches!(CommentRepository::get(store, &theirs.id, &first.comment.id).await, Err(RepoError::NotFound)));
    let attachment = &attachments[0];
    assert!(matches!(store.attachment(&theirs.id, &attachment.id).await, Err(RepoError::NotFound)));
    assert_eq!(store.attachment(&ours.id, &attachment.id).await.unwrap(), *attachment);

    let later = Timestamp::now();
    let edited = store
        .update_content(&ours.id, &second.comment.id, "edited", later, &IfMatch::Absent, &unaudited)
        .await
        .unwrap();
    assert_eq!(edited.comment.content, "edited");
    let missing = store.update_content(&theirs.id, &second.comment.id, "x", later, &IfMatch::Absent, &unaudited).await;
    assert!(matches!(missing, Err(RepoError::NotFound)));

    let deactivate = MemberPatch::new(from_json(json!({"isActive": false}))).unwrap();
    MemberRepository::update(store, &ours.id, &ada.member.id, &deactivate, &IfMatch::Absent, &unaudited).await.unwrap();
    let view = CommentRepository::get(store, &ours.id, &second.comment.id).await.unwrap();
    assert!(!view.author_active, "a deactivated author shows as such");

    assert!(matches!(
        CommentRepository::delete(store, &theirs.id, &first.comment.id, &IfMatch::Absent, &unaudited).await,
        Err(RepoError::NotFound)
    ));
    assert!(
        CommentRepository::delete(store, &ours.id, &second.comment.id, &IfMatch::Absent, &unaudited)
            .await
            .unwrap()
            .is_empty()
    );

    let deleted = TaskRepository::delete_task(store, &ours.id, &task.id, &IfMatch::Absent, &unaudited).await.unwrap();
    assert_eq!(deleted.attachments, attachments, "the task's comments' attachments go with it");
    assert!(matches!(CommentRepository::get(store, &ours.id, &first.comment.id).await, Err(RepoError::NotFound)));
    assert!(matches!(store.attachment(&ours.id, &attachment.id).await, Err(RepoError::NotFound)));
}
contract!(comments);

async fn assignees_must_belong_to_the_record_organization(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let stranger = person(store, &theirs, "stranger@theirs.test").await;
    let input = from_json(json!({"title": "T", "description": "D", "category": "other"}));
    let mut risk = Risk::create(ours.id.clone(), input, Timestamp::now()).unwrap();
    risk.assignee_id = Some(stranger.member.id);
    let refused = RiskRepository::insert_risk(store, &risk, &unaudited).await;
    assert!(refused.is_err(), "the schema refuses a member of another organization");
}
contract!(assignees_must_belong_to_the_record_organization);

async fn organizations(db: &TestDb) {
    let store = &db.store;
    let acme = organization(store, "Acme").await;
    let duplicate = Organization::create("Acme".into(), None, Timestamp::now()).unwrap();
    assert!(matches!(OrganizationRepository::insert(store, &duplicate, &unaudited).await, Err(RepoError::Conflict(_))));
    let other = organization(store, "Other").await;
    let patch = OrganizationPatch::new(from_json(json!({"slug": "acme"}))).unwrap();
    assert!(matches!(
        OrganizationRepository::update(store, &other.id, &patch, &IfMatch::Absent, &unaudited).await,
        Err(RepoError::Conflict(_))
    ));
    let patch = OrganizationPatch::new(from_json(json!({"name": "Acme Inc", "primaryColor": "#abc"}))).unwrap();
    let updated = OrganizationRepository::update(store, &acme.id, &patch, &IfMatch::Absent, &unaudited).await.unwrap();
    assert_eq!(updated.name, "Acme Inc");
    assert_eq!(OrganizationRepository::get(store, &acme.id).await.unwrap(), updated);
    let unknown = OrganizationId::generate();
    assert!(matches!(OrganizationRepository::get(store, &unknown).await, Err(RepoError::NotFound)));
}
contract!(organizations);

async fn device_label_holders(db: &TestDb) {
    let store = &db.store;
    let acme = organization(store, "Acme").await;
    let other = organization(store, "Other").await;
    assert_eq!(store.device_label_holders(7).await.unwrap(), Vec::<OrganizationId>::new());
    let patch = OrganizationPatch::new(from_json(json!({"deviceManagerLabelId": 7}))).unwrap();
    OrganizationRepository::update(store, &acme.id, &patch, &IfMatch::Absent, &unaudited).await.unwrap();
    let ada = person(store, &other, "ada@other.test").await;
    let patch = MemberPatch::new(from_json(json!({"deviceManagerLabelId": 7}))).unwrap();
    MemberRepository::update(store, &other.id, &ada.member.id, &patch, &IfMatch::Absent, &unaudited).await.unwrap();
    let bob = person(store, &other, "bob@other.test").await;
    MemberRepository::update(store, &other.id, &bob.member.id, &patch, &IfMatch::Absent, &unaudited).await.unwrap();
    let mut expected = vec![acme.id.clone(), other.id.clone()];
    expected.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(store.device_label_holders(7).await.unwrap(), expected, "each holder once, by org or by member");
    assert_eq!(store.device_label_holders(8).await.unwrap(), Vec::<OrganizationId>::new());
}
contract!(device_label_holders);

async fn users(db: &TestDb) {
    let store = &db.store;
    let user = User::create("ada@acme.test".into(), "Ada".into(), Timestamp::now()).unwrap();
    UserRepository::insert(store, &user).await.unwrap();
    let twin = User::create("ada@acme.test".into(), "Ada again".into(), Timestamp::now()).unwrap();
    assert!(matches!(UserRepository::insert(store, &twin).await, Err(RepoError::Conflict(_))));
    let login = Timestamp::now();
    store.record_login(&user.id, login).await.unwrap();
    assert_eq!(UserRepository::get(store, &user.id).await.unwrap().last_login, Some(login));
}
contract!(users);

async fn members(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let ada = person(store, &ours, "ada@ours.test").await;
    let bob = person(store, &ours, "bob@ours.test").await;
    person(store, &theirs, "eve@theirs.test").await;

    let again = Member::create(
        ours.id.clone(),
        NewMember { user_id: Some(ada.user.id.clone()), role: Some("x".into()), ..NewMember::default() },
        Timestamp::now(),
    )
    .unwrap();
    assert!(
        matches!(MemberRepository::insert(store, &again, &unaudited).await, Err(RepoError::Conflict(_))),
        "one membership per user"
    );

    let listed = MemberRepository::list(store, &ours.id, false, &every()).await.unwrap().items;
    assert_eq!(listed, vec![bob.clone(), ada.clone()]);

    let deactivate = MemberPatch::new(from_json(json!({"isActive": false, "role": "auditor"}))).unwrap();
    let updated = MemberRepository::update(store, &ours.id, &bob.member.id, &deactivate, &IfMatch::Absent, &unaudited)
        .await
        .unwrap();
    assert!(!updated.member.is_active);
    assert_eq!(updated.member.role, "auditor");
    assert_eq!(MemberRepository::list(store, &ours.id, false, &every()).await.unwrap().items, vec![ada.clone()]);
    assert_eq!(MemberRepository::list(store, &ours.id, true, &every()).await.unwrap().total, 2);
    assert_eq!(MemberRepository::get(store, &ours.id, &bob.member.id).await.unwrap(), updated, "record remains");

    let found = store.find_by_user(&ours.id, &ada.user.id).await.unwrap();
    assert_eq!(found, Some(ada.clone()));
    assert_eq!(store.find_by_user(&theirs.id, &ada.user.id).await.unwrap(), None);
    assert!(matches!(MemberRepository::get(store, &theirs.id, &ada.member.id).await, Err(RepoError::NotFound)));

    let steal = MemberPatch::new(from_json(json!({"userId": ada.user.id}))).unwrap();
    let clash = MemberRepository::update(store, &ours.id, &bob.member.id, &steal, &IfMatch::Absent, &unaudited).await;
    assert!(matches!(clash, Err(RepoError::Conflict(_))), "moving to a user who is already a member");
}
contract!(members);

/// The people list changes with its members and with their users: a user's change counts in every
/// organization the user belongs to, and nowhere else. A write that fails counts nothing.
async fn people_generations(db: &TestDb) {
    let store = &db.store;
    let (ours, theirs, other) =
        (organization(store, "Ours").await, organization(store, "Theirs").await, organization(store, "Other").await);
    let people = async |org: &Organization| generation(store, &org.id, ListName::People).await;
    let ada = person(store, &ours, "ada@ours.test").await;
    // A second owner, so that ada (an owner too) may be demoted below.
    person(store, &ours, "bob@ours.test").await;
    let in_theirs =
        NewMember { user_id: Some(ada.user.id.clone()), role: Some("auditor".into()), ..NewMember::default() };
    MemberRepository::insert(
        store,
        &Member::create(theirs.id.clone(), in_theirs, Timestamp::now()).unwrap(),
        &unaudited,
    )
    .await
    .unwrap();
    let (ours_before, theirs_before, other_before) = (people(&ours).await, people(&theirs).await, people(&other).await);
    assert!(ours_before >= 1 && theirs_before >= 1, "a new member counts");
    assert_eq!(other_before, 0);

    store.record_login(&ada.user.id, Timestamp::now()).await.unwrap();
    assert!(people(&ours).await > ours_before, "the user changed");
    assert!(people(&theirs).await > theirs_before, "in both of the user's organizations");
    assert_eq!(people(&other).await, 0, "not in an organization the user is not in");

    let (ours_before, theirs_before) = (people(&ours).await, people(&theirs).await);
    let twice = NewMember { user_id: Some(ada.user.id.clone()), role: Some("x".into()), ..NewMember::default() };
    let twice = Member::create(ours.id.clone(), twice, Timestamp::now()).unwrap();
    assert!(matches!(MemberRepository::insert(store, &twice, &unaudited).await, Err(RepoError::Conflict(_))));
    assert_eq!((people(&ours).await, people(&theirs).await), (ours_before, theirs_before), "a failed write");

    let role = MemberPatch::new(from_json(json!({"role": "auditor"}))).unwrap();
    MemberRepository::update(store, &ours.id, &ada.member.id, &role, &IfMatch::Absent, &unaudited).await.unwrap();
    assert!(people(&ours).await > ours_before, "a member's change");
    assert_eq!(people(&theirs).await, theirs_before);
    assert_eq!(generation(store, &ours.id, ListName::Risks).await, 0, "other lists of the organization");
}
contract!(people_generations);

async fn credentials(db: &TestDb) {
    let store = &db.store;
    let org = organization(store, "Ours").await;
    let ada = person(store, &org, "ada@ours.test").await;
    let now = Timestamp::now();
    let key = ApiKey {
        id: ApiKeyId::generate(),
        organization_id: org.id.clone(),
        name: "ci".into(),
        key_hash: "a".repeat(64),
        created_by: ada.user.id.clone(),
        created_at: now,
        expires_at: None,
        revoked_at: None,
        last_used_at: None,
        scopes: compliance_domain::access::Scopes::everything(),
        parent_id: None,
    };
    store.insert_api_key(&key, &unaudited).await.unwrap();
    assert_eq!(store.find_api_key(&key.key_hash).await.unwrap(), Some(key.clone()));
    assert_eq!(store.find_api_key(&"b".repeat(64)).await.unwrap(), None);
    // A child and a grandchild made by keys, and a key made beside them.
    let child_of = |parent: &ApiKey, hash: &str| ApiKey {
        id: ApiKeyId::generate(),
        key_hash: hash.repeat(64),
        parent_id: Some(parent.id.clone()),
        ..key.clone()
    };
    let child = child_of(&key, "d");
    let grandchild = child_of(&child, "e");
    let beside = ApiKey { parent_id: None, ..child_of(&key, "f") };
    for made in [&child, &grandchild, &beside] {
        store.insert_api_key(made, &unaudited).await.unwrap();
    }
    assert_eq!(store.get_api_key(&org.id, &grandchild.id).await.unwrap().parent_id, Some(child.id.clone()));
    assert_eq!(store.api_key_organization(&key.id).await.unwrap(), org.id);
    store.touch_api_key(&key.id, now).await.unwrap();
    let other = organization(store, "Theirs").await;
    let foreign = store.revoke_api_key(&other.id, &key.id, now, &unaudited).await;
    assert!(matches!(foreign, Err(RepoError::NotFound)), "another organization's key is not found: {foreign:?}");
    assert_eq!(store.get_api_key(&org.id, &key.id).await.unwrap().revoked_at, None);

    let revoked = store.revoke_api_key(&org.id, &key.id, now, &unaudited).await.unwrap();
    assert_eq!(revoked.key.revoked_at, Some(now));
    assert_eq!(revoked.key.last_used_at, Some(now));
    let mut gone: Vec<ApiKeyId> = revoked.descendants.iter().map(|k| k.id.clone()).collect();
    gone.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    let mut expected = vec![child.id.clone(), grandchild.id.clone()];
    expected.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(gone, expected, "the keys made from it, however deep");
    for (made, revoked_at) in [(&child, Some(now)), (&grandchild, Some(now)), (&beside, None)] {
        assert_eq!(store.get_api_key(&org.id, &made.id).await.unwrap().revoked_at, revoked_at, "{made:?}");
    }
    let again = store.revoke_api_key(&org.id, &key.id, now.plus(time::Duration::hours(1)), &unaudited).await.unwrap();
    assert_eq!(again.key.revoked_at, Some(now), "the first revocation time stays");
    assert!(again.descendants.is_empty());
    let missing = store.revoke_api_key(&org.id, &ApiKeyId::generate(), now, &unaudited).await;
    assert!(matches!(missing, Err(RepoError::NotFound)));

    let session = Session {
        id: SessionId::generate(),
        user_id: ada.user.id.clone(),
        token_hash: "c".repeat(64),
        created_at: now,
        expires_at: now.plus(time::Duration::hours(1)),
    };
    store.insert_session(&session, &unaudited_each).await.unwrap();
    assert_eq!(store.find_session(&session.token_hash).await.unwrap(), Some(session));
    assert_eq!(store.find_session(&"d".repeat(64)).await.unwrap(), None);
}
contract!(credentials);

async fn health_and_migrations(db: &TestDb) {
    db.store.ping().await.unwrap();
    compliance_store::redo_all(&db.url).await.expect("every down.sql undoes its up.sql");
    assert_eq!(compliance_store::migrate(&db.url).await.unwrap(), 0, "nothing left to apply");
}
contract!(health_and_migrations);

/// Once closed, a store answers "unavailable" (503); the reads of list generations, which each
/// thread makes through its own connections, too.
async fn a_closed_store_is_unavailable(db: &TestDb) {
    let (store, org) = (&db.store, OrganizationId::generate());
    assert_eq!(generation(store, &org, ListName::Risks).await, 0, "open: answered");
    store.close();
    let closed = ListGenerations::generation(store, &org, ListName::Risks).await;
    assert!(matches!(closed, Err(RepoError::Unavailable(_))), "{closed:?}");
}
contract!(a_closed_store_is_unavailable);

/// The SQLite database, its WAL and shared-memory files hold every tenant's data: readable by the
/// server's user only (0600, their directory 0700), whatever the umask. SQLite only.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_files_are_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let db = TestDb::sqlite().await;
    organization(&db.store, "Acme").await;
    let DatabaseUrl::Sqlite(path) = &db.url else { panic!("a SQLite TestDb") };
    let dir = path.parent().unwrap();
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(dir), 0o700, "the data directory");
    let files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(names.contains(&"test.db-wal".to_owned()), "a write made the WAL: {names:?}");
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    db.drop_async().await;
}

/// A thread's own connection that the server ends (a restart, an administrator) is replaced: the
/// reads on it answer "unavailable" (503) meanwhile, never an internal error, and then answer again.
/// PostgreSQL only: SQLite has no server to end a connection. One thread, so that every read uses
/// the same thread's connection.
#[tokio::test(flavor = "current_thread")]
async fn a_lost_thread_connection_is_replaced() {
    let db = TestDb::postgres().await;
    let org = OrganizationId::generate();
    assert_eq!(generation(&db.store, &org, ListName::Risks).await, 0, "the thread's connection opens");
    let Cleanup::Database { admin, name } = &db.cleanup else { panic!("a PostgreSQL TestDb") };
    let mut conn = AsyncPgConnection::establish(admin).await.unwrap();
    let end_all = format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'");
    conn.batch_execute(&end_all).await.unwrap();

    let mut answered = false;
    for _ in 0..50 {
        match ListGenerations::generation(&db.store, &org, ListName::Risks).await {
            Ok(generation) => {
                assert_eq!(generation, 0);
                answered = true;
                break;
            }
            Err(error) => assert!(matches!(error, RepoError::Unavailable(_)), "{error:?}"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(answered, "the thread's connection was not replaced");
    db.drop_async().await;
}

fn secret(org: &Organization, owner: &str, key_id: &str, bytes: &[u8]) -> StoredSecret {
    StoredSecret {
        organization_id: org.id.clone(),
        owner_kind: "connection".into(),
        owner_id: owner.into(),
        key_id: key_id.into(),
        ciphertext: bytes.to_vec(),
        updated_at: Timestamp::now(),
    }
}

async fn vault_secrets(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let first = secret(&ours, "conn_1", "k1", &[0, 1, 2, 255]);
    SecretRepository::put(store, &first).await.unwrap();
    assert_eq!(SecretRepository::get(store, &ours.id, "connection", "conn_1").await.unwrap(), Some(first.clone()));
    assert_eq!(SecretRepository::get(store, &theirs.id, "connection", "conn_1").await.unwrap(), None, "tenant-scoped");

    let replaced = secret(&ours, "conn_1", "k1", b"new");
    SecretRepository::put(store, &replaced).await.unwrap();
    assert_eq!(SecretRepository::get(store, &ours.id, "connection", "conn_1").await.unwrap(), Some(replaced.clone()));

    SecretRepository::put(store, &secret(&theirs, "conn_2", "k2", b"current")).await.unwrap();
    assert_eq!(store.count_stale("k2").await.unwrap(), 1);
    let stale = store.stale("k2", 10).await.unwrap();
    assert_eq!(stale, vec![replaced.clone()]);

    // Made a second after `replaced`: the re-encryption must keep the stored `updated_at`.
    let rotated = StoredSecret {
        updated_at: replaced.updated_at.plus(time::Duration::seconds(1)),
        ..secret(&ours, "conn_1", "k2", b"rotated")
    };
    assert!(!store.reencrypt(&rotated, &first.ciphertext).await.unwrap(), "not over a value written meanwhile");
    assert!(store.reencrypt(&rotated, b"new").await.unwrap());
    assert_eq!(store.count_stale("k2").await.unwrap(), 0);
    let reencrypted = SecretRepository::get(store, &ours.id, "connection", "conn_1").await.unwrap().unwrap();
    assert_eq!((reencrypted.key_id.as_str(), reencrypted.ciphertext.as_slice()), ("k2", b"rotated".as_slice()));
    assert_eq!(reencrypted.etag(), replaced.etag(), "a re-encryption keeps updatedAt, so the tag");

    assert!(!SecretRepository::delete(store, &theirs.id, "connection", "conn_1").await.unwrap());
    assert!(SecretRepository::delete(store, &ours.id, "connection", "conn_1").await.unwrap());
    assert_eq!(SecretRepository::get(store, &ours.id, "connection", "conn_1").await.unwrap(), None);
}
contract!(vault_secrets);

async fn oauth_states(db: &TestDb) {
    let store = &db.store;
    let org = organization(store, "Ours").await;
    let ada = person(store, &org, "ada@ours.test").await;
    let now = Timestamp::now();
    let state = |hash: &str, expires_at: Timestamp| OAuthStateRecord {
        state_hash: hash.into(),
        organization_id: org.id.clone(),
        user_id: ada.user.id.clone(),
        provider: "github".into(),
        redirect_url: Some("https://app.test/done".into()),
        created_at: now,
        expires_at,
        sealed_pkce_verifier: Some(vec![1, 2, 3]),
    };
    let live = state("h1", now.plus(time::Duration::minutes(10)));
    OAuthStateRepository::insert(store, &live).await.unwrap();
    OAuthStateRepository::insert(store, &state("h2", now.plus(time::Duration::minutes(-1)))).await.unwrap();

    // Read without being used up; another user, or the user in another organization, takes nothing.
    assert_eq!(OAuthStateRepository::find(store, "h1").await.unwrap(), Some(live.clone()));
    let bob = person(store, &org, "bob@ours.test").await;
    let other = organization(store, "Theirs").await;
    assert_eq!(OAuthStateRepository::take(store, "h1", &org.id, &bob.user.id).await.unwrap(), None);
    assert_eq!(OAuthStateRepository::take(store, "h1", &other.id, &ada.user.id).await.unwrap(), None);
    assert_eq!(OAuthStateRepository::find(store, "h1").await.unwrap(), Some(live.clone()), "still there");

    let takers = (0..8).map(|_| OAuthStateRepository::take(store, "h1", &org.id, &ada.user.id));
    let taken: Vec<_> = join_all(takers).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(taken.iter().flatten().count(), 1, "a state is taken once, however many race");
    assert_eq!(taken.into_iter().flatten().next(), Some(live));
    assert_eq!(OAuthStateRepository::find(store, "h1").await.unwrap(), None);

    assert_eq!(store.purge_expired(now).await.unwrap(), 1);
    assert_eq!(OAuthStateRepository::take(store, "h2", &org.id, &ada.user.id).await.unwrap(), None);
}
contract!(oauth_states);

async fn refresh_leases(db: &TestDb) {
    let store = &db.store;
    let now = Timestamp::now();
    let until = now.plus(time::Duration::seconds(30));
    let racers = (0..10).map(|i| {
        let holder = format!("instance-{i}");
        async move { store.acquire("conn_1", &holder, now, until).await.unwrap() }
    });
    let won = join_all(racers).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "exactly one holder");
    let winner = format!("instance-{}", won.iter().position(|w| *w).unwrap());

    assert!(store.acquire("conn_1", &winner, now, until).await.unwrap(), "the holder may renew");
    assert!(!store.acquire("conn_1", "other", now, until).await.unwrap());
    let later = until.plus(time::Duration::seconds(1));
    assert!(store.acquire("conn_1", "other", later, later.plus(time::Duration::seconds(30))).await.unwrap(), "lapsed");

    store.release("conn_1", &winner).await.unwrap();
    assert!(!store.acquire("conn_1", &winner, later, later).await.unwrap(), "releasing another's lease does nothing");
    store.release("conn_1", "other").await.unwrap();
    assert!(store.acquire("conn_1", &winner, now, until).await.unwrap(), "released");
}
contract!(refresh_leases);

async fn vault_owner_ids(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    for (org, owner) in [(&ours, "con_b"), (&ours, "con_a"), (&ours, "con_c"), (&theirs, "con_z")] {
        SecretRepository::put(store, &secret(org, owner, "k1", b"x")).await.unwrap();
    }
    let mut other_kind = secret(&ours, "con_0", "k1", b"x");
    other_kind.owner_kind = "webhook".into();
    SecretRepository::put(store, &other_kind).await.unwrap();

    assert_eq!(store.owner_ids(&ours.id, "connection").await.unwrap(), ["con_a", "con_b", "con_c"], "sorted");
    assert_eq!(store.owner_ids(&theirs.id, "connection").await.unwrap(), ["con_z"], "tenant-scoped");
    assert_eq!(store.owner_ids(&ours.id, "webhook").await.unwrap(), ["con_0"], "by kind");
    assert!(store.owner_ids(&ours.id, "nothing").await.unwrap().is_empty());
}
contract!(vault_owner_ids);

/// A live connection of `org` to `provider`, created by `by` at `at`.
fn connection(org: &Organization, provider: &str, by: &Person, at: Timestamp) -> Connection {
    Connection::connected(org.id.clone(), provider.into(), by.user.id.clone(), None, at)
}

async fn connections(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let ada = person(store, &ours, "ada@ours.test").await;
    let bob = person(store, &theirs, "bob@theirs.test").await;
    let now = Timestamp::now();
    let later = now.plus(time::Duration::seconds(1));

    // Every optional field set, and every optional field empty.
    let mut full = connection(&ours, "github", &ada, now);
    full.token_expires_at = Some(now.plus(time::Duration::hours(1)));
    full.record_check(CheckOutcome::Failed("HTTP 500".into()), now);
    full.disconnected_at = Some(now.plus(time::Duration::minutes(-5)));
    let mut bare = connection(&ours, "slack", &ada, later);
    bare.connected_at = None;
    let mut tie = connection(&ours, "jira", &ada, later);
    tie.status = ConnectionStatus::NeedsReauth;
    let foreign = connection(&theirs, "github", &bob, later);
    for c in [&full, &bare, &tie, &foreign] {
        ConnectionRepository::insert(store, c, &unaudited, &no_links()).await.unwrap();
    }

    assert_eq!(
        ConnectionRepository::get_connection(store, &ours.id, &full.id).await.unwrap(),
        full,
        "round trip is exact"
    );
    assert_eq!(ConnectionRepository::get_connection(store, &ours.id, &bare.id).await.unwrap(), bare, "nulls stay null");
    assert_eq!(ConnectionRepository::get_connection(store, &theirs.id, &foreign.id).await.unwrap(), foreign);

    let mut same_time = vec![bare.clone(), tie.clone()];
    same_time.sort_by(|a, b| b.id.as_str().cmp(a.id.as_str()));
    let expected: Vec<_> = same_time.into_iter().chain([full.clone()]).collect();
    assert_eq!(
        ConnectionRepository::list(store, &ours.id, &every()).await.unwrap().items,
        expected,
        "newest first, then id desc"
    );
    assert_eq!(ConnectionRepository::list(store, &theirs.id, &every()).await.unwrap().items, vec![foreign.clone()]);

    let missing = ConnectionRepository::get_connection(store, &ours.id, &foreign.id).await;
    assert!(matches!(missing, Err(RepoError::NotFound)), "another organization's connection reads as missing");
    let missing = ConnectionRepository::get_connection(store, &ours.id, &ConnectionId::generate()).await;
    assert!(matches!(missing, Err(RepoError::NotFound)));

    assert_eq!(store.find_live(&ours.id, "github").await.unwrap(), Some(full.clone()));
    assert_eq!(store.find_live(&theirs.id, "github").await.unwrap(), Some(foreign.clone()), "each its own");
    assert_eq!(store.find_live(&ours.id, "gitlab").await.unwrap(), None);

    // Updates: every mutable field is replaced, including back to NULL.
    let mut checked = full.clone();
    checked.record_check(CheckOutcome::Passed, later);
    checked.token_expires_at = None;
    ConnectionRepository::update_connection(store, &checked, full.updated_at, &unaudited).await.unwrap();
    assert_eq!(ConnectionRepository::get_connection(store, &ours.id, &full.id).await.unwrap(), checked);
    assert_eq!(checked.last_error, None);

    // Optimistic: an update read before another one landed is refused and changes nothing.
    let mut stale = full.clone();
    stale.record_check(CheckOutcome::Failed("HTTP 500".into()), later.plus(time::Duration::seconds(1)));
    let refused = ConnectionRepository::update_connection(store, &stale, full.updated_at, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::NotFound)), "read before the last update: {refused:?}");
    assert_eq!(ConnectionRepository::get_connection(store, &ours.id, &full.id).await.unwrap(), checked, "untouched");

    let mut unknown = checked.clone();
    unknown.id = ConnectionId::generate();
    assert!(matches!(
        ConnectionRepository::update_connection(store, &unknown, later, &unaudited).await,
        Err(RepoError::NotFound)
    ));
    let mut hijack = foreign.clone();
    hijack.organization_id = ours.id.clone();
    hijack.disconnect(later);
    let refused = ConnectionRepository::update_connection(store, &hijack, foreign.updated_at, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::NotFound)));
    assert_eq!(
        ConnectionRepository::get_connection(store, &theirs.id, &foreign.id).await.unwrap(),
        foreign,
        "untouched"
    );
    assert_eq!(ConnectionRepository::get_connection(store, &ours.id, &full.id).await.unwrap(), checked, "untouched");
}
contract!(connections);

async fn one_live_connection_per_provider(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let ada = person(store, &ours, "ada@ours.test").await;
    let bob = person(store, &theirs, "bob@theirs.test").await;
    let now = Timestamp::now();
    let later = now.plus(time::Duration::seconds(1));

    let mut first = connection(&ours, "github", &ada, now);
    ConnectionRepository::insert(store, &first, &unaudited, &no_links()).await.unwrap();
    let mut broken = connection(&ours, "github", &ada, later);
    broken.status = ConnectionStatus::Error;
    let refused = ConnectionRepository::insert(store, &broken, &unaudited, &no_links()).await;
    assert!(matches!(refused, Err(RepoError::Conflict(_))), "a second live one, even in error: {refused:?}");
    assert!(matches!(
        ConnectionRepository::get_connection(store, &ours.id, &broken.id).await,
        Err(RepoError::NotFound)
    ));
    ConnectionRepository::insert(store, &connection(&theirs, "github", &bob, now), &unaudited, &no_links())
        .await
        .unwrap();
    ConnectionRepository::insert(store, &connection(&ours, "slack", &ada, now), &unaudited, &no_links()).await.unwrap();

    let read_at = first.updated_at;
    first.disconnect(later);
    ConnectionRepository::update_connection(store, &first, read_at, &unaudited).await.unwrap();
    assert_eq!(store.find_live(&ours.id, "github").await.unwrap(), None, "disconnected is not live");
    assert_eq!(
        ConnectionRepository::get_connection(store, &ours.id, &first.id).await.unwrap(),
        first,
        "kept for the record"
    );

    let second = connection(&ours, "github", &ada, later);
    ConnectionRepository::insert(store, &second, &unaudited, &no_links()).await.unwrap();
    assert_eq!(store.find_live(&ours.id, "github").await.unwrap(), Some(second.clone()));
    let mut again = connection(&ours, "github", &ada, later);
    again.disconnect(later);
    ConnectionRepository::insert(store, &again, &unaudited, &no_links()).await.unwrap();
    assert_eq!(
        ConnectionRepository::list(store, &ours.id, &every()).await.unwrap().items.len(),
        4,
        "disconnected ones pile up"
    );

    let mut revived = first.clone();
    revived.reconnect(None, later.plus(time::Duration::seconds(1)));
    let refused = ConnectionRepository::update_connection(store, &revived, first.updated_at, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::NotFound)), "a disconnected connection is final: {refused:?}");
    assert_eq!(ConnectionRepository::get_connection(store, &ours.id, &first.id).await.unwrap(), first, "unchanged");
    assert_eq!(store.find_live(&ours.id, "github").await.unwrap(), Some(second));
}
contract!(one_live_connection_per_provider);

async fn task_in(store: &Store, org: &Organization, title: &str) -> Task {
    let task = Task::create(org.id.clone(), from_json(json!({"title": title})), Timestamp::now()).unwrap();
    TaskRepository::insert_task(store, &task, &unaudited).await.unwrap();
    task
}

/// An enabled automation of `task`, created at `at`; scheduled every five minutes when `scheduled`.
fn automation(task: &Task, scheduled: bool, at: Timestamp) -> BrowserAutomation {
    let input: NewAutomation = from_json(json!({
        "taskId": task.id, "name": "Login page", "targetUrl": "https://example.com/login",
        "instruction": "Check the login form", "description": "Weekly evidence",
        "schedule": if scheduled { Some("*/5 * * * *") } else { None },
    }));
    // The creator is a user id without a row: the column has no foreign key (the app checks it).
    let creator = compliance_domain::UserId::generate();
    BrowserAutomation::create(task.organization_id.clone(), task.id.clone(), creator, input, at).unwrap()
}

async fn stored(store: &Store, automation: BrowserAutomation) -> BrowserAutomation {
    AutomationRepository::insert(store, &automation, &unaudited).await.unwrap();
    automation
}

async fn automations(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let task = task_in(store, &ours, "Login").await;
    let other_task = task_in(store, &ours, "Other").await;
    let foreign_task = task_in(store, &theirs, "Theirs").await;
    let now = Timestamp::now();
    let later = now.plus(time::Duration::seconds(1));

    // Every optional field set, and every optional field empty.
    let full = stored(store, automation(&task, true, now)).await;
    assert!(full.schedule.is_some() && full.next_run_at.is_some() && full.description.is_some());
    let mut bare = automation(&task, false, later);
    bare.description = None;
    let bare = stored(store, bare).await;
    assert!(bare.next_run_at.is_none());
    let tie = stored(store, automation(&task, false, later)).await;
    let elsewhere = stored(store, automation(&other_task, true, now)).await;
    let foreign = stored(store, automation(&foreign_task, true, now)).await;

    assert_eq!(AutomationRepository::get(store, &ours.id, &full.id).await.unwrap(), full, "round trip is exact");
    assert_eq!(AutomationRepository::get(store, &ours.id, &bare.id).await.unwrap(), bare, "nulls stay null");
    assert_eq!(AutomationRepository::get(store, &theirs.id, &foreign.id).await.unwrap(), foreign);
    let missing = AutomationRepository::get(store, &ours.id, &foreign.id).await;
    assert!(matches!(missing, Err(RepoError::NotFound)), "another organization's automation reads as missing");

    let mut same_time = vec![bare.clone(), tie.clone()];
    same_time.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    let expected: Vec<_> = [full.clone()].into_iter().chain(same_time).collect();
    assert_eq!(store.list_for_task(&ours.id, &task.id).await.unwrap(), expected, "oldest first, then by id");
    assert_eq!(store.list_for_task(&ours.id, &other_task.id).await.unwrap(), vec![elsewhere.clone()]);
    assert!(store.list_for_task(&theirs.id, &task.id).await.unwrap().is_empty(), "tenant-scoped");
    assert!(store.list_for_task(&ours.id, &foreign_task.id).await.unwrap().is_empty(), "tenant-scoped");

    // Updates replace every mutable field, including back to NULL.
    let mut changed = full.clone();
    let changes = from_json(json!({"name": "Logout", "description": null, "schedule": null, "isEnabled": false,
                                   "targetUrl": "https://example.com/out", "instruction": "Log out"}));
    changed.apply(&AutomationPatch::new(changes).unwrap(), later);
    assert_eq!((changed.schedule.clone(), changed.next_run_at), (None, None));
    AutomationRepository::update(store, &changed, &full, &unaudited).await.unwrap();
    assert_eq!(AutomationRepository::get(store, &ours.id, &full.id).await.unwrap(), changed);
    let mut rescheduled = changed.clone();
    let changes = from_json(json!({"schedule": "0 9 * * 1-5", "isEnabled": true, "description": "again"}));
    rescheduled.apply(&AutomationPatch::new(changes).unwrap(), later.plus(time::Duration::seconds(1)));
    AutomationRepository::update(store, &rescheduled, &changed, &unaudited).await.unwrap();
    assert_eq!(AutomationRepository::get(store, &ours.id, &full.id).await.unwrap(), rescheduled);
    // Optimistic: an update read before another change (a PATCH, a claimed schedule) is refused.
    let mut stale = changed.clone();
    stale.name = "Stale".into();
    let refused = AutomationRepository::update(store, &stale, &changed, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::NotFound)), "read before the last update: {refused:?}");
    assert_eq!(AutomationRepository::get(store, &ours.id, &full.id).await.unwrap(), rescheduled, "untouched");

    let mut hijack = foreign.clone();
    hijack.organization_id = ours.id.clone();
    hijack.name = "Hijacked".into();
    assert!(matches!(
        AutomationRepository::update(store, &hijack, &foreign, &unaudited).await,
        Err(RepoError::NotFound)
    ));
    assert_eq!(AutomationRepository::get(store, &theirs.id, &foreign.id).await.unwrap(), foreign, "untouched");
    let mut unknown = bare.clone();
    unknown.id = AutomationId::generate();
    assert!(matches!(AutomationRepository::update(store, &unknown, &bare, &unaudited).await, Err(RepoError::NotFound)));

    // Deleting returns the runs (their screenshots are to be removed) and removes them.
    let mut done = AutomationRun::pending(&full, RunTrigger::Manual, now);
    done.start(now);
    done.finish(Ok(Verdict::passed("held")), Some("screenshots/1.png".into()), later);
    store.insert_run(&done, &unaudited).await.unwrap();
    let pending = AutomationRun::pending(&full, RunTrigger::Schedule, later);
    store.insert_run(&pending, &unaudited).await.unwrap();
    let foreign_run = AutomationRun::pending(&foreign, RunTrigger::Manual, now);
    store.insert_run(&foreign_run, &unaudited).await.unwrap();

    let refused = AutomationRepository::delete(store, &ours.id, &foreign.id, &IfMatch::Absent, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::NotFound)), "another organization's automation: {refused:?}");
    assert_eq!(runs_of(store, &theirs.id, &foreign.id).await, vec![foreign_run.clone()], "untouched");
    let deleted = AutomationRepository::delete(store, &ours.id, &full.id, &IfMatch::Absent, &unaudited).await.unwrap();
    assert_eq!(deleted, vec![pending.clone(), done.clone()], "the deleted runs, newest first");
    assert!(matches!(AutomationRepository::get(store, &ours.id, &full.id).await, Err(RepoError::NotFound)));
    assert!(matches!(store.get_run(&ours.id, &done.id).await, Err(RepoError::NotFound)));
    assert!(runs_of(store, &ours.id, &full.id).await.is_empty());
    let again = AutomationRepository::delete(store, &ours.id, &full.id, &IfMatch::Absent, &unaudited).await;
    assert!(matches!(again, Err(RepoError::NotFound)));

    // Deleting a task takes its automations and their runs with it.
    let elsewhere_run = AutomationRun::pending(&elsewhere, RunTrigger::Manual, now);
    store.insert_run(&elsewhere_run, &unaudited).await.unwrap();
    TaskRepository::delete_task(store, &ours.id, &other_task.id, &IfMatch::Absent, &unaudited).await.unwrap();
    assert!(matches!(AutomationRepository::get(store, &ours.id, &elsewhere.id).await, Err(RepoError::NotFound)));
    assert!(matches!(store.get_run(&ours.id, &elsewhere_run.id).await, Err(RepoError::NotFound)));
    assert_eq!(store.list_for_task(&ours.id, &task.id).await.unwrap().len(), 2, "the other task's stay");
}
contract!(automations);

async fn automation_runs(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let task = task_in(store, &ours, "Login").await;
    let foreign = stored(store, automation(&task_in(store, &theirs, "T").await, false, Timestamp::now())).await;
    let login = stored(store, automation(&task, true, Timestamp::now())).await;
    let now = Timestamp::now();
    let later = now.plus(time::Duration::seconds(2));

    let mut first = AutomationRun::pending(&login, RunTrigger::Manual, now);
    store.insert_run(&first, &unaudited).await.unwrap();
    assert_eq!(store.get_run(&ours.id, &first.id).await.unwrap(), first, "round trip, nulls stay null");
    let second = AutomationRun::pending(&login, RunTrigger::Schedule, later);
    let refused = store.insert_run(&second, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::Conflict(_))), "one pending run at a time: {refused:?}");

    // Only a running run finishes: a pending one is not touched.
    let mut early = first.clone();
    early.finish(Err("too early".into()), None, now);
    assert!(
        matches!(store.finish_run(&early, &unaudited).await, Err(RepoError::NotFound)),
        "a pending run cannot finish"
    );
    first.start(now.plus(time::Duration::milliseconds(10)));
    let (claimed, _) = store.claim_pending(now.plus(time::Duration::milliseconds(10)), &[]).await.unwrap().unwrap();
    assert_eq!(claimed, first, "claimed and running");
    assert_eq!(store.get_run(&ours.id, &first.id).await.unwrap(), first, "running");
    let refused = store.insert_run(&second, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::Conflict(_))), "nor beside a running one: {refused:?}");

    first.steps = vec![RunStep {
        index: 0,
        action: "type secret".into(),
        target: Some("Password".into()),
        outcome: StepOutcome::Ok,
        detail: "typed into the field".into(),
        duration_ms: 42,
        screenshot_key: Some("screenshots/first_s0.png".into()),
    }];
    first.finish(
        Ok(Verdict::failed("step 1 (expect text \"MFA\"): the page does not show the text")),
        Some("screenshots/first.png".into()),
        now.plus(time::Duration::milliseconds(1510)),
    );
    store.finish_run(&first, &unaudited).await.unwrap();
    assert_eq!(store.get_run(&ours.id, &first.id).await.unwrap(), first, "every field of the outcome, steps too");
    assert_eq!(first.duration_ms, Some(1500));
    store.insert_run(&second, &unaudited).await.unwrap();
    let (mut second, _) = store.claim_pending(later, &[]).await.unwrap().unwrap();
    second.finish(Err("the page answered HTTP 404".into()), None, later.plus(time::Duration::seconds(1)));
    store.finish_run(&second, &unaudited).await.unwrap();
    let finished_again = store.finish_run(&first, &unaudited).await;
    assert!(matches!(finished_again, Err(RepoError::NotFound)), "a finished run is final: {finished_again:?}");
    assert_eq!(store.get_run(&ours.id, &second.id).await.unwrap(), second);

    assert_eq!(runs_of(store, &ours.id, &login.id).await, vec![second.clone(), first.clone()], "newest first");
    assert!(runs_of(store, &theirs.id, &login.id).await.is_empty(), "tenant-scoped");
    assert!(matches!(store.get_run(&theirs.id, &first.id).await, Err(RepoError::NotFound)));

    let mut hijack = first.clone();
    hijack.organization_id = theirs.id.clone();
    hijack.error = Some("hijacked".into());
    assert!(matches!(store.finish_run(&hijack, &unaudited).await, Err(RepoError::NotFound)));
    let mut unknown = first.clone();
    unknown.id = AutomationRunId::generate();
    assert!(matches!(store.finish_run(&unknown, &unaudited).await, Err(RepoError::NotFound)));
    assert_eq!(store.get_run(&ours.id, &first.id).await.unwrap(), first, "untouched");

    let mut misfiled = AutomationRun::pending(&foreign, RunTrigger::Manual, now);
    misfiled.organization_id = ours.id.clone();
    assert!(
        store.insert_run(&misfiled, &unaudited).await.is_err(),
        "the schema refuses a run of another organization's automation"
    );
}
contract!(automation_runs);

async fn claiming_due_automations(db: &TestDb) {
    let store = &db.store;
    let org = organization(store, "Ours").await;
    let task = task_in(store, &org, "Login").await;
    let scheduled = stored(store, automation(&task, true, Timestamp::now())).await;
    let previous = scheduled.next_run_at.unwrap();
    let next = previous.plus(time::Duration::minutes(5));
    let now = Timestamp::now();

    let runs: Vec<_> = (0..8).map(|_| AutomationRun::pending(&scheduled, RunTrigger::Schedule, now)).collect();
    let claims = runs.iter().map(|run| store.claim_due(&scheduled.id, previous, Some(next), run, &unaudited));
    let won: Vec<bool> = join_all(claims).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "exactly one instance claims a due schedule");
    let winner = runs[won.iter().position(|w| *w).unwrap()].clone();
    assert_eq!(AutomationRepository::get(store, &org.id, &scheduled.id).await.unwrap().next_run_at, Some(next));
    assert_eq!(runs_of(store, &org.id, &scheduled.id).await, vec![winner.clone()], "one run added");
    let late = AutomationRun::pending(&scheduled, RunTrigger::Schedule, now);
    assert!(!store.claim_due(&scheduled.id, previous, Some(next), &late, &unaudited).await.unwrap(), "already claimed");

    // The winner's run is still pending: the schedule advances, but no second run is added.
    let after = next.plus(time::Duration::minutes(5));
    let skipped = AutomationRun::pending(&scheduled, RunTrigger::Schedule, now);
    assert!(!store.claim_due(&scheduled.id, next, Some(after), &skipped, &unaudited).await.unwrap(), "no run added");
    assert_eq!(AutomationRepository::get(store, &org.id, &scheduled.id).await.unwrap().next_run_at, Some(after));
    assert_eq!(runs_of(store, &org.id, &scheduled.id).await, vec![winner.clone()]);

    let (mut finished, _) = store.claim_pending(now, &[]).await.unwrap().unwrap();
    assert_eq!(finished.id, winner.id);
    finished.finish(Ok(Verdict::passed("held")), Some("screenshots/1.png".into()), now);
    store.finish_run(&finished, &unaudited).await.unwrap();
    let last = AutomationRun::pending(&scheduled, RunTrigger::Schedule, now.plus(time::Duration::seconds(1)));
    assert!(
        store.claim_due(&scheduled.id, after, None, &last, &unaudited).await.unwrap(),
        "claimed, and the schedule ends"
    );
    assert_eq!(AutomationRepository::get(store, &org.id, &scheduled.id).await.unwrap().next_run_at, None);
    assert_eq!(runs_of(store, &org.id, &scheduled.id).await, vec![last, finished]);
    let unknown = AutomationId::generate();
    assert!(!store.claim_due(&unknown, after, None, &skipped, &unaudited).await.unwrap(), "nothing to claim");
}
contract!(claiming_due_automations);

async fn claiming_pending_runs(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let login = stored(store, automation(&task_in(store, &ours, "Login").await, false, Timestamp::now())).await;
    let now = Timestamp::now();
    let run = AutomationRun::pending(&login, RunTrigger::Manual, now);
    store.insert_run(&run, &unaudited).await.unwrap();

    let start = now.plus(time::Duration::seconds(1));
    let claims = (0..8).map(|_| store.claim_pending(start, &[]));
    let claimed: Vec<_> = join_all(claims).await.into_iter().map(Result::unwrap).collect();
    assert_eq!(claimed.iter().flatten().count(), 1, "a pending run is taken once, however many race");
    let (taken, its_automation) = claimed.into_iter().flatten().next().unwrap();
    let mut expected = run.clone();
    expected.start(start);
    assert_eq!(
        (taken.clone(), its_automation),
        (expected.clone(), login.clone()),
        "running from now, with its automation"
    );
    assert_eq!(store.get_run(&ours.id, &run.id).await.unwrap(), expected);
    assert!(store.claim_pending(start, &[]).await.unwrap().is_none(), "nothing left pending");

    // Oldest first, across organizations.
    let logout = stored(store, automation(&task_in(store, &ours, "Logout").await, false, now)).await;
    let foreign = stored(store, automation(&task_in(store, &theirs, "Theirs").await, false, now)).await;
    let newer = AutomationRun::pending(&logout, RunTrigger::Manual, now.plus(time::Duration::seconds(2)));
    let older = AutomationRun::pending(&foreign, RunTrigger::Schedule, now.plus(time::Duration::seconds(1)));
    store.insert_run(&newer, &unaudited).await.unwrap();
    store.insert_run(&older, &unaudited).await.unwrap();
    // An organization at its bound of runs at once is skipped: the younger run of another goes first.
    let skip_theirs = [theirs.id.clone()];
    let (skipped, _) = store.claim_pending(start, &skip_theirs).await.unwrap().unwrap();
    assert_eq!((skipped.id, skipped.status), (newer.id, RunStatus::Running));
    assert!(store.claim_pending(start, &skip_theirs).await.unwrap().is_none(), "only theirs is left");
    let (first, first_automation) = store.claim_pending(start, &[]).await.unwrap().unwrap();
    assert_eq!((first.id, first_automation), (older.id, foreign));
    assert!(store.claim_pending(start, &[]).await.unwrap().is_none());
}
contract!(claiming_pending_runs);

async fn failing_stale_runs(db: &TestDb) {
    let store = &db.store;
    let org = organization(store, "Ours").await;
    let task = task_in(store, &org, "Login").await;
    let now = Timestamp::now();
    let hour_ago = now.plus(time::Duration::hours(-1));
    let cutoff = now.plus(time::Duration::minutes(-10));

    let mut runs = Vec::new();
    for (started, finished) in [(Some(hour_ago), false), (Some(now), false), (None, false), (Some(hour_ago), true)] {
        let automation = stored(store, automation(&task, false, hour_ago)).await;
        let mut run = AutomationRun::pending(&automation, RunTrigger::Manual, hour_ago);
        if let Some(at) = started {
            run.start(at);
        }
        if finished {
            run.finish(
                Ok(Verdict::passed("held")),
                Some("screenshots/done.png".into()),
                hour_ago.plus(time::Duration::seconds(5)),
            );
        }
        store.insert_run(&run, &unaudited).await.unwrap();
        runs.push(run);
    }

    assert_eq!(store.stale_runs(cutoff, 10).await.unwrap(), vec![runs[0].clone()], "not fresh, pending or finished");
    assert_eq!(store.stale_runs(cutoff, 0).await.unwrap(), Vec::new(), "at most the limit");
    let mut stale = runs[0].clone();
    stale.interrupt("the instance running it stopped", cutoff);
    store.finish_run(&stale, &unaudited).await.unwrap();
    assert_eq!(store.get_run(&org.id, &stale.id).await.unwrap(), stale, "failed at the cutoff, duration unknown");
    for untouched in &runs[1..] {
        assert_eq!(store.get_run(&org.id, &untouched.id).await.unwrap(), *untouched, "fresh, pending or finished");
    }
    assert_eq!(store.stale_runs(cutoff, 10).await.unwrap(), Vec::new());
}
contract!(failing_stale_runs);

/// Finished runs created before the cutoff go, of every organization, oldest first and at most the
/// limit; pending and running runs stay however old; the rows come back with their steps.
async fn removing_expired_runs(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let now = Timestamp::now();
    let cutoff = now.plus(time::Duration::days(-90));
    let old = now.plus(time::Duration::days(-100));

    let mut expired = Vec::new();
    for (org, age) in [(&ours, 3), (&theirs, 2), (&ours, 1)] {
        let automation = stored(store, automation(&task_in(store, org, "Old").await, false, old)).await;
        let created = old.plus(time::Duration::minutes(-age));
        let mut run = AutomationRun::pending(&automation, RunTrigger::Manual, created);
        run.start(created);
        run.steps = vec![RunStep {
            index: 0,
            action: "screenshot".into(),
            target: None,
            outcome: StepOutcome::Ok,
            detail: "taken".into(),
            duration_ms: 5,
            screenshot_key: Some(run.step_screenshot_blob_key(0)),
        }];
        run.finish(Ok(Verdict::passed("held")), Some(run.screenshot_blob_key()), created);
        store.insert_run(&run, &unaudited).await.unwrap();
        expired.push(run);
    }
    let task = task_in(store, &ours, "Kept").await;
    let running = stored(store, automation(&task, false, old)).await;
    let mut still_running = AutomationRun::pending(&running, RunTrigger::Manual, old);
    still_running.start(old);
    store.insert_run(&still_running, &unaudited).await.unwrap();
    let recent = stored(store, automation(&task, false, now)).await;
    let mut fresh = AutomationRun::pending(&recent, RunTrigger::Manual, cutoff.plus(time::Duration::seconds(1)));
    fresh.finish(Err("the page answered HTTP 500".into()), None, now);
    store.insert_run(&fresh, &unaudited).await.unwrap();

    assert_eq!(store.delete_finished_runs(cutoff, 2).await.unwrap(), expired[..2], "oldest first, at most 2");
    assert_eq!(store.delete_finished_runs(cutoff, 2).await.unwrap(), expired[2..]);
    assert_eq!(store.delete_finished_runs(cutoff, 2).await.unwrap(), []);
    for run in &expired {
        assert!(matches!(store.get_run(&run.organization_id, &run.id).await, Err(RepoError::NotFound)));
    }
    assert_eq!(store.get_run(&ours.id, &still_running.id).await.unwrap(), still_running, "running: kept");
    assert_eq!(store.get_run(&ours.id, &fresh.id).await.unwrap(), fresh, "younger than the cutoff: kept");
}
contract!(removing_expired_runs);

/// An automation's runs in pages of two, newest first, counted on every page, tenant-scoped.
async fn paging_runs(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let now = Timestamp::now();
    let automation = stored(store, automation(&task_in(store, &ours, "Runs").await, false, now)).await;
    let mut runs = Vec::new();
    for minutes in 0..5 {
        let at = now.plus(time::Duration::minutes(minutes));
        let mut run = AutomationRun::pending(&automation, RunTrigger::Manual, at);
        run.finish(Ok(Verdict::passed("held")), None, at);
        store.insert_run(&run, &unaudited).await.unwrap();
        runs.insert(0, run);
    }
    let mut seen = Vec::new();
    let mut request = PageRequest::first(2);
    loop {
        let page = store.runs(&ours.id, &automation.id, &unfiltered(&request)).await.unwrap();
        assert_eq!(page.total, 5);
        seen.extend(page.items);
        match page.next {
            Some(next) => request = PageRequest { after: Some(next), ..PageRequest::first(2) },
            None => break,
        }
    }
    assert_eq!(seen, runs);
    assert_eq!(store.runs(&theirs.id, &automation.id, &every()).await.unwrap().total, 0);
}
contract!(paging_runs);

async fn due_automations(db: &TestDb) {
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let theirs = organization(store, "Theirs").await;
    let task = task_in(store, &ours, "Login").await;
    let foreign_task = task_in(store, &theirs, "Theirs").await;
    let now = Timestamp::now();
    let at = |task: &Task, minutes: i64, enabled: bool| {
        let mut a = automation(task, true, now);
        a.next_run_at = Some(now.plus(time::Duration::minutes(minutes)));
        a.is_enabled = enabled;
        a
    };

    let recent = stored(store, at(&task, -2, true)).await;
    let earliest = stored(store, at(&task, -5, true)).await;
    let exactly_now = stored(store, at(&foreign_task, 0, true)).await;
    stored(store, at(&task, 5, true)).await;
    stored(store, at(&task, -10, false)).await;
    stored(store, automation(&task, false, now)).await;

    let due = store.due(now, 10).await.unwrap();
    assert_eq!(
        due,
        vec![earliest.clone(), recent.clone(), exactly_now],
        "enabled and due, earliest first, any organization"
    );
    assert_eq!(store.due(now, 2).await.unwrap(), vec![earliest, recent], "at most the limit");
    assert!(store.due(now.plus(time::Duration::minutes(-6)), 10).await.unwrap().is_empty());
}
contract!(due_automations);

contract!(idempotency_keys);

/// `Idempotency-Key` reservations: one per organization, key and route; a retry takes over an
/// expired, unapplied one; the audited write marks its claim applied in its own transaction and
/// fails, changing nothing, when its claim was taken over; expired keys are pruned.
async fn idempotency_keys(db: &TestDb) {
    use compliance_domain::idempotency::IdempotencyClaim;
    use compliance_ports::{IdempotencyRepository, NewReservation, Outcome, StoredResponse};

    let store = &db.store;
    let (org, other) = (organization(store, "Acme").await, organization(store, "Other").await);
    let now = Timestamp::now();
    let new = |id: &str, org: &OrganizationId| NewReservation {
        id: id.into(),
        organization_id: org.clone(),
        caller: "usr_1/session".into(),
        key: "k-1".into(),
        route: "POST /v1/risks".into(),
        fingerprint: "f".into(),
        locked_until: now,
        created_at: now,
        expires_at: now.plus(time::Duration::hours(24)),
    };
    assert!(store.reserve_idempotency_key(&new("r1", &org.id), now).await.unwrap().is_none());
    let held = store.reserve_idempotency_key(&new("r2", &org.id), now).await.unwrap().unwrap();
    assert_eq!((held.id.as_str(), held.attempt, held.applied_at), ("r1", 0, None));
    assert!(store.reserve_idempotency_key(&new("r3", &other.id), now).await.unwrap().is_none(), "per organization");
    let another_caller = NewReservation { caller: "usr_2/session".into(), ..new("r2b", &org.id) };
    assert!(store.reserve_idempotency_key(&another_caller, now).await.unwrap().is_none(), "per caller");

    let later = now.plus(time::Duration::minutes(2));
    let retry = store.take_over_idempotency_key(&org.id, "r1", 0, later).await.unwrap().unwrap();
    assert_eq!(retry, IdempotencyClaim { id: "r1".into(), attempt: 1 });
    assert!(store.take_over_idempotency_key(&org.id, "r1", 0, later).await.unwrap().is_none(), "taken once");
    assert!(store.take_over_idempotency_key(&other.id, "r1", 1, later).await.unwrap().is_none(), "not B's");

    let risk = Risk::create(
        org.id.clone(),
        from_json(json!({"title": "R", "description": "d", "category": "people"})),
        Timestamp::now(),
    )
    .unwrap();
    let claimed = |claim: IdempotencyClaim| {
        let org = org.id.clone();
        move |before: Option<&Risk>, after: Option<&Risk>| compliance_domain::audit::AuditDraft {
            organization_id: org.clone(),
            idempotency: Some(claim.clone()),
            ..unaudited(before, after)
        }
    };
    let dead = IdempotencyClaim { id: "r1".into(), attempt: 0 };
    let refused = RiskRepository::insert_risk(store, &risk, &claimed(dead.clone())).await;
    assert!(matches!(refused, Err(RepoError::Conflict(_))), "{refused:?}");
    let missing = RiskRepository::get_risk(store, &org.id, &risk.id).await;
    assert!(matches!(missing, Err(RepoError::NotFound)), "the stale attempt changed nothing");

    RiskRepository::insert_risk(store, &risk, &claimed(retry.clone())).await.unwrap();
    let applied = store.reserve_idempotency_key(&new("r4", &org.id), now).await.unwrap().unwrap();
    assert!(applied.applied_at.is_some(), "marked in the change's transaction");
    assert_eq!(applied.resource, Some(("test".into(), "x".into())));
    assert!(applied.response.is_none());
    // Applied: never taken over, never released.
    assert!(store.take_over_idempotency_key(&org.id, "r1", 1, later).await.unwrap().is_none());
    store.release_idempotency_key(&org.id, &retry).await.unwrap();
    assert!(store.reserve_idempotency_key(&new("r5", &org.id), now).await.unwrap().is_some());

    let answer = StoredResponse {
        status: 201,
        content_type: Some("application/json".into()),
        location: None,
        etag: Some("\"0123456789abcdef\"".into()),
        body: b"{}".to_vec(),
    };
    store.finish_idempotency_key(&org.id, &dead, &Outcome::Keep(answer.clone())).await.unwrap();
    let unchanged = store.reserve_idempotency_key(&new("r6", &org.id), now).await.unwrap().unwrap();
    assert!(unchanged.response.is_none(), "a stale attempt stores nothing");
    store.finish_idempotency_key(&org.id, &retry, &Outcome::Keep(answer.clone())).await.unwrap();
    let kept = store.reserve_idempotency_key(&new("r7", &org.id), now).await.unwrap().unwrap();
    assert_eq!(kept.response, Some(answer));

    // An unapplied claim is released; expired ones are pruned, and an expired scope is free again.
    store.release_idempotency_key(&other.id, &IdempotencyClaim { id: "r3".into(), attempt: 0 }).await.unwrap();
    assert!(store.reserve_idempotency_key(&new("r8", &other.id), now).await.unwrap().is_none(), "released");
    let expired = now.plus(time::Duration::hours(24));
    assert_eq!(store.prune_idempotency_keys(now).await.unwrap(), 0);
    assert!(store.reserve_idempotency_key(&new("r9", &org.id), expired).await.unwrap().is_none(), "expired: new");
    assert_eq!(
        store.prune_idempotency_keys(expired).await.unwrap(),
        3,
        "B's r8, A's r9 and the other caller's r2b (made with the old expiry)"
    );
}

/// An audit draft for a change of task `task` in `org` at `at` that proves `outcome`: the store
/// records it for the controls linked to the task then (`record_evidence`).
fn observing(
    org: &OrganizationId,
    task: &str,
    outcome: compliance_domain::control::EvidenceOutcome,
    at: Timestamp,
) -> impl Fn(Option<&Task>, Option<&Task>) -> compliance_domain::audit::AuditDraft + Send + Sync {
    let (org, task) = (org.clone(), task.to_owned());
    move |before, after| compliance_domain::audit::AuditDraft {
        organization_id: org.clone(),
        created_at: at,
        evidence: Some(compliance_domain::evidence::Observation {
            kind: compliance_domain::control::SourceKind::Task,
            source_id: task.clone(),
            proof: compliance_domain::evidence::Proof::Outcome(outcome),
            detail: json!({"reason": "observed"}),
            run_id: None,
        }),
        ..unaudited(before, after)
    }
}

/// Records `outcome` of task `task` at `at`, as a change of the task would (a task of its own
/// carries the draft: the evidence names the task id the draft says).
async fn observe(
    store: &Store,
    org: &Organization,
    task: &str,
    outcome: compliance_domain::control::EvidenceOutcome,
    at: Timestamp,
) {
    let carrier = Task::create(org.id.clone(), from_json(json!({"title": "carrier"})), at).unwrap();
    TaskRepository::insert_task(store, &carrier, &observing(&org.id, task, outcome, at)).await.unwrap();
}

async fn control_in(store: &Store, org: &Organization, name: &str) -> compliance_domain::control::Control {
    use compliance_domain::control::{Control, NewControl};
    let input = NewControl { name: Some(name.into()), ..NewControl::default() };
    let control = Control::create(org.id.clone(), input, Timestamp::now()).unwrap();
    ControlRepository::insert_control(store, &control, &unaudited).await.unwrap();
    control
}

fn link_at(
    control: &compliance_domain::control::Control,
    task: &str,
    at: Timestamp,
) -> compliance_domain::control::EvidenceSource {
    let input = compliance_domain::control::NewEvidenceSource { source_id: Some(task.to_owned()) };
    compliance_domain::control::EvidenceSource::link(control, input, at).unwrap()
}

/// Links and their history: a removed link stays in force for the moments before its removal,
/// records no evidence after it, and can be made again (evidence of the first link does not
/// count for the second); another organization's links and evidence are never read.
async fn evidence_source_history(db: &TestDb) {
    use compliance_domain::control::EvidenceOutcome::{Fail, Pass};
    let store = &db.store;
    let (ours, theirs) = (organization(store, "Ours").await, organization(store, "Theirs").await);
    let control = control_in(store, &ours, "Backups").await;
    let other = control_in(store, &ours, "Reviews").await;
    let foreign = control_in(store, &theirs, "Backups").await;
    let task = compliance_domain::TaskId::generate().to_string();
    let t = |hour: i64| Timestamp::parse("2030-01-01T00:00:00Z").unwrap().plus(time::Duration::hours(hour));
    let ids = [control.id.clone(), other.id.clone()];
    let state = async |at| ControlRepository::evidence_state(store, &ours.id, &ids, at).await.unwrap();

    ControlRepository::add_evidence_source(store, &link_at(&control, &task, t(1)), &unaudited).await.unwrap();
    ControlRepository::add_evidence_source(store, &link_at(&foreign, &task, t(1)), &unaudited).await.unwrap();
    observe(store, &ours, &task, Pass, t(2)).await;
    let removed =
        ControlRepository::remove_evidence_source(store, &ours.id, &control.id, &task, t(3), &unaudited).await.unwrap();
    assert_eq!((removed.created_at, removed.removed_at), (t(1), Some(t(3))));
    let again = ControlRepository::remove_evidence_source(store, &ours.id, &control.id, &task, t(3), &unaudited).await;
    assert!(matches!(again, Err(RepoError::NotFound)), "{again:?}");
    observe(store, &ours, &task, Fail, t(4)).await;
    ControlRepository::add_evidence_source(store, &link_at(&control, &task, t(5)), &unaudited).await.unwrap();
    let twice = ControlRepository::add_evidence_source(store, &link_at(&control, &task, t(6)), &unaudited).await;
    assert!(matches!(twice, Err(RepoError::Conflict(_))), "one link in force at a time: {twice:?}");
    observe(store, &ours, &task, Pass, t(7)).await;

    // What each moment held: (links' creation times, the latest evidence's time).
    let held = |states: Vec<compliance_ports::ControlEvidenceState>| {
        let first = &states[0];
        assert!(states[1].sources.is_empty() && states[1].latest.is_empty(), "{:?}", states[1]);
        let links: Vec<Timestamp> = first.sources.iter().map(|s| s.created_at).collect();
        let latest: Vec<Timestamp> = first.latest.iter().map(|e| e.collected_at).collect();
        (links, latest)
    };
    assert_eq!(held(state(t(0)).await), (vec![], vec![]));
    assert_eq!(held(state(t(1)).await), (vec![t(1)], vec![]));
    assert_eq!(held(state(t(2)).await), (vec![t(1)], vec![t(2)]));
    let just_before = t(3).plus(-time::Duration::microseconds(1));
    assert_eq!(held(state(just_before).await), (vec![t(1)], vec![t(2)]), "in force up to its removal");
    assert_eq!(held(state(t(3)).await), (vec![], vec![]), "not at it");
    assert_eq!(held(state(t(4)).await), (vec![], vec![]));
    assert_eq!(held(state(t(5)).await), (vec![t(5)], vec![]), "made again: the first link's evidence is not its");
    assert_eq!(held(state(t(7)).await), (vec![t(5)], vec![t(7)]));
    assert_eq!(state(t(7)).await[0].sources[0].removed_at, None);

    // The failure while unlinked recorded nothing for the control; the other organization's
    // control, linked to the same id, got every observation of its own organization: none.
    let page = ControlRepository::list_evidence(store, &ours.id, &control.id, &all()).await.unwrap();
    let collected: Vec<Timestamp> = page.items.iter().map(|e| e.collected_at).collect();
    assert_eq!(collected, [t(7), t(2)]);
    let theirs_now =
        ControlRepository::evidence_state(store, &theirs.id, std::slice::from_ref(&foreign.id), t(7)).await.unwrap();
    assert_eq!((theirs_now[0].sources.len(), theirs_now[0].latest.len()), (1, 0));
    let crossed = ControlRepository::evidence_state(store, &theirs.id, &ids, t(7)).await.unwrap();
    assert!(crossed.iter().all(|s| s.sources.is_empty() && s.latest.is_empty()), "{crossed:?}");

    // An uploaded file is the control's latest file from its upload.
    let file = compliance_domain::control::Evidence::file(&other, "report.pdf", "application/pdf", 3, None, t(2));
    ControlRepository::insert_evidence(store, &file, &unaudited).await.unwrap();
    let files = |states: Vec<compliance_ports::ControlEvidenceState>| states[1].latest_file.clone().map(|f| f.id);
    assert_eq!(files(state(t(1)).await), None);
    assert_eq!(files(state(t(7)).await), Some(file.id.clone()));

    // Deleting the control deletes its links, their history included.
    ControlRepository::delete_control(store, &ours.id, &control.id, &IfMatch::Any, &unaudited).await.unwrap();
    ControlRepository::insert_control(store, &control, &unaudited).await.unwrap();
    assert_eq!(held(state(t(2)).await), (vec![], vec![]));
}
contract!(evidence_source_history);

/// Mappings and their history: a removed mapping stays in force for the moments before its
/// removal, is no longer listed, and can be made again; a framework whose mappings were all
/// removed is deleted with their history.
async fn requirement_mapping_history(db: &TestDb) {
    use compliance_domain::framework::{FrameworkSource, FrameworkWithRequirements, NewFramework};
    use compliance_ports::{ControlRequirementRepository, FrameworkRepository};
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let control = control_in(store, &ours, "Backups").await;
    let input: NewFramework = from_json(json!({"name": "Baseline", "version": "1", "requirements": [
        {"identifier": "BL-1", "title": "One"}, {"identifier": "BL-2", "title": "Two"}]}));
    let draft = input.into_draft(FrameworkSource::Custom).unwrap().validate().unwrap();
    let framework = FrameworkWithRequirements::create(ours.id.clone(), draft, Timestamp::now());
    FrameworkRepository::insert_framework(store, &framework, &unaudited).await.unwrap();
    let (fw, bl1, bl2) = (&framework.framework.id, &framework.requirements[0].id, &framework.requirements[1].id);
    let t = |hour: i64| Timestamp::parse("2030-01-01T00:00:00Z").unwrap().plus(time::Duration::hours(hour));

    store.map_requirement(&ours.id, &control.id, bl1, t(1), &unaudited).await.unwrap();
    let removed = store.unmap_requirement(&ours.id, &control.id, bl1, t(3), &unaudited).await.unwrap();
    assert_eq!((removed.created_at, removed.removed_at), (t(1), Some(t(3))));
    let again = store.unmap_requirement(&ours.id, &control.id, bl1, t(3), &unaudited).await;
    assert!(matches!(again, Err(RepoError::NotFound)), "{again:?}");
    store.map_requirement(&ours.id, &control.id, bl1, t(5), &unaudited).await.unwrap();
    let twice = store.map_requirement(&ours.id, &control.id, bl1, t(6), &unaudited).await;
    assert!(matches!(twice, Err(RepoError::Conflict(_))), "one mapping in force at a time: {twice:?}");
    store.map_requirement(&ours.id, &control.id, bl2, t(6), &unaudited).await.unwrap();

    let mapped = async |at| {
        let found = store.framework_controls(&ours.id, fw, at).await.unwrap();
        found.into_iter().map(|(requirement, c)| (requirement, c.id)).collect::<Vec<_>>()
    };
    assert!(mapped(t(0)).await.is_empty());
    assert_eq!(mapped(t(1)).await, [(bl1.clone(), control.id.clone())]);
    assert_eq!(mapped(t(3).plus(-time::Duration::microseconds(1))).await, [(bl1.clone(), control.id.clone())]);
    assert!(mapped(t(3)).await.is_empty());
    assert_eq!(mapped(t(5)).await, [(bl1.clone(), control.id.clone())]);
    assert_eq!(mapped(t(6)).await.len(), 2);
    let other = organization(store, "Theirs").await;
    assert!(store.framework_controls(&other.id, fw, t(6)).await.unwrap().is_empty());

    // Listed: the mappings in force only.
    let listed = store.control_requirements(&ours.id, &control.id).await.unwrap();
    let listed: Vec<_> = listed.iter().map(|m| (m.identifier.as_str(), m.mapping.created_at)).collect();
    assert_eq!(listed, [("BL-1", t(5)), ("BL-2", t(6))]);

    // Mapped, the framework stays; with every mapping removed, it goes with their history.
    let refused = FrameworkRepository::delete_framework(store, &ours.id, fw, &IfMatch::Any, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::Conflict(_))), "{refused:?}");
    store.unmap_requirement(&ours.id, &control.id, bl1, t(7), &unaudited).await.unwrap();
    store.unmap_requirement(&ours.id, &control.id, bl2, t(7), &unaudited).await.unwrap();
    FrameworkRepository::delete_framework(store, &ours.id, fw, &IfMatch::Any, &unaudited).await.unwrap();
}
contract!(requirement_mapping_history);

/// The statements a read of controls' statuses sends do not grow with the controls, their links
/// or their evidence.
async fn evidence_state_statements(db: &TestDb) {
    use compliance_domain::control::EvidenceOutcome::Pass;
    let store = &db.store;
    let ours = organization(store, "Ours").await;
    let mut controls = Vec::new();
    for n in 0..40 {
        let control = control_in(store, &ours, &format!("Control {n}")).await;
        for _ in 0..3 {
            let task = compliance_domain::TaskId::generate().to_string();
            ControlRepository::add_evidence_source(store, &link_at(&control, &task, Timestamp::now()), &unaudited)
                .await
                .unwrap();
            observe(store, &ours, &task, Pass, Timestamp::now()).await;
        }
        controls.push(control.id);
    }
    let count = async |ids: &[compliance_domain::ControlId]| {
        let before = store.statements();
        let states = ControlRepository::evidence_state(store, &ours.id, ids, Timestamp::now()).await.unwrap();
        assert!(states.iter().all(|s| s.sources.len() == 3 && s.latest.len() == 3), "{states:?}");
        store.statements() - before
    };
    let (one, forty) = (count(&controls[..1]).await, count(&controls).await);
    assert_eq!(one, forty, "statements for 1 control and for 40");
    assert_eq!(one, 3, "the links with their latest evidence's ids, the latest files, the evidence rows");
}
contract!(evidence_state_statements);

struct Now;

impl compliance_ports::Clock for Now {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// Every perfect subtree of `leaves`, up to 32 leaves high, with its hash.
fn subtrees(leaves: &[compliance_domain::merkle::Hash]) -> Vec<(NodeId, compliance_domain::merkle::Hash)> {
    let mut all = Vec::new();
    for level in 0..=5_u32 {
        for (index, chunk) in leaves.chunks_exact(1 << level).enumerate() {
            let mut tree = compliance_domain::merkle::Frontier::default();
            chunk.iter().for_each(|leaf| drop(tree.push(*leaf)));
            all.push((NodeId { level, index: index as u64 }, tree.root()));
        }
    }
    all
}

/// The store keeps only some of the tree's subtrees (docs/store.md, "The audit log"): whatever
/// it keeps, every perfect subtree of a sealed tree is answered with its hash, before pruning and
/// after it deleted every entry.
async fn every_subtree_of_the_audit_tree_is_answered(db: &TestDb) {
    let store = &db.store;
    let org = organization(store, "Merkle").await;
    for _ in 0..40 {
        let draft =
            compliance_domain::audit::AuditDraft { organization_id: org.id.clone(), ..unaudited::<()>(None, None) };
        AuditRepository::append_audit(store, &draft).await.unwrap();
    }
    let sign: &compliance_ports::SignTreeHead<'_> = &|_| {};
    while store.seal_queued(1_000, &Now, sign).await.unwrap().entries > 0 {}
    let mut leaves = Vec::new();
    for seq in 1.. {
        let Some(entry) = store.sealed_entry(&org.id, seq).await.unwrap() else { break };
        leaves.push(compliance_domain::merkle::from_hex(&entry.seal.unwrap().hash).unwrap());
    }
    assert!(leaves.len() >= 40, "the organization's entries and the 40 appended");
    let expected = subtrees(&leaves);
    let nodes: Vec<NodeId> = expected.iter().map(|(node, _)| *node).collect();
    let answered = |found: std::collections::HashMap<NodeId, _>| {
        expected.iter().filter(|(node, hash)| found.get(node) != Some(hash)).map(|(node, _)| *node).collect::<Vec<_>>()
    };
    let wrong = answered(store.tree_nodes(&org.id, &nodes).await.unwrap());
    assert!(wrong.is_empty(), "subtrees answered wrong or not at all: {wrong:?}");

    let pruned = store.prune_audit(&org.id, Timestamp::now(), Timestamp::now(), sign).await.unwrap();
    assert_eq!(pruned as usize, leaves.len(), "every entry was older than now");
    let wrong = answered(store.tree_nodes(&org.id, &nodes).await.unwrap());
    assert!(wrong.is_empty(), "after pruning, subtrees answered wrong or not at all: {wrong:?}");
}

contract!(every_subtree_of_the_audit_tree_is_answered);

// ---------------------------------------------------------------------------------------------
// Check runs: schedule once per period, claims under a lease, finish once, findings by tenant.

fn check_result(id: &str, outcome: compliance_domain::check::CheckOutcome) -> CheckResult {
    let resource = CheckedResource { kind: "github.repository".into(), id: id.into(), name: id.into(), region: None };
    CheckResult::judged("github.repo.dependabot", resource, outcome, format!("{id} is {outcome}"))
}

async fn claim(store: &Store, at: Timestamp) -> Option<CheckRun> {
    CheckRunRepository::claim_check_run(store, at, at.plus(time::Duration::minutes(10)), &[], &[]).await.unwrap()
}

async fn check_runs(db: &TestDb) {
    use compliance_domain::check::CheckOutcome::{Fail, Pass};
    let store = &db.store;
    let (ours, theirs) = (organization(store, "Ours").await, organization(store, "Theirs").await);
    let (ada, bob) = (person(store, &ours, "ada@ours.test").await, person(store, &theirs, "bob@theirs.test").await);
    let now = Timestamp::now();
    let (our_github, their_github) = (connection(&ours, "github", &ada, now), connection(&theirs, "github", &bob, now));
    for c in [&our_github, &their_github] {
        ConnectionRepository::insert(store, c, &unaudited, &no_links()).await.unwrap();
    }

    // Scheduling: each active connection once per period, however often it is asked.
    let due = store.due_connections(&["github"], 7, 10).await.unwrap();
    assert_eq!(due.len(), 2);
    assert!(store.due_connections(&["aws"], 7, 10).await.unwrap().is_empty(), "only the providers named");
    let scheduled =
        |c: &Connection| CheckRun::scheduled(c.organization_id.clone(), c.id.clone(), "github".into(), 7, now);
    let ours_scheduled = scheduled(&our_github);
    let queued =
        store.queue_scheduled(&[ours_scheduled.clone(), scheduled(&their_github), scheduled(&our_github)]).await;
    assert_eq!(queued.unwrap(), 2, "a second run of one connection and period is skipped");
    assert!(store.due_connections(&["github"], 7, 10).await.unwrap().is_empty());
    let manual = CheckRun::manual(
        ours.id.clone(),
        our_github.id.clone(),
        "github".into(),
        ada.user.id.clone(),
        now.plus(time::Duration::seconds(1)),
    );
    store.queue_check_run(&manual, &unaudited).await.unwrap();
    let twice = CheckRun::manual(ours.id.clone(), our_github.id.clone(), "github".into(), ada.user.id.clone(), now);
    let refused = store.queue_check_run(&twice, &unaudited).await;
    assert!(matches!(refused, Err(RepoError::Conflict(_))), "one asked-for run waits at a time: {refused:?}");

    // Claims: oldest first; a connection's second run waits while its first is held.
    let (a, b) = (claim(store, now).await.unwrap(), claim(store, now).await.unwrap());
    // Both scheduled runs were queued at the same moment: their order is their ids'.
    let (first, second) = if a.connection_id == our_github.id { (a, b) } else { (b, a) };
    assert_eq!(
        (first.connection_id.clone(), second.connection_id.clone()),
        (our_github.id.clone(), their_github.id.clone())
    );
    assert_eq!((first.status, first.attempts), (CheckRunStatus::Running, 1));
    assert!(claim(store, now).await.is_none(), "the manual run waits for its connection's held run");

    // Finishing stores the run, its population and the findings, once.
    let results = [check_result("ours/api", Pass), check_result("ours/web", Fail)];
    let context = RunContext {
        organization_id: &ours.id,
        connection_id: &our_github.id,
        run_id: &first.id,
        now,
        deadlines: FindingDeadlines::default(),
    };
    let read = ["github.repo.dependabot".to_owned()];
    let changes = reconcile(&[], &results, &read, |_| CheckSeverity::High, &context);
    let done = first.finished(&results, now);
    store.finish_check_run(&done, &results, &changes, Vec::new(), &[], &unaudited).await.unwrap();
    assert_eq!(store.get_check_run(&ours.id, &first.id).await.unwrap(), done);
    let again = store.finish_check_run(&done, &results, &changes, Vec::new(), &[], &unaudited).await;
    assert!(matches!(again, Err(RepoError::NotFound)), "a run no longer held is not stored twice: {again:?}");
    let page = store.check_results_of(&ours.id, &first.id, &PageRequest::first(1)).await.unwrap();
    assert_eq!((page.total, page.items.clone()), (2, vec![results[0].clone()]));
    let rest = PageRequest { after: page.next, ..PageRequest::first(1) };
    assert_eq!(store.check_results_of(&ours.id, &first.id, &rest).await.unwrap().items, vec![results[1].clone()]);
    let findings = store.connection_findings(&ours.id, &our_github.id).await.unwrap();
    assert_eq!(findings, changes.opened, "the finding round-trips exactly");

    // A lapsed lease: another claim takes the run again; the first claim can no longer store it.
    let manual_claim = claim(store, now).await.unwrap();
    assert_eq!(manual_claim.id, manual.id);
    let later = now.plus(time::Duration::minutes(11));
    let reclaimed = claim(store, later).await.unwrap();
    assert!(reclaimed.id == manual.id || reclaimed.id == second.id, "a lapsed run is claimed again");
    let reclaimed = if reclaimed.id == manual.id { reclaimed } else { claim(store, later).await.unwrap() };
    assert_eq!((reclaimed.id.clone(), reclaimed.attempts), (manual.id.clone(), 2));
    let stale = store.fail_check_run(&manual_claim.failed("late", later), &unaudited).await;
    assert!(matches!(stale, Err(RepoError::NotFound)), "{stale:?}");
    store.release_check_runs(&[(manual_claim.id.clone(), manual_claim.attempts)]).await.unwrap();
    let still = store.get_check_run(&ours.id, &manual.id).await.unwrap();
    assert_eq!(still.status, CheckRunStatus::Running, "a release by an older claim leaves the new one");
    store.release_check_runs(&[(reclaimed.id.clone(), reclaimed.attempts)]).await.unwrap();
    let given_back = store.get_check_run(&ours.id, &manual.id).await.unwrap();
    assert_eq!(
        (given_back.status, given_back.attempts),
        (CheckRunStatus::Queued, 1),
        "a release does not count the attempt"
    );

    // Tenants: another organization's run, results and findings are missing.
    assert!(matches!(store.get_check_run(&theirs.id, &first.id).await, Err(RepoError::NotFound)));
    assert_eq!(store.check_results_of(&theirs.id, &first.id, &all()).await.unwrap().total, 0);
    let theirs_findings = store.list_findings(&theirs.id, &every()).await.unwrap();
    assert!(theirs_findings.items.is_empty());
    let finding = &findings[0];
    assert!(matches!(store.get_finding(&theirs.id, &finding.id).await, Err(RepoError::NotFound)));

    // Lists filter, search and page.
    let mut by_status: CheckRunQuery = every();
    by_status.filter.status = vec![CheckRunStatus::Finished];
    assert_eq!(store.list_check_runs(&ours.id, &by_status).await.unwrap().items, vec![done.clone()]);
    let mut searched: FindingQuery = every();
    searched.search = Some(compliance_ports::Search { words: vec!["web".into()] });
    assert_eq!(store.list_findings(&ours.id, &searched).await.unwrap().items.len(), 1);
    searched.search = Some(compliance_ports::Search { words: vec!["nowhere".into()] });
    assert!(store.list_findings(&ours.id, &searched).await.unwrap().items.is_empty());

    // An exception, written only over the state it was read with; lapsed ones are found.
    let excepted = Finding {
        status: FindingStatus::Excepted,
        exception: Some(FindingException {
            reason: "legacy".into(),
            expires_at: now.plus(time::Duration::hours(1)),
            granted_by: ada.user.id.clone(),
            granted_at: now,
        }),
        updated_at: now.plus(time::Duration::seconds(5)),
        ..finding.clone()
    };
    let stale = store.update_finding(&excepted, now.plus(time::Duration::seconds(-1)), &unaudited).await;
    assert!(matches!(stale, Err(RepoError::NotFound)), "{stale:?}");
    store.update_finding(&excepted, finding.updated_at, &unaudited).await.unwrap();
    assert_eq!(store.get_finding(&ours.id, &finding.id).await.unwrap(), excepted);
    assert!(store.lapsed_exceptions(now, 10).await.unwrap().is_empty());
    assert_eq!(store.lapsed_exceptions(now.plus(time::Duration::hours(2)), 10).await.unwrap(), vec![excepted]);

    // A run that read the finding before the exception may not overwrite it: nothing is stored.
    let much_later = now.plus(time::Duration::hours(3));
    let mut rerun = claim(store, much_later).await.unwrap();
    while rerun.id != manual.id {
        rerun = claim(store, much_later).await.unwrap();
    }
    let context = RunContext { run_id: &rerun.id, now: much_later, ..context };
    let stale = reconcile(&findings, &results, &read, |_| CheckSeverity::High, &context);
    assert_eq!(stale.seen_again.len(), 1);
    let refused = store
        .finish_check_run(&rerun.finished(&results, much_later), &results, &stale, Vec::new(), &[], &unaudited)
        .await;
    assert!(matches!(refused, Err(RepoError::Conflict(_))), "{refused:?}");
    assert_eq!(
        store.get_check_run(&ours.id, &rerun.id).await.unwrap().status,
        CheckRunStatus::Running,
        "nothing stored"
    );
}

contract!(check_runs);

contract!(adoption_is_one_transaction);

/// An adoption reads what the organization holds in its transaction and writes all of its plan or
/// nothing: a plan that breaks a constraint part-way (a second record of the same template)
/// leaves no framework, control, policy or entry behind; another organization's records are never
/// among the holdings.
async fn adoption_is_one_transaction(db: &TestDb) {
    use compliance_domain::framework::{FrameworkWithRequirements, template};
    use compliance_domain::library::adoption::{self, AdoptionOptions, Holdings};
    use compliance_domain::library::library;
    use compliance_ports::{AdoptionAudits, ControlRepository, FrameworkQuery, FrameworkRepository, LibraryRepository};
    let store = &db.store;
    let (ours, theirs) = (organization(store, "Ours").await, organization(store, "Theirs").await);
    let audits = AdoptionAudits {
        framework: &unaudited,
        control: &unaudited,
        policy: &unaudited,
        task: &unaudited,
        mapping: &unaudited,
        source: &unaudited,
    };
    let planner = |org: &Organization, key: &'static str, seen: std::sync::Arc<std::sync::Mutex<Option<Holdings>>>| {
        let framework =
            FrameworkWithRequirements::create(org.id.clone(), template(key).unwrap().draft.clone(), Timestamp::now());
        move |holdings: &Holdings| {
            *seen.lock().unwrap() = Some(holdings.clone());
            let options = AdoptionOptions::default();
            adoption::plan(library(), key, framework.clone(), options, holdings, "Ours", Timestamp::now())
                .map_err(|(id, _)| RepoError::Internal(id))
        }
    };
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));

    // Theirs adopts first: none of it is ours to hold.
    let plan = planner(&theirs, "soc2-2017", seen.clone());
    let made = store.adopt(&theirs.id, &plan, &audits).await.unwrap();
    assert!(!made.controls.is_empty() && !made.policies.is_empty());

    // A plan that makes a template's control twice fails at the second, and nothing stays.
    let plan = planner(&ours, "soc2-2017", seen.clone());
    let broken = |holdings: &Holdings| {
        let mut adoption = plan(holdings)?;
        let mut twin = adoption.controls[0].clone();
        twin.record.id = compliance_domain::ControlId::generate();
        adoption.controls.push(twin);
        Ok(adoption)
    };
    let refused = store.adopt(&ours.id, &broken, &audits).await;
    assert!(refused.is_err(), "{refused:?}");
    let held = seen.lock().unwrap().clone().unwrap();
    assert!(held.controls.is_empty() && held.policies.is_empty() && held.tasks.is_empty(), "{held:?}");
    let frameworks = store
        .list_frameworks(&ours.id, &FrameworkQuery::unfiltered(compliance_ports::PageRequest::first(10)))
        .await
        .unwrap();
    assert_eq!(frameworks.items.len(), 0);
    let page = compliance_ports::PageRequest::first(10);
    let controls = store.list_controls(&ours.id, &Default::default(), &page).await.unwrap();
    assert_eq!(controls.items.len(), 0);

    // The plan as made: written whole; a second framework reuses the controls it holds.
    let made = store.adopt(&ours.id, &plan, &audits).await.unwrap();
    let plan = planner(&ours, "iso27001-2022", seen.clone());
    let iso = store.adopt(&ours.id, &plan, &audits).await.unwrap();
    let held = seen.lock().unwrap().clone().unwrap();
    assert_eq!(held.controls.len(), made.controls.len());
    assert_eq!(held.policies.len(), made.policies.len());
    assert!(
        !iso.reused_controls.is_empty() && iso.reused_controls.iter().all(|id| held.controls.values().any(|h| h == id))
    );
    let control = store.get_control(&ours.id, &made.controls[0].record.id).await.unwrap();
    assert_eq!(control.library, made.controls[0].record.library);
}
