//! The provider catalog: which third-party services can be connected, read from manifest files.
//!
//! The manifests in the repository's `providers/` directory are compiled into the binary; an
//! operator may add more from `PROVIDERS_DIR`. Any invalid manifest stops start-up with an error
//! naming the file and the field.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::strategy::AuthStrategy;
use crate::validation::parse_strategy;
use serde::Deserialize;

use crate::shipped::SHIPPED;

/// One provider, from one manifest file.
#[derive(Debug, Clone)]
pub struct Provider {
    /// Lowercase letters, digits and `-`; unique across every manifest.
    pub slug: String,
    pub name: String,
    pub description: String,
    pub auth: AuthStrategy,
    /// Markdown shown on the connect page for strategies whose config has no `setupInstructions`
    /// of its own (api_key, basic).
    pub setup_instructions: Option<String>,
    /// A request that proves a credential works.
    pub verify: Option<VerifyRequest>,
    /// The RFC 7009 revocation endpoint (oauth2 providers only).
    pub revoke: Option<String>,
    /// Where the manifest came from (`providers/github.json`, or a path under `PROVIDERS_DIR`).
    pub source: String,
}

/// `verify: {method, url}` of a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyRequest {
    pub method: VerifyMethod,
    /// An absolute http(s) URL.
    pub url: String,
}

/// The methods a `verify` request may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyMethod {
    Get,
    Head,
    Post,
}

impl VerifyMethod {
    /// As HTTP writes it: `GET`, `HEAD` or `POST`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
        }
    }
}

/// Every known provider by slug.
#[derive(Debug, Clone, Default)]
pub struct ProviderCatalog {
    providers: BTreeMap<String, Arc<Provider>>,
}

/// An invalid manifest: which file, which field (a JSON path such as `auth.config.tokenUrl`), why.
///
/// Displayed as `provider manifest providers/github.json: auth.config.tokenUrl: must be …`; when no
/// single field is at fault (the file is not JSON, or cannot be read) the field is empty and left out.
/// No value of the manifest appears in it except a slug.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("provider manifest {file}: {}{message}", field_prefix(.field))]
pub struct ManifestError {
    pub file: String,
    pub field: String,
    pub message: String,
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() { String::new() } else { format!("{field}: ") }
}

impl ManifestError {
    fn new(file: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.to_owned(), field: field.into(), message: message.into() }
    }
}

impl ProviderCatalog {
    /// The shipped manifests, then every `*.json` file of `extra_dir` (`PROVIDERS_DIR`) in file-name
    /// order; other files and directories there are ignored. The first invalid or unreadable manifest,
    /// or a slug declared twice, is the error.
    pub fn load(extra_dir: Option<&Path>) -> Result<Self, ManifestError> {
        let mut sources: Vec<(String, String)> =
            SHIPPED.iter().map(|(source, text)| ((*source).to_owned(), (*text).to_owned())).collect();
        if let Some(dir) = extra_dir {
            sources.extend(read_manifest_dir(dir)?);
        }
        Self::from_sources(sources)
    }

    /// Parses `(source name, JSON text)` pairs in order. A slug already taken is an error naming the
    /// later source, with the earlier one in the message.
    pub fn from_sources<I: IntoIterator<Item = (String, String)>>(sources: I) -> Result<Self, ManifestError> {
        let mut providers: BTreeMap<String, Arc<Provider>> = BTreeMap::new();
        for (source, text) in sources {
            let provider = parse_manifest(&source, &text)?;
            if let Some(first) = providers.get(&provider.slug) {
                return Err(ManifestError::new(
                    &source,
                    "slug",
                    format!("`{}` is already the slug of {}", provider.slug, first.source),
                ));
            }
            providers.insert(provider.slug.clone(), Arc::new(provider));
        }
        Ok(Self { providers })
    }

    pub fn len(&self) -> usize {
        self.providers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }

    pub fn get(&self, slug: &str) -> Option<&Arc<Provider>> {
        self.providers.get(slug)
    }

