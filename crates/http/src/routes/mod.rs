//! The route modules, one per resource: each adds its handlers, whose `#[utoipa::path]` declares
//! their method and path ([`Routes::add`]). No route module uses another: what they share is
//! beside this module (`crate::bulk`, `crate::envelope`, `crate::attachments`, `crate::path_ids`).

mod api_keys;
mod applicability;
mod audit;
mod audit_proofs;
mod automation_secrets;
mod automations;
mod chat;
mod check_runs;
mod checks;
mod comments;
mod connect_page;
mod context;
mod control_requirements;
mod controls;
mod devices;
mod docs;
mod explorer;
mod findings;
mod frameworks;
mod health;
mod integrations;
mod invitations;
mod library;
mod organization;
mod people;
mod policies;
mod policy_diff;
mod policy_document;
mod policy_versions;
mod risks;
mod sessions;
mod sign_in;
mod tasks;
mod vendors;
mod webhooks;

pub use chat::chat_body_limit;
pub use comments::comment_body_limit;

use crate::body::BodyLimit;
use crate::router::Routes;

/// Body limits of the routes that take more than the default.
#[derive(Debug, Clone, Copy)]
pub struct RouteLimits {
    pub comments: BodyLimit,
    pub chat: BodyLimit,
}

/// Every endpoint, each module adding its own.
pub fn all(limits: RouteLimits) -> Routes {
    let mut routes = Routes::default();
    health::configure(&mut routes);
    docs::configure(&mut routes);
    explorer::configure(&mut routes);
    connect_page::configure(&mut routes);
    context::configure(&mut routes);
    policies::configure(&mut routes);
    policy_versions::configure(&mut routes);
    policy_diff::configure(&mut routes);
    policy_document::configure(&mut routes);
    vendors::configure(&mut routes);
    risks::configure(&mut routes);
    audit::configure(&mut routes);
    audit_proofs::configure(&mut routes);
    tasks::configure(&mut routes);
    comments::configure(&mut routes, limits.comments);
    chat::configure(&mut routes, limits.chat);
    people::configure(&mut routes);
    organization::configure(&mut routes);
    integrations::configure(&mut routes);
    checks::configure(&mut routes);
    check_runs::configure(&mut routes);
    findings::configure(&mut routes);
    devices::configure(&mut routes);
    automations::configure(&mut routes);
    sign_in::configure(&mut routes);
    sessions::configure(&mut routes);
    invitations::configure(&mut routes);
    api_keys::configure(&mut routes);
    automation_secrets::configure(&mut routes);
    webhooks::configure(&mut routes);
    frameworks::configure(&mut routes);
    applicability::configure(&mut routes);
    library::configure(&mut routes);
    controls::configure(&mut routes, limits.comments);
    control_requirements::configure(&mut routes);
    routes
}
