//! What the routes that serve stored files share: the bytes' schema, the signed link's query,
//! and the headers of a file a tenant stored (attachments, evidence, run screenshots).

use actix_web::HttpResponse;
use actix_web::http::header::{self, Charset, ContentDisposition, DispositionParam, DispositionType, ExtendedValue};
use serde::Deserialize;

/// An attachment's bytes, of the media type it was stored with.
pub(crate) struct AttachmentBytes;

impl utoipa::PartialSchema for AttachmentBytes {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::Binary)))
            .description(Some("The attachment's bytes, of the media type it was stored with."))
            .into()
    }
}

impl utoipa::ToSchema for AttachmentBytes {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("AttachmentBytes")
    }
}

/// The parts of a signed link; a link missing any of them is as invalid as a tampered one.
#[derive(Deserialize)]
pub(crate) struct Signed {
    pub(crate) org: Option<String>,
    pub(crate) expires: Option<i64>,
    pub(crate) signature: Option<String>,
}

/// A 200 serving a file a tenant stored (an attachment, evidence, a screenshot) on this origin:
/// its media type never sniffed, never cached, and `Content-Security-Policy: sandbox`, so that an
/// HTML or SVG file opened in a browser runs in an opaque origin, without this origin's cookies,
/// storage or API.
pub(crate) fn stored_file(media_type: &str) -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CONTENT_TYPE, media_type))
        .insert_header((header::CONTENT_SECURITY_POLICY, "sandbox"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "private, no-store"));
    response
}

/// `attachment; filename="…"`, with an RFC 6266 `filename*` when the name is not plain ASCII.
pub(crate) fn attachment_disposition(name: &str) -> ContentDisposition {
    let ascii: String = name.chars().map(|c| if c.is_ascii() && !c.is_ascii_control() { c } else { '_' }).collect();
    let mut parameters = vec![DispositionParam::Filename(ascii)];
    if !name.is_ascii() {
        parameters.push(DispositionParam::FilenameExt(ExtendedValue {
            charset: Charset::Ext("UTF-8".into()),
            language_tag: None,
            value: name.as_bytes().to_vec(),
        }));
    }
    ContentDisposition { disposition: DispositionType::Attachment, parameters }
}
