//! In-memory implementations of the ports, one module per family, and a [`World`] that wires them
//! into an [`App`] the way `compliance-server` wires the real adapters, with a [`FakeClock`].

pub mod audit;
pub mod automations;
pub mod blobs;
pub mod browser;
pub mod chat;
pub mod check_runs;
pub mod clock;
pub mod comments;
pub mod controls;
pub mod devices;
pub mod frameworks;
pub mod idempotency;
pub mod integrations;
pub mod people;
pub mod policies;
pub mod printer;
pub mod records;
pub mod vault;
pub mod webhooks;

use std::sync::Arc;
use std::time::Duration;

use compliance_app::{
    App, AuthType, AutomationSettings, Credentials, IssuedApiKey, PolicyReviewSettings, Ports, Principal, Settings,
    WebhookSettings,
};
use compliance_domain::chat::ChatLimits;
use compliance_domain::comment::AttachmentLimits;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{Cursor, NoEventFeed, Page, PageRequest};
use secrecy::SecretString;

pub use audit::Drafts;
pub use automations::MemoryAutomations;
pub use blobs::MemoryBlobs;
pub use browser::{FakeBrowser, Page as BrowserPage};
pub use chat::MemoryChat;
pub use check_runs::{NoCheckRuns, NoLibrary};
pub use clock::FakeClock;
pub use comments::MemoryComments;
pub use controls::MemoryControls;
pub use devices::FakeDevices;
pub use frameworks::MemoryFrameworks;
pub use idempotency::MemoryIdempotency;
pub use integrations::{FakeProvider, MemoryLeases, MemoryOAuthStates};
pub use people::{MemoryCredentials, MemoryMembers, MemoryOrganizations, MemoryUsers};
pub use policies::MemoryPolicies;
pub use printer::FakePrinter;
pub use records::{IdRenderer, MemoryGenerations, MemoryRisks, MemoryTasks, NoAudit, NoRecords, Unchanging};
pub use vault::{BindingCipher, MemoryConnections, MemorySecrets};
pub use webhooks::{MemoryAllowedHosts, MemoryWebhooks, RefusingSender};

/// Where the fake clock starts: a Monday at noon, UTC.
pub fn start() -> Timestamp {
    Timestamp::parse("2030-06-03T12:00:00Z").unwrap()
}

/// The production defaults, with the short ones the tests name.
pub fn settings() -> Settings {
    Settings {
        attachments: AttachmentLimits::default(),
        list_max_rows: 100,
        download_ttl: Duration::from_secs(15 * 60),
        public_url: "https://compliance.test".into(),
        url_signing_key: b"k".repeat(32),
        chat_limits: ChatLimits::default(),
        chat_ttl: Duration::from_secs(7 * 24 * 60 * 60),
        automations: AutomationSettings::default(),
        auth_cache_ttl: Duration::from_secs(5),
        session_ttl: time::Duration::hours(168),
        self_service_organizations: true,
        invitation_ttl: time::Duration::days(7),
        audit_signing_key: b"a".repeat(32),
        audit_sequencer: compliance_app::SequencerSettings::default(),
        webhooks: WebhookSettings::default(),
        policy_reviews: PolicyReviewSettings::default(),
        idempotency: compliance_app::IdempotencySettings::default(),
        documents: compliance_app::DocumentSettings::default(),
        integrations: compliance_app::IntegrationSettings {
            catalog: Arc::new(integrations::catalog()),
            redirect_origins: Vec::new(),
        },
        checks: compliance_app::CheckRunSettings::default(),
    }
}

