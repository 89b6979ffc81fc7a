//! `GET /v1/policies/{id}/versions/{version}/document`: a published version as a document people
//! read, in HTML or PDF.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use compliance_app::{DocumentFormat, PolicyDocument};
use compliance_domain::PolicyId;
use compliance_domain::policy_document::CONTENT_SECURITY_POLICY;
use serde::Deserialize;

use crate::path_ids::{policy_id, version_number};
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(get_policy_version_document, __path_get_policy_version_document);
}

/// `format` of a document, read as text so that a bad value is a 400 naming it.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct DocumentQuery {
    /// `html` (the default): one self-contained HTML5 page; `pdf`: that page printed on A4.
    #[param(value_type = Option<String>, pattern = "^(html|pdf)$")]
    format: Option<String>,
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}/versions/{version}/document",
    tag = "policies",
    operation_id = "getPolicyVersionDocument",
    summary = "One published version as a document to read, print or file (HTML or PDF)",
    description = "The version's rich text as one self-contained HTML5 page (inline styles, no script, no \
                   external asset; links only to `http`, `https` and `mailto` URLs), headed by the organization's \
                   name, the policy's name, the version, who published and approved it and when. `format=pdf` is \
                   that page printed on A4 by the service's headless Chromium, printed once per version and \
                   kept. Needs what reading the version needs.",
    params(
        ("id" = PolicyId, Path),
        ("version" = i32, Path, description = "The version's number, from 1."),
        DocumentQuery,
    ),
    responses(
        (status = 200, description = "The document. HTML is served with `Content-Security-Policy: default-src 'none'; \
            style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'`; PDF with `Content-Disposition: inline; \
            filename=\"<policy-name>-v<n>.pdf\"`.", content(
            (String = "text/html"),
            (String = "application/pdf"),
        )),
        (status = 400, description = "`format` is neither `html` nor `pdf`.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such policy or version in the caller's organization.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 502, description = "PDF: the headless Chromium failed while printing.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 503, description = "PDF: `/problems/busy` when the caller's organization is printing as many documents as it may at once, or every printing browser stayed busy, for the bounded wait (retry after `Retry-After` seconds); `/problems/not-configured` when this deployment has no headless Chromium (`CHROMIUM_PATH`); or the database is unavailable.", body = crate::openapi::Problem, content_type = "application/problem+json", headers(("Retry-After" = u32, description = "Seconds to wait before retrying (busy, or the database unavailable)."))),
        (status = 504, description = "PDF: printing took longer than the browser's timeout.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn get_policy_version_document(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String)>,
    query: web::Query<DocumentQuery>,
) -> Result<HttpResponse, ApiError> {
    let format = document_format(query.into_inner().format.as_deref())?;
    let (id, number) = path.into_inner();
    let (principal, id, number) = (caller.0, policy_id(&id)?, version_number(&number)?);
    let document =
        state
            .run(|app| async move {
                app.policy_documents.get_policy_version_document(&principal, &id, number, format).await
            })
            .await?;
    Ok(document_response(document))
}

/// The format `text` names; HTML without one.
fn document_format(text: Option<&str>) -> Result<DocumentFormat, ApiError> {
    match text {
        None | Some("html") => Ok(DocumentFormat::Html),
        Some("pdf") => Ok(DocumentFormat::Pdf),
        Some(_) => Err(ApiError::invalid_field("format", "must be `html` or `pdf`")),
    }
}

fn document_response(document: PolicyDocument) -> HttpResponse {
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "private, no-cache"));
    match document.format {
        DocumentFormat::Html => response
            .content_type("text/html; charset=utf-8")
            .insert_header((header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY))
            .insert_header((header::REFERRER_POLICY, "no-referrer")),
        DocumentFormat::Pdf => response
            .content_type("application/pdf")
            .insert_header((header::CONTENT_DISPOSITION, format!("inline; filename=\"{}.pdf\"", document.file_stem))),
    };
    response.body(document.bytes)
}
