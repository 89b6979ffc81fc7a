//! The ports: what the use cases need from the outside world, as object-safe async traits.
//!
//! Every repository method that reads or writes tenant data takes the organization id, and every
//! adapter filters on it: a record of another organization is indistinguishable from a missing one.

#![warn(missing_docs)]

mod agent;
mod allowed_hosts;
mod audit;
mod automations;
mod blobs;
mod browser;
mod bulk;
mod chat;
mod check_reader;
mod check_runs;
mod connections;
mod control_requirements;
mod controls;
mod devices;
mod error;
mod frameworks;
mod idempotency;
mod invitations;
mod library;
mod list_query;
mod operations;
mod page;
mod printer;
mod provider_client;
mod records;
mod repositories;
mod sessions;
mod sign_in;
mod vault;
mod webhooks;

pub use agent::{AgentModel, ChatMessage, ChatRole, ModelError, ModelReply, TokenUsage, ToolCall, ToolSpec};
pub use allowed_hosts::AllowedHostRepository;
pub use audit::{AuditEach, AuditFilter, AuditOf, AuditRepository, ResourceRenderer, SealedBatch, SignTreeHead};
pub use automations::AutomationRepository;
pub use blobs::{BlobError, BlobStore};
pub use browser::{
    BrowserPage, BrowserRunner, Capture, CaptureError, CaptureRequest, Clickable, Field, PageError, PageSnapshot,
    ScrollDirection, SnapshotElement,
};
pub use bulk::{BulkApplied, BulkError, BulkWrite};
pub use chat::ChatStore;
pub use check_reader::{CheckReader, CheckTarget, DevicePerson, DeviceScope, NoCheckReader};
pub use check_runs::{
    CheckRunFilter, CheckRunQuery, CheckRunRepository, CheckRunSort, FindingFilter, FindingQuery, FindingSort,
};
pub use connections::ConnectionRepository;
pub use control_requirements::{ControlRequirementRepository, MappedRequirement};
pub use controls::{ControlEvidenceState, ControlFilter, ControlRepository, DeletedControl};
pub use devices::{DeviceDirectory, DeviceError, DeviceLabel, DeviceRecord, NoDeviceDirectory};
pub use error::RepoError;
pub use frameworks::{FrameworkFilter, FrameworkQuery, FrameworkRepository, FrameworkSort};
pub use idempotency::{IdempotencyRepository, NewReservation, Outcome, Reservation, StoredResponse};
pub use invitations::{Acceptance, InvitationRepository};
pub use library::{AdoptionAudits, LibraryRepository, Planner, SuggestedChecks};
pub use list_query::{
    Assignee, CommentFilter, CommentQuery, CommentSort, ConnectionFilter, ConnectionQuery, ConnectionSort,
    ContextFilter, ContextQuery, ContextSort, DueRange, ListQuery, PersonFilter, PersonQuery, PersonSort, PolicyFilter,
    PolicyQuery, PolicySort, RiskFilter, RiskQuery, RiskSort, RunFilter, RunQuery, RunSort, Search, SortKey, SortValue,
    TaskFilter, TaskQuery, TaskSort, TimeRange, VendorFilter, VendorQuery, VendorSort,
};
pub use operations::{PoolMetrics, PoolStatus, RateDecision, RateLimit, RateLimiter};
pub use page::{Cursor, ListGenerations, ListName, Page, PageRequest};
pub use printer::{DocumentPrinter, NoPrinter, PrintError};
pub use provider_client::{NoProviderClient, ProviderAnswer, ProviderClient, ProviderRequestError};
pub use records::{
    ContextRepository, Deleted, POLICY_CHANGED, PolicyRepository, PolicyWrite, RiskRepository, TASK_CHANGED,
    TaskRepository, VendorRepository,
};
pub use repositories::{
    Clock, CommentRepository, CredentialRepository, HealthCheck, MemberRepository, OrganizationRepository,
    RevokedApiKey, UserRepository,
};
pub use sessions::{Membership, SessionRepository};
pub use sign_in::{
    AuthorizationParams, IdentityError, IdentityProvider, SignInAttempt, SignInRepository, VerifiedIdentity,
};
pub use vault::{
    AUTOMATION_SECRET_OWNER_KIND, CONNECTION_CREDENTIALS_OWNER_KIND, CipherError, OAuthStateRecord,
    OAuthStateRepository, RefreshLeases, SecretCipher, SecretOwner, SecretRepository, StoredSecret, secret_etag,
};
pub use webhooks::{
    EventFeed, FeedEvent, NoEventFeed, OutboundRequest, OutboundResponse, SealedSecrets, SealedUrl, SendError,
    WEBHOOK_SECRET_OWNER_KIND, WEBHOOK_URL_OWNER_KIND, WebhookRepository, WebhookSender,
};
