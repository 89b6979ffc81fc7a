//! Comments on tasks, vendors, risks and policies, with their attachments.

use base64::Engine;
use serde::Deserialize;

use crate::validation::{FieldError, ValidationErrors, http_url, required, text};
use crate::{AttachmentId, CommentId, Id, IdKind, OrganizationId, Timestamp, UserId, required_non_null};

crate::string_enum! {
    /// What a comment is attached to.
    CommentEntityType { Task = "task", Vendor = "vendor", Risk = "risk", Policy = "policy" }
}

/// The longest comment, in characters.
pub const CONTENT_MAX: usize = 2_000;
/// The longest attachment file name, in characters.
pub const FILE_NAME_MAX: usize = 255;
/// The longest attachment description, in characters.
pub const DESCRIPTION_MAX: usize = 500;

/// Extensions and media types of programs and scripts, which are never accepted as attachments.
const BLOCKED_EXTENSIONS: &[&str] = &[
    "exe", "dll", "com", "bat", "cmd", "msi", "scr", "ps1", "vbs", "js", "mjs", "jar", "sh", "bash", "app", "apk",
    "bin",
];
const BLOCKED_MEDIA_TYPES: &[&str] = &[
    "application/x-msdownload",
    "application/x-msdos-program",
    "application/x-dosexec",
    "application/x-executable",
    "application/vnd.microsoft.portable-executable",
    "application/x-sh",
    "application/x-shellscript",
    "text/x-shellscript",
    "application/x-bat",
    "application/javascript",
    "application/x-javascript",
    "text/javascript",
    "application/java-archive",
    "application/x-msi",
];

/// A comment on a risk, vendor, policy or task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// The comment's id.
    pub id: CommentId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// The kind of record it is on.
    pub entity_type: CommentEntityType,
    /// The id of the record it is on.
    pub entity_id: String,
    /// The user who wrote it; only they may edit or delete it.
    pub author_id: UserId,
    /// The text, 1 to [`CONTENT_MAX`] characters.
    pub content: String,
    /// A link to where it was written, if given.
    pub context_url: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}
impl Comment {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

/// An attachment's metadata; its bytes live in the blob store under [`Attachment::blob_key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// The attachment's id.
    pub id: AttachmentId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// The comment it belongs to.
    pub comment_id: CommentId,
    /// The file name, 1 to [`FILE_NAME_MAX`] characters.
    pub name: String,
    /// Its media type (`image/png`, …).
    pub media_type: String,
    /// Its size, in bytes.
    pub size: i64,
    /// Up to [`DESCRIPTION_MAX`] characters, if any.
    pub description: Option<String>,
    /// When it was uploaded.
    pub created_at: Timestamp,
}

impl Attachment {
    /// `ORG_ID/ATTACHMENT_ID`: only `[a-z0-9_/]`, safe as a path or an object name.
    pub fn blob_key(&self) -> String {
        format!("{}/{}", self.organization_id, self.id)
    }
}

/// A comment with what the API shows beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentView {
    /// The comment.
    pub comment: Comment,
    /// Its author.
    pub author: crate::people::User,
    /// False once the author's membership is deactivated (or gone).
    pub author_active: bool,
    /// Its attachments, in upload order.
    pub attachments: Vec<Attachment>,
}

/// The body of `POST /v1/comments`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewComment {
    /// Required: 1 to 2,000 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::content, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub content: Option<String>,
    /// The id of a record of `entityType` in the caller's organization: an id of another kind
    /// is a 400, a record that does not exist a 404.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::entity_id, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub entity_id: Option<String>,
    /// Required: the kind of record commented on.
    #[cfg_attr(feature = "openapi", schema(value_type = CommentEntityType, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub entity_type: Option<CommentEntityType>,
    /// The page to link to in notifications.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::organization::schemas::nullable_http_url))]
    pub context_url: Option<String>,
    /// Files to store with the comment; see `NewAttachment` for the size limits (413 when over).
    pub attachments: Option<Vec<NewAttachment>>,
    /// Optional: the author is always the caller's user (an API key's creator). With an API key,
    /// if sent, it must be the key creator's user id (400 otherwise); ignored with a session.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<UserId>))]
    pub user_id: Option<UserId>,
}

