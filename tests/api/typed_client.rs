//! The typed client (`compliance-client`) against the real service: CRUD, streams that follow
//! `nextCursor`, typed problems, session authentication, tenant isolation, and retries of 429
//! (both backends) and 503 (PostgreSQL, whose database can be taken away) after `Retry-After`.

use std::time::{Duration, Instant};

use compliance_client::types::{
    AuthType, Department, Impact, NewRisk, NewVendor, RiskCategory, RiskChanges, RiskStatus, VendorChanges,
    VendorStatus,
};
use compliance_client::{Auth, Client, Error, ListRisksQuery, RetryPolicy};
use futures_util::TryStreamExt;

use crate::client::api_key;
use crate::harness::{Backend, Env, TestServer, run};
use crate::tenant::Tenant;

api_tests!(
    risks_are_created_read_changed_and_deleted,
    vendors_are_created_changed_and_deleted,
    streams_follow_next_cursor_across_pages,
    invalid_bodies_are_typed_problems_naming_the_field,
    sessions_act_in_their_organization_only,
    rate_limited_calls_wait_for_retry_after_and_succeed with SMALL_BURST,
);

const SMALL_BURST: Env = &[("RATE_LIMIT_PER_SECOND", "1"), ("RATE_LIMIT_BURST", "3")];

impl TestServer {
    /// A typed client of this server.
    pub fn typed(&self, auth: Auth) -> Client {
        Client::new(self.base_url(), auth).expect("a client of the test server")
    }

    /// A typed client with a fresh API key of `tenant`'s owner.
    pub async fn typed_api(&self, tenant: &Tenant) -> Client {
        self.typed(Auth::api_key(api_key(self, &tenant.org_id, &tenant.owner.id).await))
    }

    /// A typed client with a fresh session of `tenant`'s owner, acting in `organization_id`.
    pub async fn typed_session(&self, tenant: &Tenant, organization_id: &str) -> Client {
        let session = self.admin().create_session(&tenant.owner.id).await;
        let token = session["token"].as_str().expect("a session token");
        self.typed(Auth::session(token, organization_id))
    }
}

/// The API's problem in `result`, which must be an error with `status`.
fn problem<T: std::fmt::Debug>(result: Result<T, Error>, status: u16) -> compliance_client::ApiError {
    let error = result.expect_err("an error answer");
    let problem = error.api().unwrap_or_else(|| panic!("not a problem: {error:?}")).clone();
    assert_eq!(problem.status, status, "{problem}");
    assert!(problem.request_id.as_deref().is_some_and(|id| !id.is_empty()), "no requestId in {problem}");
    problem
}

async fn risks_are_created_read_changed_and_deleted(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = server.typed_api(&tenant).await;
    let mut new = NewRisk::new(RiskCategory::Technology, "No restore drill.".into(), "Backups untested".into());
    new.department = Some(Some(Department::It));
    let created = client.create_risk(&new).await.unwrap();
    assert!(created.id.starts_with("rsk_"), "{}", created.id);
    assert_eq!((created.title.as_str(), created.category), ("Backups untested", RiskCategory::Technology));
    assert_eq!(created.department, Some(Some(Department::It)));
    assert_eq!(created.status, RiskStatus::Open, "the specification's default");
    assert_eq!(created.auth_type, AuthType::ApiKey);
    assert_eq!(created.organization_id, Some(Some(tenant.org_id.clone())));

    let read = client.get_risk(&created.id).await.unwrap();
    assert_eq!((read.id.as_str(), read.updated_at.as_str()), (created.id.as_str(), created.updated_at.as_str()));

    // absent members stay, `null` clears
    let changes = RiskChanges { status: Some(RiskStatus::Closed), department: Some(None), ..RiskChanges::default() };
    let changed = client.update_risk(&created.id, &changes).await.unwrap();
    assert_eq!((changed.status, changed.department), (RiskStatus::Closed, Some(None)));
    assert_eq!((changed.title.as_str(), changed.impact), ("Backups untested", created.impact));

    let closed = ListRisksQuery { status: Some(vec![RiskStatus::Closed]), ..Default::default() };
    let list = client.list_risks(&closed).await.unwrap();
    assert_eq!(list.data.iter().map(|risk| risk.id.as_str()).collect::<Vec<_>>(), [created.id.as_str()]);
    assert_eq!(list.count, 1);

    let deleted = client.delete_risk(&created.id).await.unwrap();
    assert_eq!(deleted.deleted_risk.id, created.id);
    let gone = problem(client.get_risk(&created.id).await, 404);
    assert_eq!(gone.kind(), "not-found");
}

