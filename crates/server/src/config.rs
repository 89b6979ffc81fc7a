//! Configuration from the environment, checked at start-up.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, bail};
use compliance_app::{
    AgentSettings, AutomationSettings, CheckRunSettings, DocumentSettings, IdempotencySettings, PolicyReviewSettings,
    SIGNING_KEY_BYTES, SequencerSettings, Settings, WebhookSettings,
};
use compliance_blobs::S3Config;
use compliance_browser::{BrowserIsolation, BrowserSettings};
use compliance_checks::CheckEndpoints;
use compliance_devices::FleetSettings;
use compliance_domain::chat::ChatLimits;
use compliance_domain::comment::AttachmentLimits;
use compliance_http::middleware::HeadLimits;
use compliance_llm::LlmSettings;
use compliance_oidc::OidcSettings;
use compliance_ports::RateLimit;
use compliance_store::{DatabaseUrl, PoolOptions};
use compliance_vault::KeySource;
use secrecy::SecretString;

/// The SQLite file used when `DATABASE_URL` is not set.
const DEFAULT_DB_FILE: &str = "compliance.db";

#[derive(Debug)]
pub struct Config {
    pub database: DatabaseUrl,
    /// `DATABASE_POOL_SIZE`: connections of each thread's PostgreSQL pool, or SQLite readers.
    pub pool: PoolOptions,
    /// `USE_CASE_THREADS`: the worker threads of the runtime that runs start-up and background work.
    pub use_case_threads: usize,
    /// `LISTEN_ADDR`; port 0 lets the system pick a free port (see [`Config::listening_on`]).
    pub listen: SocketAddr,
    /// Whether `PUBLIC_URL` was unset, so that it (and what is derived from it) names `listen`.
    public_url_is_listen: bool,
    pub json_logs: bool,
    pub blobs: BlobConfig,
    pub redis_url: Option<SecretString>,
    pub vault_keys: KeySource,
    pub settings: Settings,
    /// `PROVIDERS_DIR`: provider manifests added to the shipped ones.
    pub providers_dir: Option<PathBuf>,
    /// `OAUTH_REDIRECT_ORIGINS`: origins an OAuth `redirectUrl` may point at, besides `PUBLIC_URL`'s.
    pub redirect_origins: Vec<String>,
    /// `FLEET_URL` and `FLEET_TOKEN`: the device management system, if any.
    pub fleet: Option<FleetSettings>,
    pub browser: BrowserSettings,
    /// `AUTOMATION_LLM_URL`, `AUTOMATION_LLM_MODEL` and `AUTOMATION_LLM_API_KEY`: the model behind
    /// free-text automation instructions, if any.
    pub llm: Option<LlmSettings>,
    /// The HTTP server's timeouts, head limits and rate limit.
    pub http: HttpSettings,
    /// `SHUTDOWN_TIMEOUT_SECONDS`: how long in-flight requests may take to finish after SIGTERM/SIGINT.
    pub shutdown_timeout: Duration,
    /// `OIDC_*`: sign-in with an OpenID provider, if configured.
    pub oidc: Option<OidcSettings>,
    /// `SEARCH_MERGE_MILLIS`: how often SQLite's search indexes are merged (see
    /// `Store::merge_search_indexes`).
    pub search_merge_interval: Duration,
    /// `CHECKS_GITHUB_API_URL`, `CHECKS_GOOGLE_API_URL`, `CHECKS_AWS_ENDPOINT_URL`: where the
    /// checks read each provider (its own API unless set).
    pub check_endpoints: CheckEndpoints,
}

#[derive(Debug)]
pub enum BlobConfig {
    Filesystem(PathBuf),
    S3(S3Config),
}

impl Config {
    /// Threads for blocking work: attachment files and DNS (SQLite's statements run in place, see
    /// `InPlace` in compliance-store's `db.rs`). Each thread keeps its own allocator heap, and tokio's default
    /// (up to 512, started whenever a burst finds none idle) grew peak RSS under the benchmark by
    /// ~10 MiB for no throughput; one per pooled connection and a few spare is enough.
    pub fn blocking_threads(&self) -> usize {
        self.pool.max_size + 4
    }

