//! The connect page (`GET/POST /integrations/{slug}/connect`) and the small message page for its errors.
//!
//! Pure rendering: the handlers gather the data and send the `String`. maud escapes every value.

use std::collections::BTreeMap;

use compliance_app::integrations::{CredentialField, FieldType, percent_encode};
use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::markdown::{is_safe_destination, render_markdown};

pub(crate) struct ConnectPage<'a> {
    pub provider_name: &'a str,
    pub provider_slug: &'a str,
    pub description: &'a str,
    /// Markdown.
    pub setup_instructions: Option<&'a str>,
    pub organization_id: &'a str,
    pub csrf_token: &'a str,
    pub body: ConnectBody<'a>,
    pub outcome: Option<Outcome<'a>>,
}

pub(crate) enum ConnectBody<'a> {
    /// oauth2 providers
    OAuth { configured: bool, create_app_url: Option<&'a str> },
    /// other strategies
    Form {
        fields: &'a [CredentialField],
        /// values to put back after a failed submit (never passwords: the caller leaves those out)
        values: &'a BTreeMap<String, String>,
        /// field id -> message
        errors: &'a BTreeMap<String, String>,
    },
}

pub(crate) enum Outcome<'a> {
    Connected { connection_id: &'a str, status: &'a str },
    Failed { message: &'a str },
}