async fn vendors_are_created_changed_and_deleted(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = server.typed_api(&tenant).await;
    let mut new = NewVendor::new("Hosts our data.".into(), "Cloudy".into());
    new.website = Some(Some("https://cloudy.example.test".into()));
    let vendor = client.create_vendor(&new).await.unwrap();
    assert_eq!(vendor.status, VendorStatus::NotAssessed, "the specification's default");
    assert_eq!(vendor.website, Some(Some("https://cloudy.example.test".to_owned())));

    let changes =
        VendorChanges { residual_impact: Some(Impact::Major), website: Some(None), ..VendorChanges::default() };
    let changed = client.update_vendor(&vendor.id, &changes).await.unwrap();
    assert_eq!((changed.residual_impact, changed.website), (Impact::Major, Some(None)));
    assert_eq!(client.get_vendor(&vendor.id).await.unwrap().residual_impact, Impact::Major);

    assert_eq!(client.delete_vendor(&vendor.id).await.unwrap().deleted_vendor.id, vendor.id);
    assert_eq!(problem(client.get_vendor(&vendor.id).await, 404).kind(), "not-found");
}

async fn streams_follow_next_cursor_across_pages(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = server.typed_api(&tenant).await;
    for number in 0..5 {
        let new = NewRisk::new(RiskCategory::Other, "d".into(), format!("Risk {number}"));
        client.create_risk(&new).await.unwrap();
    }
    let pages_of_two = ListRisksQuery { limit: Some(2), ..Default::default() };
    let first = client.list_risks(&pages_of_two).await.unwrap();
    assert_eq!((first.data.len(), first.count), (2, 5));
    assert!(first.next_cursor.is_some(), "a first page of 2 out of 5 has a next cursor");

    let streamed: Vec<_> = client.list_risks_stream(pages_of_two).try_collect().await.unwrap();
    let whole = client.list_risks(&ListRisksQuery::default()).await.unwrap();
    assert_eq!(whole.next_cursor, None);
    let ids =
        |risks: &[compliance_client::types::RiskDto]| risks.iter().map(|risk| risk.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&streamed), ids(&whole.data), "three pages, in the list's order, nothing twice");

    // a bad cursor ends the stream with the problem
    let bad = ListRisksQuery { cursor: Some("not-a-cursor".into()), ..Default::default() };
    let error = client.list_risks_stream(bad).try_collect::<Vec<_>>().await;
    assert!(problem(error, 400).field_error("cursor").is_some());
}

async fn invalid_bodies_are_typed_problems_naming_the_field(server: &TestServer) {
    let tenant = server.tenant().await;
    let client = server.typed_api(&tenant).await;
    let blank = NewVendor::new("d".into(), "   ".into());
    let invalid = problem(client.create_vendor(&blank).await, 400);
    assert_eq!((invalid.kind(), invalid.problem_type.as_str()), ("validation", "/problems/validation"));
    assert!(!invalid.title.is_empty() && !invalid.detail.is_empty(), "{invalid:?}");
    assert!(invalid.field_error("name").is_some(), "{invalid:?}");
    assert_eq!(invalid.field_error("description"), None);
    assert!(invalid.to_string().contains("name"), "{invalid}");
    assert_eq!(client.list_vendors(&Default::default()).await.unwrap().count, 0, "nothing was created");
}