    /// Records the address the server's socket is bound to: with `LISTEN_ADDR` port 0 the system
    /// picked it, and a `PUBLIC_URL` left unset (and the OpenID callback under it) must name it.
    pub fn listening_on(&mut self, bound: SocketAddr) {
        self.listen = bound;
        if self.public_url_is_listen {
            self.settings.public_url = format!("http://{bound}");
            if let Some(oidc) = &mut self.oidc {
                oidc.redirect_url = oidc_callback(&self.settings.public_url);
            }
        }
    }

    pub fn from_env() -> anyhow::Result<Self> {
        let data_dir = PathBuf::from(var("DATA_DIR")?.unwrap_or_else(|| "./data".into()));
        let database = match var("DATABASE_URL")? {
            Some(url) => DatabaseUrl::parse(&url)?,
            None => DatabaseUrl::Sqlite(data_dir.join(DEFAULT_DB_FILE)),
        };
        let listen_text = var("LISTEN_ADDR")?.unwrap_or_else(|| "127.0.0.1:8080".into());
        let listen = listen_text
            .parse()
            .with_context(|| format!("LISTEN_ADDR `{listen_text}` is not an address such as 127.0.0.1:8080"))?;
        let json_logs = match var("LOG_FORMAT")?.as_deref() {
            None | Some("pretty") => false,
            Some("json") => true,
            Some(other) => bail!("LOG_FORMAT `{other}` is neither pretty nor json"),
        };
        let settings = settings(&listen)?;
        let public_url_is_listen = var("PUBLIC_URL")?.is_none();
        let oidc = oidc(&settings.public_url)?;
        let pool = PoolOptions {
            max_size: number("DATABASE_POOL_SIZE", default_pool_size(&database))?,
            ..PoolOptions::default()
        };
        let use_case_threads = number("USE_CASE_THREADS", default_use_case_threads())?;
        Ok(Self {
            database,
            pool,
            use_case_threads,
            listen,
            public_url_is_listen,
            json_logs,
            blobs: blob_config(&data_dir)?,
            redis_url: var("REDIS_URL")?.map(SecretString::from),
            vault_keys: vault_keys(&data_dir)?,
            settings,
            providers_dir: var("PROVIDERS_DIR")?.map(PathBuf::from),
            redirect_origins: redirect_origins()?,
            fleet: fleet()?,
            browser: browser()?,
            llm: llm()?,
            http: http_settings()?,
            shutdown_timeout: Duration::from_secs(number("SHUTDOWN_TIMEOUT_SECONDS", 30)?),
            oidc,
            search_merge_interval: millis("SEARCH_MERGE_MILLIS", SEARCH_MERGE_INTERVAL)?,
            check_endpoints: check_endpoints()?,
        })
    }
}

