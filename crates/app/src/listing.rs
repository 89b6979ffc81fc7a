//! Lists a caller may already hold: a page is loaded only when its list changed since the caller
//! kept it, which the database tells by the list's generation (`ListGenerations`).

use compliance_domain::OrganizationId;
use compliance_ports::{ListGenerations, ListName};

use crate::AppError;

/// Something the caller made from a page of a list (its serialized form, say), with the generation
/// of the list when that page was loaded.
pub struct Kept<K> {
    pub generation: u64,
    pub value: K,
}

/// What the caller holds of the page it asks for.
pub enum Held<K> {
    /// The caller keeps no pages: the page is loaded, and the generation is not read.
    NotKeeping,
    /// The caller keeps pages; this one, if it has it.
    Keeping(Option<Kept<K>>),
}

/// What a list call answers: what was kept, still current, or the page loaded anew with the
/// generation it was loaded at (`None` for a caller that keeps no pages).
pub enum Listed<K, P> {
    Current(K),
    Loaded { generation: Option<u64>, page: P },
}

/// Reads the list's generation, then `load`s the page unless what is `held` was made at that
/// generation.
///
/// The generation is read before the page, never after: a write committing in between makes the
/// page newer than its generation, so the next call loads it again. Read the other way round, a
/// page older than its generation could be kept for good.
pub(crate) async fn unless_current<K, P>(
    generations: &dyn ListGenerations,
    org: &OrganizationId,
    list: ListName,
    held: Held<K>,
    load: impl AsyncFnOnce() -> Result<P, AppError>,
) -> Result<Listed<K, P>, AppError> {
    let kept = match held {
        Held::NotKeeping => return Ok(Listed::Loaded { generation: None, page: load().await? }),
        Held::Keeping(kept) => kept,
    };
    let generation = generations.generation(org, list).await?;
    match kept {
        Some(kept) if kept.generation == generation => Ok(Listed::Current(kept.value)),
        _ => Ok(Listed::Loaded { generation: Some(generation), page: load().await? }),
    }
}
