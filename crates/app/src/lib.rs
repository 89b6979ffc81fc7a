//! Use cases: one service per resource, holding the ports as trait objects.
//!
//! Tenant scoping, authentication and cross-record checks (an assignee must be an active member of
//! the same organization) live here; storage and delivery do not.

#![warn(missing_docs)]

pub mod access;
mod admin;
mod allowed_hosts;
mod api_keys;
mod assignees;
mod audit;
mod audit_log;
mod audit_sequencer;
mod audit_signing;
mod auth;
mod automation_agent;
mod automation_recorder;
mod automation_report;
mod automation_secrets;
mod automation_steps;
mod automation_worker;
mod automations;
mod blob_links;
pub mod bulk;
mod chat;
mod check_run_results;
mod check_run_worker;
mod check_runs;
mod checks;
mod comments;
mod context;
mod control_requirements;
mod controls;
mod devices;
mod error;
mod findings;
mod frameworks;
mod idempotency;
pub mod integrations;
mod invitations;
mod library;
mod organization;
mod organization_slots;
mod people;
mod policies;
mod policy_diff;
mod policy_document;
mod policy_lifecycle;
mod policy_review_worker;
mod principal_cache;
mod printing;
mod risks;
mod secret;
mod sessions;
mod sign_in;
mod signing;
mod task_lifecycle;
mod tasks;
mod vendors;
mod webhook_signing;
mod webhook_worker;
mod webhooks;
mod wiring;

use std::sync::Arc;

use compliance_domain::chat::ChatLimits;
use compliance_domain::comment::AttachmentLimits;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{
    AgentModel, AllowedHostRepository, AuditRepository, AutomationRepository, BlobStore, BrowserRunner, ChatStore,
    CheckReader, CheckRunRepository, Clock, CommentRepository, ConnectionRepository, ContextRepository,
    ControlRepository, ControlRequirementRepository, CredentialRepository, Cursor, DeviceDirectory, DocumentPrinter,
    EventFeed, FrameworkRepository, HealthCheck, IdempotencyRepository, IdentityProvider, InvitationRepository,
    LibraryRepository, ListGenerations, ListName, MemberRepository, OAuthStateRepository, OrganizationRepository,
    PageRequest, PolicyRepository, ProviderClient, RefreshLeases, ResourceRenderer, RiskRepository, SecretCipher,
    SecretRepository, SessionRepository, SignInRepository, TaskRepository, UserRepository, VendorRepository,
    WebhookRepository, WebhookSender,
};

pub use admin::{AdminService, Bootstrapped, DeviceLabelAssigned, Ensured, IssuedApiKey};
pub use allowed_hosts::AllowedHostService;
pub use api_keys::ApiKeyService;
pub use audit::{AuditTrail, Provenance, Subject};
pub use audit_log::{AuditService, ConsistencyProof, InclusionProof, SignedTreeHead, Verification};
pub use audit_sequencer::{AuditSequencer, SequencerSettings};
pub use audit_signing::TreeHeadSigner;
pub use auth::{AuthService, AuthType, Credentials, Principal};
pub use automation_agent::AgentSettings;
pub use automation_secrets::{AutomationSecrets, SecretView, SecretWritten};
pub use automation_worker::{AutomationSettings, AutomationWorker};
pub use automations::{AutomationService, RunView};
pub use blob_links::DownloadLink;
pub use chat::ChatService;
pub use check_run_worker::{CheckRunSettings, CheckRunWorker};
pub use check_runs::CheckRunService;
pub use checks::{CheckFilter, CheckService};
pub use comments::CommentService;
pub use context::ContextService;
pub use control_requirements::ControlRequirementService;
pub use controls::{ControlService, ControlView, EvidenceView};
pub use devices::DeviceService;
pub use error::AppError;
pub use findings::{EXCEPTION_REASON_MAX, FindingService};
pub use frameworks::{FrameworkService, FrameworkView, StatementOfApplicability};
pub use idempotency::{Decision, IdempotencyPruner, IdempotencyService, IdempotencySettings, fingerprint};
pub use integrations::{IntegrationService, IntegrationSettings};
pub use invitations::{InvitationService, IssuedInvitation};
pub use library::LibraryService;
pub use organization::{OWNER_ROLE, OrganizationService};
pub use people::PeopleService;
pub use policies::PolicyService;
pub use policy_diff::{DiffTarget, PolicyDiff};
pub use policy_document::{DocumentFormat, DocumentSettings, PolicyDocument, PolicyDocumentService};
pub use policy_lifecycle::{NOTE_MAX, PolicyToSign, Signatures};
pub use policy_review_worker::{PolicyReviewSettings, PolicyReviewWorker};
pub use principal_cache::PrincipalCache;
pub use risks::RiskService;
pub use sessions::{IssuedSession, Me, SessionService, SessionView, SignedInUser};
pub use sign_in::{Callback, SIGN_IN_TTL, SignInService, SignInStart, SignedIn, relative_redirect};
pub use signing::UrlSigner;
pub use tasks::TaskService;
pub use vendors::VendorService;
pub use webhook_worker::{AttemptCounts, DELIVERY_ATTEMPTS, WebhookSettings, WebhookWorker};
pub use webhooks::{IssuedWebhook, WebhookService};
pub use wiring::Adapters;