/// Small and self-contained: the page loads nothing from elsewhere.
const STYLE: &str = "\
body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1a1a1a;background:#fff}
main{max-width:40rem;margin:0 auto;padding:1.5rem}
a{color:#0645ad}
label{display:block;font-weight:600;margin-top:1rem}
input,select,textarea{box-sizing:border-box;width:100%;padding:.5rem;font:inherit;border:1px solid #555;border-radius:4px}
textarea{min-height:6rem}
button{margin-top:1.5rem;padding:.6rem 1.2rem;font:inherit;color:#fff;background:#0b5394;border:0;border-radius:4px;cursor:pointer}
:focus-visible{outline:3px solid #c25e00;outline-offset:2px}
.help{margin:.25rem 0 0;color:#4a4a4a;font-size:.9rem}
.error{margin:.25rem 0 0;color:#b00020;font-weight:600}
[aria-invalid=true]{border-color:#b00020}
#result{padding:.75rem 1rem;border-radius:4px;border:1px solid #1e6b30;background:#eaf6ec}
#result[data-status=error]{border-color:#b00020;background:#fdecee}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
";

pub(crate) fn render_connect_page(page: &ConnectPage<'_>) -> String {
    let name = page.provider_name;
    let content = html! {
        h1 { "Connect " (name) }
        p { (page.description) }
        @if let Some(outcome) = &page.outcome { (outcome_section(outcome)) }
        @if let Some(instructions) = page.setup_instructions {
            section aria-labelledby="setup-heading" {
                h2 id="setup-heading" { "Setup instructions" }
                // render_markdown escapes raw HTML and drops unsafe links itself.
                (PreEscaped(render_markdown(instructions)))
            }
        }
        @match &page.body {
            ConnectBody::OAuth { configured: true, .. } => {
                form id="oauth-form" method="post" action=(action(page, "/connect/oauth")) {
                    input type="hidden" name="csrf_token" value=(page.csrf_token);
                    button type="submit" id="connect-oauth" { "Connect with " (name) }
                }
            }
            ConnectBody::OAuth { configured: false, create_app_url } => {
                p id="oauth-not-configured" {
                    "An administrator must configure the OAuth app for this organization first."
                    @if let Some(url) = create_app_url.filter(|url| is_safe_destination(url)) {
                        " " a href=(url) { "Create the OAuth app" }
                    }
                }
            }
            ConnectBody::Form { fields, values, errors } => {
                form id="connect-form" method="post" action=(action(page, "/connect")) {
                    input type="hidden" name="csrf_token" value=(page.csrf_token);
                    @for field in *fields {
                        (field_block(field, values.get(&field.id), errors.get(&field.id)))
                    }
                    button type="submit" id="connect-submit" { "Connect" }
                }
            }
        }
    };
    layout(&format!("Connect {name}"), content)
}

/// A small page for errors (401/403/404/400): title + detail, same layout.
pub(crate) fn render_message_page(title: &str, detail: &str) -> String {
    layout(title, html! { h1 { (title) } p { (detail) } })
}

fn layout(title: &str, content: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body { main { (content) } }
        }
    }
    .into_string()
}

fn outcome_section(outcome: &Outcome<'_>) -> Markup {
    match outcome {
        Outcome::Connected { connection_id, status } => html! {
            section id="result" role="status" data-status=(status) {
                h2 { "Connected" }
                p { "Status: " strong { (status) } }
                p { "Connection " code { (connection_id) } }
            }
        },
        Outcome::Failed { message } => html! {
            section id="result" role="alert" data-status="error" {
                h2 { "Connection failed" }
                p { (message) }
            }
        },
    }
}

/// `/integrations/{slug}{path}?organizationId={org}`, both values percent-encoded.
fn action(page: &ConnectPage<'_>, path: &str) -> String {
    format!(
        "/integrations/{}{path}?organizationId={}",
        percent_encode(page.provider_slug),
        percent_encode(page.organization_id)
    )
}

/// Label (with the required marker), control, help text and error of one credential field.
fn field_block(field: &CredentialField, value: Option<&String>, error: Option<&String>) -> Markup {
    let id = &field.id;
    let help_id = field.help_text.as_ref().map(|_| format!("help-{id}"));
    let error_id = error.map(|_| format!("error-{id}"));
    let described_by: Vec<&str> = help_id.iter().chain(&error_id).map(String::as_str).collect();
    let attrs = ControlAttrs {
        id: format!("field-{id}"),
        name: format!("cred.{id}"),
        required: field.required,
        placeholder: field.placeholder.as_deref(),
        described_by: (!described_by.is_empty()).then(|| described_by.join(" ")),
        invalid: error.is_some(),
    };
    html! {
        div.field {
            label for=(attrs.id) {
                (field.label)
                @if field.required {
                    // Sighted users see "*"; screen readers hear "(required)" instead.
                    span aria-hidden="true" { " *" }
                    span.visually-hidden { " (required)" }
                }
            }
            (control(field, &attrs, value.map(String::as_str)))
            @if let (Some(help_id), Some(help)) = (&help_id, &field.help_text) {
                p id=(help_id) class="help" { (help) }
            }
            @if let (Some(error_id), Some(message)) = (&error_id, error) {
                p id=(error_id) class="error" { (message) }
            }
        }
    }
}

/// The attributes every kind of control carries.
struct ControlAttrs<'a> {
    id: String,
    name: String,
    required: bool,
    placeholder: Option<&'a str>,
    described_by: Option<String>,
    invalid: bool,
}

fn control(field: &CredentialField, a: &ControlAttrs<'_>, value: Option<&str>) -> Markup {
    let invalid = a.invalid.then_some("true");
    let options = field.options.as_deref().unwrap_or_default();
    // One macro body for the `input` kinds, which differ only in type and a few extra attributes.
    let input = |kind: &str, list: Option<String>, step: Option<&str>| {
        html! {
            input type=(kind) id=(a.id) name=(a.name) value=[value] list=[list] step=[step] required[a.required]
                placeholder=[a.placeholder] aria-describedby=[&a.described_by] aria-invalid=[invalid];
        }
    };
    match field.field_type {
        FieldType::Text => input("text", None, None),
        FieldType::Number => input("number", None, Some("any")),
        FieldType::Url => input("url", None, None),
        // Never a value: a password is not sent back into the page.
        FieldType::Password => html! {
            input type="password" autocomplete="off" id=(a.id) name=(a.name) required[a.required]
                placeholder=[a.placeholder] aria-describedby=[&a.described_by] aria-invalid=[invalid];
        },
        FieldType::Textarea => html! {
            // The parser drops one newline right after <textarea>: lead with one so a value's own survives.
            textarea id=(a.id) name=(a.name) required[a.required] placeholder=[a.placeholder]
                aria-describedby=[&a.described_by] aria-invalid=[invalid] { "\n" (value.unwrap_or_default()) }
        },
        FieldType::Select => html! {
            select id=(a.id) name=(a.name) required[a.required] aria-describedby=[&a.described_by]
                aria-invalid=[invalid] {
                option value="" { "Choose…" }
                @for option in options {
                    option value=(option.value) selected[value == Some(option.value.as_str())] { (option.label) }
                }
            }
        },
        FieldType::Combobox => {
            let list_id = format!("options-{}", field.id);
            html! {
                (input("text", Some(list_id.clone()), None))
                datalist id=(list_id) {
                    @for option in options { option value=(option.value) { (option.label) } }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use compliance_app::integrations::FieldOption;

    use super::*;

    fn field(id: &str, field_type: FieldType, required: bool) -> CredentialField {
        CredentialField {
            id: id.into(),
            label: format!("Label {id}"),
            field_type,
            required,
            placeholder: None,
            help_text: None,
            options: field_type.takes_options().then(|| {
                vec![
                    FieldOption { value: "eu".into(), label: "Europe".into() },
                    FieldOption { value: "us".into(), label: "United States".into() },
                ]
            }),
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn page<'a>(body: ConnectBody<'a>) -> ConnectPage<'a> {
        ConnectPage {
            provider_name: "Acme",
            provider_slug: "acme",
            description: "Acme cloud.",
            setup_instructions: None,
            organization_id: "org_1",
            csrf_token: "tok",
            body,
            outcome: None,
        }
    }

    fn form_page(fields: &[CredentialField], values: &[(&str, &str)], errors: &[(&str, &str)]) -> String {
        let (values, errors) = (map(values), map(errors));
        render_connect_page(&page(ConnectBody::Form { fields, values: &values, errors: &errors }))
    }

    #[test]
    fn document_shell_is_complete_and_self_contained() {
        let html = form_page(&[], &[], &[]);
        assert!(html.starts_with("<!DOCTYPE html><html lang=\"en\">"), "{html}");
        for needle in [
            r#"<meta charset="utf-8">"#,
            r#"<meta name="viewport""#,
            "<title>Connect Acme</title>",
            "<main><h1>Connect Acme</h1><p>Acme cloud.</p>",
            "<style>",
        ] {
            assert!(html.contains(needle), "{needle}: {html}");
        }
        assert_eq!(html.matches("<style>").count(), 1);
        for absent in ["<script", "<link", "src=", "@import", "url("] {
            assert!(!html.contains(absent), "{absent}: {html}");
        }
    }

    #[test]
    fn everything_user_supplied_is_escaped() {
        let evil = "<script>alert(1)</script>";
        let mut f = field("f", FieldType::Text, true);
        f.label = evil.into();
        f.help_text = Some(evil.into());
        f.placeholder = Some(format!("\"{evil}"));
        let fields = [f];
        let values = map(&[("f", evil)]);
        let errors = map(&[("f", evil)]);
        let mut p = page(ConnectBody::Form { fields: &fields, values: &values, errors: &errors });
        p.provider_name = evil;
        p.description = evil;
        p.csrf_token = "\"><script>";
        p.outcome = Some(Outcome::Failed { message: evil });
        let html = render_connect_page(&p);
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("<title>Connect &lt;script&gt;alert(1)&lt;/script&gt;</title>"), "{html}");
        assert!(html.contains(r#"value="&lt;script&gt;alert(1)&lt;/script&gt;""#), "{html}");
        assert!(html.contains(r#"placeholder="&quot;&lt;script&gt;"#), "{html}");

        let message = render_message_page(evil, evil);
        assert!(!message.contains("<script"), "{message}");
    }

    #[test]
    fn setup_instructions_are_rendered_markdown_in_a_labelled_section() {
        let mut p = page(ConnectBody::OAuth { configured: true, create_app_url: None });
        p.setup_instructions = Some("Open **Settings**. <img src=x onerror=alert(1)> [x](javascript:alert(1))");
        let html = render_connect_page(&p);
        assert!(
            html.contains(r#"<section aria-labelledby="setup-heading"><h2 id="setup-heading">Setup instructions</h2>"#)
        );
        assert!(html.contains("<strong>Settings</strong>"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
    }

    #[test]
    fn form_posts_to_the_encoded_action_with_the_csrf_token() {
        let fields = [field("f", FieldType::Text, false)];
        let (values, errors) = (map(&[]), map(&[]));
        let mut p = page(ConnectBody::Form { fields: &fields, values: &values, errors: &errors });
        p.provider_slug = "ac me/x";
        p.organization_id = "org_1&x=y";
        let html = render_connect_page(&p);
        assert!(
            html.contains(
                r#"<form id="connect-form" method="post" action="/integrations/ac%20me%2Fx/connect?organizationId=org_1%26x%3Dy">"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"<input type="hidden" name="csrf_token" value="tok">"#), "{html}");
        assert!(html.contains(r#"<button type="submit" id="connect-submit">Connect</button>"#), "{html}");
        assert!(!html.contains("novalidate"), "{html}");
    }

    #[test]
    fn each_field_type_renders_its_control_with_the_refilled_value() {
        let kinds = [
            ("t", FieldType::Text, r#"<input type="text" id="field-t" name="cred.t" value="tv">"#),
            ("n", FieldType::Number, r#"<input type="number" id="field-n" name="cred.n" value="4.5" step="any">"#),
            ("u", FieldType::Url, r#"<input type="url" id="field-u" name="cred.u" value="https://a.test">"#),
            ("a", FieldType::Textarea, "<textarea id=\"field-a\" name=\"cred.a\">\nline1\nline2</textarea>"),
            (
                "c",
                FieldType::Combobox,
                r#"<input type="text" id="field-c" name="cred.c" value="ap" list="options-c"><datalist id="options-c"><option value="eu">Europe</option><option value="us">United States</option></datalist>"#,
            ),
            (
                "s",
                FieldType::Select,
                r#"<select id="field-s" name="cred.s"><option value="">Choose…</option><option value="eu">Europe</option><option value="us" selected>United States</option></select>"#,
            ),
        ];
        let fields: Vec<_> = kinds.iter().map(|(id, kind, _)| field(id, *kind, false)).collect();
        let values =
            [("t", "tv"), ("n", "4.5"), ("u", "https://a.test"), ("a", "line1\nline2"), ("c", "ap"), ("s", "us")];
        let html = form_page(&fields, &values, &[]);
        for (id, _, expected) in kinds {
            assert!(html.contains(expected), "{id}: {html}");
        }
    }

    #[test]
    fn password_never_carries_a_value() {
        let fields = [field("p", FieldType::Password, true)];
        let html = form_page(&fields, &[("p", "hunter2")], &[]);
        assert!(html.contains(r#"<input type="password" autocomplete="off" id="field-p" name="cred.p" required>"#));
        assert!(!html.contains("hunter2"), "{html}");
    }

    #[test]
    fn required_fields_have_markers_placeholder_and_described_by() {
        let mut required = field("key", FieldType::Password, true);
        required.placeholder = Some("Enter your key".into());
        required.help_text = Some("From the settings.".into());
        let optional = field("note", FieldType::Text, false);
        let html = form_page(&[required, optional], &[], &[]);
        assert!(html.contains(
            r#"<label for="field-key">Label key<span aria-hidden="true"> *</span><span class="visually-hidden"> (required)</span></label>"#
        ), "{html}");
        assert!(html.contains(r#"required placeholder="Enter your key" aria-describedby="help-key">"#), "{html}");
        assert!(html.contains(r#"<p id="help-key" class="help">From the settings.</p>"#), "{html}");
        assert!(html.contains(r#"<label for="field-note">Label note</label>"#), "{html}");
        assert!(html.contains(r#"<input type="text" id="field-note" name="cred.note">"#), "{html}");
    }

    #[test]
    fn errors_are_described_and_mark_the_control_invalid() {
        let mut with_help = field("h", FieldType::Text, true);
        with_help.help_text = Some("Help.".into());
        let fields = [with_help, field("s", FieldType::Select, true), field("ok", FieldType::Text, true)];
        let html = form_page(&fields, &[], &[("h", "is required"), ("s", "must be one of the offered options")]);
        assert!(html.contains(r#"aria-describedby="help-h error-h" aria-invalid="true">"#), "{html}");
        assert!(html.contains(r#"<p id="error-h" class="error">is required</p>"#), "{html}");
        assert!(
            html.contains(
                r#"<select id="field-s" name="cred.s" required aria-describedby="error-s" aria-invalid="true">"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"<p id="error-s" class="error">must be one of the offered options</p>"#));
        assert!(html.contains(r#"<input type="text" id="field-ok" name="cred.ok" required>"#), "{html}");
    }

    #[test]
    fn oauth_configured_has_the_connect_button() {
        let html = render_connect_page(&page(ConnectBody::OAuth { configured: true, create_app_url: None }));
        assert!(html.contains(
            r#"<form id="oauth-form" method="post" action="/integrations/acme/connect/oauth?organizationId=org_1"><input type="hidden" name="csrf_token" value="tok"><button type="submit" id="connect-oauth">Connect with Acme</button></form>"#
        ), "{html}");
        assert!(!html.contains("oauth-not-configured") && !html.contains("connect-form"), "{html}");
    }

    #[test]
    fn oauth_not_configured_explains_and_links_without_a_button() {
        let url = "https://acme.test/apps/new";
        let html = render_connect_page(&page(ConnectBody::OAuth { configured: false, create_app_url: Some(url) }));
        assert!(html.contains(r#"<p id="oauth-not-configured">An administrator must configure the OAuth app"#));
        assert!(html.contains(r#"<a href="https://acme.test/apps/new">Create the OAuth app</a>"#), "{html}");
        assert!(!html.contains("<button") && !html.contains("<form"), "{html}");

        let html = render_connect_page(&page(ConnectBody::OAuth { configured: false, create_app_url: None }));
        assert!(html.contains("oauth-not-configured") && !html.contains("<a "), "{html}");
        let evil = Some("javascript:alert(1)");
        let html = render_connect_page(&page(ConnectBody::OAuth { configured: false, create_app_url: evil }));
        assert!(!html.contains("javascript:"), "{html}");
    }

    #[test]
    fn outcome_sections() {
        let mut p = page(ConnectBody::OAuth { configured: true, create_app_url: None });
        p.outcome = Some(Outcome::Connected { connection_id: "conn_9", status: "active" });
        let html = render_connect_page(&p);
        assert!(html.contains(r#"<section id="result" role="status" data-status="active"><h2>Connected</h2>"#));
        assert!(html.contains("<strong>active</strong>") && html.contains("conn_9"), "{html}");

        p.outcome = Some(Outcome::Failed { message: "The service refused the credentials." });
        let html = render_connect_page(&p);
        assert!(html.contains(r#"<section id="result" role="alert" data-status="error">"#), "{html}");
        assert!(html.contains("<p>The service refused the credentials.</p>"), "{html}");

        p.outcome = None;
        assert!(!render_connect_page(&p).contains(r#"id="result""#));
    }

    #[test]
    fn message_page_uses_the_same_layout() {
        let html = render_message_page("Not found", "No integration acme.");
        assert!(html.starts_with("<!DOCTYPE html><html lang=\"en\">"), "{html}");
        assert!(html.contains("<title>Not found</title>") && html.contains("<style>"), "{html}");
        assert!(html.contains("<main><h1>Not found</h1><p>No integration acme.</p></main>"), "{html}");
    }
}
