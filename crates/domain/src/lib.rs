//! The compliance domain: entities, enumerations, prefixed identifiers, validation and patch rules.
//!
//! This crate does no I/O. Inputs (`New*` and `*Changes`) are the public shape of a command; they are
//! validated into entities and patches, so an invalid value never reaches a port.
//!
//! ```
//! use compliance_domain::{OrganizationId, Timestamp, risk::{NewRisk, Risk, RiskStatus}};
//!
//! let org = OrganizationId::generate();
//! let input: NewRisk = serde_json::from_str(
//!     r#"{"title":"Laptop theft","description":"Disks are not encrypted","category":"technology"}"#,
//! ).unwrap();
//! let risk = Risk::create(org, input, Timestamp::now()).unwrap();
//! assert_eq!(risk.status, RiskStatus::Open);
//! assert!(risk.id.as_str().starts_with("rsk_"));
//! ```

#![warn(missing_docs)]

pub mod access;
pub mod allowed_host;
pub mod applicability;
pub mod audit;
pub mod automation;
pub mod automation_secret;
pub mod chat;
pub mod check;
pub mod check_result;
pub mod check_run;
pub mod comment;
pub mod context;
pub mod control;
mod enums;
pub mod etag;
pub mod evidence;
pub mod finding;
pub mod framework;
pub mod framework_status;
pub mod frequency;
pub mod id;
pub mod idempotency;
pub mod integration;
pub mod invitation;
pub mod library;
pub mod merkle;
pub mod network;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod organization;
pub mod oscal;
pub mod people;
pub mod policy;
pub mod policy_diff;
pub mod policy_document;
pub mod prowler;
pub mod risk;
pub mod schedule;
mod serde_fields;
pub mod task;
pub mod task_lifecycle;
mod time;
pub mod validation;
pub mod vendor;
pub mod webhook;

pub use enums::{Department, Impact, Likelihood, UnknownValue};
pub use id::{
    ApiKeyId, AttachmentId, AuditEntryId, AutomationId, AutomationRunId, CheckRunId, CommentId, ConnectionId,
    ContextEntryId, ControlId, EvidenceId, FindingId, FrameworkId, Id, IdKind, InvitationId, MemberId, OrganizationId,
    PolicyId, RequirementId, RiskId, SessionId, TaskId, UserId, VendorId, WebhookDeliveryId, WebhookId,
};
pub use serde_fields::{nullable, nullable_whole_number, optional_whole_number, required_non_null, whole_number};
pub use time::Timestamp;
pub use validation::{FieldError, ValidationErrors};