async fn sessions_act_in_their_organization_only(server: &TestServer) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    let session = server.typed_session(&tenant, &tenant.org_id).await;
    let risk = session.create_risk(&NewRisk::new(RiskCategory::People, "d".into(), "Mine".into())).await.unwrap();
    assert_eq!(risk.auth_type, AuthType::Session);
    assert_eq!(risk.authenticated_user.map(|user| user.email), Some(tenant.owner.email.clone()));
    let list = session.list_risks(&Default::default()).await.unwrap();
    assert_eq!((list.count, list.auth_type), (1, AuthType::Session));

    // the same session in an organization its user is not a member of
    let outsider = server.typed_session(&tenant, &other.org_id).await;
    assert_eq!(problem(outsider.list_risks(&Default::default()).await, 403).kind(), "forbidden");
    // another organization's key does not see the risk
    let other_key = server.typed_api(&other).await;
    assert_eq!(problem(other_key.get_risk(&risk.id).await, 404).kind(), "not-found");
    assert_eq!(other_key.list_risks(&Default::default()).await.unwrap().count, 0);
    // no credentials at all
    let anonymous = server.typed(Auth::Anonymous);
    assert_eq!(problem(anonymous.list_risks(&Default::default()).await, 401).status, 401);
}

/// A burst of 3 and a token a second: without retries the fourth quick call is a 429 carrying
/// `Retry-After`; with them, calls over the burst (a create among them) wait and succeed.
async fn rate_limited_calls_wait_for_retry_after_and_succeed(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = api_key(server, &tenant.org_id, &tenant.owner.id).await;
    let impatient =
        Client::builder(server.base_url(), Auth::api_key(&key)).retry(RetryPolicy::never()).build().unwrap();
    let mut limited = None;
    for _ in 0..20 {
        if let Err(error) = impatient.list_risks(&Default::default()).await {
            limited = Some(error);
            break;
        }
    }
    let limited = problem(Err::<(), _>(limited.expect("a 429 within 20 calls")), 429);
    assert_eq!(limited.kind(), "rate-limited");
    assert!(limited.retry_after.is_some_and(|wait| wait >= Duration::from_secs(1)), "{limited:?}");

    let patient = server.typed(Auth::api_key(&key));
    let started = Instant::now();
    for _ in 0..3 {
        patient.list_risks(&Default::default()).await.unwrap();
    }
    let risk = NewRisk::new(RiskCategory::Other, "d".into(), "Created after a 429".into());
    patient.create_risk(&risk).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "4 calls on an empty bucket took {:?}", started.elapsed());
    let list = patient.list_risks(&Default::default()).await.unwrap();
    assert_eq!(list.count, 1, "a create retried after 429 is made once");
}

#[tokio::test]
async fn postgres_unavailable_reads_are_retried_then_reported() {
    run(Backend::Postgres, |server| async move { unavailable_reads_are_retried_then_reported(&server).await }).await;
}

/// The database gone: a read is retried after each 503's `Retry-After` (1 s) and, attempts spent,
/// the 503 problem is returned; a create is answered 503 at the first attempt.
async fn unavailable_reads_are_retried_then_reported(server: &TestServer) {
    let tenant = server.tenant().await;
    let key = api_key(server, &tenant.org_id, &tenant.owner.id).await;
    let policy = RetryPolicy { max_attempts: 2, ..RetryPolicy::default() };
    let client = Client::builder(server.base_url(), Auth::api_key(key)).retry(policy).build().unwrap();
    client.list_risks(&Default::default()).await.unwrap();
    server.cut_database().await;

    let started = Instant::now();
    let unavailable = problem(client.list_risks(&Default::default()).await, 503);
    assert_eq!(unavailable.kind(), "unavailable");
    assert_eq!(unavailable.retry_after, Some(Duration::from_secs(1)));
    assert!(started.elapsed() >= Duration::from_secs(1), "the read was retried after 1 s: {:?}", started.elapsed());

    let create = client.create_risk(&NewRisk::new(RiskCategory::Other, "d".into(), "t".into())).await;
    assert_eq!(problem(create, 503).kind(), "unavailable");
}