    /// Sorted by slug.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Provider>> {
        self.providers.values()
    }
}

impl Provider {
    /// The Markdown setup guide: the strategy config's own (oauth2, custom), else the manifest's.
    pub fn setup_instructions(&self) -> Option<&str> {
        let from_config = match &self.auth {
            AuthStrategy::OAuth2(config) => config.setup_instructions.as_deref(),
            AuthStrategy::Custom(config) => config.setup_instructions.as_deref(),
            AuthStrategy::ApiKey(_) | AuthStrategy::Basic(_) => None,
        };
        from_config.or(self.setup_instructions.as_deref())
    }
}

/// The `*.json` files of `dir`, sorted by file name, as `(path, text)`.
fn read_manifest_dir(dir: &Path) -> Result<Vec<(String, String)>, ManifestError> {
    let unreadable = |path: &Path, what: &str, error: std::io::Error| {
        ManifestError::new(&path.display().to_string(), "", format!("cannot read the {what}: {error}"))
    };
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| unreadable(dir, "directory", e))? {
        let path = entry.map_err(|e| unreadable(dir, "directory", e))?.path();
        if path.extension() != Some(OsStr::new("json")) {
            continue;
        }
        // Follows symbolic links; a directory that happens to be called `x.json` is not a manifest.
        if std::fs::metadata(&path).map_err(|e| unreadable(&path, "file", e))?.is_dir() {
            continue;
        }
        paths.push(path);
    }
    paths.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|e| unreadable(&path, "file", e))?;
            Ok((path.display().to_string(), text))
        })
        .collect()
}

/// A manifest as written. `auth` is kept as JSON for `parse_strategy`, which reports its own paths.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawManifest {
    slug: String,
    name: String,
    description: String,
    auth: serde_json::Value,
    #[serde(default)]
    setup_instructions: Option<String>,
    /// Kept as JSON so that an array is refused (serde reads a struct from one, by position).
    #[serde(default)]
    verify: Option<serde_json::Value>,
    #[serde(default)]
    revoke: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerify {
    method: String,
    url: String,
}

const MAX_SLUG_LEN: usize = 63;

fn parse_manifest(source: &str, text: &str) -> Result<Provider, ManifestError> {
    let error = |field: &str, message: &str| ManifestError::new(source, field, message);
    // Serde would also read a struct from an array, by position: a manifest is an object.
    if !text.trim_start().starts_with('{') {
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| ManifestError::new(source, "", e.to_string()))?;
        return Err(error("", "must be a JSON object"));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let raw: RawManifest = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| shape_error(source, e))?;
    deserializer.end().map_err(|e| ManifestError::new(source, "", e.to_string()))?;

    if !is_slug(&raw.slug) {
        return Err(error(
            "slug",
            "must be lowercase letters, digits and `-`, starting with a letter or digit, at most 63 characters",
        ));
    }
    if raw.name.trim().is_empty() {
        return Err(error("name", "must not be empty"));
    }
    if raw.description.trim().is_empty() {
        return Err(error("description", "must not be empty"));
    }
    let auth = parse_strategy(&raw.auth).map_err(|errors| match errors.0.first() {
        Some(first) => {
            let (field, message) = field_and_message(&auth_path(&first.field), &first.message);
            ManifestError::new(source, field, message)
        }
        None => error("auth", "is invalid"),
    })?;
    if let Some(instructions) = &raw.setup_instructions {
        if instructions.trim().is_empty() {
            return Err(error("setupInstructions", "must not be empty when given"));
        }
        let in_config = match &auth {
            AuthStrategy::OAuth2(config) => config.setup_instructions.is_some(),
            AuthStrategy::Custom(config) => config.setup_instructions.is_some(),
            AuthStrategy::ApiKey(_) | AuthStrategy::Basic(_) => false,
        };
        if in_config {
            return Err(error(
                "setupInstructions",
                "auth.config has its own setupInstructions; give them in one place",
            ));
        }
    }
    let verify = match raw.verify {
        None => None,
        Some(value) => {
            if !value.is_object() {
                return Err(error("verify", "must be an object with method and url"));
            }
            let RawVerify { method, url } = serde_path_to_error::deserialize(value).map_err(|e| {
                let (field, message) =
                    field_and_message(&format!("verify{}", suffix(e.path())), &e.inner().to_string());
                ManifestError::new(source, field, message)
            })?;
            let method = match method.as_str() {
                "GET" => VerifyMethod::Get,
                "HEAD" => VerifyMethod::Head,
                "POST" => VerifyMethod::Post,
                _ => return Err(error("verify.method", "must be GET, HEAD or POST")),
            };
            if !is_http_url(&url) {
                return Err(error("verify.url", "must be an absolute http(s) URL"));
            }
            Some(VerifyRequest { method, url })
        }
    };
    if let Some(url) = &raw.revoke {
        if !matches!(auth, AuthStrategy::OAuth2(_)) {
            return Err(error("revoke", "is only allowed when auth.type is oauth2"));
        }
        if !is_http_url(url) {
            return Err(error("revoke", "must be an absolute http(s) URL"));
        }
    }
    Ok(Provider {
        slug: raw.slug,
        name: raw.name,
        description: raw.description,
        auth,
        setup_instructions: raw.setup_instructions,
        verify,
        revoke: raw.revoke,
        source: source.to_owned(),
    })
}

