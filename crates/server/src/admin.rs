//! The `admin` subcommands: each prints one JSON object on stdout.

use anyhow::Context;
use compliance_app::{App, DeviceLabelAssigned, IssuedApiKey};
use compliance_domain::access::Scopes;
use compliance_domain::allowed_host::{AllowedHost, AllowedHostUse};
use compliance_domain::people::ApiKey;
use compliance_domain::{ApiKeyId, Department, MemberId, OrganizationId, UserId};
use compliance_http::wire::{MemberDto, OrganizationDto, UserDto};
use compliance_store::Store;
use compliance_vault::{add_current_key, reencrypt_all};
use secrecy::ExposeSecret;
use serde_json::{Value, json};

use crate::cli::AdminCommand;
use crate::config::Config;
use crate::wiring;

pub async fn run(config: &Config, command: AdminCommand) -> anyhow::Result<()> {
    let keyring = std::sync::Arc::new(wiring::vault_keyring(config)?);
    let (app, store) = wiring::app(config, wiring::Role::Admin, keyring).await?;
    let output = execute(&app, store.as_ref(), config, command).await;
    store.close();
    println!("{}", output?);
    Ok(())
}

async fn execute(app: &App, store: &Store, config: &Config, command: AdminCommand) -> anyhow::Result<Value> {
    let admin = &app.admin;
    Ok(match command {
        AdminCommand::Bootstrap { org, slug, email, name, key_name } => {
            let made = admin.bootstrap((org, slug), (email, name), Some(key_name)).await?;
            json!({
                "organization": OrganizationDto::from(&made.organization.record),
                "user": UserDto::from(&made.user.record),
                "member": MemberDto::from(&made.member.record),
                "apiKey": issued_key(&made.api_key),
                "created": {
                    "organization": made.organization.created, "user": made.user.created,
                    "member": made.member.created, "apiKey": true,
                },
            })
        }
        AdminCommand::ListOrgs { limit } => {
            let organizations = admin.list_organizations(limit).await?;
            json!({"organizations": organizations.iter().map(OrganizationDto::from).collect::<Vec<_>>()})
        }
        AdminCommand::ListApiKeys { org } => {
            let keys = admin.list_api_keys(&parse_org(&org)?).await?;
            json!({"apiKeys": keys.iter().map(key_without_text).collect::<Vec<_>>()})
        }
        AdminCommand::CreateOrg { name, slug } => {
            json!(OrganizationDto::from(&admin.create_organization(name, slug).await?))
        }
        AdminCommand::CreateUser { email, name } => json!(UserDto::from(&admin.create_user(email, name).await?)),
        AdminCommand::AddMember { org, user, role, department } => {
            let department = department.map(|d| d.parse::<Department>()).transpose().context("--department")?;
            let person = admin.add_member(parse_org(&org)?, parse_user(&user, "--user")?, role, department).await?;
            json!(MemberDto::from(&person))
        }
        AdminCommand::SetDeviceLabel { org, member, label, clear: _ } => {
            let member = member.map(|m| MemberId::parse(&m)).transpose().context("--member")?;
            match admin.set_device_label(parse_org(&org)?, member, label).await? {
                DeviceLabelAssigned::Organization(organization) => {
                    json!({"organization": OrganizationDto::from(&organization)})
                }
                DeviceLabelAssigned::Member(person) => json!({"member": MemberDto::from(&person)}),
            }
        }
        AdminCommand::CreateApiKey { org, created_by, name, expires_in_days, scopes } => {
            let created_by = parse_user(&created_by, "--created-by")?;
            let scopes = scopes
                .map(|texts| Scopes::parse("--scopes", &texts))
                .transpose()
                .map_err(|error| anyhow::anyhow!("{}: {}", error.field, error.message))?;
            let issued = admin.create_api_key(parse_org(&org)?, created_by, name, expires_in_days, scopes).await?;
            issued_key(&issued)
        }
        AdminCommand::RevokeApiKey { id } => {
            let id = ApiKeyId::parse(&id).context("--id")?;
            let key = admin.revoke_api_key(&id).await?;
            json!({"id": key.id, "revokedAt": key.revoked_at})
        }
        AdminCommand::RotateVaultKey { generate_key } => {
            let keyring =
                if generate_key { add_current_key(&config.vault_keys)? } else { wiring::vault_keyring(config)? };
            let report = reencrypt_all(store, &keyring, progress_bar).await?;
            if !report.undecryptable.is_empty() {
                let owners: Vec<String> =
                    report.undecryptable.iter().map(|(kind, id)| format!("{kind} {id}")).collect();
                anyhow::bail!(
                    "{} secrets re-encrypted; these cannot be decrypted with the configured keys: {}",
                    report.reencrypted,
                    owners.join(", ")
                );
            }
            json!({"currentKeyId": keyring.current_key_id(), "reencrypted": report.reencrypted, "skipped": report.skipped})
        }
        AdminCommand::CreateSession { user, ttl_hours } => {
            let ttl = time::Duration::hours(i64::from(ttl_hours));
            let issued = admin.create_session(parse_user(&user, "--user")?, ttl).await?;
            json!({
                "token": issued.token.expose_secret(), "expiresAt": issued.session.expires_at,
                "userId": issued.session.user_id,
            })
        }
        AdminCommand::AllowHost { org, used_for, host } => {
            let grant = app.allowed_hosts.grant(&parse_org(&org)?, parse_use(&used_for)?, &host).await?;
            allowed_host(&grant)
        }
        AdminCommand::DisallowHost { org, used_for, host } => {
            let removed = app.allowed_hosts.revoke(&parse_org(&org)?, parse_use(&used_for)?, &host).await?;
            json!({"removed": removed})
        }
        AdminCommand::ListAllowedHosts { org } => {
            let grants = app.allowed_hosts.list(&parse_org(&org)?).await?;
            json!({"allowedHosts": grants.iter().map(allowed_host).collect::<Vec<_>>()})
        }
        AdminCommand::MergeSearchIndexes => json!({"steps": store.merge_search_indexes().await?}),
    })
}

