//! Server-rendered HTML pages (the connect page).

mod connect;
mod markdown;

pub(crate) use connect::{ConnectBody, ConnectPage, Outcome, render_connect_page, render_message_page};
