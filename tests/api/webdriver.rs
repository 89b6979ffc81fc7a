//! A minimal W3C WebDriver client over reqwest, driving headless Chromium through `chromedriver`
//! (Debian's `chromium` and `chromium-driver`, which `.ci/run` installs).

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::harness::poll_every;

pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The port of chromedriver's `ChromeDriver was started successfully on port N.` line; its
/// stdout is then read to its end in the background, so that a full pipe never stops it.
async fn announced_port(driver: &mut Child) -> u16 {
    let mut lines = BufReader::new(driver.stdout.take().expect("chromedriver's stdout")).lines();
    let announced = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = lines.next_line().await {
            let port = line.strip_prefix("ChromeDriver was started successfully on port ");
            if let Some(port) = port.and_then(|port| port.trim_end_matches('.').parse().ok()) {
                return Some(port);
            }
        }
        None
    });
    let port = announced.await.ok().flatten().expect("chromedriver did not say its port within 20 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    port
}

/// The key of an element reference in WebDriver answers.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process with one browser session.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    http: reqwest::Client,
    /// `http://127.0.0.1:PORT/session/ID`
    session: String,
}

/// An element reference.
#[derive(Debug, Clone)]
pub struct Element(String);

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session.
    pub async fn start() -> Self {
        for binary in [CHROMEDRIVER, CHROMIUM] {
            assert!(
                std::path::Path::new(binary).exists(),
                "{binary} is missing: install Debian's chromium and chromium-driver (`apt-get install -y chromium \
                 chromium-driver`, as `cargo xtask tools` does)"
            );
        }
        // Port 0: chromedriver binds a free port and says which. A port picked here and released
        // for it could be taken first by any other socket on the machine.
        let mut driver = Command::new(CHROMEDRIVER)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {CHROMEDRIVER}: {err}"));
        let port = announced_port(&mut driver).await;
        let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("reqwest client");
        let base = format!("http://127.0.0.1:{port}");
        let ready = poll_every(Duration::from_millis(100), Duration::from_secs(20), || async {
            let answer = http.get(format!("{base}/status")).timeout(Duration::from_secs(1)).send().await.ok()?;
            let status = answer.json::<Value>().await.ok()?;
            (status["value"]["ready"] == true).then_some(())
        });
        assert!(ready.await.is_some(), "chromedriver did not become ready within 20 s");
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,1024"],
            },
        }}});
        let answer = http
            .post(format!("{base}/session"))
            .json(&capabilities)
            .send()
            .await
            .unwrap_or_else(|err| panic!("POST /session: {err}"));
        let status = answer.status();
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "chromedriver refused the session: {status} {body}");
        let id = body["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no sessionId in {body}"));
        Self { session: format!("{base}/session/{id}"), http, driver }
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.session);
        let mut request = self.http.request(method.clone(), &url);
        if let Some(body) = body {
            request = request.json(&body);
        } else if method == reqwest::Method::POST {
            request = request.json(&json!({}));
        }
        let answer = request.send().await.unwrap_or_else(|err| panic!("{method} {url}: {err}"));
        let status = answer.status();
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "WebDriver {method} {path}: {status} {body}");
        body["value"].clone()
    }

    /// Navigates to `url` and waits for the page to load.
    pub async fn goto(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", Some(json!({"url": url}))).await;
    }

    pub async fn current_url(&self) -> String {
        self.command(reqwest::Method::GET, "/url", None).await.as_str().unwrap_or_default().to_owned()
    }

    /// The page's HTML as the browser has it now.
    pub async fn source(&self) -> String {
        self.command(reqwest::Method::GET, "/source", None).await.as_str().unwrap_or_default().to_owned()
    }

    /// Adds a cookie for the current page's origin.
    pub async fn add_cookie(&self, name: &str, value: &str) {
        let cookie = json!({"cookie": {"name": name, "value": value, "path": "/", "httpOnly": true}});
        self.command(reqwest::Method::POST, "/cookie", Some(cookie)).await;
    }

    /// Every element matching the CSS selector.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        let body = json!({"using": "css selector", "value": css});
        let found = self.command(reqwest::Method::POST, "/elements", Some(body)).await;
        found
            .as_array()
            .unwrap_or_else(|| panic!("find elements {css}: {found}"))
            .iter()
            .map(|e| Element(e[ELEMENT_KEY].as_str().unwrap_or_else(|| panic!("not an element: {e}")).to_owned()))
            .collect()
    }

    /// The first element matching `css`, if any.
    pub async fn try_find(&self, css: &str) -> Option<Element> {
        self.find_all(css).await.into_iter().next()
    }

    /// The first element matching `css`; fails the test with the page's source when there is none.
    pub async fn find(&self, css: &str) -> Element {
        match self.try_find(css).await {
            Some(element) => element,
            None => panic!("no element matches {css:?} on {}:\n{}", self.current_url().await, self.source().await),
        }
    }

    /// Waits up to 10 s for an element matching `css`.
    pub async fn wait_for(&self, css: &str) -> Element {
        match poll_every(Duration::from_millis(100), Duration::from_secs(10), || self.try_find(css)).await {
            Some(element) => element,
            None => panic!(
                "no element matched {css:?} within 10 s on {}:\n{}",
                self.current_url().await,
                self.source().await
            ),
        }
    }

    pub async fn send_keys(&self, element: &Element, text: &str) {
        let path = format!("/element/{}/value", element.0);
        self.command(reqwest::Method::POST, &path, Some(json!({"text": text}))).await;
    }

    pub async fn click(&self, element: &Element) {
        self.command(reqwest::Method::POST, &format!("/element/{}/click", element.0), None).await;
    }

    /// The rendered text of the element.
    pub async fn text(&self, element: &Element) -> String {
        let text = self.command(reqwest::Method::GET, &format!("/element/{}/text", element.0), None).await;
        text.as_str().unwrap_or_default().to_owned()
    }

    /// The attribute `name` of the element (null when absent).
    pub async fn attribute(&self, element: &Element, name: &str) -> Value {
        self.command(reqwest::Method::GET, &format!("/element/{}/attribute/{name}", element.0), None).await
    }

    /// The DOM property `name` of the element (e.g. `value`).
    pub async fn property(&self, element: &Element, name: &str) -> Value {
        self.command(reqwest::Method::GET, &format!("/element/{}/property/{name}", element.0), None).await
    }

    pub async fn tag_name(&self, element: &Element) -> String {
        let name = self.command(reqwest::Method::GET, &format!("/element/{}/name", element.0), None).await;
        name.as_str().unwrap_or_default().to_ascii_lowercase()
    }

    /// Runs `script` in the page (`arguments[i]` are `args`); returns its result.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        let body = json!({"script": script, "args": args});
        self.command(reqwest::Method::POST, "/execute/sync", Some(body)).await
    }

    /// `element` as a script argument.
    pub fn arg(element: &Element) -> Value {
        json!({ELEMENT_KEY: element.0})
    }

    /// Ends the session (which closes Chromium) and stops chromedriver.
    pub async fn quit(mut self) {
        let _ = self.http.delete(&self.session).timeout(Duration::from_secs(10)).send().await;
        let _ = self.driver.kill().await;
    }
}
