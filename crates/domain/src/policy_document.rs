//! A policy version as a document people read: its rich text rendered as one self-contained
//! HTML5 page (inline CSS, no script, no external asset), with a header naming the organization,
//! the policy, the version and who approved and published it when.
//!
//! Rich text is TipTap/ProseMirror JSON ([`RichText`]), which the domain validates for shape only:
//! any `type` may appear. Known nodes and marks become their HTML elements; an unknown node
//! renders its children (or its text) without an element of its own, so nothing a client wrote
//! is lost and nothing it wrote becomes markup. Every text and attribute value is escaped.
//!
//! Written by hand rather than with a template crate: the domain crate stays free of macros and
//! dependencies for other services to embed, and the whole output is the few elements below.
//!
//! ```
//! use compliance_domain::Timestamp;
//! use compliance_domain::policy::RichText;
//! use compliance_domain::policy_document::{DocumentHeader, render_html};
//!
//! let nodes = serde_json::from_str(r#"[{"type":"heading","attrs":{"level":1},
//!     "content":[{"type":"text","text":"Access <control>"}]}]"#).unwrap();
//! let content = RichText::parse(nodes).unwrap();
//! let header = DocumentHeader {
//!     organization: "Acme", policy: "Access", version: 2,
//!     published_at: Timestamp::parse("2026-11-26T10:00:00Z").unwrap(), published_by: Some("Ada"),
//!     approved_by: None, approved_at: None,
//! };
//! let html = render_html(&header, &content);
//! assert!(html.contains("<h1>Access &lt;control&gt;</h1>"));
//! assert!(!html.contains("<script"));
//! ```

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::Timestamp;
use crate::policy::RichText;

/// What the document's header says about the version.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DocumentHeader<'a> {
    /// The organization's name, as written.
    pub organization: &'a str,
    /// The policy's name as the version was published.
    pub policy: &'a str,
    /// The version's number.
    pub version: i32,
    /// When the version was published.
    pub published_at: Timestamp,
    /// The publisher's name; `None` when unknown (versions made before versions were recorded).
    pub published_by: Option<&'a str>,
    /// The approver's name, when the version went through approval.
    pub approved_by: Option<&'a str>,
    /// When the approver approved it, when it went through approval.
    pub approved_at: Option<Timestamp>,
}

/// The Content-Security-Policy the document is served with: no script, no fetch of any kind,
/// only its own inline styles. It is also in the document's `<meta>`, for saved copies.
pub const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// The schemes a link may keep; any other link is rendered as its text.
const LINK_SCHEMES: [&str; 3] = ["http", "https", "mailto"];

const STYLE: &str = "\
body{font-family:'DejaVu Sans','Liberation Sans',Arial,sans-serif;font-size:11pt;line-height:1.5;color:#1a1a1a;\
max-width:46em;margin:2em auto;padding:0 1em}\
header{border-bottom:2px solid #333;margin-bottom:1.5em;padding-bottom:.5em}\
header .organization{font-size:10pt;letter-spacing:.05em;color:#555;margin:0}\
header h1{margin:.2em 0}\
header dl{display:grid;grid-template-columns:max-content auto;gap:.1em 1em;font-size:9.5pt;margin:.5em 0}\
header dt{font-weight:bold}header dd{margin:0}\
table{border-collapse:collapse;margin:1em 0;width:100%}\
th,td{border:1px solid #999;padding:.3em .5em;text-align:left;vertical-align:top}th{background:#eee}\
blockquote{border-left:3px solid #999;margin:1em 0;padding-left:1em;color:#444}\
pre{background:#f4f4f4;padding:.6em;white-space:pre-wrap;overflow-wrap:anywhere}\
code{font-family:'DejaVu Sans Mono',monospace;font-size:.95em}\
hr{border:0;border-top:1px solid #999;margin:1.5em 0}\
ul.tasks{list-style:none;padding-left:1.2em}\
a{color:#0645ad}mark{background:#ff0}\
@page{size:A4}";

