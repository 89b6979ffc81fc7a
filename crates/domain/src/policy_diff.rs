//! What changed between two versions of a policy's content, block by block, for a reviewer.
//!
//! Each version's rich text is flattened into the blocks a reader sees, in reading order:
//! paragraphs, headings, each list item, each table row, code blocks, rules, images and any other
//! node. Lists, tables and quotes are not blocks themselves: their items, rows and paragraphs are,
//! and name them in `within`. The two sequences of blocks are diffed (patience, falling back to
//! Myers, from the `similar` crate); within each run of blocks that differ, removed and added
//! blocks of the same kind, in order, pair up as `changed` with a word-level diff of their text.
//!
//! Two blocks are the same when their node is the same JSON (marks, links and attributes
//! included) within the same containers: a change of formatting alone is a `changed` block whose
//! text reads the same on both sides.
//!
//! ```
//! use compliance_domain::policy::RichText;
//! use compliance_domain::policy_diff::{BlockChange, diff};
//! use serde_json::json;
//!
//! let paragraph = |text: &str| json!({"type": "paragraph", "content": [{"type": "text", "text": text}]});
//! let old = RichText::parse(vec![paragraph("Keys rotate yearly."), paragraph("Unchanged.")]).unwrap();
//! let new = RichText::parse(vec![paragraph("Keys rotate monthly."), paragraph("Unchanged.")]).unwrap();
//! let changes = diff(&old, &new, None).unwrap();
//! let [BlockChange::Changed { before, after, .. }] = changes.as_slice() else { panic!("{changes:?}") };
//! assert_eq!((before.text.as_str(), after.text.as_str()), ("Keys rotate yearly.", "Keys rotate monthly."));
//! ```

use std::time::Instant;

use serde_json::{Map, Value};
use similar::{Algorithm, DiffOp, DiffTag, TextDiff, capture_diff_deadline, capture_diff_slices_deadline};

use crate::policy::RichText;

/// Nodes whose children are the blocks (a list's items, a table's rows, a quote's paragraphs).
const CONTAINERS: &[&str] =
    &["doc", "bulletList", "orderedList", "taskList", "blockquote", "table", "tableHead", "tableBody"];
/// Nodes that are one block with their own text, and whose nested lists are blocks of their own.
const ITEMS: &[&str] = &["listItem", "taskItem"];
/// How a table row's cells are joined in its text.
const CELL_SEPARATOR: &str = " | ";

/// One block of a version, as a reviewer reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Its position in the version's blocks, from 0.
    pub index: usize,
    /// The node's `type`: `paragraph`, `heading`, `listItem`, `tableRow`, `codeBlock`, …
    pub kind: String,
    /// A heading's level (`attrs.level`).
    pub level: Option<i64>,
    /// The types of the lists, tables and quotes it is in, outermost first.
    pub within: Vec<String>,
    /// Its plain text: hard breaks and nested paragraphs as new lines, table cells joined by ` | `.
    pub text: String,
    /// What makes two blocks the same: the node's canonical JSON within its containers'.
    key: String,
}

/// A part of a changed block's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordChange {
    /// Whether the run is in both sides, only the earlier or only the later.
    pub tag: WordTag,
    /// The run's words, white space included.
    pub text: String,
}

/// Which side a run of words belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordTag {
    /// In both sides.
    Equal,
    /// Only in the earlier side.
    Removed,
    /// Only in the later side.
    Added,
}

/// A difference between the two versions, in reading order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockChange {
    /// A block only the later version has.
    Added {
        /// The block as the later version has it.
        after: Block,
    },
    /// A block only the earlier version has.
    Removed {
        /// The block as the earlier version has it.
        before: Block,
    },
    /// A block of the same kind, edited: its text word by word, each run of words equal, removed
    /// or added.
    Changed {
        /// The block in the earlier version.
        before: Block,
        /// The block in the later version.
        after: Block,
        /// Its text from `before` to `after`, run by run.
        words: Vec<WordChange>,
    },
}

