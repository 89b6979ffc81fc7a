//! What the `POST /v1/<resource>/bulk` routes share: the request's envelope, reading each
//! operation into the use case's [`BulkOperation`], the `?atomic` parameter, the body limit and
//! the answer. The handlers are in their resources' modules (`risks::bulk_risks`).

use actix_web::HttpResponse;
use compliance_app::AppError;
use compliance_app::bulk::{BulkOperation, MAX_OPERATIONS};
use compliance_domain::id::IdKind;
use compliance_domain::{Id, ValidationErrors};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

use crate::ApiError;
use crate::body::BodyLimit;
use crate::error::Problem;

/// The body limit of a bulk request: [`MAX_OPERATIONS`] operations of up to 32 KiB each (a risk
/// whose description and treatment description hold 10,000 ASCII characters each is about 20
/// KiB), 16 MiB in all, where other JSON bodies take 1 MiB.
pub const BULK_BODY_LIMIT: BodyLimit = BodyLimit(MAX_OPERATIONS * 32 * 1024);

/// `{operations: [{op, id?, body?}]}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BulkRequest {
    /// 1 to 500 operations, applied in this order.
    #[schema(min_items = 1, max_items = 500)]
    operations: Vec<BulkItem>,
}

/// One operation: `create` takes the body the resource's `POST` takes and no id; `update` an id
/// and the body its `PATCH` takes; `delete` an id and no body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct BulkItem {
    op: BulkOp,
    /// The record's id, for `update` and `delete`.
    #[serde(default)]
    #[schema(required = false)]
    id: Option<String>,
    /// The input of `create` or the changes of `update`.
    #[serde(default)]
    #[schema(value_type = Object, required = false)]
    body: Option<Box<RawValue>>,
}

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BulkOp {
    Create,
    Update,
    Delete,
}

/// `?atomic=false` applies the operations one by one; the default (`true`) all or nothing.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct BulkQuery {
    /// `true` (the default): all or nothing in one transaction; `false`: one by one, each with
    /// its own result.
    #[param(value_type = Option<bool>)]
    atomic: Option<String>,
}

impl BulkQuery {
    /// Whether the operations are applied all or nothing.
    pub(crate) fn atomic(&self) -> Result<bool, ApiError> {
        match self.atomic.as_deref() {
            None | Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(_) => Err(ApiError::invalid_field("atomic", "must be true or false")),
        }
    }
}

/// Each operation's kind, and the operations as the use case takes them: a body of the wrong
/// shape, a missing or extra id or body, or a malformed id (`what` is not found, as on the single
/// routes) becomes the operation's error. More than [`MAX_OPERATIONS`] are handed on unread, for
/// the use case to refuse.
#[allow(clippy::type_complexity, reason = "the two lists the handlers need, in one pass")]
pub(crate) fn read<N, C, K>(request: BulkRequest, what: &'static str) -> (Vec<BulkOp>, Vec<BulkOperation<N, C, Id<K>>>)
where
    N: DeserializeOwned,
    C: DeserializeOwned,
    K: IdKind,
{
    let ops = request.operations.iter().map(|item| item.op).collect();
    let operations = request.operations.into_iter().map(|item| read_one(item, what)).collect();
    (ops, operations)
}

fn read_one<N, C, K>(item: BulkItem, what: &'static str) -> BulkOperation<N, C, Id<K>>
where
    N: DeserializeOwned,
    C: DeserializeOwned,
    K: IdKind,
{
    let unreadable = BulkOperation::Unreadable;
    let id = |id: Option<String>| match id {
        Some(id) => Id::parse(&id).map_err(|_| AppError::NotFound(what)),
        None => Err(AppError::invalid("id", "an update or delete names the record's id")),
    };
    match (item.op, item.body) {
        (BulkOp::Create, Some(body)) if item.id.is_none() => match body_of(&body) {
            Ok(input) => BulkOperation::Create(input),
            Err(error) => unreadable(error),
        },
        (BulkOp::Create, Some(_)) => unreadable(AppError::invalid("id", "a create takes no id: the id is generated")),
        (BulkOp::Update, Some(body)) => match (id(item.id), body_of(&body)) {
            (Ok(id), Ok(changes)) => BulkOperation::Update(id, changes),
            (Err(error), _) | (_, Err(error)) => unreadable(error),
        },
        (BulkOp::Create | BulkOp::Update, None) => {
            unreadable(AppError::invalid("body", "a create or update needs a body"))
        }
        (BulkOp::Delete, None) => match id(item.id) {
            Ok(id) => BulkOperation::Delete(id),
            Err(error) => unreadable(error),
        },
        (BulkOp::Delete, Some(_)) => unreadable(AppError::invalid("body", "a delete takes no body")),
    }
}

/// An operation's body read as the single route reads its body: a wrong field is the same 400
/// naming it (relative to the body).
fn body_of<T: DeserializeOwned>(body: &RawValue) -> Result<T, AppError> {
    crate::body::parse(body.get().as_bytes())
        .map_err(|error: ApiError| AppError::Validation(ValidationErrors(error.field_errors().to_vec())))
}

/// `{results: [{index, status, body | problem}]}`: each operation's outcome, in order.
#[derive(Serialize, ToSchema)]
pub(crate) struct BulkResults<'a, B: ToSchema> {
    results: Vec<BulkResult<'a, B>>,
}

/// One operation's outcome: its status (201 created, 200 updated or deleted, or the status of its
/// problem) and the record (as it is now; as it was, for a delete) or the problem.
#[derive(Serialize, ToSchema)]
pub(crate) struct BulkResult<'a, B: ToSchema> {
    /// The operation's index in `operations` (from 0).
    index: usize,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    body: Option<B>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    problem: Option<Problem<'a>>,
}

/// The 200 answer of a bulk request: each operation's record, shaped by `dto`, or its problem.
pub(crate) fn answer<'a, R, B: ToSchema + Serialize>(
    ops: &[BulkOp],
    results: &'a [Result<R, ApiError>],
    dto: impl Fn(&'a R) -> B,
) -> HttpResponse {
    let results = ops
        .iter()
        .zip(results)
        .enumerate()
        .map(|(index, (op, result))| match result {
            Ok(record) => BulkResult {
                index,
                status: if *op == BulkOp::Create { 201 } else { 200 },
                body: Some(dto(record)),
                problem: None,
            },
            Err(error) => {
                BulkResult { index, status: error.status().as_u16(), body: None, problem: Some(error.problem()) }
            }
        })
        .collect();
    HttpResponse::Ok().json(BulkResults { results })
}

/// The use case's results with their errors as the API answers them.
pub(crate) fn api_results<R>(results: Vec<Result<R, AppError>>) -> Vec<Result<R, ApiError>> {
    results.into_iter().map(|result| result.map_err(ApiError::from)).collect()
}
