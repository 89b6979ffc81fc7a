//! The browser's only way out: a tiny forward proxy on 127.0.0.1 that checks every destination
//! with the outbound rules and connects to the address it checked.
//!
//! Chromium is started with `--proxy-server` pointing here and `--proxy-bypass-list=<-loopback>`,
//! so every connection it makes (documents, sub-resources, WebSockets, preconnects; loopback too)
//! arrives as either `CONNECT host:port` (https, wss, ws) or a plain-HTTP request with an absolute
//! URI. The proxy resolves the host itself, refuses it unless every address is public (or the host
//! is allow-listed), and connects to one of the checked addresses: a rebinding DNS has nothing left
//! to rebind. Refusals and failures are answered with a 403 or 502 carrying [`MARKER`], and are
//! remembered per `host:port` so that the page driver can report a refused main document.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use compliance_ports::CaptureError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use url::Url;

use crate::outbound;

/// The header on the proxy's own answers (refusals and connection failures).
pub(crate) const MARKER: &str = "x-compliance-proxy";

/// The most a request head (request line and headers) may take.
const MAX_HEAD: usize = 16 * 1024;

/// How many connections the browser may have open through the proxy at once; further ones wait.
const MAX_CONNECTIONS: usize = 64;

/// How long the browser may take to send a request head, and a connection to open.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What became of the destinations that did not get through, by `host:port`.
type Failures = Arc<Mutex<HashMap<String, CaptureError>>>;

/// A running proxy; dropping it stops it and every connection through it.
pub(crate) struct Proxy {
    pub port: u16,
    failures: Failures,
    tasks: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub(crate) async fn start(allowed_hosts: Vec<String>) -> Result<Self, CaptureError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| CaptureError::Browser(format!("cannot start the egress proxy: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| CaptureError::Browser(format!("cannot start the egress proxy: {e}")))?
            .port();
        let failures = Failures::default();
        let tasks = tokio::spawn(serve(listener, Arc::new(allowed_hosts), failures.clone()));
        Ok(Self { port, failures, tasks })
    }

    /// Why the proxy did not let the browser reach `url`'s host and port, if it did not.
    pub(crate) fn failure(&self, url: &str) -> Option<CaptureError> {
        let key = Url::parse(url).ok().and_then(|url| authority(&url))?;
        self.failures.lock().ok()?.get(&key).cloned()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // The connections live in the accept task's `JoinSet`, aborted with it.
        self.tasks.abort();
    }
}

/// `host:port` as the URL normalises it (lower case, IPv6 in brackets, default port filled in).
fn authority(url: &Url) -> Option<String> {
    Some(format!("{}:{}", url.host_str()?, url.port_or_known_default()?))
}

async fn serve(listener: TcpListener, allowed_hosts: Arc<Vec<String>>, failures: Failures) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, most likely: wait rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (allowed_hosts, failures) = (allowed_hosts.clone(), failures.clone());
        connections.spawn(async move {
            handle(stream, &allowed_hosts, &failures).await;
            drop(slot);
        });
        // Reap the finished ones so the set does not grow for the whole capture.
        while connections.try_join_next().is_some() {}
    }
}