/// The use cases' settings: each variable overrides its field of [`Settings::default()`], the one
/// place the defaults are written (docs/operations.md lists them), which an embedder gets too.
fn settings(listen: &SocketAddr) -> anyhow::Result<Settings> {
    let defaults = Settings::default();
    let automations = defaults.automations.clone();
    let retention_days = automations.run_retention.as_secs() / DAY;
    let audit_retention = audit_retention()?;
    Ok(Settings {
        attachments: AttachmentLimits {
            max_file_bytes: number("ATTACHMENT_MAX_FILE_BYTES", defaults.attachments.max_file_bytes)?,
            max_request_bytes: number("ATTACHMENT_MAX_REQUEST_BYTES", defaults.attachments.max_request_bytes)?,
        },
        list_max_rows: list_max_rows(defaults.list_max_rows)?,
        download_ttl: seconds("DOWNLOAD_URL_TTL_SECONDS", defaults.download_ttl)?,
        public_url: var("PUBLIC_URL")?.unwrap_or_else(|| format!("http://{listen}")),
        url_signing_key: signing_key(defaults.url_signing_key)?,
        chat_limits: ChatLimits {
            max_messages: number("CHAT_MAX_MESSAGES", defaults.chat_limits.max_messages)?,
            max_message_chars: number("CHAT_MAX_MESSAGE_CHARS", defaults.chat_limits.max_message_chars)?,
        },
        chat_ttl: seconds("CHAT_HISTORY_TTL_SECONDS", defaults.chat_ttl)?,
        automations: AutomationSettings {
            run_timeout: seconds("AUTOMATION_RUN_TIMEOUT_SECONDS", automations.run_timeout)?,
            poll_interval: millis("AUTOMATION_POLL_MILLIS", automations.poll_interval)?,
            min_interval: seconds("AUTOMATION_MIN_INTERVAL_SECONDS", automations.min_interval)?,
            concurrency: max_browsers()?,
            allowed_hosts: list("AUTOMATION_ALLOWED_HOSTS")?,
            runs_per_organization: number("AUTOMATION_RUNS_PER_ORGANIZATION", automations.runs_per_organization)?,
            run_retention: Duration::from_secs(
                number("AUTOMATION_RUN_RETENTION_DAYS", retention_days)?.saturating_mul(DAY),
            ),
            agent: AgentSettings {
                max_steps: number("AUTOMATION_AGENT_MAX_STEPS", automations.agent.max_steps)?,
                max_tokens: number("AUTOMATION_AGENT_MAX_TOKENS", automations.agent.max_tokens)?,
            },
            ..automations
        },
        auth_cache_ttl: Duration::from_secs(whole_number("AUTH_CACHE_SECONDS", defaults.auth_cache_ttl.as_secs())?),
        session_ttl: time::Duration::hours(number("SESSION_TTL_HOURS", defaults.session_ttl.whole_hours())?),
        self_service_organizations: boolean("SELF_SERVICE_ORGANIZATIONS", defaults.self_service_organizations)?,
        invitation_ttl: time::Duration::seconds(number(
            "INVITATION_TTL_SECONDS",
            defaults.invitation_ttl.whole_seconds(),
        )?),
        webhooks: webhooks(defaults.webhooks)?,
        policy_reviews: PolicyReviewSettings {
            poll_interval: millis("POLICY_REVIEW_POLL_MILLIS", defaults.policy_reviews.poll_interval)?,
        },
        audit_signing_key: audit_signing_key(defaults.audit_signing_key, audit_retention.is_some())?,
        audit_sequencer: SequencerSettings {
            poll_interval: millis("AUDIT_SEAL_POLL_MILLIS", defaults.audit_sequencer.poll_interval)?,
            lease: millis("AUDIT_SEAL_LEASE_MILLIS", defaults.audit_sequencer.lease)?,
            retention: audit_retention,
            prune_interval: millis("AUDIT_PRUNE_MILLIS", defaults.audit_sequencer.prune_interval)?,
            ..defaults.audit_sequencer
        },
        idempotency: IdempotencySettings {
            ttl: time::Duration::hours(number("IDEMPOTENCY_TTL_HOURS", defaults.idempotency.ttl.whole_hours())?),
            lease: seconds("IDEMPOTENCY_LEASE_SECONDS", defaults.idempotency.lease)?,
            prune_interval: millis("IDEMPOTENCY_PRUNE_MILLIS", defaults.idempotency.prune_interval)?,
        },
        documents: documents(defaults.documents.clone())?,
        // The catalog (`PROVIDERS_DIR`) and `OAUTH_REDIRECT_ORIGINS` are set by the wiring.
        integrations: defaults.integrations.clone(),
        checks: CheckRunSettings {
            frequency: Duration::from_secs(
                whole_number("CHECK_FREQUENCY_HOURS", defaults.checks.frequency.as_secs() / 3600)?.saturating_mul(3600),
            ),
            poll_interval: millis("CHECK_POLL_MILLIS", defaults.checks.poll_interval)?,
            run_timeout: seconds("CHECK_RUN_TIMEOUT_SECONDS", defaults.checks.run_timeout)?,
            concurrency: number("CHECK_RUN_CONCURRENCY", defaults.checks.concurrency)?,
            per_provider: number("CHECK_RUNS_PER_PROVIDER", defaults.checks.per_provider)?,
        },
    })
}