/// Everything the use cases need from the outside world.
#[derive(Clone)]
pub struct Ports {
    /// Organizations and their settings.
    pub organizations: Arc<dyn OrganizationRepository>,
    /// Users, across organizations.
    pub users: Arc<dyn UserRepository>,
    /// Memberships: a user's role in an organization.
    pub members: Arc<dyn MemberRepository>,
    /// API keys.
    pub credentials: Arc<dyn CredentialRepository>,
    /// A user's own sessions and memberships.
    pub sessions: Arc<dyn SessionRepository>,
    /// Sign-in attempts and the users' linked provider accounts.
    pub sign_in: Arc<dyn SignInRepository>,
    /// Invitations and their acceptance.
    pub invitations: Arc<dyn InvitationRepository>,
    /// The OpenID provider users sign in with; `None` when sign-in is not configured.
    pub identity: Option<Arc<dyn IdentityProvider>>,
    /// Context entries.
    pub context: Arc<dyn ContextRepository>,
    /// Policies, their versions and signatures.
    pub policies: Arc<dyn PolicyRepository>,
    /// Vendors.
    pub vendors: Arc<dyn VendorRepository>,
    /// Controls, their evidence sources and evidence.
    pub controls: Arc<dyn ControlRepository>,
    /// Which framework requirements each control is mapped to.
    pub control_requirements: Arc<dyn ControlRequirementRepository>,
    /// Risks.
    pub risks: Arc<dyn RiskRepository>,
    /// Tasks.
    pub tasks: Arc<dyn TaskRepository>,
    /// How many changes each organization's lists have seen, for pages kept by callers.
    pub list_generations: Arc<dyn ListGenerations>,
    /// Comments and their attachments' metadata.
    pub comments: Arc<dyn CommentRepository>,
    /// Browser automations, schedules and runs.
    pub automations: Arc<dyn AutomationRepository>,
    /// Attachment and screenshot bytes.
    pub blobs: Arc<dyn BlobStore>,
    /// The device management system.
    pub devices: Arc<dyn DeviceDirectory>,
    /// Runs an automation in a browser.
    pub browser: Arc<dyn BrowserRunner>,
    /// Prints policy documents to PDF; [`compliance_ports::NoPrinter`] where there is no browser.
    pub printer: Arc<dyn DocumentPrinter>,
    /// The assistant's chat histories.
    pub chat: Arc<dyn ChatStore>,
    /// Whether the database answers (`GET /ready`).
    pub health: Arc<dyn HealthCheck>,
    /// The time every use case reads.
    pub clock: Arc<dyn Clock>,
    /// Integration connections (an automation may type their credentials, `connectionId`).
    pub connections: Arc<dyn ConnectionRepository>,
    /// Pending OAuth authorizations of connections.
    pub oauth_states: Arc<dyn OAuthStateRepository>,
    /// Leases that let one instance at a time refresh a connection's OAuth tokens.
    pub refresh_leases: Arc<dyn RefreshLeases>,
    /// The connected providers: their token endpoints and their APIs.
    pub provider_client: Arc<dyn ProviderClient>,
    /// The vault's ciphertexts: connections' credentials and tokens, OAuth apps, automations'
    /// and webhooks' secrets.
    pub secrets: Arc<dyn SecretRepository>,
    /// Seals and opens the vault's secrets.
    pub cipher: Arc<dyn SecretCipher>,
    /// The model behind free-text instructions; `None` when `AUTOMATION_LLM_URL` is not set.
    pub agent_model: Option<Arc<dyn AgentModel>>,
    /// The audit trail's entries (each written by the repositories with its change).
    pub audit: Arc<dyn AuditRepository>,
    /// Records as the API shows them, for audit entries' `data` and `changes`.
    pub renderer: Arc<dyn ResourceRenderer>,
    /// Webhook endpoints and their deliveries.
    pub webhooks: Arc<dyn WebhookRepository>,
    /// The organizations' committed changes (the audit trail), which webhooks deliver.
    pub event_feed: Arc<dyn EventFeed>,
    /// Sends one delivery to an endpoint.
    pub webhook_sender: Arc<dyn WebhookSender>,
    /// `Idempotency-Key` reservations and the outcomes they replay.
    pub idempotency: Arc<dyn IdempotencyRepository>,
    /// Frameworks and their requirements.
    pub frameworks: Arc<dyn FrameworkRepository>,
    /// Adoptions of the control library.
    pub library: Arc<dyn LibraryRepository>,
    /// The internal hosts the operator granted to each organization.
    pub allowed_hosts: Arc<dyn AllowedHostRepository>,
    /// Check runs, their results and findings.
    pub check_runs: Arc<dyn CheckRunRepository>,
    /// Reads connected accounts for the checks; [`compliance_ports::NoCheckReader`] where
    /// nothing may be reached.
    pub check_reader: Arc<dyn CheckReader>,
}