/// Renders the version as a complete HTML5 document.
pub fn render_html(header: &DocumentHeader<'_>, content: &RichText) -> String {
    let nodes: Vec<Value> = serde_json::from_str(content.json().get()).unwrap_or_default();
    let mut html = String::with_capacity(content.json().get().len() + STYLE.len() + 1024);
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(html, "<meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">");
    html.push_str("<meta name=\"referrer\" content=\"no-referrer\">");
    let _ = write!(html, "<title>{} — version {}</title>", escape(header.policy), header.version);
    let _ = write!(html, "<style>{STYLE}</style></head><body>");
    render_header(&mut html, header);
    html.push_str("<main>");
    for node in &nodes {
        render_node(&mut html, node);
    }
    html.push_str("</main></body></html>\n");
    html
}

fn render_header(html: &mut String, header: &DocumentHeader<'_>) {
    let _ = write!(
        html,
        "<header><p class=\"organization\">{}</p><h1 class=\"policy\">{}</h1><dl>",
        escape(header.organization),
        escape(header.policy)
    );
    let _ = write!(html, "<dt>Version</dt><dd class=\"version\">{}</dd>", header.version);
    let published = match header.published_by {
        Some(name) => format!("{} by {}", date(header.published_at), escape(name)),
        None => date(header.published_at),
    };
    let _ = write!(html, "<dt>Published</dt><dd class=\"published\">{published}</dd>");
    let approved = match (header.approved_by, header.approved_at) {
        (Some(name), Some(at)) => format!("{} on {}", escape(name), date(at)),
        (Some(name), None) => escape(name),
        (None, _) => "not required (published directly)".to_owned(),
    };
    let _ = write!(html, "<dt>Approved by</dt><dd class=\"approved\">{approved}</dd></dl></header>");
}

/// A date and time in UTC to the minute, as readers of a printed page want it.
fn date(at: Timestamp) -> String {
    let t = at.to_offset();
    format!("{:04}-{:02}-{:02} {:02}:{:02} UTC", t.year(), u8::from(t.month()), t.day(), t.hour(), t.minute())
}

fn render_node(html: &mut String, node: &Value) {
    let Some(object) = node.as_object() else { return };
    let kind = object.get("type").and_then(Value::as_str).unwrap_or_default();
    let attrs = object.get("attrs").and_then(Value::as_object);
    let attr = |name: &str| attrs.and_then(|a| a.get(name));
    match kind {
        "text" => render_text(html, object),
        "doc" => render_children(html, object),
        "paragraph" => element(html, "p", &align(attr("textAlign")), object),
        "heading" => {
            // Level 1 is the policy's name in the header; content headings keep their level.
            let level = attr("level").and_then(Value::as_u64).filter(|l| (1..=6).contains(l)).unwrap_or(2);
            element(html, &format!("h{level}"), &align(attr("textAlign")), object);
        }
        "bulletList" | "bullet_list" => element(html, "ul", "", object),
        "orderedList" | "ordered_list" => {
            let start = attr("start").and_then(Value::as_i64).filter(|s| *s != 1);
            let start = start.map(|s| format!(" start=\"{s}\"")).unwrap_or_default();
            element(html, "ol", &start, object);
        }
        "listItem" | "list_item" => element(html, "li", "", object),
        "taskList" => element(html, "ul", " class=\"tasks\"", object),
        "taskItem" => {
            let mark = if attr("checked").and_then(Value::as_bool) == Some(true) { "☑ " } else { "☐ " };
            html.push_str("<li>");
            html.push_str(mark);
            render_children(html, object);
            html.push_str("</li>");
        }
        "blockquote" => element(html, "blockquote", "", object),
        "codeBlock" | "code_block" => {
            html.push_str("<pre><code>");
            render_children(html, object);
            html.push_str("</code></pre>");
        }
        "hardBreak" | "hard_break" => html.push_str("<br>"),
        "horizontalRule" | "horizontal_rule" => html.push_str("<hr>"),
        "table" => {
            html.push_str("<table><tbody>");
            render_children(html, object);
            html.push_str("</tbody></table>");
        }
        "tableRow" | "table_row" => element(html, "tr", "", object),
        "tableHeader" | "table_header" => element(html, "th", &spans(attrs), object),
        "tableCell" | "table_cell" => element(html, "td", &spans(attrs), object),
        // An image would be an external asset: the document shows its description instead.
        "image" => {
            let alt = attr("alt").or_else(|| attr("title")).and_then(Value::as_str).unwrap_or("");
            let _ = write!(
                html,
                "<span class=\"image\">[image{}{}]</span>",
                if alt.is_empty() { "" } else { ": " },
                escape(alt)
            );
        }
        _ => {
            if let Some(text) = object.get("text").and_then(Value::as_str) {
                html.push_str(&escape(text));
            }
            render_children(html, object);
        }
    }
}

fn element(html: &mut String, tag: &str, attributes: &str, object: &Map<String, Value>) {
    let _ = write!(html, "<{tag}{attributes}>");
    render_children(html, object);
    let _ = write!(html, "</{tag}>");
}

fn render_children(html: &mut String, object: &Map<String, Value>) {
    for child in object.get("content").and_then(Value::as_array).into_iter().flatten() {
        render_node(html, child);
    }
}

/// `style="text-align:…"` for the four alignments, nothing for any other value.
fn align(value: Option<&Value>) -> String {
    match value.and_then(Value::as_str) {
        Some(side @ ("left" | "center" | "right" | "justify")) => format!(" style=\"text-align:{side}\""),
        _ => String::new(),
    }
}

/// `colspan`/`rowspan` when they are whole numbers above 1 (at most 1,000).
fn spans(attrs: Option<&Map<String, Value>>) -> String {
    let mut out = String::new();
    for name in ["colspan", "rowspan"] {
        let span = attrs.and_then(|a| a.get(name)).and_then(Value::as_u64).filter(|n| (2..=1000).contains(n));
        if let Some(span) = span {
            let _ = write!(out, " {name}=\"{span}\"");
        }
    }
    out
}

/// A text node: its text escaped, wrapped in its marks (first mark outermost).
fn render_text(html: &mut String, object: &Map<String, Value>) {
    let text = object.get("text").and_then(Value::as_str).unwrap_or_default();
    let marks: Vec<&Map<String, Value>> =
        object.get("marks").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object).collect();
    let mut closing = Vec::new();
    for mark in &marks {
        let kind = mark.get("type").and_then(Value::as_str).unwrap_or_default();
        let (open, close) = match kind {
            "bold" | "strong" => ("<strong>".to_owned(), "</strong>"),
            "italic" | "em" => ("<em>".to_owned(), "</em>"),
            "underline" => ("<u>".to_owned(), "</u>"),
            "strike" | "strikethrough" => ("<s>".to_owned(), "</s>"),
            "code" => ("<code>".to_owned(), "</code>"),
            "highlight" => ("<mark>".to_owned(), "</mark>"),
            "subscript" => ("<sub>".to_owned(), "</sub>"),
            "superscript" => ("<sup>".to_owned(), "</sup>"),
            "link" => match safe_href(mark.get("attrs").and_then(|a| a.get("href"))) {
                Some(href) => (format!("<a href=\"{}\" rel=\"noopener noreferrer\">", escape(&href)), "</a>"),
                // An unsafe or missing target: the text stays, the link does not.
                None => continue,
            },
            // Colours, fonts and unknown marks: the text as it is.
            _ => continue,
        };
        html.push_str(&open);
        closing.push(close);
    }
    html.push_str(&escape(text));
    for close in closing.iter().rev() {
        html.push_str(close);
    }
}