/// `[a-z0-9][a-z0-9-]*`, at most 63 characters (a DNS label's length).
fn is_slug(slug: &str) -> bool {
    let mut chars = slug.chars();
    slug.len() <= MAX_SLUG_LEN
        && chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_http_url(text: &str) -> bool {
    url::Url::parse(text).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

/// `parse_strategy` names fields inside `auth` (`config.tokenUrl`, `type`) or `auth` itself.
fn auth_path(field: &str) -> String {
    match field {
        "" | "auth" => "auth".to_owned(),
        inner => format!("auth.{inner}"),
    }
}

/// A serde error of the manifest as a field and a message. Syntax errors have no field and keep
/// serde's line and column.
fn shape_error(source: &str, error: serde_path_to_error::Error<serde_json::Error>) -> ManifestError {
    let path = match error.path().to_string().as_str() {
        "." => String::new(),
        path => path.to_owned(),
    };
    let inner = error.into_inner();
    if !inner.is_data() {
        return ManifestError::new(source, "", inner.to_string());
    }
    let (field, message) = field_and_message(&path, &inner.to_string());
    ManifestError::new(source, field, message)
}

/// A path inside a nested value as a suffix: `.url`, or nothing for the value itself.
fn suffix(path: &serde_path_to_error::Path) -> String {
    match path.to_string().as_str() {
        "." => String::new(),
        inner => format!(".{inner}"),
    }
}

/// Serde reports an unknown field at its own path, but a missing or duplicate one at its parent's:
/// both end up named as the field. Values are dropped from the message ([`without_values`]).
fn field_and_message(path: &str, message: &str) -> (String, String) {
    let join = |name: &str| if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") };
    for (start, said) in [("missing field `", "is required"), ("duplicate field `", "is given twice")] {
        if let Some((name, _)) = message.strip_prefix(start).and_then(|rest| rest.split_once('`')) {
            return (join(name), said.to_owned());
        }
    }
    if let Some((_, tail)) = message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')) {
        return (path.to_owned(), format!("unknown field{tail}"));
    }
    (path.to_owned(), without_values(message))
}

/// Serde's messages quote the offending value (`invalid type: string "x", expected a boolean`); a
/// manifest's values stay out of errors, so only what was expected is kept.
fn without_values(message: &str) -> String {
    for kind in ["invalid type", "invalid value", "unknown variant"] {
        if message.starts_with(kind) {
            return match message.rfind(", expected ") {
                Some(at) => format!("{kind}{}", &message[at..]),
                None => kind.to_owned(),
            };
        }
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use crate::fields::FieldType;
    use crate::strategy::{ApiKeyLocation, ClientAuthMethod, StrategyKind};
    use serde_json::{Value, json};

    use super::*;

    const SOURCE: &str = "providers/acme.json";

    fn manifest(changes: Value) -> Value {
        let mut manifest = json!({
            "slug": "acme",
            "name": "Acme",
            "description": "Acme's API.",
            "auth": {"type": "oauth2", "config": {
                "authorizeUrl": "https://acme.test/authorize", "tokenUrl": "https://acme.test/token", "scopes": ["read"]
            }},
            "verify": {"method": "GET", "url": "https://api.acme.test/me"},
            "revoke": "https://acme.test/revoke"
        });
        for (key, value) in changes.as_object().unwrap() {
            if value.is_null() {
                manifest.as_object_mut().unwrap().remove(key);
            } else {
                manifest[key] = value.clone();
            }
        }
        manifest
    }

    fn parse(value: &Value) -> Result<Provider, ManifestError> {
        parse_manifest(SOURCE, &value.to_string())
    }

    fn error_of(changes: Value) -> ManifestError {
        let error = parse(&manifest(changes)).unwrap_err();
        assert_eq!(error.file, SOURCE);
        error
    }

    fn api_key_auth() -> Value {
        json!({"type": "api_key", "config": {"in": "header", "name": "X-Key"}})
    }

    #[test]
    fn a_complete_manifest_is_read() {
        let provider = parse(&manifest(json!({"setupInstructions": "# Hi"}))).unwrap();
        assert_eq!((provider.slug.as_str(), provider.name.as_str()), ("acme", "Acme"));
        assert_eq!(provider.description, "Acme's API.");
        assert_eq!(provider.auth.kind(), StrategyKind::OAuth2);
        assert_eq!(
            provider.verify,
            Some(VerifyRequest { method: VerifyMethod::Get, url: "https://api.acme.test/me".into() })
        );
        assert_eq!(provider.revoke.as_deref(), Some("https://acme.test/revoke"));
        assert_eq!(provider.setup_instructions(), Some("# Hi"));
        assert_eq!(provider.source, SOURCE);

        let minimal = parse(&manifest(json!({"verify": null, "revoke": null}))).unwrap();
        assert!(minimal.verify.is_none() && minimal.revoke.is_none() && minimal.setup_instructions.is_none());
    }

    #[test]
    fn the_display_names_file_field_and_reason() {
        let error = error_of(json!({"auth": {"type": "oauth2", "config": {
            "authorizeUrl": "https://acme.test/authorize", "tokenUrl": "/token", "scopes": []
        }}}));
        assert_eq!(error.field, "auth.config.tokenUrl");
        assert_eq!(error.to_string(), format!("provider manifest {SOURCE}: auth.config.tokenUrl: {}", error.message));
        assert!(error.message.contains("http"), "{error}");
    }

    #[test]
    fn slugs_are_lowercase_words_of_at_most_63_characters() {
        for good in ["a", "0", "google-workspace", "a-", &"a".repeat(63)] {
            parse(&manifest(json!({"slug": good}))).unwrap();
        }
        for bad in ["", "-a", "Acme", "a_b", "a b", "a.b", "é", &"a".repeat(64)] {
            let error = error_of(json!({"slug": bad}));
            assert_eq!(error.field, "slug", "{bad}");
            assert!(!bad.is_empty() && !error.message.contains(bad) || bad.is_empty(), "{error}");
        }
    }

    #[test]
    fn name_and_description_are_required_and_non_empty() {
        for field in ["name", "description", "slug", "auth"] {
            let error = error_of(json!({ field: null }));
            assert_eq!((error.field.as_str(), error.message.as_str()), (field, "is required"));
        }
        for field in ["name", "description"] {
            let error = error_of(json!({ field: "  " }));
            assert_eq!((error.field.as_str(), error.message.as_str()), (field, "must not be empty"));
        }
    }

    #[test]
    fn auth_errors_are_prefixed_with_auth() {
        let error = error_of(json!({"auth": {"type": "saml", "config": {}}}));
        assert_eq!(error.field, "auth.type");
        assert!(!error.message.contains("saml"), "{error}");
        let error = error_of(json!({"auth": {"type": "api_key", "config": {"in": "cookie", "name": "k"}}}));
        assert_eq!(error.field, "auth.config.in");
        assert!(error.message.contains("header") && !error.message.contains("cookie"), "{error}");
        let error =
            error_of(json!({"auth": {"type": "oauth2", "config": {"tokenUrl": "https://t.test", "scopes": []}}}));
        assert_eq!((error.field.as_str(), error.message.as_str()), ("auth.config.authorizeUrl", "is required"));
        let error = error_of(json!({"auth": {"type": "oauth2", "config": {
            "authorizeUrl": "https://a.test", "tokenUrl": "https://t.test", "scopes": [], "clientAuthMetod": "header"
        }}}));
        assert_eq!(error.field, "auth.config.clientAuthMetod", "{error}");
        assert!(error.message.starts_with("unknown field"), "{error}");
        let error = error_of(json!({"auth": "oauth2"}));
        assert_eq!(error.field, "auth");
        assert!(!error.message.contains("\"oauth2\""), "{error}");
        let error = error_of(json!({"auth": {"type": "custom", "config": {"credentialFields": [
            {"id": "r", "label": "R", "type": "select", "required": true}
        ]}}}));
        assert_eq!(error.field, "auth.config.credentialFields[0].options");
    }

    #[test]
    fn setup_instructions_are_optional_non_empty_and_given_once() {
        let provider =
            parse(&manifest(json!({"auth": api_key_auth(), "revoke": null, "setupInstructions": "Do this"}))).unwrap();
        assert_eq!(provider.setup_instructions(), Some("Do this"));
        let error = error_of(json!({"setupInstructions": ""}));
        assert_eq!(error.field, "setupInstructions");
        let error = error_of(json!({"setupInstructions": 3}));
        assert_eq!(error.field, "setupInstructions");
        assert_eq!(
            error.message,
            "invalid type, expected a string at line 1 column 300"
                .replace("300", error.message.rsplit(' ').next().unwrap())
        );
        let error = error_of(json!({"setupInstructions": "Twice", "auth": {"type": "oauth2", "config": {
            "authorizeUrl": "https://a.test", "tokenUrl": "https://t.test", "scopes": [], "setupInstructions": "Once"
        }}}));
        assert_eq!(error.field, "setupInstructions");
    }

    #[test]
    fn verify_takes_get_head_or_post_and_an_absolute_http_url() {
        for (method, expected) in
            [("GET", VerifyMethod::Get), ("HEAD", VerifyMethod::Head), ("POST", VerifyMethod::Post)]
        {
            let provider =
                parse(&manifest(json!({"verify": {"method": method, "url": "http://a.test/x?y=1"}}))).unwrap();
            assert_eq!(provider.verify.unwrap().method, expected);
        }
        for method in ["get", "PUT", "DELETE", ""] {
            let error = error_of(json!({"verify": {"method": method, "url": "https://a.test"}}));
            assert_eq!((error.field.as_str(), error.message.as_str()), ("verify.method", "must be GET, HEAD or POST"));
        }
        for url in ["/user", "ftp://a.test/x", "https://", "api.acme.test/user", "mailto:a@b.test"] {
            let error = error_of(json!({"verify": {"method": "GET", "url": url}}));
            assert_eq!(
                (error.field.as_str(), error.message.as_str()),
                ("verify.url", "must be an absolute http(s) URL"),
                "{url}"
            );
        }
        let error = error_of(json!({"verify": {"method": "GET"}}));
        assert_eq!((error.field.as_str(), error.message.as_str()), ("verify.url", "is required"));
        let error = error_of(json!({"verify": {"method": "GET", "url": "https://a.test", "body": "x"}}));
        assert_eq!(error.field, "verify.body");
    }

    #[test]
    fn revoke_is_an_absolute_http_url_for_oauth2_only() {
        let error = error_of(json!({"revoke": "/revoke"}));
        assert_eq!((error.field.as_str(), error.message.as_str()), ("revoke", "must be an absolute http(s) URL"));
        for auth in [
            api_key_auth(),
            json!({"type": "basic", "config": {}}),
            json!({"type": "custom", "config": {"credentialFields": [{"id": "a", "label": "A", "type": "text", "required": true}]}}),
        ] {
            let error = error_of(json!({"auth": auth}));
            assert_eq!(error.field, "revoke");
            assert!(error.message.contains("oauth2"), "{error}");
            parse(&manifest(json!({"auth": auth, "revoke": null}))).unwrap();
        }
    }

    #[test]
    fn unknown_fields_are_refused_by_name() {
        let error = error_of(json!({"verfy": {"method": "GET", "url": "https://a.test"}}));
        assert_eq!(error.field, "verfy");
        assert!(error.message.starts_with("unknown field, expected one of `slug`"), "{error}");
    }

    #[test]
    fn invalid_json_has_no_field_and_says_where() {
        let trailing = format!("{} {{}}", manifest(json!({})));
        for text in ["{\"slug\": \"acme\",\n  \"name\": }", "", "[1,", &trailing] {
            let error = parse_manifest(SOURCE, text).unwrap_err();
            assert_eq!(error.field, "", "{text:?}: {error}");
            assert!(error.message.contains("line"), "{error}");
            assert!(error.to_string().starts_with(&format!("provider manifest {SOURCE}: ")), "{error}");
            assert!(!error.to_string().contains(": : "), "{error}");
        }
        for text in ["[]", "\"acme\"", "null"] {
            let error = parse_manifest(SOURCE, text).unwrap_err();
            assert_eq!((error.field.as_str(), error.message.as_str()), ("", "must be a JSON object"));
        }
        let error = error_of(json!({"verify": ["GET", "https://a.test"]}));
        assert_eq!(error.field, "verify");
        let error = parse_manifest(SOURCE, "{\"slug\": \"acme\",\n  \"name\": }").unwrap_err();
        assert!(error.message.contains("line 2 column"), "{error}");
        let error = parse_manifest(SOURCE, r#"{"slug": "a", "slug": "b"}"#).unwrap_err();
        assert_eq!((error.field.as_str(), error.message.as_str()), ("slug", "is given twice"));
    }

    #[test]
    fn values_other_than_the_slug_stay_out_of_messages() {
        let secretish = "Zq8-visible-value";
        for changes in [
            json!({"slug": secretish}),
            json!({"name": 5, "description": secretish}),
            json!({"verify": {"method": secretish, "url": "https://a.test"}}),
            json!({"verify": {"method": "GET", "url": secretish}}),
            json!({"revoke": secretish}),
            json!({"setupInstructions": [secretish]}),
            json!({"auth": {"type": secretish, "config": {}}}),
            json!({"auth": {"type": "api_key", "config": {"in": secretish, "name": "k"}}}),
            json!({"auth": {"type": "oauth2", "config": {"authorizeUrl": secretish, "tokenUrl": "https://t.test", "scopes": []}}}),
            json!({"auth": {"type": "oauth2", "config": {"authorizeUrl": "https://a.test", "tokenUrl": "https://t.test", "scopes": [], "pkce": secretish}}}),
        ] {
            let error = error_of(changes.clone());
            assert!(!format!("{error} {error:?}").contains("visible"), "{changes}: {error}");
        }
    }

    fn sources(list: &[(&str, Value)]) -> Vec<(String, String)> {
        list.iter().map(|(name, value)| ((*name).to_owned(), value.to_string())).collect()
    }

    #[test]
    fn a_slug_declared_twice_names_both_files() {
        let error = ProviderCatalog::from_sources(sources(&[
            ("providers/acme.json", manifest(json!({}))),
            ("providers/other.json", manifest(json!({"slug": "other"}))),
            ("/etc/providers/acme2.json", manifest(json!({"name": "Acme again"}))),
        ]))
        .unwrap_err();
        assert_eq!((error.file.as_str(), error.field.as_str()), ("/etc/providers/acme2.json", "slug"));
        assert!(error.message.contains("providers/acme.json") && error.message.contains("acme"), "{error}");
    }

    #[test]
    fn the_catalog_is_sorted_by_slug_and_the_first_bad_manifest_stops_it() {
        let catalog = ProviderCatalog::from_sources(sources(&[
            ("z.json", manifest(json!({"slug": "zeta"}))),
            ("a.json", manifest(json!({"slug": "alpha"}))),
        ]))
        .unwrap();
        let slugs: Vec<&str> = catalog.iter().map(|p| p.slug.as_str()).collect();
        assert_eq!(slugs, ["alpha", "zeta"]);
        assert_eq!(catalog.get("zeta").unwrap().source, "z.json");
        assert!(catalog.get("beta").is_none());
        assert_eq!(catalog.len(), 2);

        let error = ProviderCatalog::from_sources(sources(&[
            ("a.json", manifest(json!({"slug": "alpha"}))),
            ("b.json", manifest(json!({"slug": "B"}))),
        ]))
        .unwrap_err();
        assert_eq!(error.file, "b.json");
        assert!(ProviderCatalog::from_sources(Vec::new()).unwrap().is_empty());
    }

    /// A scratch directory under the system's temporary directory, removed on drop.
    struct ScratchDir(PathBuf);

    impl ScratchDir {
        fn new(name: &str) -> Self {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
            let dir = std::env::temp_dir().join(format!("provider-catalog-{name}-{}-{nanos}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn write(&self, name: &str, text: &str) -> String {
            let path = self.0.join(name);
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        }
    }

    impl Drop for ScratchDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn load_adds_the_json_files_of_the_extra_directory_in_name_order() {
        let dir = ScratchDir::new("extra");
        let second = dir.write("b.json", &manifest(json!({"slug": "acme", "name": "B"})).to_string());
        let first = dir.write("a.json", &manifest(json!({"slug": "acme", "name": "A"})).to_string());
        dir.write("README.md", "not a manifest");
        dir.write("c.json.bak", "{");
        std::fs::create_dir(dir.0.join("d.json")).unwrap();
        let error = ProviderCatalog::load(Some(&dir.0)).unwrap_err();
        assert_eq!((error.file.as_str(), error.field.as_str()), (second.as_str(), "slug"));
        assert!(error.message.contains(&first), "{error}");

        std::fs::remove_file(&second).unwrap();
        let catalog = ProviderCatalog::load(Some(&dir.0)).unwrap();
        assert_eq!(catalog.get("acme").unwrap().source, first);
        assert_eq!(catalog.len(), SHIPPED.len() + 1);

        dir.write("github.json", &manifest(json!({"slug": "github"})).to_string());
        let error = ProviderCatalog::load(Some(&dir.0)).unwrap_err();
        assert_eq!(error.field, "slug");
        assert!(error.message.contains("providers/github.json"), "{error}");
    }

    #[test]
    fn an_unreadable_directory_or_file_is_an_error_naming_the_path() {
        let missing = std::env::temp_dir().join("provider-catalog-does-not-exist-7f3a");
        let error = ProviderCatalog::load(Some(&missing)).unwrap_err();
        assert_eq!((error.file.as_str(), error.field.as_str()), (missing.display().to_string().as_str(), ""));
        assert!(error.message.starts_with("cannot read the directory"), "{error}");

        let dir = ScratchDir::new("unreadable");
        let path = dir.0.join("broken.json");
        std::fs::write(&path, [0xff, 0xfe, b'{']).unwrap();
        let error = ProviderCatalog::load(Some(&dir.0)).unwrap_err();
        assert_eq!((error.file.as_str(), error.field.as_str()), (path.display().to_string().as_str(), ""));
        assert!(error.message.starts_with("cannot read the file"), "{error}");
    }

    #[test]
    fn the_shipped_catalog_loads_and_covers_every_strategy_and_option() {
        let catalog = ProviderCatalog::load(None).unwrap();
        let slugs: Vec<&str> = catalog.iter().map(|p| p.slug.as_str()).collect();
        assert_eq!(
            slugs,
            ["aws", "bitbucket", "fleetdm", "github", "google-workspace", "rippling", "shodan", "vercel"]
        );
        for provider in catalog.iter() {
            assert_eq!(provider.source, format!("providers/{}.json", provider.slug));
            assert!(provider.setup_instructions().is_some(), "{} has no setup instructions", provider.slug);
            assert!(
                provider.verify.is_some() || ["aws", "fleetdm"].contains(&provider.slug.as_str()),
                "{} has no verify",
                provider.slug
            );
        }
        let oauth = |slug: &str| match &catalog.get(slug).unwrap().auth {
            AuthStrategy::OAuth2(config) => config.clone(),
            other => panic!("{slug} is {:?}", other.kind()),
        };

        let github = oauth("github");
        assert!(!github.supports_refresh_token && !github.pkce);
        assert_eq!(github.scopes, ["read:org", "repo", "security_events"]);
        assert!(github.create_app_url.is_some() && catalog.get("github").unwrap().revoke.is_none());

        let google = oauth("google-workspace");
        assert!(google.pkce && google.supports_refresh_token);
        assert_eq!(google.authorization_params.get("access_type").map(String::as_str), Some("offline"));
        assert_eq!(google.authorization_params.get("prompt").map(String::as_str), Some("consent"));
        assert_eq!(
            catalog.get("google-workspace").unwrap().revoke.as_deref(),
            Some("https://oauth2.googleapis.com/revoke")
        );

        let rippling = oauth("rippling");
        assert_eq!(rippling.client_auth_method, ClientAuthMethod::Header);
        assert_eq!(rippling.custom_settings.len(), 1);
        let setting = &rippling.custom_settings[0];
        assert!(setting.required && setting.id == "app_name" && setting.input_type == "text");
        assert!(rippling.authorize_url.contains(setting.token.as_deref().unwrap()));

        let AuthStrategy::ApiKey(vercel) = &catalog.get("vercel").unwrap().auth else { panic!("vercel") };
        assert_eq!(
            (vercel.location, vercel.name.as_str(), vercel.prefix.as_str()),
            (ApiKeyLocation::Header, "Authorization", "Bearer ")
        );
        let AuthStrategy::ApiKey(shodan) = &catalog.get("shodan").unwrap().auth else { panic!("shodan") };
        assert_eq!((shodan.location, shodan.name.as_str()), (ApiKeyLocation::Query, "key"));

        let AuthStrategy::Basic(bitbucket) = &catalog.get("bitbucket").unwrap().auth else { panic!("bitbucket") };
        assert_eq!((bitbucket.username_field.as_str(), bitbucket.password_field.as_str()), ("email", "api_token"));

        let AuthStrategy::Custom(aws) = &catalog.get("aws").unwrap().auth else { panic!("aws") };
        let fields: Vec<(&str, FieldType, bool)> =
            aws.credential_fields.iter().map(|f| (f.id.as_str(), f.field_type, f.required)).collect();
        assert_eq!(
            fields,
            [
                ("access_key_id", FieldType::Text, true),
                ("secret_access_key", FieldType::Password, true),
                ("region", FieldType::Combobox, true),
                ("role_arn", FieldType::Text, false),
                ("external_id", FieldType::Text, false),
            ]
        );
        assert!(aws.credential_fields[2].options.as_ref().is_some_and(|o| o.iter().any(|o| o.value == "us-east-1")));
        assert!(aws.credential_fields[3].placeholder.is_some() && aws.credential_fields[3].help_text.is_some());
        assert!(catalog.get("aws").unwrap().verify.is_none());
    }
}