/// Tunables of the use cases, from configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The largest attachment and the most attachment bytes of one request, in decoded bytes
    /// (`ATTACHMENT_MAX_FILE_BYTES`, `ATTACHMENT_MAX_REQUEST_BYTES`).
    pub attachments: AttachmentLimits,
    /// The most rows one list response holds (`LIST_MAX_ROWS`): a list asked for without `limit`
    /// answers its first page of this size, and no `limit` goes beyond it.
    pub list_max_rows: usize,
    /// How long a download link stays valid.
    pub download_ttl: std::time::Duration,
    /// The address clients reach this service at, for links it signs itself.
    pub public_url: String,
    /// The HMAC key of those links.
    pub url_signing_key: Vec<u8>,
    /// How many messages a chat history keeps, and the longest message, in characters.
    pub chat_limits: ChatLimits,
    /// How long a chat history lives after its last replacement.
    pub chat_ttl: std::time::Duration,
    /// The automation worker's timeouts, intervals and bounds (`AUTOMATION_*`).
    pub automations: AutomationSettings,
    /// How long an authenticated credential is remembered in process (zero: not at all).
    pub auth_cache_ttl: std::time::Duration,
    /// How long a session from sign-in lasts (`SESSION_TTL_HOURS`).
    pub session_ttl: time::Duration,
    /// Whether signed-in users may create organizations (`SELF_SERVICE_ORGANIZATIONS`).
    pub self_service_organizations: bool,
    /// How long an invitation can be accepted (`INVITATION_TTL_SECONDS`, default seven days).
    pub invitation_ttl: time::Duration,
    /// The webhook worker's tunables and the hosts webhooks may reach (`WEBHOOK_*`).
    pub webhooks: WebhookSettings,
    /// The review-date worker's poll interval (`POLICY_REVIEW_POLL_MILLIS`).
    pub policy_reviews: PolicyReviewSettings,
    /// The secret the Ed25519 key that signs the audit log's tree heads and checkpoints is
    /// derived from (`AUDIT_SIGNING_KEY`).
    pub audit_signing_key: Vec<u8>,
    /// The audit sequencer's tunables (`AUDIT_SEAL_*`) and the log's retention
    /// (`AUDIT_RETENTION_DAYS`, `AUDIT_PRUNE_MILLIS`).
    pub audit_sequencer: SequencerSettings,
    /// How long idempotency keys are kept and block repeats (`IDEMPOTENCY_*`).
    pub idempotency: IdempotencySettings,
    /// How PDF documents share the printing browsers (`PDF_*`).
    pub documents: DocumentSettings,
    /// The provider catalog and where an OAuth flow may send the browser back to.
    pub integrations: IntegrationSettings,
    /// How often connections' checks run, and the bounds of their runs (`CHECK_*`).
    pub checks: CheckRunSettings,
}