fn blob_config(data_dir: &std::path::Path) -> anyhow::Result<BlobConfig> {
    match var("BLOB_STORE")?.as_deref() {
        None | Some("fs") => {
            let dir = var("BLOB_DIR")?.map_or_else(|| data_dir.join("attachments"), PathBuf::from);
            Ok(BlobConfig::Filesystem(dir))
        }
        Some("s3") => {
            let required = |name: &str| var(name)?.with_context(|| format!("{name} is required with BLOB_STORE=s3"));
            let endpoint = var("S3_ENDPOINT")?;
            Ok(BlobConfig::S3(S3Config {
                bucket: required("S3_BUCKET")?,
                region: var("S3_REGION")?.unwrap_or_else(|| "us-east-1".into()),
                access_key_id: required("S3_ACCESS_KEY_ID")?,
                secret_access_key: SecretString::from(required("S3_SECRET_ACCESS_KEY")?),
                allow_http: endpoint.as_deref().is_some_and(|e| e.starts_with("http://")),
                path_style: endpoint.is_some(),
                endpoint,
            }))
        }
        Some(other) => bail!("BLOB_STORE `{other}` is neither fs nor s3"),
    }
}

/// `VAULT_KEY` (base64, 32 bytes) with `VAULT_OLD_KEYS` (comma-separated) that still decrypt, or
/// else the key file `DATA_DIR/vault.keys`, generated on first start.
fn vault_keys(data_dir: &std::path::Path) -> anyhow::Result<KeySource> {
    Ok(match var("VAULT_KEY")? {
        Some(current) => KeySource::Configured {
            current: SecretString::from(current),
            old: list("VAULT_OLD_KEYS")?.into_iter().map(SecretString::from).collect(),
        },
        None => KeySource::File(data_dir.join("vault.keys")),
    })
}

/// Where the OpenID provider sends the browser back to, under `PUBLIC_URL`.
fn oidc_callback(public_url: &str) -> String {
    format!("{}/auth/callback", public_url.trim_end_matches('/'))
}

/// `OIDC_ISSUER_URL`, `OIDC_CLIENT_ID` and `OIDC_CLIENT_SECRET` (or `_FILE`): all or none.
/// `OIDC_SCOPES` (space-separated, default `openid email profile`) must hold `openid`.
fn oidc(public_url: &str) -> anyhow::Result<Option<OidcSettings>> {
    let (issuer, client_id, secret) = (var("OIDC_ISSUER_URL")?, var("OIDC_CLIENT_ID")?, var("OIDC_CLIENT_SECRET")?);
    let (issuer_url, client_id, client_secret) = match (issuer, client_id, secret) {
        (None, None, None) => return Ok(None),
        (Some(issuer), Some(id), Some(secret)) => (issuer, id, SecretString::from(secret)),
        _ => bail!("OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET (or OIDC_CLIENT_SECRET_FILE) go together"),
    };
    let scopes: Vec<String> = var("OIDC_SCOPES")?
        .unwrap_or_else(|| "openid email profile".into())
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    if !scopes.iter().any(|scope| scope == "openid") {
        bail!("OIDC_SCOPES must include openid");
    }
    Ok(Some(OidcSettings {
        issuer_url,
        client_id,
        client_secret,
        scopes,
        redirect_url: oidc_callback(public_url),
        timeout: Duration::from_secs(number("OIDC_TIMEOUT_SECONDS", 10)?),
    }))
}

/// `true` or `false` from the environment, or `default`.
fn boolean(name: &str, default: bool) -> anyhow::Result<bool> {
    match var(name)?.as_deref() {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => bail!("{name} `{other}` is neither true nor false"),
    }
}

/// Both or neither: a URL without a token (or the reverse) is a configuration mistake.
fn fleet() -> anyhow::Result<Option<FleetSettings>> {
    match (var("FLEET_URL")?, var("FLEET_TOKEN")?) {
        (Some(url), Some(token)) => Ok(Some(FleetSettings::new(url, SecretString::from(token)))),
        (None, None) => Ok(None),
        (Some(_), None) => bail!("FLEET_URL is set but FLEET_TOKEN (or FLEET_TOKEN_FILE) is not"),
        (None, Some(_)) => bail!("FLEET_TOKEN is set but FLEET_URL is not"),
    }
}

