//! The check sweep's provider: a local FleetDM answering, for any label, a regular label and a
//! page of [`HOSTS`] hosts used by `owner@sweep.test`, each answering two policies, after
//! [`ANSWER_DELAY`] (so that runs in flight overlap visibly). It counts the requests and the most
//! hosts requests it held at once, which the worker's concurrency bounds must keep low. Written on
//! std threads like the webhook receiver (`receiver.rs`): GET requests on keep-alive connections.

use std::io::{self, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};

use super::receiver::read_head;

/// Hosts in every label.
pub const HOSTS: usize = 3;
/// How long each hosts request is held: long enough that concurrent runs overlap at the fake.
pub const ANSWER_DELAY: Duration = Duration::from_millis(20);
/// When every host was last seen: long ago, so that each run also fails (and keeps open) a
/// finding per host, as a neglected fleet would.
const SEEN: &str = "2026-01-01T00:00:00Z";
/// The e-mail address of every host's user.
pub const USER_EMAIL: &str = "owner@sweep.test";

#[derive(Default)]
struct State {
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

pub struct FakeFleet {
    /// `http://127.0.0.1:port`.
    pub url: String,
    state: Arc<State>,
}

impl FakeFleet {
    /// Listens on a port the system picks; its threads end with the process.
    pub fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("the fake FleetDM cannot listen")?;
        let url = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(State::default());
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                // A connection the server closes ends its thread; nothing to report.
                std::thread::spawn(move || serve(stream, &state).ok());
            }
        });
        Ok(Self { url, state })
    }

    /// Requests answered so far.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::Relaxed)
    }

    /// The most hosts requests held at once so far.
    pub fn most_in_flight(&self) -> usize {
        self.state.most_in_flight.load(Ordering::Relaxed)
    }
}

fn serve(stream: TcpStream, state: &State) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        // GET requests carry no body.
        let Some((path, _)) = read_head(&mut reader)? else { return Ok(()) };
        state.requests.fetch_add(1, Ordering::Relaxed);
        let body = match path.strip_prefix("/api/v1/fleet/labels/") {
            Some(id) => format!(r#"{{"label":{{"id":{id},"name":"Sweep {id}","label_type":"regular"}}}}"#),
            None => hosts(state, &path),
        };
        write!(
            writer,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        writer.flush()?;
    }
}

/// The first page holds every host; a later one (which the directory does not ask for, the first
/// being short) none.
fn hosts(state: &State, path: &str) -> String {
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.most_in_flight.fetch_max(now, Ordering::SeqCst);
    std::thread::sleep(ANSWER_DELAY);
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    if !path.contains("page=0") {
        return r#"{"hosts":[]}"#.to_owned();
    }
    let hosts: Vec<String> = (1..=HOSTS)
        .map(|id| {
            format!(
                r#"{{"id":{id},"display_name":"Laptop {id}","seen_time":"{SEEN}","end_users":[{{"idp_username":"{USER_EMAIL}"}}],"policies":[{{"id":1,"name":"Disk encryption","critical":true,"response":"pass"}},{{"id":2,"name":"Screen lock","critical":false,"response":"{}"}}]}}"#,
                if id == 1 { "fail" } else { "pass" }
            )
        })
        .collect();
    format!(r#"{{"hosts":[{}]}}"#, hosts.join(","))
}
