use clap::{Parser, Subcommand};

/// A multi-tenant compliance and risk management service.
#[derive(Debug, Parser)]
#[command(name = "compliance-server", version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply pending migrations, then serve the HTTP API on LISTEN_ADDR.
    Serve,
    /// Apply pending migrations and exit.
    Migrate,
    /// Print the OpenAPI 3.1 document of the HTTP API (what `GET /openapi.json` serves) and exit.
    Openapi,
    /// Operator commands; each prints one JSON object on stdout.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// First steps in one: the organization, the user, the user's owner membership and an API key
    /// (shown only this once). Run again, it reuses the organization (by slug) and the user (by
    /// e-mail address) and makes a new key; `created` says what this run made.
    Bootstrap {
        /// The organization's name; its slug is derived from it unless --slug is given.
        #[arg(long)]
        org: String,
        #[arg(long)]
        slug: Option<String>,
        #[arg(long)]
        email: String,
        /// The user's name (kept as it is when the user exists).
        #[arg(long)]
        name: String,
        /// The API key's name.
        #[arg(long, default_value = "bootstrap")]
        key_name: String,
    },
    /// List the organizations, oldest first.
    ListOrgs {
        #[arg(long, default_value_t = 1000)]
        limit: usize,
    },
    /// List an organization's API keys, newest first, revoked ones too; never their text.
    ListApiKeys {
        #[arg(long)]
        org: String,
    },
    /// Create an organization (the slug is derived from the name when omitted).
    CreateOrg {
        #[arg(long)]
        name: String,
        #[arg(long)]
        slug: Option<String>,
    },
    /// Create a user.
    CreateUser {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: String,
    },
    /// Make a user a member of an organization.
    AddMember {
        #[arg(long)]
        org: String,
        #[arg(long)]
        user: String,
        #[arg(long)]
        role: String,
        #[arg(long)]
        department: Option<String>,
    },
    /// Assign the device management system's label whose hosts are the organization's devices
    /// (or, with --member, one member's). Only the operator assigns labels: with FLEET_URL set,
    /// FleetDM must know the label and it must not be built in (`All Hosts`, …); a label another
    /// organization holds is refused.
    SetDeviceLabel {
        #[arg(long)]
        org: String,
        /// A member id (`mem_…`) of the organization: assign the member's label instead.
        #[arg(long)]
        member: Option<String>,
        /// The label id.
        #[arg(long, required_unless_present = "clear", conflicts_with = "clear")]
        label: Option<i64>,
        /// Remove the label instead.
        #[arg(long)]
        clear: bool,
    },
    /// Create an API key acting as an active member; the key is shown only this once.
    CreateApiKey {
        #[arg(long)]
        org: String,
        #[arg(long)]
        created_by: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        expires_in_days: Option<u32>,
        /// Narrow the key to these scopes, comma-separated (`risks:read,policies:write`, `*:read`);
        /// without it the key may do all its creator's role allows.
        #[arg(long, value_delimiter = ',')]
        scopes: Option<Vec<String>>,
    },
    /// Revoke an API key.
    RevokeApiKey {
        #[arg(long)]
        id: String,
    },
    /// Re-encrypt every stored secret under the current vault key, with progress on stderr.
    /// Interrupted, it can simply be run again.
    RotateVaultKey {
        /// First add a newly generated current key to the key file (not with VAULT_KEY set).
        #[arg(long)]
        generate_key: bool,
    },
    /// Create a session for a user; the token is shown only this once.
    CreateSession {
        #[arg(long)]
        user: String,
        #[arg(long, default_value_t = 24)]
        ttl_hours: u32,
    },
    /// Let one organization reach an internal host (a private address, a loopback or internal
    /// name, plain http) from its webhooks or its browser automations; no other organization
    /// gets it. WEBHOOK_ALLOWED_HOSTS and AUTOMATION_ALLOWED_HOSTS still apply to every one.
    AllowHost {
        #[arg(long)]
        org: String,
        /// `webhooks` or `automations`.
        #[arg(long = "for")]
        used_for: String,
        /// A host name or an IP address, exactly as URLs will name it (no scheme, port or path).
        #[arg(long)]
        host: String,
    },
    /// Withdraw a grant of `allow-host`; `removed` says whether there was one.
    DisallowHost {
        #[arg(long)]
        org: String,
        /// `webhooks` or `automations`.
        #[arg(long = "for")]
        used_for: String,
        #[arg(long)]
        host: String,
    },
    /// List the internal hosts granted to an organization.
    ListAllowedHosts {
        #[arg(long)]
        org: String,
    },
    /// Merge SQLite's search indexes now, as the server does every SEARCH_MERGE_MILLIS (after a
    /// bulk load by SQL, say); `steps` counts the merge steps taken. PostgreSQL: nothing to do.
    MergeSearchIndexes,
}
