//! What answers carry beside their record: how the request authenticated (`authType`, and
//! `authenticatedUser` with a session), where more than one route module answers it.

use compliance_domain::policy::Policy;
use serde::Serialize;
use utoipa::ToSchema;

use crate::Authenticated;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, PolicyDto, auth_type};

/// The schema of `authType` outside the context endpoints.
pub(crate) fn auth_type_schema() -> utoipa::openapi::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(["api-key", "session"]))
        .description(Some("`api-key` or `session`: how the request authenticated."))
        .build()
}

/// A policy with how the request authenticated; `authenticatedUser` for sessions only.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PolicyWithAuth<'a> {
    #[serde(flatten)]
    pub(crate) policy: PolicyDto<'a>,
    #[schema(schema_with = auth_type_schema)]
    pub(crate) auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    pub(crate) authenticated_user: Option<AuthenticatedUser<'a>>,
}

impl<'a> PolicyWithAuth<'a> {
    pub(crate) fn of(policy: &'a Policy, caller: &'a Authenticated) -> Self {
        Self {
            policy: PolicyDto::from(policy),
            auth_type: auth_type(caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(caller),
        }
    }
}