/// The model: `AUTOMATION_LLM_URL` turns it on and then needs `AUTOMATION_LLM_MODEL`; the API key
/// (`AUTOMATION_LLM_API_KEY` or `_FILE`) is optional, as local servers take none;
/// `AUTOMATION_LLM_TIMEOUT_SECONDS` (60) bounds each request.
fn llm() -> anyhow::Result<Option<LlmSettings>> {
    let (Some(url), model) = (var("AUTOMATION_LLM_URL")?, var("AUTOMATION_LLM_MODEL")?) else {
        if var("AUTOMATION_LLM_MODEL")?.is_some() || var("AUTOMATION_LLM_API_KEY")?.is_some() {
            bail!("AUTOMATION_LLM_MODEL or AUTOMATION_LLM_API_KEY is set but AUTOMATION_LLM_URL is not");
        }
        return Ok(None);
    };
    let model = model.context("AUTOMATION_LLM_URL is set but AUTOMATION_LLM_MODEL is not")?;
    let mut settings = LlmSettings::new(url, model, var("AUTOMATION_LLM_API_KEY")?.map(SecretString::from));
    settings.timeout = Duration::from_secs(number("AUTOMATION_LLM_TIMEOUT_SECONDS", settings.timeout.as_secs())?);
    Ok(Some(settings))
}

/// `WEBHOOK_ALLOWED_HOSTS` (comma-separated hosts that may be reached over http and at internal
/// addresses) and the delivery worker's `WEBHOOK_*` tunables.
fn webhooks(defaults: WebhookSettings) -> anyhow::Result<WebhookSettings> {
    let whole_seconds = |d: time::Duration| u64::try_from(d.whole_seconds()).unwrap_or(0);
    let retry_window = number("WEBHOOK_RETRY_WINDOW_SECONDS", whole_seconds(defaults.retry_window))?;
    let disable_after = number("WEBHOOK_DISABLE_AFTER_SECONDS", whole_seconds(defaults.disable_after))?;
    Ok(WebhookSettings {
        allowed_hosts: list("WEBHOOK_ALLOWED_HOSTS")?,
        poll_interval: millis("WEBHOOK_POLL_MILLIS", defaults.poll_interval)?,
        retry_base: millis("WEBHOOK_RETRY_BASE_MILLIS", defaults.retry_base)?,
        retry_max: seconds("WEBHOOK_RETRY_MAX_SECONDS", defaults.retry_max)?,
        retry_window: time::Duration::seconds(i64::try_from(retry_window).unwrap_or(i64::MAX)),
        disable_after: time::Duration::seconds(i64::try_from(disable_after).unwrap_or(i64::MAX)),
        concurrency: number("WEBHOOK_CONCURRENCY", defaults.concurrency)?,
        claim_lease: seconds("WEBHOOK_CLAIM_LEASE_SECONDS", defaults.claim_lease)?,
    })
}

/// `CHROMIUM_PATH`, `AUTOMATION_ALLOWED_HOSTS` (comma-separated hosts that may resolve to
/// internal addresses), `AUTOMATION_MAX_BROWSERS`, `PDF_MAX_BROWSERS`, `PDF_WAIT_SECONDS`, and the
/// browser's isolation: `AUTOMATION_BROWSER_USER`, `AUTOMATION_BROWSER_NO_SANDBOX`.
fn browser() -> anyhow::Result<BrowserSettings> {
    let defaults = BrowserSettings::default();
    Ok(BrowserSettings {
        chromium_path: var("CHROMIUM_PATH")?.map_or(defaults.chromium_path.clone(), PathBuf::from),
        allowed_hosts: list("AUTOMATION_ALLOWED_HOSTS")?,
        max_concurrent: max_browsers()?,
        max_prints: number("PDF_MAX_BROWSERS", defaults.max_prints)?,
        print_wait: seconds("PDF_WAIT_SECONDS", defaults.print_wait)?,
        isolation: browser_isolation()?,
        ..defaults
    })
}

/// The browser's sandbox: as root, the unprivileged `AUTOMATION_BROWSER_USER` (a local user name),
/// or no sandbox only when `AUTOMATION_BROWSER_NO_SANDBOX=true` says so; otherwise Chromium's own
/// sandbox in the service's user. As root with neither, browsers are refused (see
/// [`BrowserIsolation::Refused`]), which the runner logs.
fn browser_isolation() -> anyhow::Result<BrowserIsolation> {
    let root = compliance_browser::running_as_root();
    let user = match var("AUTOMATION_BROWSER_USER")? {
        None => None,
        Some(_) if !root => bail!("AUTOMATION_BROWSER_USER needs the service to run as root (to switch to it)"),
        Some(name) => match compliance_browser::local_user(&name) {
            Ok(Some((0, _))) => bail!("AUTOMATION_BROWSER_USER `{name}` is root; name an unprivileged user"),
            Ok(Some(ids)) => Some(ids),
            Ok(None) => bail!("AUTOMATION_BROWSER_USER `{name}` is not a user of this system"),
            Err(error) => bail!("cannot read /etc/passwd for AUTOMATION_BROWSER_USER: {error}"),
        },
    };
    Ok(BrowserIsolation::choose(root, user, boolean("AUTOMATION_BROWSER_NO_SANDBOX", false)?))
}

