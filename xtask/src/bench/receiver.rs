//! The webhook delivery case's receiver: a local HTTP/1.1 server that answers every POST at once
//! (keep-alive, a thread per connection) and keeps what it received, so that the case can check
//! after the run that every delivery came once, in order, and signed. It can make one endpoint
//! answer 500 for a while, as a receiver that is down would. Written on std threads: xtask has no
//! async runtime or HTTP server among its dependencies, and this needs only `Content-Length`
//! bodies on keep-alive connections.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context, Result};

/// One POST the receiver answered.
pub struct Received {
    /// `n` of the path `/hook/n`.
    pub endpoint: usize,
    /// The `webhook-id`, `webhook-timestamp` and `webhook-signature` headers.
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: Vec<u8>,
    /// What the receiver answered: 200, or 500 while its endpoint was made to fail.
    pub status: u16,
    pub at: Instant,
}

#[derive(Default)]
struct State {
    received: Mutex<Vec<Received>>,
    /// POSTs answered 200 so far.
    taken: AtomicUsize,
    /// The endpoint that answers 500, and until when.
    failing: Mutex<Option<(usize, Instant)>>,
}

pub struct Receiver {
    /// `127.0.0.1:port`.
    pub address: String,
    state: Arc<State>,
}

impl Receiver {
    /// Listens on a port the system picks; its threads end with the process.
    pub fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("the webhook receiver cannot listen")?;
        let address = listener.local_addr()?.to_string();
        let state = Arc::new(State::default());
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = Arc::clone(&shared);
                std::thread::spawn(move || {
                    // A connection the server closes (or breaks) ends its thread; nothing to report.
                    let _ = serve(stream, &state);
                });
            }
        });
        Ok(Self { address, state })
    }

    /// Endpoint `endpoint` answers 500 until `until`.
    pub fn fail_until(&self, endpoint: usize, until: Instant) {
        *self.state.failing.lock().unwrap_or_else(PoisonError::into_inner) = Some((endpoint, until));
    }

    /// POSTs answered 200 so far.
    pub fn taken(&self) -> usize {
        self.state.taken.load(Ordering::Relaxed)
    }

    /// Everything received so far, in the order it arrived; the receiver starts afresh.
    pub fn drain(&self) -> Vec<Received> {
        std::mem::take(&mut *self.state.received.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Answers the requests of one keep-alive connection until the client closes it.
fn serve(stream: TcpStream, state: &State) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let Some((path, mut headers)) = read_head(&mut reader)? else { return Ok(()) };
        let length = headers.get("content-length").and_then(|n| n.parse().ok()).unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let at = Instant::now();
        let endpoint = path.strip_prefix("/hook/").and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
        let failing = *state.failing.lock().unwrap_or_else(PoisonError::into_inner);
        let status = match failing {
            Some((down, until)) if down == endpoint && at < until => 500,
            _ => 200,
        };
        let mut header = |name: &str| headers.remove(name).unwrap_or_default();
        let received = Received {
            endpoint,
            id: header("webhook-id"),
            timestamp: header("webhook-timestamp"),
            signature: header("webhook-signature"),
            body,
            status,
            at,
        };
        state.received.lock().unwrap_or_else(PoisonError::into_inner).push(received);
        if status == 200 {
            state.taken.fetch_add(1, Ordering::Relaxed);
        }
        let reason = if status == 200 { "OK" } else { "Internal Server Error" };
        write!(writer, "HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\n\r\n")?;
    }
}

/// The path and the headers (lowercase names) of the next request on a keep-alive connection;
/// `None` once the client closed it.
pub(super) fn read_head(reader: &mut impl BufRead) -> io::Result<Option<(String, HashMap<String, String>)>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let mut headers = HashMap::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let Some((name, value)) = line.trim_end().split_once(':') else { break };
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    Ok(Some((path, headers)))
}