async fn handle(mut client: TcpStream, allowed_hosts: &[String], failures: &Failures) {
    let Ok(Some((head, rest))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await else {
        let _ = client.write_all(&answer("400 Bad Request", "the request head is malformed or too large")).await;
        return;
    };
    let Some((method, target, version, headers)) = parse_head(&head) else {
        let _ = client.write_all(&answer("400 Bad Request", "the request line is malformed")).await;
        return;
    };
    let connect = method.eq_ignore_ascii_case("CONNECT");
    // The destination, as a URL for the outbound rules. A CONNECT authority is plain
    // `host:port`: anything that could be read as user info or a path is refused.
    let url = match connect {
        true if target.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:[]".contains(&b)) => {
            Url::parse(&format!("http://{target}/")).ok().filter(|url| url.port().is_some())
        }
        true => None,
        false => Url::parse(target).ok().filter(|url| url.scheme() == "http"),
    };
    let Some((url, key)) = url.and_then(|url| authority(&url).map(|key| (url, key))) else {
        let _ = client.write_all(&answer("400 Bad Request", "the proxy only forwards http and CONNECT")).await;
        return;
    };
    let upstream = match open(&url, allowed_hosts).await {
        Ok(upstream) => upstream,
        Err(error) => {
            let status = match error {
                CaptureError::Refused(_) => "403 Forbidden",
                _ => "502 Bad Gateway",
            };
            tracing::debug!(destination = %key, %error, "the egress proxy did not connect");
            let message = error.to_string();
            if let Ok(mut failures) = failures.lock() {
                failures.insert(key, error);
            }
            let _ = client.write_all(&answer(status, &message)).await;
            return;
        }
    };
    let mut upstream = upstream;
    if connect {
        if client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.is_err() {
            return;
        }
        if !rest.is_empty() && upstream.write_all(&rest).await.is_err() {
            return;
        }
    } else {
        // The request in origin form, with `Connection: close` so that the server ends the
        // connection after its answer and Chromium opens a new one (through a new check) for the
        // next request. Should Chromium still send another request on this connection, even for
        // another host, it can only reach the address checked above, never a new one.
        let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let mut forwarded = format!("{method} {path} {version}\r\n");
        for (name, value) in &headers {
            if !["connection", "proxy-connection", "proxy-authorization", "keep-alive"]
                .iter()
                .any(|hop| name.eq_ignore_ascii_case(hop))
            {
                forwarded.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        forwarded.push_str("Connection: close\r\n\r\n");
        if upstream.write_all(forwarded.as_bytes()).await.is_err()
            || (!rest.is_empty() && upstream.write_all(&rest).await.is_err())
        {
            return;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// Checks `url`'s host with the outbound rules and connects to the first checked address that
/// answers.
async fn open(url: &Url, allowed_hosts: &[String]) -> Result<TcpStream, CaptureError> {
    let target = outbound::check(url.as_str(), allowed_hosts).await?;
    let mut last = "net::ERR_CONNECTION_FAILED";
    for ip in &target.addresses {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(SocketAddr::new(*ip, target.port))).await {
            Ok(Ok(stream)) => return Ok(stream),
            // Named as Chromium names them, as if it had connected itself.
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => last = "net::ERR_CONNECTION_REFUSED",
            Ok(Err(_)) => last = "net::ERR_CONNECTION_FAILED",
            Err(_) => last = "net::ERR_CONNECTION_TIMED_OUT",
        }
    }
    Err(CaptureError::Unreachable(last.to_owned()))
}

/// Reads up to the end of the request head; returns it and the bytes read past it.
async fn read_head(client: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(2048);
    let mut chunk = [0_u8; 4096];
    loop {
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            if at + 4 > MAX_HEAD {
                return None;
            }
            let rest = buffer.split_off(at + 4);
            return Some((String::from_utf8(buffer).ok()?, rest));
        }
        if buffer.len() > MAX_HEAD {
            return None;
        }
    }
}

/// A parsed request head: method, request target, version and headers.
type Head<'a> = (&'a str, &'a str, &'a str, Headers<'a>);
type Headers<'a> = Vec<(&'a str, &'a str)>;

/// The method, request target, version and headers of a request head.
fn parse_head(head: &str) -> Option<Head<'_>> {
    let mut lines = head.split("\r\n").filter(|line| !line.is_empty());
    let mut request_line = lines.next()?.split(' ');
    let (method, target, version) = (request_line.next()?, request_line.next()?, request_line.next()?);
    if request_line.next().is_some()
        || !version.starts_with("HTTP/1.")
        || !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return None;
    }
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':')?;
        if name.is_empty() || name.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return None;
        }
        headers.push((name, value.trim()));
    }
    Some((method, target, version, headers))
}