/// `PDF_PRINTS_PER_ORGANIZATION` and `PDF_WAIT_SECONDS`: how PDF documents share the browsers.
fn documents(defaults: DocumentSettings) -> anyhow::Result<DocumentSettings> {
    Ok(DocumentSettings {
        prints_per_organization: number("PDF_PRINTS_PER_ORGANIZATION", defaults.prints_per_organization)?,
        print_wait: seconds("PDF_WAIT_SECONDS", defaults.print_wait)?,
    })
}

/// Comma-separated origins such as `https://app.example.com`: scheme, host and port only.
fn redirect_origins() -> anyhow::Result<Vec<String>> {
    list("OAUTH_REDIRECT_ORIGINS")?
        .into_iter()
        .map(|origin| {
            let url = url::Url::parse(&origin).ok().filter(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host_str().is_some()
                    && u.path() == "/"
                    && u.query().is_none()
            });
            url.map(|u| u.origin().ascii_serialization()).with_context(|| {
                format!("OAUTH_REDIRECT_ORIGINS: `{origin}` is not an origin such as https://app.example.com")
            })
        })
        .collect()
}

/// `URL_SIGNING_KEY` (at least 32 bytes), or `default`, the random key of [`Settings::default()`],
/// which lives as long as the process: links then stop working on restart, and several instances
/// need the variable set to share links.
fn signing_key(default: Vec<u8>) -> anyhow::Result<Vec<u8>> {
    match var("URL_SIGNING_KEY")? {
        Some(key) if key.len() >= SIGNING_KEY_BYTES => Ok(key.into_bytes()),
        Some(_) => bail!("URL_SIGNING_KEY must be at least {SIGNING_KEY_BYTES} bytes long"),
        None => Ok(default),
    }
}

/// `AUDIT_RETENTION_DAYS`: how long audit entries are kept; unset keeps them forever.
fn audit_retention() -> anyhow::Result<Option<time::Duration>> {
    match var("AUDIT_RETENTION_DAYS")? {
        None => Ok(None),
        Some(_) => Ok(Some(time::Duration::days(i64::from(number::<u32>("AUDIT_RETENTION_DAYS", 0)?)))),
    }
}

/// `AUDIT_SIGNING_KEY` (at least 32 bytes; `AUDIT_CHECKPOINT_KEY`, its name before the log was a
/// Merkle tree, is read when it is not set): the secret the Ed25519 key signing the audit log's
/// tree heads and checkpoints is derived from. Required with `AUDIT_RETENTION_DAYS`, since a
/// checkpoint signed with a key that dies with the process (`default`, a random one) could not be
/// verified after a restart.
fn audit_signing_key(default: Vec<u8>, retention: bool) -> anyhow::Result<Vec<u8>> {
    let (name, key) = match var("AUDIT_SIGNING_KEY")? {
        Some(key) => ("AUDIT_SIGNING_KEY", Some(key)),
        None => ("AUDIT_CHECKPOINT_KEY", var("AUDIT_CHECKPOINT_KEY")?),
    };
    match key {
        Some(key) if key.len() >= SIGNING_KEY_BYTES => Ok(key.into_bytes()),
        Some(_) => bail!("{name} must be at least {SIGNING_KEY_BYTES} bytes long"),
        None if retention => {
            bail!("AUDIT_RETENTION_DAYS needs AUDIT_SIGNING_KEY (at least {SIGNING_KEY_BYTES} bytes)")
        }
        None => Ok(default),
    }
}