/// One App over in-memory ports, and handles on those ports for the tests to look into.
pub struct World {
    pub app: App,
    pub clock: Arc<FakeClock>,
    /// The audit drafts the stores of evidence sources made (tasks, policies, connections,
    /// automations and runs), oldest first.
    pub drafts: Drafts,
    pub members: Arc<MemoryMembers>,
    pub credentials: Arc<MemoryCredentials>,
    pub comments: Arc<MemoryComments>,
    pub secrets: Arc<MemorySecrets>,
    pub connections: Arc<MemoryConnections>,
    pub automations: Arc<MemoryAutomations>,
    pub blobs: Arc<MemoryBlobs>,
    pub browser: Arc<FakeBrowser>,
    pub chat: Arc<MemoryChat>,
    pub generations: Arc<MemoryGenerations>,
    pub policies: Arc<MemoryPolicies>,
    pub idempotency: Arc<MemoryIdempotency>,
    pub devices: Arc<FakeDevices>,
    pub webhooks: Arc<MemoryWebhooks>,
    pub printer: Arc<FakePrinter>,
    pub provider: Arc<FakeProvider>,
    pub leases: Arc<MemoryLeases>,
    ports: Ports,
    settings: Settings,
}

/// An organization and its owner, signed in with a session.
pub struct Tenant {
    pub org: OrganizationId,
    pub owner: Principal,
}

impl World {
    pub fn new() -> Self {
        Self::with(settings())
    }

    pub fn with(settings: Settings) -> Self {
        Self::build(settings, None)
    }

    /// A world whose automations' free-text runs ask `model`.
    pub fn with_model(settings: Settings, model: Arc<dyn compliance_ports::AgentModel>) -> Self {
        Self::build(settings, Some(model))
    }

    fn build(settings: Settings, agent_model: Option<Arc<dyn compliance_ports::AgentModel>>) -> Self {
        let clock = Arc::new(FakeClock::at(start()));
        let drafts = Drafts::default();
        let users = Arc::new(MemoryUsers::default());
        let members = Arc::new(MemoryMembers::new(users.clone()));
        let credentials = Arc::new(MemoryCredentials::default());
        let comments = Arc::new(MemoryComments::new(users.clone(), members.clone()));
        let automations = Arc::new(MemoryAutomations::new(drafts.clone()));
        let blobs = Arc::new(MemoryBlobs::default());
        let browser = Arc::new(FakeBrowser::default());
        let chat = Arc::new(MemoryChat::new(clock.clone()));
        let secrets = Arc::new(MemorySecrets::default());
        let connections = Arc::new(MemoryConnections::new(drafts.clone()));
        let generations = Arc::new(MemoryGenerations::default());
        let policies = Arc::new(MemoryPolicies::new(comments.clone(), drafts.clone()));
        let idempotency = Arc::new(MemoryIdempotency::default());
        let devices = Arc::new(FakeDevices::default());
        let webhooks = Arc::new(MemoryWebhooks::default());
        let allowed_hosts = Arc::new(MemoryAllowedHosts::default());
        let controls = Arc::new(MemoryControls::new(drafts.clone()));
        let frameworks = Arc::new(MemoryFrameworks::new(controls.clone()));
        let printer = Arc::new(FakePrinter::default());
        let provider = Arc::new(FakeProvider::default());
        let leases = Arc::new(MemoryLeases::default());
        let ports = Ports {
            organizations: Arc::new(MemoryOrganizations::default()),
            users,
            members: members.clone(),
            credentials: credentials.clone(),
            sessions: Arc::new(people::NoIdentity),
            sign_in: Arc::new(people::NoIdentity),
            invitations: Arc::new(people::NoIdentity),
            identity: None,
            context: Arc::new(NoRecords),
            policies: policies.clone(),
            vendors: Arc::new(NoRecords),
            controls,
            control_requirements: frameworks.clone(),
            risks: Arc::new(MemoryRisks::new(comments.clone())),
            tasks: Arc::new(MemoryTasks::new(comments.clone(), drafts.clone())),
            list_generations: generations.clone(),
            comments: comments.clone(),
            automations: automations.clone(),
            blobs: blobs.clone(),
            devices: devices.clone(),
            browser: browser.clone(),
            printer: printer.clone(),
            chat: chat.clone(),
            health: Arc::new(Unchanging),
            clock: clock.clone(),
            connections: connections.clone(),
            oauth_states: Arc::new(MemoryOAuthStates::default()),
            refresh_leases: leases.clone(),
            provider_client: provider.clone(),
            secrets: secrets.clone(),
            cipher: Arc::new(BindingCipher),
            agent_model,
            audit: Arc::new(NoAudit),
            renderer: Arc::new(IdRenderer),
            webhooks: webhooks.clone(),
            event_feed: Arc::new(NoEventFeed),
            webhook_sender: Arc::new(RefusingSender),
            idempotency: idempotency.clone(),
            allowed_hosts: allowed_hosts.clone(),
            frameworks,
            check_runs: Arc::new(NoCheckRuns),
            library: Arc::new(NoLibrary),
            check_reader: Arc::new(compliance_ports::NoCheckReader),
        };
        let app = App::new(ports.clone(), settings.clone());
        Self {
            app,
            clock,
            drafts,
            members,
            credentials,
            comments,
            secrets,
            connections,
            automations,
            blobs,
            browser,
            chat,
            generations,
            policies,
            idempotency,
            devices,
            webhooks,
            printer,
            provider,
            leases,
            ports,
            settings,
        }
    }

