//! Building [`Ports`] over one database adapter: the server and the embedding facade wire the same
//! store behind the same ports through [`Ports::from_store`], so a port added here reaches both.

use std::sync::Arc;

use compliance_ports::{
    AgentModel, AllowedHostRepository, AuditRepository, AutomationRepository, BlobStore, BrowserRunner, ChatStore,
    CheckReader, CheckRunRepository, Clock, CommentRepository, ConnectionRepository, ContextRepository,
    ControlRepository, ControlRequirementRepository, CredentialRepository, DeviceDirectory, DocumentPrinter, EventFeed,
    FrameworkRepository, HealthCheck, IdempotencyRepository, IdentityProvider, InvitationRepository, LibraryRepository,
    ListGenerations, MemberRepository, OAuthStateRepository, OrganizationRepository, PolicyRepository, ProviderClient,
    RefreshLeases, ResourceRenderer, RiskRepository, SecretCipher, SecretRepository, SessionRepository,
    SignInRepository, TaskRepository, UserRepository, VendorRepository, WebhookRepository, WebhookSender,
};

use crate::Ports;

/// The ports that are not the database's: each deployment chooses these adapters itself.
#[derive(Clone)]
pub struct Adapters {
    /// The OpenID provider users sign in with; `None` when sign-in is not configured.
    pub identity: Option<Arc<dyn IdentityProvider>>,
    /// Where attachment and screenshot bytes go.
    pub blobs: Arc<dyn BlobStore>,
    /// The device management system; `compliance_ports::NoDeviceDirectory` when there is none.
    pub devices: Arc<dyn DeviceDirectory>,
    /// Runs automations in a browser (only when the automation worker runs).
    pub browser: Arc<dyn BrowserRunner>,
    /// Prints policy documents to PDF; [`compliance_ports::NoPrinter`] where there is no browser.
    pub printer: Arc<dyn DocumentPrinter>,
    /// The assistant's chat histories.
    pub chat: Arc<dyn ChatStore>,
    /// The time every use case reads (`SystemClock` outside tests).
    pub clock: Arc<dyn Clock>,
    /// Seals and opens the vault's secrets.
    pub cipher: Arc<dyn SecretCipher>,
    /// The model behind free-text automation instructions, if any.
    pub agent_model: Option<Arc<dyn AgentModel>>,
    /// Records as the API shows them, for audit entries' `data` and `changes`.
    pub renderer: Arc<dyn ResourceRenderer>,
    /// Sends webhook deliveries (only when the webhook worker runs).
    pub webhook_sender: Arc<dyn WebhookSender>,
    /// The connected providers' token endpoints and APIs; `compliance_ports::NoProviderClient`
    /// where nothing may be reached.
    pub provider_client: Arc<dyn ProviderClient>,
    /// Reads connected accounts for the checks; `compliance_ports::NoCheckReader` where nothing
    /// may be reached.
    pub check_reader: Arc<dyn CheckReader>,
}

impl Ports {
    /// Every port: `store` behind each repository, the health check, the list generations and
    /// the event feed; `adapters` for the rest.
    pub fn from_store<S>(store: &Arc<S>, adapters: Adapters) -> Self
    where
        S: OrganizationRepository
            + UserRepository
            + MemberRepository
            + CredentialRepository
            + SessionRepository
            + SignInRepository
            + InvitationRepository
            + ContextRepository
            + PolicyRepository
            + VendorRepository
            + RiskRepository
            + TaskRepository
            + ControlRepository
            + ControlRequirementRepository
            + ListGenerations
            + CommentRepository
            + AutomationRepository
            + HealthCheck
            + ConnectionRepository
            + OAuthStateRepository
            + RefreshLeases
            + SecretRepository
            + AuditRepository
            + WebhookRepository
            + EventFeed
            + IdempotencyRepository
            + FrameworkRepository
            + LibraryRepository
            + AllowedHostRepository
            + CheckRunRepository
            + 'static,
    {
        let Adapters {
            identity,
            blobs,
            devices,
            browser,
            printer,
            chat,
            clock,
            cipher,
            agent_model,
            renderer,
            webhook_sender,
            provider_client,
            check_reader,
        } = adapters;
        Self {
            organizations: store.clone(),
            users: store.clone(),
            members: store.clone(),
            credentials: store.clone(),
            sessions: store.clone(),
            sign_in: store.clone(),
            invitations: store.clone(),
            identity,
            context: store.clone(),
            policies: store.clone(),
            vendors: store.clone(),
            controls: store.clone(),
            control_requirements: store.clone(),
            risks: store.clone(),
            tasks: store.clone(),
            list_generations: store.clone(),
            comments: store.clone(),
            automations: store.clone(),
            blobs,
            devices,
            browser,
            printer,
            chat,
            health: store.clone(),
            clock,
            connections: store.clone(),
            oauth_states: store.clone(),
            refresh_leases: store.clone(),
            provider_client,
            secrets: store.clone(),
            cipher,
            agent_model,
            audit: store.clone(),
            renderer,
            webhooks: store.clone(),
            event_feed: store.clone(),
            webhook_sender,
            idempotency: store.clone(),
            frameworks: store.clone(),
            library: store.clone(),
            allowed_hosts: store.clone(),
            check_runs: store.clone(),
            check_reader,
        }
    }
}