/// The server's defaults (docs/operations.md lists the variable of each): the server's
/// configuration starts from these and an embedder takes them as they are, so the two cannot
/// drift. `public_url` is the server's default address; the signing keys are fresh random
/// 32-byte keys, so links and audit checkpoints signed with them stop verifying once this value
/// is dropped (give a fixed key to keep them across restarts or share them between instances).
impl Default for Settings {
    fn default() -> Self {
        Self {
            attachments: AttachmentLimits::default(),
            list_max_rows: 10_000,
            download_ttl: std::time::Duration::from_secs(15 * 60),
            public_url: "http://127.0.0.1:8080".into(),
            url_signing_key: random_key(),
            chat_limits: ChatLimits::default(),
            chat_ttl: std::time::Duration::from_secs(7 * 24 * 60 * 60),
            automations: AutomationSettings::default(),
            auth_cache_ttl: std::time::Duration::from_secs(5),
            session_ttl: time::Duration::days(7),
            self_service_organizations: true,
            invitation_ttl: time::Duration::days(7),
            webhooks: WebhookSettings::default(),
            policy_reviews: PolicyReviewSettings::default(),
            audit_signing_key: random_key(),
            audit_sequencer: SequencerSettings::default(),
            idempotency: IdempotencySettings::default(),
            documents: DocumentSettings::default(),
            integrations: IntegrationSettings::default(),
            checks: CheckRunSettings::default(),
        }
    }
}

/// The length of a generated signing key, and the shortest the server accepts, in bytes: 256
/// bits, the output size of HMAC-SHA-256, which signs links and audit checkpoints.
pub const SIGNING_KEY_BYTES: usize = 32;

fn random_key() -> Vec<u8> {
    rand::random::<[u8; SIGNING_KEY_BYTES]>().to_vec()
}

impl Settings {
    /// The page a list request loads: `limit` rows, or as many as the cap allows without one.
    pub fn page(&self, limit: Option<usize>, after: Option<Cursor>) -> PageRequest {
        let limit = limit.unwrap_or(self.list_max_rows).min(self.list_max_rows);
        PageRequest { after, ..PageRequest::first(limit) }
    }
}

