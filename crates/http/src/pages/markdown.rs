//! Markdown (a provider's setup instructions) to HTML that is safe to put into our pages.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// Markdown to safe HTML: raw HTML (block and inline) is shown as text, links whose destination is not
/// http:, https:, mailto: or relative keep only their text, and images become their alt text (the page
/// loads nothing from elsewhere).
pub(crate) fn render_markdown(markdown: &str) -> String {
    let parser = Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH);
    // For each open link or image: whether its start tag was kept, so its end tag matches.
    let mut kept: Vec<bool> = Vec::new();
    let events = parser.map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        // An HTML block becomes a paragraph of text.
        Event::Start(Tag::HtmlBlock) => Event::Start(Tag::Paragraph),
        Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::Paragraph),
        Event::Start(Tag::Link { ref dest_url, .. }) => {
            let keep = is_safe_destination(dest_url);
            kept.push(keep);
            if keep { event } else { empty() }
        }
        Event::Start(Tag::Image { .. }) => {
            kept.push(false);
            empty()
        }
        Event::End(TagEnd::Link | TagEnd::Image) => {
            if kept.pop().unwrap_or(false) {
                event
            } else {
                empty()
            }
        }
        other => other,
    });
    let mut out = String::new();
    html::push_html(&mut out, events);
    out
}

/// An event that renders as nothing (`map` has to yield one for each dropped tag).
fn empty() -> Event<'static> {
    Event::Text(CowStr::Borrowed(""))
}

/// http:, https:, mailto:, or no scheme at all (relative path, `//host`, `?query`, `#fragment`).
pub(super) fn is_safe_destination(dest: &str) -> bool {
    // Browsers ignore ASCII whitespace and control characters inside a scheme ("java\tscript:").
    let cleaned: String = dest.chars().filter(|c| !c.is_ascii_whitespace() && !c.is_ascii_control()).collect();
    let scheme_end = cleaned.find([':', '/', '?', '#']);
    match scheme_end {
        Some(i) if cleaned[i..].starts_with(':') => {
            matches!(cleaned[..i].to_ascii_lowercase().as_str(), "http" | "https" | "mailto")
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn renders_ordinary_markdown() {
        let html = render_markdown("# Title\n\n1. Open **Settings**\n2. Copy `the key`\n");
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<li>Open <strong>Settings</strong></li>"), "{html}");
        assert!(html.contains("<code>the key</code>"), "{html}");
    }

    #[test]
    fn raw_html_blocks_and_inline_html_are_escaped_as_text() {
        let html = render_markdown("<img src=x onerror=alert(1)>\n\nSee <script>alert(2)</script> here.");
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(2)&lt;/script&gt;"), "{html}");
        assert!(!html.contains("<img") && !html.contains("<script"), "{html}");
    }

    #[test]
    fn unsafe_links_are_dropped_but_keep_their_text() {
        for md in [
            "[click me](javascript:alert(1))",
            "[click me](JavaScript:alert(1))",
            "[click me](<java\tscript:alert(1)>)",
            "[click me](data:text/html,hi)",
            "[click me](vbscript:x)",
        ] {
            let html = render_markdown(md);
            assert!(html.contains("click me"), "{md}: {html}");
            assert!(!html.contains("<a"), "{md}: {html}");
        }
        let html = render_markdown("<javascript:alert(1)>");
        assert!(!html.contains("<a"), "{html}");
    }

    #[test]
    fn safe_links_are_kept() {
        let html = render_markdown("[the console](https://console.example.com/keys?a=1&b=2)");
        assert!(html.contains(r#"<a href="https://console.example.com/keys?a=1&amp;b=2">the console</a>"#), "{html}");
        for md in ["[x](http://a.test)", "[x](mailto:ops@example.com)", "[x](/docs/setup)", "[x](#step-2)"] {
            assert!(render_markdown(md).contains("<a href="), "{md}");
        }
    }

    #[test]
    fn images_become_their_alt_text() {
        let html = render_markdown("Look: ![the settings screen](https://cdn.example.com/s.png) done");
        assert!(html.contains("Look: the settings screen done"), "{html}");
        assert!(!html.contains("<img") && !html.contains("cdn.example.com"), "{html}");
        // An image inside a link: the link stays, the image is its alt text.
        let html = render_markdown("[![logo](https://x.test/l.png)](https://x.test)");
        assert!(html.contains(r#"<a href="https://x.test">logo</a>"#), "{html}");
    }
}
