//! Server-rendered HTML pages: the connect page and the API reference.

mod connect;
mod docs;
mod markdown;

pub(crate) use connect::{ConnectBody, ConnectPage, Outcome, render_connect_page, render_message_page};
pub(crate) use docs::render_docs_page;