    /// Another server instance: its own App (caches, worker) over the same stores and clock.
    pub fn another_instance(&self) -> App {
        App::new(self.ports.clone(), self.settings.clone())
    }

    /// A new organization with an owner, through the operator's use cases.
    pub async fn tenant(&self) -> Tenant {
        let org = self.app.admin.create_organization("Acme".into(), None).await.unwrap();
        let owner = self.member(&org.id, "owner").await;
        Tenant { org: org.id, owner }
    }

    /// A new user with `role` in `org`, signed in with a session.
    pub async fn member(&self, org: &OrganizationId, role: &str) -> Principal {
        let email = format!("{}@acme.test", compliance_domain::UserId::generate());
        let user = self.app.admin.create_user(email, "Ada".into()).await.unwrap();
        self.app.admin.add_member(org.clone(), user.id.clone(), role.into(), None).await.unwrap();
        let issued = self.app.admin.create_session(user.id, time::Duration::days(1)).await.unwrap();
        let principal = self.app.auth.authenticate(session(&issued.token, org)).await.unwrap();
        assert_eq!(principal.auth_type, AuthType::Session);
        principal
    }

    /// A new API key of the organization made by `by`, and the principal it authenticates.
    pub async fn api_key(&self, by: &Principal) -> (IssuedApiKey, Principal) {
        let issued = self
            .app
            .admin
            .create_api_key(by.organization_id.clone(), by.user_id.clone(), None, None, None)
            .await
            .unwrap();
        let principal = self.app.auth.authenticate(api_key(&issued.secret)).await.unwrap();
        (issued, principal)
    }
}

pub fn session(token: &SecretString, org: &OrganizationId) -> Credentials {
    Credentials::Session { token: token.clone(), organization: Some(org.to_string()) }
}

pub fn api_key(key: &SecretString) -> Credentials {
    Credentials::ApiKey { key: key.clone(), organization: None }
}

/// A page of `rows` in list order (newest first by creation time, then id), as the stores answer.
pub fn newest_first<T>(mut rows: Vec<T>, page: &PageRequest, key: impl Fn(&T) -> Cursor) -> Page<T> {
    let created = |cursor: &Cursor| match cursor.values.first() {
        Some(compliance_ports::SortValue::Time(at)) => Some(*at),
        _ => None,
    };
    let order = |row: &T| {
        let cursor = key(row);
        (created(&cursor), cursor.id)
    };
    rows.sort_by_key(|row| std::cmp::Reverse(order(row)));
    let total = rows.len() as u64;
    if let Some(after) = &page.after {
        let after = (created(after), after.id.clone());
        rows.retain(|row| order(row) < after);
    }
    rows.truncate(page.limit + 1);
    Page::from_rows(rows, page, Some(total), key)
}

/// The value of query parameter `name` in `url`.
pub fn query(url: &str, name: &str) -> String {
    let (_, query) = url.split_once('?').unwrap_or_else(|| panic!("no query in {url}"));
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no `{name}` in {url}"))
        .to_owned()
}
