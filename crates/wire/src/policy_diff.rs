//! `GET /v1/policies/{id}/versions/{from}/diff/{to}`: what changed between two versions of a
//! policy, block by block (see docs/api.md, "Comparing versions").

use compliance_app::{DiffTarget, PolicyDiff};
use compliance_domain::policy_diff::{Block, BlockChange, WordChange, WordTag};
use serde::Serialize;
use utoipa::ToSchema;

/// The changes that turn version `from` into `to`, in reading order; empty when they read the same.
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyDiffDto<'a> {
    /// The earlier version's number.
    pub from: i32,
    /// The later side: a version's number, or `draft` for the policy's current content.
    pub to: PolicyDiffTo,
    /// The differences, in reading order (a run's removed blocks before its added ones).
    pub changes: Vec<PolicyBlockChangeDto<'a>>,
}

/// A version's number, or `draft`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum PolicyDiffTo {
    /// A published version's number.
    Version(i32),
    /// `draft`: the policy's current content.
    Draft(PolicyDiffDraft),
}

/// The policy's current content, as its next publish would make it a version.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyDiffDraft {
    /// The word `draft`.
    Draft,
}

/// One difference: a block only `to` has (`added`), only `from` has (`removed`), or a block of
/// the same kind edited (`changed`, with its text word by word).
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyBlockChangeDto<'a> {
    /// What kind of difference it is.
    pub op: PolicyBlockOp,
    /// The block in `from`; `null` when added.
    #[schema(required = true)]
    pub before: Option<PolicyBlockDto<'a>>,
    /// The block in `to`; `null` when removed.
    #[schema(required = true)]
    pub after: Option<PolicyBlockDto<'a>>,
    /// A changed block's text from `before` to `after`: runs of words equal, removed or added
    /// (white space included, so that the runs joined read each side); `null` unless changed. A
    /// changed block whose text reads the same changed only its formatting (marks, links,
    /// attributes, heading level, or the kind of list it is in).
    #[schema(required = true)]
    pub words: Option<Vec<PolicyWordDto<'a>>>,
}

/// The kinds of difference between two versions' blocks.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyBlockOp {
    /// Only the later version has the block.
    Added,
    /// Only the earlier version has the block.
    Removed,
    /// A block of the same kind, edited.
    Changed,
}

/// A block as a reader sees it: a paragraph, a heading, one list item, one table row, a code
/// block, an image…
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyBlockDto<'a> {
    /// Its position among its version's blocks, from 0.
    pub index: usize,
    /// The rich-text node's `type` (`paragraph`, `heading`, `listItem`, `taskItem`, `tableRow`, …).
    pub kind: &'a str,
    /// A heading's level; `null` for other blocks.
    #[schema(required = true)]
    pub level: Option<i64>,
    /// The lists, tables and quotes it is in, outermost first (`["bulletList", "bulletList"]` for
    /// an item of a nested list).
    pub within: &'a [String],
    /// Its plain text: hard breaks and nested paragraphs as new lines, a row's cells joined by ` | `.
    pub text: &'a str,
}

/// A run of a changed block's words.
#[derive(Debug, Serialize, ToSchema)]
pub struct PolicyWordDto<'a> {
    /// Which side the run belongs to.
    pub op: PolicyWordOp,
    /// The words, white space included.
    pub text: &'a str,
}

/// Which side a run of words belongs to.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyWordOp {
    /// In both sides.
    Equal,
    /// Only in `from`.
    Removed,
    /// Only in `to`.
    Added,
}

impl<'a> From<&'a PolicyDiff> for PolicyDiffDto<'a> {
    fn from(diff: &'a PolicyDiff) -> Self {
        let to = match diff.to {
            DiffTarget::Version(number) => PolicyDiffTo::Version(number),
            DiffTarget::Draft => PolicyDiffTo::Draft(PolicyDiffDraft::Draft),
        };
        Self { from: diff.from, to, changes: diff.changes.iter().map(PolicyBlockChangeDto::from).collect() }
    }
}

impl<'a> From<&'a BlockChange> for PolicyBlockChangeDto<'a> {
    fn from(change: &'a BlockChange) -> Self {
        match change {
            BlockChange::Added { after } => {
                Self { op: PolicyBlockOp::Added, before: None, after: Some(after.into()), words: None }
            }
            BlockChange::Removed { before } => {
                Self { op: PolicyBlockOp::Removed, before: Some(before.into()), after: None, words: None }
            }
            BlockChange::Changed { before, after, words } => Self {
                op: PolicyBlockOp::Changed,
                before: Some(before.into()),
                after: Some(after.into()),
                words: Some(words.iter().map(PolicyWordDto::from).collect()),
            },
        }
    }
}

impl<'a> From<&'a Block> for PolicyBlockDto<'a> {
    fn from(block: &'a Block) -> Self {
        Self { index: block.index, kind: &block.kind, level: block.level, within: &block.within, text: &block.text }
    }
}

impl<'a> From<&'a WordChange> for PolicyWordDto<'a> {
    fn from(word: &'a WordChange) -> Self {
        let op = match word.tag {
            WordTag::Equal => PolicyWordOp::Equal,
            WordTag::Removed => PolicyWordOp::Removed,
            WordTag::Added => PolicyWordOp::Added,
        };
        Self { op, text: &word.text }
    }
}