/// The changes that turn `old` into `new`; none when they read the same. Past `deadline` the
/// diffs stop looking for the smallest difference and answer a correct but coarser one.
pub fn diff(old: &RichText, new: &RichText, deadline: Option<Instant>) -> Result<Vec<BlockChange>, serde_json::Error> {
    let (old, new) = (blocks(old)?, blocks(new)?);
    let ops = capture_diff_slices_deadline(Algorithm::Patience, &keys(&old), &keys(&new), deadline);
    let mut changes = Vec::new();
    for op in ops {
        match op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete { old_index, old_len, .. } => {
                changes.extend(old[old_index..old_index + old_len].iter().cloned().map(removed));
            }
            DiffOp::Insert { new_index, new_len, .. } => {
                changes.extend(new[new_index..new_index + new_len].iter().cloned().map(added));
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                let (before, after) = (&old[old_index..old_index + old_len], &new[new_index..new_index + new_len]);
                pair_by_kind(before, after, deadline, &mut changes);
            }
        }
    }
    Ok(changes)
}

/// The version's blocks in reading order.
pub fn blocks(content: &RichText) -> Result<Vec<Block>, serde_json::Error> {
    let nodes: Vec<Value> = serde_json::from_str(content.json().get())?;
    let mut out = Vec::new();
    for node in &nodes {
        flatten(node, &mut Vec::new(), &mut out);
    }
    Ok(out)
}

/// A run of blocks that differ: the removed and added ones of the same kind, in order, pair up.
fn pair_by_kind(before: &[Block], after: &[Block], deadline: Option<Instant>, out: &mut Vec<BlockChange>) {
    let kinds = |blocks: &[Block]| blocks.iter().map(|block| block.kind.clone()).collect::<Vec<_>>();
    let (old_kinds, new_kinds) = (kinds(before), kinds(after));
    let ops = capture_diff_deadline(
        Algorithm::Myers,
        &old_kinds,
        0..old_kinds.len(),
        &new_kinds,
        0..new_kinds.len(),
        deadline,
    );
    for op in ops {
        let (old_range, new_range) = (op.old_range(), op.new_range());
        if op.tag() == DiffTag::Equal {
            for (b, a) in before[old_range].iter().zip(&after[new_range]) {
                let words = words(&b.text, &a.text, deadline);
                out.push(BlockChange::Changed { before: b.clone(), after: a.clone(), words });
            }
        } else {
            out.extend(before[old_range].iter().cloned().map(removed));
            out.extend(after[new_range].iter().cloned().map(added));
        }
    }
}

/// The word-level diff of a changed block's text, consecutive words of one tag joined.
fn words(before: &str, after: &str, deadline: Option<Instant>) -> Vec<WordChange> {
    let mut config = TextDiff::configure();
    config.algorithm(Algorithm::Myers);
    if let Some(deadline) = deadline {
        config.deadline(deadline);
    }
    let diff = config.diff_words(before, after);
    let mut out: Vec<WordChange> = Vec::new();
    for change in diff.iter_all_changes() {
        let tag = match change.tag() {
            similar::ChangeTag::Equal => WordTag::Equal,
            similar::ChangeTag::Delete => WordTag::Removed,
            similar::ChangeTag::Insert => WordTag::Added,
        };
        match out.last_mut() {
            Some(last) if last.tag == tag => last.text.push_str(change.value()),
            _ => out.push(WordChange { tag, text: change.value().to_owned() }),
        }
    }
    out
}

fn removed(before: Block) -> BlockChange {
    BlockChange::Removed { before }
}

fn added(after: Block) -> BlockChange {
    BlockChange::Added { after }
}

fn keys(blocks: &[Block]) -> Vec<&str> {
    blocks.iter().map(|block| block.key.as_str()).collect()
}