/// The HTTP server's settings; timeouts in seconds.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// `HTTP_REQUEST_TIMEOUT_SECONDS`: how long a client may take to send a request's head.
    pub request_timeout: Duration,
    /// `HTTP_KEEP_ALIVE_SECONDS`: how long an idle connection stays open; zero closes it after each request.
    pub keep_alive: Duration,
    /// `HTTP_DISCONNECT_TIMEOUT_SECONDS`: how long a closing connection may take to shut down.
    pub disconnect_timeout: Duration,
    /// `HTTP_MAX_URL_BYTES` and `HTTP_MAX_HEADER_BYTES`.
    pub head: HeadLimits,
    /// `RATE_LIMIT_PER_SECOND` (zero: no limit) and `RATE_LIMIT_BURST`.
    pub rate_limit: Option<RateLimit>,
    /// `RATE_LIMIT_TRUST_FORWARDED`: key anonymous callers on the address a reverse proxy reports.
    pub trust_forwarded: bool,
    /// `LIST_CACHE_MIB`, in bytes: how much of serialized list pages is kept in memory (zero: none).
    pub list_cache_bytes: usize,
}

/// actix refuses request heads over 128 KiB itself, with an empty 431.
const HEAD_MAX: usize = 128 * 1024;

fn http_settings() -> anyhow::Result<HttpSettings> {
    let head = HeadLimits {
        max_url_bytes: number("HTTP_MAX_URL_BYTES", HeadLimits::default().max_url_bytes)?,
        max_header_bytes: number("HTTP_MAX_HEADER_BYTES", HeadLimits::default().max_header_bytes)?,
    };
    if head.max_url_bytes > HEAD_MAX || head.max_header_bytes > HEAD_MAX {
        bail!("HTTP_MAX_URL_BYTES and HTTP_MAX_HEADER_BYTES may be at most {HEAD_MAX}");
    }
    let per_second: u32 = whole_number("RATE_LIMIT_PER_SECOND", 100)?;
    let burst: u32 = whole_number("RATE_LIMIT_BURST", 200)?;
    let rate_limit = match (per_second, burst) {
        (0, _) => None,
        (_, 0) => bail!("RATE_LIMIT_BURST must be at least 1 (set RATE_LIMIT_PER_SECOND=0 to turn limits off)"),
        (per_second, burst) => Some(RateLimit { per_second, burst }),
    };
    let trust_forwarded = match var("RATE_LIMIT_TRUST_FORWARDED")?.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => bail!("RATE_LIMIT_TRUST_FORWARDED `{other}` is neither true nor false"),
    };
    Ok(HttpSettings {
        request_timeout: Duration::from_secs(number("HTTP_REQUEST_TIMEOUT_SECONDS", 5)?),
        keep_alive: Duration::from_secs(whole_number("HTTP_KEEP_ALIVE_SECONDS", 75)?),
        disconnect_timeout: Duration::from_secs(number("HTTP_DISCONNECT_TIMEOUT_SECONDS", 2)?),
        head,
        rate_limit,
        trust_forwarded,
        list_cache_bytes: list_cache_bytes()?,
    })
}

/// A whole number from the environment (zero allowed), or `default`.
fn whole_number<T: FromStr>(name: &str, default: T) -> anyhow::Result<T> {
    match var(name)? {
        None => Ok(default),
        Some(text) => text.trim().parse::<T>().map_err(|_| anyhow::anyhow!("{name} `{text}` is not a whole number")),
    }
}

/// PostgreSQL: [`PoolOptions`]' 4 per thread. SQLite: twice the cores, at least 4, because its
/// statements run on the thread that awaits them and every thread may read at once.
fn default_pool_size(database: &DatabaseUrl) -> usize {
    match database {
        DatabaseUrl::Postgres(_) => PoolOptions::default().max_size,
        DatabaseUrl::Sqlite(_) => std::thread::available_parallelism().map_or(4, |cpus| (cpus.get() * 2).max(4)),
    }
}

/// Half the CPUs, at least one: background work (the automation worker, Redis's rate limits)
/// mostly waits; requests run on actix's one worker per CPU.
fn default_use_case_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |cpus| (cpus.get() / 2).max(1))
}