/// The link target if it is an absolute `http`, `https` or `mailto` URL, normalised by the URL
/// parser (so no whitespace, control character or quote survives unencoded).
fn safe_href(href: Option<&Value>) -> Option<String> {
    let url = url::Url::parse(href?.as_str()?.trim()).ok()?;
    LINK_SCHEMES.contains(&url.scheme()).then(|| url.to_string())
}

/// Text escaped for HTML element content and double-quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A file name for the document: the policy's name in lower-case ASCII words joined by `-`
/// (`policy` when nothing is left), then `-v<n>`.
pub fn file_stem(policy: &str, version: i32) -> String {
    let mut slug = String::new();
    for word in policy.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        if slug.len() + word.len() > 80 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word.to_ascii_lowercase());
    }
    if slug.is_empty() {
        slug.push_str("policy");
    }
    format!("{slug}-v{version}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn header() -> DocumentHeader<'static> {
        DocumentHeader {
            organization: "Acme & Co",
            policy: "Access \"control\"",
            version: 3,
            published_at: Timestamp::parse("2026-11-26T10:05:00Z").unwrap(),
            published_by: Some("Ada <admin>"),
            approved_by: Some("Bob"),
            approved_at: Some(Timestamp::parse("2026-11-26T10:05:00Z").unwrap()),
        }
    }

    /// The `<main>` part of the document of `nodes`.
    fn body(nodes: Value) -> String {
        let content = RichText::parse(serde_json::from_value(nodes).unwrap()).unwrap();
        let html = render_html(&header(), &content);
        let start = html.find("<main>").unwrap() + "<main>".len();
        html[start..html.find("</main>").unwrap()].to_owned()
    }

    fn text(t: &str) -> Value {
        json!({"type": "text", "text": t})
    }

    #[test]
    fn the_header_names_organization_policy_version_and_dates_escaped() {
        let html = render_html(&header(), &RichText::parse(vec![]).unwrap());
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<p class=\"organization\">Acme &amp; Co</p>"));
        assert!(html.contains("<h1 class=\"policy\">Access &quot;control&quot;</h1>"));
        assert!(html.contains("<dd class=\"version\">3</dd>"));
        assert!(html.contains("2026-11-26 10:05 UTC by Ada &lt;admin&gt;"));
        assert!(html.contains("Bob on 2026-11-26 10:05 UTC"));
        assert!(html.contains(CONTENT_SECURITY_POLICY));
        let direct = DocumentHeader { approved_by: None, approved_at: None, published_by: None, ..header() };
        let html = render_html(&direct, &RichText::parse(vec![]).unwrap());
        assert!(html.contains("not required (published directly)"));
        assert!(html.contains("<dd class=\"published\">2026-11-26 10:05 UTC</dd>"));
    }

    #[test]
    fn paragraphs_and_headings() {
        let out = body(json!([
            {"type": "paragraph", "attrs": {"textAlign": "center"}, "content": [text("Hello")]},
            {"type": "paragraph", "attrs": {"textAlign": "x\" onload=\"alert(1)"}, "content": [text("Hi")]},
            {"type": "heading", "attrs": {"level": 3}, "content": [text("Scope")]},
            {"type": "heading", "attrs": {"level": "9\"><script>"}, "content": [text("Odd")]},
        ]));
        assert_eq!(out, "<p style=\"text-align:center\">Hello</p><p>Hi</p><h3>Scope</h3><h2>Odd</h2>");
    }

    #[test]
    fn lists_nested_ordered_and_tasks() {
        let item = |t: &str| json!({"type": "listItem", "content": [{"type": "paragraph", "content": [text(t)]}]});
        let out = body(json!([
            {"type": "bulletList", "content": [
                {"type": "listItem", "content": [
                    {"type": "paragraph", "content": [text("one")]},
                    {"type": "orderedList", "attrs": {"start": 4}, "content": [item("four")]},
                ]},
            ]},
            {"type": "orderedList", "attrs": {"start": "1\" x=\""}, "content": [item("a")]},
            {"type": "taskList", "content": [{"type": "taskItem", "attrs": {"checked": true}, "content": [text("done")]}]},
        ]));
        assert_eq!(
            out,
            "<ul><li><p>one</p><ol start=\"4\"><li><p>four</p></li></ol></li></ul>\
             <ol><li><p>a</p></li></ol><ul class=\"tasks\"><li>☑ done</li></ul>"
        );
    }

    #[test]
    fn tables_with_header_cells_and_spans() {
        let out = body(json!([{"type": "table", "content": [
            {"type": "tableRow", "content": [
                {"type": "tableHeader", "attrs": {"colspan": 2, "rowspan": 1}, "content": [text("Role")]},
            ]},
            {"type": "tableRow", "content": [
                {"type": "tableCell", "attrs": {"colspan": "2\" onclick=\"x"}, "content": [text("Admin")]},
                {"type": "tableCell", "content": [text("All")]},
            ]},
        ]}]));
        assert_eq!(
            out,
            "<table><tbody><tr><th colspan=\"2\">Role</th></tr><tr><td>Admin</td><td>All</td></tr></tbody></table>"
        );
    }

    #[test]
    fn blockquote_code_breaks_rules_and_images() {
        let out = body(json!([
            {"type": "blockquote", "content": [{"type": "paragraph", "content": [text("q"), {"type": "hardBreak"}, text("r")]}]},
            {"type": "codeBlock", "attrs": {"language": "sh"}, "content": [text("rm -rf <dir> && echo")]},
            {"type": "horizontalRule"},
            {"type": "image", "attrs": {"src": "https://evil.test/x.png", "alt": "logo\"<"}},
        ]));
        assert_eq!(
            out,
            "<blockquote><p>q<br>r</p></blockquote><pre><code>rm -rf &lt;dir&gt; &amp;&amp; echo</code></pre><hr>\
             <span class=\"image\">[image: logo&quot;&lt;]</span>"
        );
        assert!(!out.contains("evil.test"));
    }

    #[test]
    fn marks_nest_in_order() {
        let marked = |marks: Value| json!({"type": "text", "text": "x", "marks": marks});
        let out = body(json!([{"type": "paragraph", "content": [
            marked(json!([{"type": "bold"}, {"type": "italic"}])),
            marked(json!([{"type": "underline"}, {"type": "strike"}, {"type": "code"}])),
            marked(json!([{"type": "highlight"}, {"type": "subscript"}, {"type": "superscript"}, {"type": "textStyle", "attrs": {"color": "red"}}])),
            marked(json!([{"type": "link", "attrs": {"href": "https://example.com/a?b=1&c=\"2\"", "target": "_blank"}}])),
            marked(json!([{"type": "link", "attrs": {"href": "mailto:security@example.com"}}])),
        ]}]));
        assert_eq!(
            out,
            "<p><strong><em>x</em></strong><u><s><code>x</code></s></u><mark><sub><sup>x</sup></sub></mark>\
             <a href=\"https://example.com/a?b=1&amp;c=%222%22\" rel=\"noopener noreferrer\">x</a>\
             <a href=\"mailto:security@example.com\" rel=\"noopener noreferrer\">x</a></p>"
        );
    }

    #[test]
    fn hostile_content_stays_text() {
        let link =
            |href: &str| json!({"type": "text", "text": "click", "marks": [{"type": "link", "attrs": {"href": href}}]});
        let out = body(json!([
            {"type": "paragraph", "content": [text("<script>alert(1)</script>")]},
            {"type": "script", "text": "alert(2)", "content": [text("<img src=x onerror=alert(3)>")]},
            {"type": "paragraph", "content": [
                link("javascript:alert(4)"), link(" JaVaScRiPt:alert(5)"), link("data:text/html,<script>"),
                link("vbscript:x"), link("/relative"), link("\" onmouseover=\"alert(6)"), link("file:///etc/passwd"),
            ]},
            {"type": "paragraph", "content": [{"type": "text", "text": "m", "marks": [{"type": "<b onclick=x>"}]}]},
            {"type": "paragraph", "attrs": {"style": "background:url(https://evil.test)", "class": "x"}, "content": []},
        ]));
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(!out.contains("href"), "{out}");
        assert!(!out.contains("onerror=alert(3)>") && !out.contains("<b "), "{out}");
        assert!(!out.contains("evil.test"), "{out}");
        assert!(out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{out}");
        assert!(out.contains("alert(2)&lt;img src=x onerror=alert(3)&gt;"), "{out}");
        assert!(out.contains("<p>clickclickclickclickclickclickclick</p>"), "{out}");
        assert!(out.contains("<p>m</p><p></p>"), "{out}");
    }

    #[test]
    fn file_stems_are_ascii_slugs() {
        assert_eq!(file_stem("Access Control & Review", 2), "access-control-review-v2");
        assert_eq!(file_stem("../../etc\"; x", 1), "etc-x-v1");
        assert_eq!(file_stem("Écrit", 1), "crit-v1");
        assert_eq!(file_stem("日本", 7), "policy-v7");
    }
}