/// Appends the blocks of `node`; `within` holds the canonical JSON of the containers around it
/// (their type and attributes: a list turned from bullets to numbers changes its items).
fn flatten(node: &Value, within: &mut Vec<(String, String)>, out: &mut Vec<Block>) {
    let kind = node_type(node);
    let children = children(node);
    if CONTAINERS.contains(&kind) {
        within.push((kind.to_owned(), canonical(node.get("attrs").unwrap_or(&Value::Null))));
        for child in children {
            flatten(child, within, out);
        }
        within.pop();
        return;
    }
    if ITEMS.contains(&kind) {
        // the item's own text, then its nested lists as blocks of their own
        let (nested, own): (Vec<&Value>, Vec<&Value>) =
            children.iter().partition(|child| CONTAINERS.contains(&node_type(child)));
        let text = own.iter().map(|child| plain_text(child)).collect::<Vec<_>>().join("\n");
        let mut shown = node.as_object().cloned().unwrap_or_default();
        shown.insert("content".into(), Value::Array(own.into_iter().cloned().collect()));
        push(out, within, kind, &Value::Object(shown), text);
        for child in nested {
            flatten(child, within, out);
        }
        return;
    }
    let text = match kind {
        "tableRow" => children.iter().map(plain_text).collect::<Vec<_>>().join(CELL_SEPARATOR),
        _ => plain_text(node),
    };
    push(out, within, kind, node, text);
}

fn push(out: &mut Vec<Block>, within: &[(String, String)], kind: &str, node: &Value, text: String) {
    let level = (kind == "heading").then(|| node.pointer("/attrs/level").and_then(Value::as_i64)).flatten();
    let mut key = String::new();
    for (container, attrs) in within {
        key.push_str(container);
        key.push_str(attrs);
        key.push('/');
    }
    key.push_str(&canonical(node));
    out.push(Block {
        index: out.len(),
        kind: kind.to_owned(),
        level,
        within: within.iter().map(|(container, _)| container.clone()).collect(),
        text,
        key,
    });
}

/// The text a reader sees: text nodes as they are, hard breaks and the boundaries between nested
/// blocks (a cell's paragraphs) as new lines.
fn plain_text(node: &Value) -> String {
    if let Some(text) = node.get("text").and_then(Value::as_str) {
        return text.to_owned();
    }
    if node_type(node) == "hardBreak" {
        return "\n".to_owned();
    }
    let mut text = String::new();
    for child in children(node) {
        let is_block = child.get("content").is_some();
        if is_block && !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&plain_text(child));
    }
    text
}