/// `LIST_CACHE_MIB`: 0 to 4096 MiB of list pages kept serialized (default 16).
fn list_cache_bytes() -> anyhow::Result<usize> {
    const MOST_MIB: usize = 4096;
    let mib: usize = whole_number("LIST_CACHE_MIB", 16)?;
    if mib > MOST_MIB {
        bail!("LIST_CACHE_MIB may be at most {MOST_MIB}");
    }
    Ok(mib << 20)
}

/// `LIST_MAX_ROWS`: the most rows of one list response, 1 to 1,000,000, or `default`.
fn list_max_rows(default: usize) -> anyhow::Result<usize> {
    const MOST: usize = 1_000_000;
    let rows = number("LIST_MAX_ROWS", default)?;
    if rows > MOST {
        bail!("LIST_MAX_ROWS `{rows}` is over {MOST}");
    }
    Ok(rows)
}

/// `AUTOMATION_MAX_BROWSERS`: both the worker's batch and the browser adapter's bound.
fn max_browsers() -> anyhow::Result<usize> {
    number("AUTOMATION_MAX_BROWSERS", BrowserSettings::default().max_concurrent)
}

/// A comma-separated list from the environment, items trimmed, empty ones dropped.
fn list(name: &str) -> anyhow::Result<Vec<String>> {
    Ok(var(name)?
        .map(|text| text.split(',').map(str::trim).filter(|item| !item.is_empty()).map(str::to_owned).collect())
        .unwrap_or_default())
}

/// Seconds in a day.
const DAY: u64 = 24 * 60 * 60;

/// A positive whole number from the environment, or `default`.
fn number<T: FromStr + Default + PartialEq>(name: &str, default: T) -> anyhow::Result<T> {
    match var(name)? {
        None => Ok(default),
        Some(text) => match text.trim().parse::<T>() {
            Ok(value) if value != T::default() => Ok(value),
            _ => bail!("{name} `{text}` is not a positive whole number"),
        },
    }
}

/// A positive number of seconds from the environment, or `default` (whole seconds).
fn seconds(name: &str, default: Duration) -> anyhow::Result<Duration> {
    Ok(Duration::from_secs(number(name, default.as_secs())?))
}

/// A positive number of milliseconds from the environment, or `default`.
/// A minute: a search index merges at most a minute's writes, and a merge with nothing to do costs
/// one read of each index's structure.
const SEARCH_MERGE_INTERVAL: Duration = Duration::from_secs(60);

fn millis(name: &str, default: Duration) -> anyhow::Result<Duration> {
    let default = u64::try_from(default.as_millis()).unwrap_or(u64::MAX);
    Ok(Duration::from_millis(number(name, default)?))
}

/// `NAME` from the environment, or the contents of the file named by `NAME_FILE` (for secrets).
fn var(name: &str) -> anyhow::Result<Option<String>> {
    if let Ok(value) = std::env::var(name) {
        return Ok(Some(value));
    }
    match std::env::var(format!("{name}_FILE")) {
        Ok(path) => std::fs::read_to_string(&path)
            .map(|text| Some(text.trim_end().to_owned()))
            .with_context(|| format!("cannot read {name}_FILE {path}")),
        Err(_) => Ok(None),
    }
}

/// Logs go to stderr so that admin commands keep stdout for their JSON.
pub fn init_logging(config: &Config) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if config.json_logs {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// Where the checks read each provider: its own API, or (`CHECKS_*_URL`, for tests and proxies)
/// another address.
fn check_endpoints() -> anyhow::Result<CheckEndpoints> {
    let defaults = CheckEndpoints::default();
    let url = |name: &str, default: String| -> anyhow::Result<String> {
        let Some(text) = var(name)? else { return Ok(default) };
        let parsed = url::Url::parse(&text).with_context(|| format!("{name} `{text}` is not a URL"))?;
        anyhow::ensure!(matches!(parsed.scheme(), "http" | "https"), "{name} `{text}` is not an http(s) URL");
        Ok(text.trim_end_matches('/').to_owned())
    };
    Ok(CheckEndpoints {
        github: url("CHECKS_GITHUB_API_URL", defaults.github)?,
        google: url("CHECKS_GOOGLE_API_URL", defaults.google)?,
        aws: var("CHECKS_AWS_ENDPOINT_URL")?.map(|text| url("CHECKS_AWS_ENDPOINT_URL", text)).transpose()?,
    })
}
