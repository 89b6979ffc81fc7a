//! Adapter for the [`DeviceDirectory`](compliance_ports::DeviceDirectory) port: the hosts of a FleetDM
//! label, with their policies and software, over FleetDM's REST API.
//!
//! - [`FleetDeviceDirectory`]: built from [`FleetSettings`] (base URL, API token, page size, timeouts).
//!
//! # Choices
//!
//! - **One request per page, none per host.** `GET /api/v1/fleet/hosts` with `label_id`,
//!   `populate_policies=true`, `populate_software=true`, `page`, `per_page` and `order_key=id`; pages start
//!   at 0 and the walk stops at the first page shorter than the page size. Ordering by id keeps offset
//!   paging stable while hosts enrol (new hosts get higher ids); a host seen twice (it moved between
//!   pages) is kept once. At most [`MAX_PAGES`] pages are read; a label that fills them all is refused
//!   rather than returned truncated.
//! - **Pages are fetched one after another**, not concurrently: the length of the walk is only known
//!   when a short page arrives, so fetching ahead would cost wasted requests on every label, and
//!   populated pages are the expensive kind for FleetDM's database. Labels are walked rarely (a check
//!   run), so the latency of sequential pages is acceptable.
//! - **Hosts pass through** as JSON objects, exactly as FleetDM returns them (`software`, `mdm`,
//!   `issues`, `policies`, …); only the envelope is checked: the body must be `{"hosts": [...]}` and every
//!   host an object. `"hosts": null` counts as an empty page (Go encodes an empty, unallocated slice as
//!   `null`). A page is read up to [`MAX_PAGE_BYTES`].
//! - **Errors**: a timeout is [`DeviceError::Timeout`](compliance_ports::DeviceError::Timeout), a failed
//!   connection or DNS lookup `Unreachable`, any non-2xx status `Upstream { status }` (the body is not
//!   read), an unexpected body `InvalidResponse` with a message that names what was wrong but never
//!   quotes the body, the URL or the token. reqwest errors lose their URL before they are formatted.
//! - **The token** travels only as `Authorization: Bearer …`, a header value marked sensitive (so reqwest
//!   and hyper never print it), and never to another host: redirects are not followed (a 3xx is
//!   `Upstream`). `Debug` of the settings and of the directory shows no token. Nothing here logs.
//! - **Timeouts** apply per request (default 10 s, connecting 5 s), so a label of many pages may take
//!   longer in total.

mod fleet;

pub use fleet::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT, FleetConfigError, FleetDeviceDirectory, FleetSettings,
    MAX_PAGE_BYTES, MAX_PAGE_SIZE, MAX_PAGES,
};
