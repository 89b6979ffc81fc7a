//! A policy template's Markdown as the policies' rich text (TipTap/ProseMirror nodes), through
//! `pulldown-cmark`, the parser the HTTP layer already uses for providers' setup instructions.
//!
//! The library's texts keep to a subset (library/README.md): headings, paragraphs, bullet and
//! numbered lists, bold and italic. Those become `heading` (`attrs.level`), `paragraph`,
//! `bulletList` / `orderedList` of `listItem`s holding paragraphs, and `text` nodes with `bold` /
//! `italic` marks. Anything else keeps its text as plain text, so nothing written is lost.

use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
use serde_json::{Map, Value, json};

/// The nodes of `markdown`.
pub fn to_nodes(markdown: &str) -> Vec<Value> {
    let mut builder = Builder::default();
    for event in Parser::new(markdown) {
        builder.event(event);
    }
    builder.finish()
}

/// Nodes being built: the open containers, innermost last, and the marks in force.
#[derive(Default)]
struct Builder {
    done: Vec<Value>,
    open: Vec<Value>,
    bold: u32,
    italic: u32,
}

impl Builder {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                self.open(json!({"type": "heading", "attrs": {"level": number(level)}}))
            }
            Event::Start(Tag::Paragraph) => self.open(json!({"type": "paragraph"})),
            Event::Start(Tag::List(None)) => self.open(json!({"type": "bulletList"})),
            Event::Start(Tag::List(Some(start))) => {
                self.open(json!({"type": "orderedList", "attrs": {"start": start}}))
            }
            Event::Start(Tag::Item) => self.open(json!({"type": "listItem"})),
            Event::Start(Tag::Strong) => self.bold += 1,
            Event::Start(Tag::Emphasis) => self.italic += 1,
            Event::End(TagEnd::Strong) => self.bold = self.bold.saturating_sub(1),
            Event::End(TagEnd::Emphasis) => self.italic = self.italic.saturating_sub(1),
            Event::End(TagEnd::Heading(_) | TagEnd::Paragraph | TagEnd::List(_) | TagEnd::Item) => self.close(),
            Event::Text(text) | Event::Code(text) => self.text(&text),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.push(json!({"type": "hardBreak"})),
            _ => {}
        }
    }

    fn open(&mut self, node: Value) {
        self.open.push(node);
    }

    /// Closes the innermost container into its parent. A tight list item's text arrives without
    /// a paragraph; it is wrapped in one, as TipTap's list items hold blocks.
    fn close(&mut self) {
        let Some(mut node) = self.open.pop() else { return };
        if node["type"] == "listItem" {
            wrap_inline_content(&mut node);
        }
        self.push(node);
    }

    fn text(&mut self, text: &str) {
        let mut node = Map::new();
        node.insert("type".into(), "text".into());
        node.insert("text".into(), text.into());
        let marks: Vec<Value> = [(self.bold > 0, "bold"), (self.italic > 0, "italic")]
            .into_iter()
            .filter(|(on, _)| *on)
            .map(|(_, mark)| json!({"type": mark}))
            .collect();
        if !marks.is_empty() {
            node.insert("marks".into(), Value::Array(marks));
        }
        self.push(Value::Object(node));
    }

    /// Adds `node` to the innermost open container, or to the document.
    fn push(&mut self, node: Value) {
        match self.open.last_mut() {
            Some(parent) => match parent.get_mut("content").and_then(Value::as_array_mut) {
                Some(content) => content.push(node),
                None => parent["content"] = Value::Array(vec![node]),
            },
            None => self.done.push(node),
        }
    }

    fn finish(mut self) -> Vec<Value> {
        while !self.open.is_empty() {
            self.close();
        }
        self.done
    }
}

/// A list item's run of inline nodes (text, hard breaks) put in a paragraph of its own.
fn wrap_inline_content(item: &mut Value) {
    let Some(content) = item.get_mut("content").and_then(Value::as_array_mut) else { return };
    let inline = |node: &Value| node["type"] == "text" || node["type"] == "hardBreak";
    if !content.iter().any(inline) {
        return;
    }
    let mut blocks = Vec::new();
    let mut run = Vec::new();
    for node in content.drain(..) {
        if inline(&node) {
            run.push(node);
        } else {
            if !run.is_empty() {
                blocks.push(json!({"type": "paragraph", "content": std::mem::take(&mut run)}));
            }
            blocks.push(node);
        }
    }
    if !run.is_empty() {
        blocks.push(json!({"type": "paragraph", "content": run}));
    }
    *content = blocks;
}

fn number(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_paragraphs_lists_and_marks_become_tiptap_nodes() {
        let nodes = to_nodes("# Title\n\nA **bold** and *slanted* line\nwrapped.\n\n- one\n- two **2**\n\n3. three\n");
        assert_eq!(
            Value::Array(nodes),
            json!([
                {"type": "heading", "attrs": {"level": 1}, "content": [{"type": "text", "text": "Title"}]},
                {"type": "paragraph", "content": [
                    {"type": "text", "text": "A "},
                    {"type": "text", "text": "bold", "marks": [{"type": "bold"}]},
                    {"type": "text", "text": " and "},
                    {"type": "text", "text": "slanted", "marks": [{"type": "italic"}]},
                    {"type": "text", "text": " line"},
                    {"type": "text", "text": " "},
                    {"type": "text", "text": "wrapped."}
                ]},
                {"type": "bulletList", "content": [
                    {"type": "listItem", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "one"}]}]},
                    {"type": "listItem", "content": [{"type": "paragraph", "content": [
                        {"type": "text", "text": "two "},
                        {"type": "text", "text": "2", "marks": [{"type": "bold"}]}
                    ]}]}
                ]},
                {"type": "orderedList", "attrs": {"start": 3}, "content": [
                    {"type": "listItem", "content": [{"type": "paragraph", "content": [{"type": "text", "text": "three"}]}]}
                ]}
            ])
        );
    }

    #[test]
    fn what_the_subset_lacks_keeps_its_text() {
        let nodes = to_nodes("A [link](https://example.com) and `code`.\n");
        let content = nodes[0]["content"].as_array().cloned().unwrap_or_default();
        let text: Vec<&str> = content.iter().filter_map(|n| n["text"].as_str()).collect();
        assert_eq!(text.concat(), "A link and code.");
    }
}