/// One attachment of a new comment. Each file may hold at most `ATTACHMENT_MAX_FILE_BYTES` decoded
/// bytes (default 10 MiB) and all files of one comment at most `ATTACHMENT_MAX_REQUEST_BYTES`
/// (default 25 MiB); over either is a 413.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewAttachment {
    /// A plain file name (no `/`, `\`, control characters, `.` or `..`) that is not a program
    /// or script (extensions `exe dll com bat cmd msi scr ps1 vbs js mjs jar sh bash app apk bin`).
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::file_name, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub file_name: Option<String>,
    /// A media type `type/subtype` without parameters, not one of a program or script.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::file_type, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub file_type: Option<String>,
    /// The file's bytes in standard, padded base64.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::file_data, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub file_data: Option<String>,
    /// Up to 500 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    pub description: Option<String>,
    /// Accepted for compatibility and ignored: the comment's author owns its attachments.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<UserId>))]
    pub user_id: Option<UserId>,
}

/// The body of `PUT /v1/comments/{id}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommentEdit {
    /// Required: the new text, 1 to 2,000 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::content, required = true))]
    #[serde(default, deserialize_with = "required_non_null")]
    pub content: Option<String>,
}

/// The schemas of this module's inputs, as the validation below checks them.
#[cfg(feature = "openapi")]
mod schemas {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};

    /// What `str::trim` removes: Rust's `char::is_whitespace`, as in `openapi::NON_BLANK`.
    const WHITE_SPACE: &str =
        "\\u0009-\\u000d\\u0020\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

    /// Both letter cases of each ASCII letter, for a case-insensitive match.
    fn any_case(text: &str) -> String {
        text.chars()
            .map(|c| match c {
                'a'..='z' => format!("[{c}{}]", c.to_ascii_uppercase()),
                '.' | '+' => format!("\\{c}"),
                _ => c.to_string(),
            })
            .collect()
    }

    pub fn content() -> utoipa::openapi::Object {
        crate::openapi::text(1, super::CONTENT_MAX).build()
    }

    pub fn entity_id() -> utoipa::openapi::Object {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^(?:tsk|vnd|rsk|pol)_[0-9a-hjkmnp-tv-z]{32}$"))
            .build()
    }

    pub fn file_name() -> utoipa::openapi::Object {
        let blocked: Vec<String> = super::BLOCKED_EXTENSIONS.iter().map(|e| any_case(e)).collect();
        let pattern = format!(
            "^(?!\\.\\.?$)(?![\\s\\S]*\\.(?:{})$)(?=[\\s\\S]*[^{WHITE_SPACE}])[^/\\\\\\u0000-\\u001f\\u007f-\\u009f]+$",
            blocked.join("|")
        );
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(super::FILE_NAME_MAX))
            .pattern(Some(pattern))
            .build()
    }

    /// `type/subtype` of RFC 6838 restricted-name characters, surrounding white space ignored,
    /// compared case-insensitively against the refused types of programs and scripts.
    pub fn file_type() -> utoipa::openapi::Object {
        let blocked: Vec<String> = super::BLOCKED_MEDIA_TYPES.iter().map(|t| any_case(t)).collect();
        let token = "[A-Za-z0-9!#$&^_.+-]{1,127}";
        let pattern =
            format!("^[{WHITE_SPACE}]*(?!(?:{})[{WHITE_SPACE}]*$){token}/{token}[{WHITE_SPACE}]*$", blocked.join("|"));
        ObjectBuilder::new().schema_type(Type::String).pattern(Some(pattern)).build()
    }

    /// Standard base64 with canonical padding (the unused bits of the last character zero),
    /// surrounding white space ignored.
    pub fn file_data() -> utoipa::openapi::Object {
        let pattern = format!(
            "^[{WHITE_SPACE}]*(?:[A-Za-z0-9+/]{{4}})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{{2}}[AEIMQUYcgkosw048]=)?[{WHITE_SPACE}]*$"
        );
        ObjectBuilder::new().schema_type(Type::String).content_encoding("base64").pattern(Some(pattern)).build()
    }

    pub fn description() -> utoipa::openapi::Object {
        crate::openapi::text(0, super::DESCRIPTION_MAX)
            .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
            .build()
    }
}

impl CommentEdit {
    /// The new text, checked as a new comment's.
    pub fn content(self) -> Result<String, ValidationErrors> {
        Ok(content(required("content", self.content)?)?)
    }
}

/// Size limits of attachments, in decoded bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachmentLimits {
    /// The largest attachment, in decoded bytes.
    pub max_file_bytes: usize,
    /// The most attachment bytes of one request, decoded.
    pub max_request_bytes: usize,
}

impl Default for AttachmentLimits {
    fn default() -> Self {
        Self { max_file_bytes: 10 * 1024 * 1024, max_request_bytes: 25 * 1024 * 1024 }
    }
}

/// Why a new comment is refused: a bad field (400) or too many bytes (413).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommentInputError {
    /// A field is wrong (400).
    Invalid(ValidationErrors),
    /// More bytes than the attachment limits allow (413).
    TooLarge(String),
}

impl From<FieldError> for CommentInputError {
    fn from(error: FieldError) -> Self {
        Self::Invalid(error.into())
    }
}

