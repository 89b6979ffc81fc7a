//! Server-rendered HTML pages (the connect page).
