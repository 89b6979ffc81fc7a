//! AWS's answers read with `quick-xml` (the query and REST-XML protocols) or `serde_json` (the
//! JSON ones), and the code and message of an error in either shape.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::client::AwsFailure;
use compliance_domain::check_result::ReadFailure;

/// A list of the query protocol (IAM, STS): `<member>` elements.
#[derive(Deserialize)]
pub(crate) struct Members<T> {
    #[serde(rename = "member", default = "Vec::new")]
    pub(crate) items: Vec<T>,
}

impl<T> Default for Members<T> {
    fn default() -> Self {
        Self { items: Vec::new() }
    }
}

/// A list of EC2's protocol: `<item>` elements.
#[derive(Deserialize)]
pub(crate) struct Items<T> {
    #[serde(rename = "item", default = "Vec::new")]
    pub(crate) items: Vec<T>,
}

impl<T> Default for Items<T> {
    fn default() -> Self {
        Self { items: Vec::new() }
    }
}

/// The answer `body` as XML of type `T`, or a failure naming `action`.
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8], action: &str) -> Result<T, AwsFailure> {
    // The parser's own error is left out: it may quote a value of the answer (a credential).
    let text = std::str::from_utf8(body).map_err(|_| unreadable(action, "the answer is not UTF-8"))?;
    quick_xml::de::from_str(text).map_err(|_| unreadable(action, "the answer was not the XML expected"))
}

/// The answer `body` as JSON of type `T`, or a failure naming `action`.
pub(crate) fn parse_json<T: DeserializeOwned>(body: &[u8], action: &str) -> Result<T, AwsFailure> {
    serde_json::from_slice(body).map_err(|_| unreadable(action, "the answer was not the JSON expected"))
}

/// An answer the checks cannot read.
pub(crate) fn unreadable(action: &str, message: &str) -> AwsFailure {
    AwsFailure { failure: ReadFailure::new("unreadable_answer", message, action), bucket_region: None }
}

/// The code and message of an AWS error answer: the first `<Code>` and `<Message>` of an XML
/// one (`<ErrorResponse><Error>` of the query protocol, EC2's `<Response><Errors><Error>`, S3's
/// `<Error>`), or a JSON one's `__type` (after its `#`) or `code`, and `message`; the
/// `x-amzn-ErrorType` header's code when the body names none.
pub(crate) fn error_code_and_message(body: &[u8], header_code: Option<&str>) -> (Option<String>, Option<String>) {
    let trimmed = body.trim_ascii_start();
    let (code, message) = if trimmed.starts_with(b"{") {
        json_error(trimmed)
    } else if trimmed.starts_with(b"<") {
        xml_error(trimmed)
    } else {
        (None, None)
    };
    let code = code.or_else(|| header_code.filter(|c| !c.is_empty()).map(str::to_owned));
    (code, message)
}

fn json_error(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return (None, None);
    };
    let text = |names: &[&str]| names.iter().find_map(|name| value.get(*name)?.as_str().map(str::to_owned));
    let code = text(&["__type", "code", "Code"]).map(|code| code.rsplit('#').next().unwrap_or(&code).to_owned());
    (code, text(&["message", "Message"]))
}

/// The error elements of AWS's XML answers, whichever wraps them: S3's `<Error>` root, the
/// query protocol's `<ErrorResponse><Error>`, EC2's `<Response><Errors><Error>`.
#[derive(Deserialize, Default)]
struct XmlError {
    #[serde(rename = "Code", default)]
    code: Option<String>,
    #[serde(rename = "Message", default)]
    message: Option<String>,
    #[serde(rename = "Error", default)]
    error: Option<Box<XmlError>>,
    #[serde(rename = "Errors", default)]
    errors: Option<Box<XmlError>>,
}

impl XmlError {
    fn innermost(self) -> (Option<String>, Option<String>) {
        match (self.code, self.error, self.errors) {
            (Some(code), _, _) => (Some(code), self.message),
            (None, Some(inner), _) | (None, None, Some(inner)) => inner.innermost(),
            (None, None, None) => (None, self.message),
        }
    }
}

fn xml_error(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(text) = std::str::from_utf8(body) else {
        return (None, None);
    };
    let (code, message) = quick_xml::de::from_str::<XmlError>(text).map(XmlError::innermost).unwrap_or_default();
    (code.map(|c| c.trim().to_owned()).filter(|c| !c.is_empty()), message.map(|m| m.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn error_codes_are_read_from_every_protocol() {
        let query = br#"<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type>
            <Code>AccessDenied</Code><Message>User: arn:aws:iam::123456789012:user/a is not authorized</Message></Error>
            <RequestId>1</RequestId></ErrorResponse>"#;
        assert_eq!(
            error_code_and_message(query, None),
            (Some("AccessDenied".into()), Some("User: arn:aws:iam::123456789012:user/a is not authorized".into()))
        );
        let ec2 = b"<?xml version=\"1.0\"?><Response><Errors><Error><Code>UnauthorizedOperation</Code>\
            <Message>You are not authorized</Message></Error></Errors><RequestID>x</RequestID></Response>";
        assert_eq!(error_code_and_message(ec2, None).0.unwrap(), "UnauthorizedOperation");
        let json = br#"{"__type":"com.amazonaws.cloudtrail#AccessDeniedException","Message":"no"}"#;
        assert_eq!(error_code_and_message(json, None), (Some("AccessDeniedException".into()), Some("no".into())));
        let header_only = br#"{"message":"Rate exceeded"}"#;
        assert_eq!(error_code_and_message(header_only, Some("ThrottlingException")).0.unwrap(), "ThrottlingException");
        assert_eq!(error_code_and_message(b"<html>bad gateway</html>", None), (None, None));
        let escaped = b"<Error><Code>X</Code><Message>a &amp; b</Message></Error>";
        assert_eq!(error_code_and_message(escaped, None).1.unwrap(), "a & b");
    }
}