impl From<ValidationErrors> for CommentInputError {
    fn from(errors: ValidationErrors) -> Self {
        Self::Invalid(errors)
    }
}

/// A validated attachment with its decoded bytes, not yet stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedAttachment {
    /// Its metadata.
    pub attachment: Attachment,
    /// Its decoded bytes.
    pub bytes: Vec<u8>,
}

/// A validated comment and its attachments, ready to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentDraft {
    /// The comment.
    pub comment: Comment,
    /// Its attachments with their bytes.
    pub attachments: Vec<DecodedAttachment>,
}

fn content(value: String) -> Result<String, FieldError> {
    text("content", value, 1, CONTENT_MAX)
}

/// The entity id, checked against the prefix its type implies.
pub fn entity_id(entity_type: CommentEntityType, id: &str) -> Result<String, FieldError> {
    fn check<K: IdKind>(id: &str) -> Result<String, FieldError> {
        Id::<K>::parse(id).map(Id::into_string).map_err(|e| FieldError::new("entityId", e.to_string()))
    }
    match entity_type {
        CommentEntityType::Task => check::<crate::id::TaskKind>(id),
        CommentEntityType::Vendor => check::<crate::id::VendorKind>(id),
        CommentEntityType::Risk => check::<crate::id::RiskKind>(id),
        CommentEntityType::Policy => check::<crate::id::PolicyKind>(id),
    }
}

impl CommentDraft {
    /// Validates the body and decodes its attachments. `author` is the acting user, already
    /// resolved by the caller from the session or from `user_id`.
    pub fn new(
        organization_id: OrganizationId,
        author: UserId,
        input: NewComment,
        limits: AttachmentLimits,
        now: Timestamp,
    ) -> Result<Self, CommentInputError> {
        let entity_type = required("entityType", input.entity_type)?;
        let comment = Comment {
            id: CommentId::generate(),
            organization_id,
            entity_id: entity_id(entity_type, &required("entityId", input.entity_id)?)?,
            entity_type,
            author_id: author,
            content: content(required("content", input.content)?)?,
            context_url: input.context_url.map(|url| http_url("contextUrl", url)).transpose()?,
            created_at: now,
            updated_at: now,
        };
        let mut total = 0usize;
        let mut attachments = Vec::new();
        for (index, input) in input.attachments.unwrap_or_default().into_iter().enumerate() {
            let decoded = decode(&comment, index, input, limits, now)?;
            total += decoded.bytes.len();
            if total > limits.max_request_bytes {
                return Err(CommentInputError::TooLarge(format!(
                    "the attachments of one comment may hold at most {} bytes",
                    limits.max_request_bytes
                )));
            }
            attachments.push(decoded);
        }
        Ok(Self { comment, attachments })
    }
}

fn decode(
    comment: &Comment,
    index: usize,
    input: NewAttachment,
    limits: AttachmentLimits,
    now: Timestamp,
) -> Result<DecodedAttachment, CommentInputError> {
    let DecodedFile { name, media_type, description, bytes } =
        decode_file(&format!("attachments[{index}]."), input, limits)?;
    let attachment = Attachment {
        id: AttachmentId::generate(),
        organization_id: comment.organization_id.clone(),
        comment_id: comment.id.clone(),
        name,
        media_type,
        size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
        description,
        created_at: now,
    };
    Ok(DecodedAttachment { attachment, bytes })
}

/// A file checked as an attachment is (name, media type, size, base64), with its bytes decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedFile {
    /// A plain file name that is not a program or script.
    pub name: String,
    /// Its media type, lower case.
    pub media_type: String,
    /// Its description, if any.
    pub description: Option<String>,
    /// Its decoded bytes.
    pub bytes: Vec<u8>,
}

