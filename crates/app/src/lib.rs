//! Use cases: one service per resource, holding the ports as trait objects.
//!
//! Tenant scoping, authentication and cross-record checks (an assignee must be an active member of
//! the same organization) live here; storage and delivery do not.

mod admin;
mod auth;
mod error;
mod organization;
mod people;
mod records;
mod secret;

use std::sync::Arc;

use compliance_domain::Timestamp;
use compliance_domain::context::ContextEntry;
use compliance_domain::policy::Policy;
use compliance_domain::risk::Risk;
use compliance_domain::vendor::Vendor;
use compliance_ports::{
    Clock, CredentialRepository, HealthCheck, MemberRepository, OrganizationRepository, RecordRepository,
    UserRepository,
};

pub use admin::{AdminService, IssuedApiKey, IssuedSession};
pub use auth::{AuthService, AuthType, Credentials, Principal};
pub use error::AppError;
pub use organization::OrganizationService;
pub use people::PeopleService;
pub use records::RecordService;

/// Everything the use cases need from the outside world.
#[derive(Clone)]
pub struct Ports {
    pub organizations: Arc<dyn OrganizationRepository>,
    pub users: Arc<dyn UserRepository>,
    pub members: Arc<dyn MemberRepository>,
    pub credentials: Arc<dyn CredentialRepository>,
    pub context: Arc<dyn RecordRepository<ContextEntry>>,
    pub policies: Arc<dyn RecordRepository<Policy>>,
    pub vendors: Arc<dyn RecordRepository<Vendor>>,
    pub risks: Arc<dyn RecordRepository<Risk>>,
    pub health: Arc<dyn HealthCheck>,
    pub clock: Arc<dyn Clock>,
}

/// The application: every use case, ready to be called by a delivery layer.
pub struct App {
    pub auth: AuthService,
    pub context: RecordService<ContextEntry>,
    pub policies: RecordService<Policy>,
    pub vendors: RecordService<Vendor>,
    pub risks: RecordService<Risk>,
    pub people: PeopleService,
    pub organization: OrganizationService,
    pub admin: AdminService,
    health: Arc<dyn HealthCheck>,
}

impl App {
    pub fn new(ports: Ports) -> Self {
        Self {
            auth: AuthService::new(ports.credentials.clone(), ports.members.clone(), ports.clock.clone()),
            context: RecordService::new(ports.context.clone(), &ports),
            policies: RecordService::new(ports.policies.clone(), &ports),
            vendors: RecordService::new(ports.vendors.clone(), &ports),
            risks: RecordService::new(ports.risks.clone(), &ports),
            people: PeopleService::new(&ports),
            organization: OrganizationService::new(&ports),
            admin: AdminService::new(&ports),
            health: ports.health,
        }
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