/// A new key with its text, which is shown this once.
fn issued_key(issued: &IssuedApiKey) -> Value {
    let key = &issued.key;
    json!({
        "id": key.id, "key": issued.secret.expose_secret(), "name": key.name,
        "organizationId": key.organization_id, "createdBy": key.created_by,
        "createdAt": key.created_at, "expiresAt": key.expires_at,
        "scopes": key.scopes.iter().map(|scope| scope.to_string()).collect::<Vec<_>>(),
    })
}

/// A stored key as `list-api-keys` shows it: neither its text nor its hash.
fn key_without_text(key: &ApiKey) -> Value {
    json!({
        "id": key.id, "name": key.name, "organizationId": key.organization_id, "createdBy": key.created_by,
        "scopes": key.scopes.iter().map(|scope| scope.to_string()).collect::<Vec<_>>(),
        "createdAt": key.created_at, "expiresAt": key.expires_at, "revokedAt": key.revoked_at,
        "lastUsedAt": key.last_used_at,
    })
}

/// `re-encrypting secrets [#####-----] 50/100` on stderr, redrawn in place.
fn progress_bar(done: u64, total: u64) {
    const WIDTH: u64 = 30;
    if total == 0 {
        return;
    }
    // Rows written under an old key during the run can take `done` past the first count.
    let filled = (done.min(total) * WIDTH / total) as usize;
    let bar = format!("{}{}", "#".repeat(filled), "-".repeat(WIDTH as usize - filled));
    eprint!("\rre-encrypting secrets [{bar}] {done}/{total}");
    if done >= total {
        eprintln!();
    }
}

/// A grant as `allow-host` and `list-allowed-hosts` show it.
fn allowed_host(grant: &AllowedHost) -> Value {
    json!({
        "organizationId": grant.organization_id, "for": grant.used_for, "host": grant.host,
        "grantedAt": grant.granted_at,
    })
}

fn parse_use(text: &str) -> anyhow::Result<AllowedHostUse> {
    text.parse::<AllowedHostUse>().map_err(|error| anyhow::anyhow!("--for: {error}"))
}

fn parse_org(text: &str) -> anyhow::Result<OrganizationId> {
    OrganizationId::parse(text).context("--org")
}

fn parse_user(text: &str, flag: &str) -> anyhow::Result<UserId> {
    UserId::parse(text).with_context(|| flag.to_owned())
}