/// Checks and decodes one file of the [`NewAttachment`] shape; errors name `prefix` + the field
/// (`attachments[0].fileName` for a comment's, `fileName` for a control's evidence).
pub fn decode_file(
    prefix: &str,
    input: NewAttachment,
    limits: AttachmentLimits,
) -> Result<DecodedFile, CommentInputError> {
    let field = |name: &str| format!("{prefix}{name}");
    let name = text(&field("fileName"), required(&field("fileName"), input.file_name)?, 1, FILE_NAME_MAX)?;
    if name.contains(['/', '\\']) || name.chars().any(char::is_control) || name == "." || name == ".." {
        return Err(FieldError::new(field("fileName"), format!("`{name}` must be a plain file name")).into());
    }
    let media_type = required(&field("fileType"), input.file_type)?.trim().to_ascii_lowercase();
    if !is_media_type(&media_type) {
        return Err(FieldError::new(field("fileType"), "must be a media type such as text/plain").into());
    }
    let extension = name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
    if extension.is_some_and(|ext| BLOCKED_EXTENSIONS.contains(&ext.as_str()))
        || BLOCKED_MEDIA_TYPES.contains(&media_type.as_str())
    {
        return Err(FieldError::new(
            field("fileName"),
            format!("`{name}` is a program or script, which is not accepted"),
        )
        .into());
    }
    let data = required(&field("fileData"), input.file_data)?;
    // Checked before decoding, so that a huge body is refused without allocating its bytes.
    if data.len() / 4 * 3 > limits.max_file_bytes + 2 {
        return Err(too_large(&name, limits));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| FieldError::new(field("fileData"), format!("`{name}` is not valid base64")))?;
    if bytes.len() > limits.max_file_bytes {
        return Err(too_large(&name, limits));
    }
    let description = input.description.map(|d| text(&field("description"), d, 0, DESCRIPTION_MAX)).transpose()?;
    Ok(DecodedFile { name, media_type, description, bytes })
}

fn too_large(name: &str, limits: AttachmentLimits) -> CommentInputError {
    CommentInputError::TooLarge(format!("`{name}` is larger than {} bytes", limits.max_file_bytes))
}

/// `type/subtype` with RFC 6838 restricted-name characters, parameters not allowed.
fn is_media_type(value: &str) -> bool {
    let token = |part: &str| {
        !part.is_empty()
            && part.len() <= 127
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    matches!(value.split_once('/'), Some((kind, sub)) if token(kind) && token(sub))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn draft(body: serde_json::Value, limits: AttachmentLimits) -> Result<CommentDraft, CommentInputError> {
        let input: NewComment = serde_json::from_value(body).unwrap();
        CommentDraft::new(OrganizationId::generate(), UserId::generate(), input, limits, Timestamp::now())
    }

    fn body(attachments: serde_json::Value) -> serde_json::Value {
        let risk = crate::RiskId::generate();
        json!({"content": "Looks fine", "entityId": risk, "entityType": "risk", "attachments": attachments})
    }

    #[test]
    fn attachments_are_decoded_and_limited_at_the_boundary() {
        let limits = AttachmentLimits { max_file_bytes: 3, max_request_bytes: 5 };
        let ok = draft(body(json!([{"fileName": "a.txt", "fileType": "text/plain", "fileData": "YWJj"}])), limits);
        assert_eq!(ok.unwrap().attachments[0].bytes, b"abc");
        let big = draft(body(json!([{"fileName": "a.txt", "fileType": "text/plain", "fileData": "YWJjZA=="}])), limits);
        assert!(matches!(big, Err(CommentInputError::TooLarge(_))));
        let two = json!([{"fileName": "a.txt", "fileType": "text/plain", "fileData": "YWJj"},
                         {"fileName": "b.txt", "fileType": "text/plain", "fileData": "YWJj"}]);
        assert!(matches!(draft(body(two), limits), Err(CommentInputError::TooLarge(_))), "6 bytes in one request");
    }

    #[test]
    fn programs_bad_names_and_bad_base64_are_refused() {
        let limits = AttachmentLimits::default();
        for (attachment, field) in [
            (json!({"fileName": "setup.EXE", "fileType": "application/octet-stream", "fileData": ""}), "fileName"),
            (json!({"fileName": "notes.txt", "fileType": "application/x-msdownload", "fileData": ""}), "fileName"),
            (json!({"fileName": "../etc/passwd", "fileType": "text/plain", "fileData": ""}), "fileName"),
            (json!({"fileName": "a.txt", "fileType": "text", "fileData": ""}), "fileType"),
            (json!({"fileName": "a.txt", "fileType": "text/plain", "fileData": "not base64!"}), "fileData"),
        ] {
            match draft(body(json!([attachment])), limits) {
                Err(CommentInputError::Invalid(errors)) => {
                    assert_eq!(errors.0[0].field, format!("attachments[0].{field}"))
                }
                other => panic!("{attachment}: {other:?}"),
            }
        }
    }

    #[test]
    fn entity_ids_must_match_their_type() {
        let risk = crate::RiskId::generate();
        assert!(entity_id(CommentEntityType::Risk, risk.as_str()).is_ok());
        assert_eq!(entity_id(CommentEntityType::Task, risk.as_str()).unwrap_err().field, "entityId");
    }

    #[test]
    fn content_is_limited_to_2000_characters() {
        let at = |n: usize| {
            let mut b = body(json!([]));
            b["content"] = json!("é".repeat(n));
            draft(b, AttachmentLimits::default())
        };
        assert!(at(2000).is_ok());
        assert!(matches!(at(2001), Err(CommentInputError::Invalid(_))));
    }
}