/// The application: every use case, ready to be called by a delivery layer.
pub struct App {
    /// Authentication: credentials to a [`Principal`].
    pub auth: AuthService,
    /// Context entries.
    pub context: ContextService,
    /// Policies, their versions, approval and signatures.
    pub policies: PolicyService,
    /// Published policy versions rendered as HTML or PDF documents.
    pub policy_documents: PolicyDocumentService,
    /// Vendors.
    pub vendors: VendorService,
    /// Controls, their evidence and status.
    pub controls: ControlService,
    /// Which framework requirements each control is mapped to.
    pub control_requirements: ControlRequirementService,
    /// Risks.
    pub risks: RiskService,
    /// Tasks.
    pub tasks: TaskService,
    /// Comments on any commentable record.
    pub comments: Arc<CommentService>,
    /// The assistant's chat history.
    pub chat: ChatService,
    /// The settings the application was built with.
    pub settings: Arc<Settings>,
    /// Members of the organization.
    pub people: PeopleService,
    /// The caller's organization itself.
    pub organization: OrganizationService,
    /// The operator's use cases, outside any organization's permissions.
    pub admin: AdminService,
    /// The operator's grants of internal hosts to organizations.
    pub allowed_hosts: AllowedHostService,
    /// Sign-in with the OpenID provider.
    pub sign_in: SignInService,
    /// The signed-in user's sessions and memberships.
    pub sessions: SessionService,
    /// Invitations.
    pub invitations: InvitationService,
    /// API keys.
    pub api_keys: ApiKeyService,
    /// Devices from the device management system.
    pub devices: DeviceService,
    /// Browser automations and their runs.
    pub automations: AutomationService,
    /// Automations' login secrets.
    pub automation_secrets: AutomationSecrets,
    /// Webhooks and their deliveries.
    pub webhooks: WebhookService,
    /// Frameworks and their requirements.
    pub frameworks: FrameworkService,
    /// Integrations: providers, OAuth apps, the OAuth connect flow and connections.
    pub integrations: IntegrationService,
    /// The catalog of checks the providers ship.
    pub checks: CheckService,
    /// The control library the service ships.
    pub library: LibraryService,
    /// Runs of connections' checks and their results.
    pub check_runs: CheckRunService,
    /// Findings: what checks failed, and the exceptions that accept their risk.
    pub findings: FindingService,
    /// The audit trail: listing and verifying it.
    pub audit: AuditService,
    /// `Idempotency-Key`: reservations and the outcomes repeats get.
    pub idempotency: Arc<IdempotencyService>,
    /// Taken by the server, which runs it in the background.
    idempotency_pruner: Option<IdempotencyPruner>,
    /// Taken by the server, which runs it in the background.
    worker: Option<AutomationWorker>,
    /// Taken by the server, which runs it in the background.
    webhook_worker: Option<WebhookWorker>,
    /// Taken by the server, which runs it in the background.
    policy_review_worker: Option<PolicyReviewWorker>,
    /// Taken by the server, which runs it in the background.
    audit_sequencer: Option<AuditSequencer>,
    /// Taken by the server, which runs it in the background.
    check_worker: Option<CheckRunWorker>,
    health: Arc<dyn HealthCheck>,
    generations: Arc<dyn ListGenerations>,
}