/// The proxy's own answer.
fn answer(status: &str, message: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\n{MARKER}: {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{message}",
        status.split(' ').next().unwrap_or_default(),
        message.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn heads_are_parsed_strictly() {
        let (method, target, version, headers) =
            parse_head("GET http://a.example/x?y HTTP/1.1\r\nHost: a.example\r\nAccept: */*\r\n\r\n").unwrap();
        assert_eq!((method, target, version), ("GET", "http://a.example/x?y", "HTTP/1.1"));
        assert_eq!(headers, vec![("Host", "a.example"), ("Accept", "*/*")]);
        assert!(parse_head("GET  http://a/ HTTP/1.1\r\n\r\n").is_none());
        assert!(parse_head("GET http://a/ HTTP/2\r\n\r\n").is_none());
        assert!(parse_head("GET http://a/ HTTP/1.1\r\nBad Header: x\r\n\r\n").is_none());
        assert!(parse_head("GET http://a/ HTTP/1.1\r\nno-colon\r\n\r\n").is_none());
    }

    #[test]
    fn authorities_are_normalised() {
        let key = |url: &str| authority(&Url::parse(url).unwrap()).unwrap();
        assert_eq!(key("https://A.Example/x"), "a.example:443");
        assert_eq!(key("http://a.example:443/"), "a.example:443");
        assert_eq!(key("ws://[::1]/"), "[::1]:80");
    }

    /// A server on `ip` that answers every connection with a page and records what it received.
    async fn upstream(ip: &str) -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind((ip, 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut buffer = vec![0_u8; 4096];
                let n = stream.read(&mut buffer).await.unwrap_or(0);
                log.lock().unwrap().push(String::from_utf8_lossy(&buffer[..n]).into_owned());
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
            }
        });
        (port, seen)
    }

    async fn exchange(proxy: &Proxy, request: &str) -> String {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy.port)).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    #[tokio::test]
    async fn plain_http_is_checked_and_forwarded_in_origin_form() {
        let (port, seen) = upstream("127.0.0.1").await;
        let proxy = Proxy::start(vec!["127.0.0.1".into()]).await.unwrap();
        let request = format!(
            "POST http://127.0.0.1:{port}/a?b HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Connection: keep-alive\r\nContent-Length: 4\r\n\r\nbody"
        );
        let answer = exchange(&proxy, &request).await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![format!(
                "POST /a?b HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody"
            )]
        );
    }

    #[tokio::test]
    async fn refused_destinations_get_403_and_are_remembered() {
        let (port, seen) = upstream("127.0.0.2").await;
        let proxy = Proxy::start(vec!["127.0.0.1".into()]).await.unwrap();
        let answer =
            exchange(&proxy, &format!("CONNECT 127.0.0.2:{port} HTTP/1.1\r\nHost: 127.0.0.2:{port}\r\n\r\n")).await;
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\nx-compliance-proxy: 403\r\n"), "{answer}");
        let answer = exchange(&proxy, &format!("GET http://127.0.0.2:{port}/ HTTP/1.1\r\n\r\n")).await;
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden"), "{answer}");
        // A name that only resolves to loopback, and a host with a comma.
        let answer = exchange(&proxy, &format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n")).await;
        assert!(answer.starts_with("HTTP/1.1 403 Forbidden"), "{answer}");
        let answer = exchange(&proxy, "CONNECT a,b:443 HTTP/1.1\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request"), "{answer}");
        let answer = exchange(&proxy, "CONNECT user@127.0.0.1:443 HTTP/1.1\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 400 Bad Request"), "{answer}");
        assert!(seen.lock().unwrap().is_empty());
        assert_eq!(
            proxy.failure(&format!("ws://127.0.0.2:{port}/socket")),
            Some(CaptureError::Refused("127.0.0.2 is a loopback address".into()))
        );
        assert_eq!(proxy.failure(&format!("http://127.0.0.1:{port}/")), None);
    }

    #[tokio::test]
    async fn connect_tunnels_to_the_checked_address_and_oversized_heads_are_refused() {
        let (port, seen) = upstream("127.0.0.1").await;
        let proxy = Proxy::start(vec!["127.0.0.1".into()]).await.unwrap();
        let answer = exchange(&proxy, &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\nhello")).await;
        assert!(answer.starts_with("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK"), "{answer}");
        assert_eq!(seen.lock().unwrap().clone(), vec!["hello".to_owned()]);
        let huge = format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(exchange(&proxy, &huge).await.starts_with("HTTP/1.1 400 Bad Request"));
    }
}
