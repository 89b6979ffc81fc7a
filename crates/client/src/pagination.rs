//! Lists that page with `cursor` and `nextCursor`, as one stream of items.

use std::future::Future;

use futures_util::{Stream, TryStreamExt, stream};

use crate::Error;

/// A page of a list: its items and where the next page starts (`None` on the last).
pub trait Page {
    /// One row of the list.
    type Item;
    /// The page's items and its `nextCursor`.
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

/// A list's query, which can be pointed at the page a cursor names.
pub trait Paged: Clone {
    /// Sets `cursor` for the next request.
    fn set_cursor(&mut self, cursor: String);
}

/// Every item of the list `fetch` reads, page after page; a page is fetched when the stream
/// reaches it, and the stream ends after the page without `nextCursor` or at the first error.
pub(crate) fn items<Q, P, F, Fut>(query: Q, fetch: F) -> impl Stream<Item = Result<P::Item, Error>>
where
    Q: Paged,
    P: Page,
    F: Fn(Q) -> Fut + Clone,
    Fut: Future<Output = Result<P, Error>>,
{
    stream::try_unfold(Some(query), move |next| {
        let fetch = fetch.clone();
        async move {
            let Some(query) = next else { return Ok::<_, Error>(None) };
            let (items, cursor) = fetch(query.clone()).await?.into_parts();
            let next = cursor.map(|cursor| {
                let mut query = query;
                query.set_cursor(cursor);
                query
            });
            Ok(Some((stream::iter(items.into_iter().map(Ok)), next)))
        }
    })
    .try_flatten()
}

/// A page's `nextCursor`, whether the schema makes it optional or optional and nullable.
pub trait Cursor {
    /// The cursor, `None` on the last page.
    fn into_cursor(self) -> Option<String>;
}

impl Cursor for Option<String> {
    fn into_cursor(self) -> Option<String> {
        self
    }
}

impl Cursor for Option<Option<String>> {
    fn into_cursor(self) -> Option<String> {
        self.flatten()
    }
}