impl App {
    /// Every use case over `ports`, with `settings`. Starts nothing: the automation and webhook
    /// workers wait in [`App::take_worker`] and [`App::take_webhook_worker`].
    pub fn new(ports: Ports, settings: Settings) -> Self {
        let settings = Arc::new(settings);
        let comments = Arc::new(CommentService::new(&ports, settings.clone()));
        let work = Arc::new(tokio::sync::Notify::new());
        let principals = Arc::new(PrincipalCache::new(settings.auth_cache_ttl));
        let trail = Arc::new(audit::AuditTrail::new(ports.renderer.clone(), ports.clock.clone()));
        let deliveries = Arc::new(tokio::sync::Notify::new());
        let signer = TreeHeadSigner::from_secret(&settings.audit_signing_key);
        // Writes poke the sequencer (`seal`); it counts its passes (`passes`), which reads wait on.
        let seal = Arc::new(tokio::sync::Notify::new());
        let (passes, passes_seen) = tokio::sync::watch::channel(0);
        let idempotency = Arc::new(IdempotencyService::new(&ports, settings.idempotency.clone()));
        let check_work = Arc::new(tokio::sync::Notify::new());
        // One set of print slots per instance: every document printed counts against its
        // organization's bound.
        let printing = printing::Printing::new(ports.printer.clone(), &settings.documents);
        Self {
            check_runs: CheckRunService::new(&ports, trail.clone(), check_work.clone()),
            findings: FindingService::new(&ports, trail.clone()),
            check_worker: Some(CheckRunWorker::new(&ports, &settings, check_work)),
            idempotency_pruner: Some(IdempotencyPruner::new(idempotency.clone(), settings.idempotency.prune_interval)),
            idempotency,
            webhooks: WebhookService::new(&ports, settings.webhooks.allowed_hosts.clone(), deliveries.clone()),
            audit_sequencer: Some(AuditSequencer::new(
                &ports,
                signer.clone(),
                settings.audit_sequencer.clone(),
                (seal.clone(), passes, deliveries.clone()),
            )),
            webhook_worker: Some(WebhookWorker::new(&ports, settings.webhooks.clone(), deliveries)),
            audit: AuditService::new(ports.audit.clone(), ports.clock.clone(), signer, seal, passes_seen),
            devices: DeviceService::new(&ports),
            automations: AutomationService::new(&ports, settings.clone(), work.clone()),
            automation_secrets: AutomationSecrets::new(&ports),
            worker: Some(AutomationWorker::new(&ports, settings.automations.clone(), work)),
            policy_review_worker: Some(PolicyReviewWorker::new(&ports, settings.policy_reviews.clone())),
            auth: AuthService::new(
                ports.credentials.clone(),
                ports.members.clone(),
                ports.list_generations.clone(),
                ports.clock.clone(),
                principals.clone(),
            ),
            frameworks: FrameworkService::new(&ports, settings.clone(), trail.clone(), printing.clone()),
            integrations: IntegrationService::new(&ports, &settings, trail.clone()),
            checks: CheckService,
            library: LibraryService::new(ports.clock.clone(), settings.public_url.clone()),
            control_requirements: ControlRequirementService::new(&ports, trail.clone()),
            context: ContextService::new(&ports, trail.clone()),
            policies: PolicyService::new(&ports, comments.clone(), trail.clone()),
            policy_documents: PolicyDocumentService::new(&ports, printing),
            vendors: VendorService::new(&ports, comments.clone(), trail.clone()),
            controls: ControlService::new(&ports, settings.clone(), trail.clone()),
            risks: RiskService::new(&ports, comments.clone(), trail.clone()),
            tasks: TaskService::new(&ports, comments.clone(), trail.clone()),
            chat: ChatService::new(&ports, settings.clone()),
            comments,
            settings: settings.clone(),
            people: PeopleService::new(&ports, principals.clone()),
            api_keys: ApiKeyService::new(&ports, principals.clone()),
            organization: OrganizationService::new(&ports, settings.clone()),
            sign_in: SignInService::new(&ports, settings.clone()),
            sessions: SessionService::new(&ports, principals.clone()),
            invitations: InvitationService::new(&ports, principals.clone(), settings.clone()),
            admin: AdminService::new(&ports, principals),
            allowed_hosts: AllowedHostService::new(&ports),
            health: ports.health,
            generations: ports.list_generations,
        }
    }

    /// The automation worker, for the server to run in the background (once).
    pub fn take_worker(&mut self) -> Option<AutomationWorker> {
        self.worker.take()
    }

    /// The audit log's sequencer, for the server to run in the background (once): without it,
    /// entries stay queued, unsealed (see [`AuditSequencer`]).
    pub fn take_audit_sequencer(&mut self) -> Option<AuditSequencer> {
        self.audit_sequencer.take()
    }

    /// The worker that runs connections' checks, for the server to run in the background (once).
    pub fn take_check_worker(&mut self) -> Option<CheckRunWorker> {
        self.check_worker.take()
    }

    /// The webhook delivery worker, for the server to run in the background (once).
    pub fn take_webhook_worker(&mut self) -> Option<WebhookWorker> {
        self.webhook_worker.take()
    }

    /// The worker that moves policies due for review, for the server to run in the background (once).
    pub fn take_policy_review_worker(&mut self) -> Option<PolicyReviewWorker> {
        self.policy_review_worker.take()
    }

    /// The job that deletes expired idempotency keys, for the server to run in the background (once).
    pub fn take_idempotency_pruner(&mut self) -> Option<IdempotencyPruner> {
        self.idempotency_pruner.take()
    }

    /// How many changes of the organization's `list` have committed (`ListGenerations`): a page
    /// kept by a caller is current while this is what it was when the page was loaded.
    pub async fn list_generation(&self, org: &OrganizationId, list: ListName) -> Result<u64, AppError> {
        Ok(self.generations.generation(org, list).await?)
    }

    /// Whether the store answers.
    pub async fn ready(&self) -> Result<(), AppError> {
        self.health.ping().await.map_err(AppError::from)
    }
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}