fn node_type(node: &Value) -> &str {
    node.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn children(node: &Value) -> &[Value] {
    node.get("content").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// JSON text with every object's keys sorted: the same node always reads the same, whatever the
/// order its keys were written in.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by_key(|(key, _)| *key);
                Value::Object(
                    entries.into_iter().map(|(key, value)| (key.clone(), sorted(value))).collect::<Map<_, _>>(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(text: &str) -> Value {
        json!({"type": "text", "text": text})
    }

    fn paragraph(words: &str) -> Value {
        json!({"type": "paragraph", "content": [text(words)]})
    }

    fn heading(level: i64, words: &str) -> Value {
        json!({"type": "heading", "attrs": {"level": level}, "content": [text(words)]})
    }

    fn item(words: &str) -> Value {
        json!({"type": "listItem", "content": [paragraph(words)]})
    }

    fn content(nodes: Vec<Value>) -> RichText {
        RichText::parse(nodes).unwrap()
    }

    fn run(old: Vec<Value>, new: Vec<Value>) -> Vec<BlockChange> {
        diff(&content(old), &content(new), None).unwrap()
    }

    /// Each change as (op, kind, before text, after text).
    fn summary(changes: &[BlockChange]) -> Vec<(&'static str, String, String, String)> {
        changes
            .iter()
            .map(|change| match change {
                BlockChange::Added { after } => ("added", after.kind.clone(), String::new(), after.text.clone()),
                BlockChange::Removed { before } => ("removed", before.kind.clone(), before.text.clone(), String::new()),
                BlockChange::Changed { before, after, .. } => {
                    ("changed", after.kind.clone(), before.text.clone(), after.text.clone())
                }
            })
            .collect()
    }

    fn row(op: &'static str, kind: &str, before: &str, after: &str) -> (&'static str, String, String, String) {
        (op, kind.to_owned(), before.to_owned(), after.to_owned())
    }

    #[test]
    fn the_same_content_has_no_changes() {
        let nodes = vec![heading(1, "Access"), paragraph("Least privilege."), json!({"type": "horizontalRule"})];
        assert_eq!(run(nodes.clone(), nodes), []);
    }

    #[test]
    fn key_order_does_not_make_a_change() {
        let old = json!({"type": "heading", "attrs": {"level": 2, "id": "a"}, "content": [text("Scope")]});
        let new = json!({"content": [text("Scope")], "attrs": {"id": "a", "level": 2}, "type": "heading"});
        assert_eq!(run(vec![old], vec![new]), []);
    }

    #[test]
    fn added_removed_and_changed_blocks_in_reading_order() {
        let old =
            vec![heading(1, "Access"), paragraph("Keep it."), paragraph("Rotate keys yearly."), paragraph("End.")];
        let new = vec![
            heading(1, "Access"),
            paragraph("Rotate keys monthly."),
            heading(2, "Exceptions"),
            paragraph("End."),
            paragraph("Appendix."),
        ];
        assert_eq!(
            summary(&run(old, new)),
            [
                row("changed", "paragraph", "Keep it.", "Rotate keys monthly."),
                row("removed", "paragraph", "Rotate keys yearly.", ""),
                row("added", "heading", "", "Exceptions"),
                row("added", "paragraph", "", "Appendix."),
            ]
        );
    }

    #[test]
    fn a_changed_block_carries_its_word_diff_and_positions() {
        let changes = run(vec![paragraph("Staff may share keys.")], vec![paragraph("Staff must never share keys.")]);
        let [BlockChange::Changed { before, after, words }] = changes.as_slice() else { panic!("{changes:?}") };
        assert_eq!((before.index, after.index), (0, 0));
        let parts: Vec<(WordTag, &str)> = words.iter().map(|w| (w.tag, w.text.as_str())).collect();
        assert_eq!(
            parts,
            [
                (WordTag::Equal, "Staff "),
                (WordTag::Removed, "may"),
                (WordTag::Added, "must never"),
                (WordTag::Equal, " share keys."),
            ]
        );
    }

    #[test]
    fn blocks_of_different_kinds_do_not_pair() {
        let changes = run(vec![paragraph("Scope")], vec![heading(2, "Scope")]);
        assert_eq!(summary(&changes), [row("removed", "paragraph", "Scope", ""), row("added", "heading", "", "Scope")]);
        let BlockChange::Added { after } = &changes[1] else { panic!() };
        assert_eq!(after.level, Some(2));
    }

    #[test]
    fn a_heading_level_or_a_mark_alone_is_a_change_with_the_same_text() {
        let bold =
            json!({"type": "paragraph", "content": [{"type": "text", "text": "Now.", "marks": [{"type": "bold"}]}]});
        let changes = run(vec![heading(2, "Scope"), paragraph("Now.")], vec![heading(3, "Scope"), bold]);
        assert_eq!(
            summary(&changes),
            [row("changed", "heading", "Scope", "Scope"), row("changed", "paragraph", "Now.", "Now.")]
        );
        let BlockChange::Changed { before, after, words } = &changes[0] else { panic!() };
        assert_eq!((before.level, after.level), (Some(2), Some(3)));
        assert_eq!(words, &[WordChange { tag: WordTag::Equal, text: "Scope".into() }]);
    }

    #[test]
    fn list_items_are_blocks_and_nested_lists_theirs() {
        let nested = json!({"type": "listItem", "content": [
            paragraph("Laptops"),
            {"type": "bulletList", "content": [item("encrypted"), item("locked")]}
        ]});
        let old = vec![json!({"type": "bulletList", "content": [item("Phones"), nested.clone()]})];
        let mut changed = nested;
        changed["content"][1]["content"][1] = item("locked after 5 minutes");
        let new = vec![json!({"type": "bulletList", "content": [item("Phones"), changed, item("Tablets")]})];
        let (old_blocks, new_blocks) = (blocks(&content(old.clone())).unwrap(), blocks(&content(new.clone())).unwrap());
        let texts: Vec<(&str, &str, usize)> =
            old_blocks.iter().map(|b| (b.kind.as_str(), b.text.as_str(), b.within.len())).collect();
        assert_eq!(
            texts,
            [
                ("listItem", "Phones", 1),
                ("listItem", "Laptops", 1),
                ("listItem", "encrypted", 2),
                ("listItem", "locked", 2)
            ]
        );
        assert_eq!(new_blocks[3].within, ["bulletList", "bulletList"]);
        assert_eq!(
            summary(&run(old, new)),
            [row("changed", "listItem", "locked", "locked after 5 minutes"), row("added", "listItem", "", "Tablets")]
        );
    }

    #[test]
    fn turning_bullets_into_numbers_changes_the_items() {
        let list = |kind: &str| json!({"type": kind, "content": [item("One")]});
        assert_eq!(
            summary(&run(vec![list("bulletList")], vec![list("orderedList")])),
            [row("changed", "listItem", "One", "One")]
        );
    }

    #[test]
    fn table_rows_are_blocks_with_their_cells_joined() {
        let cell = |words: &str| json!({"type": "tableCell", "content": [paragraph(words)]});
        let table = |owner: &str| {
            json!({"type": "table", "content": [
                {"type": "tableRow", "content": [cell("System"), cell("Owner")]},
                {"type": "tableRow", "content": [cell("CRM"), cell(owner)]},
            ]})
        };
        let changes = run(vec![table("Ada")], vec![table("Grace")]);
        assert_eq!(summary(&changes), [row("changed", "tableRow", "CRM | Ada", "CRM | Grace")]);
        let BlockChange::Changed { after, .. } = &changes[0] else { panic!() };
        assert_eq!((after.index, after.within.as_slice()), (1, ["table".to_owned()].as_slice()));
    }

    #[test]
    fn quotes_hard_breaks_and_atoms() {
        let quote = json!({"type": "blockquote", "content": [
            {"type": "paragraph", "content": [text("one"), {"type": "hardBreak"}, text("two")]}
        ]});
        let image = |src: &str| json!({"type": "image", "attrs": {"src": src}});
        let old = vec![quote.clone(), image("a.png")];
        let new = vec![quote, image("b.png")];
        let quoted = &blocks(&content(old.clone())).unwrap()[0];
        assert_eq!((quoted.kind.as_str(), quoted.text.as_str()), ("paragraph", "one\ntwo"));
        assert_eq!(quoted.within, ["blockquote"]);
        assert_eq!(summary(&run(old, new)), [row("changed", "image", "", "")]);
    }

    #[test]
    fn a_passed_deadline_still_answers_a_correct_diff() {
        let old: Vec<Value> = (0..300).map(|n| paragraph(&format!("p{n}"))).collect();
        let mut new = old.clone();
        new.remove(10);
        new.insert(200, paragraph("new"));
        let changes = diff(&content(old.clone()), &content(new.clone()), Some(Instant::now())).unwrap();
        // replaying the changes on the old blocks gives the new ones' texts
        let (old_blocks, new_blocks) = (blocks(&content(old)).unwrap(), blocks(&content(new)).unwrap());
        let removed: Vec<usize> = changes
            .iter()
            .filter_map(|c| match c {
                BlockChange::Removed { before } | BlockChange::Changed { before, .. } => Some(before.index),
                BlockChange::Added { .. } => None,
            })
            .collect();
        let kept: Vec<&str> =
            old_blocks.iter().filter(|b| !removed.contains(&b.index)).map(|b| b.text.as_str()).collect();
        let added: Vec<usize> = changes
            .iter()
            .filter_map(|c| match c {
                BlockChange::Added { after } | BlockChange::Changed { after, .. } => Some(after.index),
                BlockChange::Removed { .. } => None,
            })
            .collect();
        let unchanged_new: Vec<&str> =
            new_blocks.iter().filter(|b| !added.contains(&b.index)).map(|b| b.text.as_str()).collect();
        assert_eq!(kept, unchanged_new);
    }
}
