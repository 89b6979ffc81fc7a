//! Webhooks: a URL is a credential (Slack and Teams put their key in its path), sealed like the
//! signing secret, shown masked, and never in an audit entry (which is what events deliver).

use compliance_domain::etag::IfMatch;
use compliance_domain::webhook::{NewWebhook, WebhookChanges};
use compliance_ports::{SecretCipher, SecretOwner, WEBHOOK_URL_OWNER_KIND};
use secrecy::ExposeSecret;

use crate::support::{BindingCipher, World};

const SLACK: &str = "https://hooks.slack.com/services/T0001/B0001/FirstSecretPath?token=first";
const ROTATED: &str = "https://hooks.slack.com/services/T0001/B0001/SecondSecretPath";
const MASKED: &str = "https://hooks.slack.com/…";

fn new_webhook(url: &str) -> NewWebhook {
    NewWebhook { url: Some(url.into()), events: Some(vec!["*".into()]), description: None }
}

#[tokio::test]
async fn a_url_is_sealed_shown_masked_and_never_audited() {
    let world = World::new();
    let tenant = world.tenant().await;
    let webhooks = &world.app.webhooks;

    let issued = webhooks.create(&tenant.owner, new_webhook(SLACK)).await.unwrap();
    assert_eq!(issued.url.as_ref().map(|u| u.expose_secret().to_owned()).as_deref(), Some(SLACK), "shown once");
    assert_eq!(issued.webhook.url, MASKED);
    let id = issued.webhook.id.clone();
    assert_eq!(webhooks.get(&tenant.owner, &id).await.unwrap().url, MASKED);

    // Kept sealed for the webhook, and it opens to the full URL the worker sends to.
    let stored = world.webhooks.stored(&id);
    assert_eq!(stored.webhook.url, MASKED);
    assert!(!String::from_utf8_lossy(&stored.sealed_url).contains("FirstSecretPath"));
    let owner = SecretOwner { organization_id: &tenant.org, owner_kind: WEBHOOK_URL_OWNER_KIND, owner_id: id.as_str() };
    assert_eq!(BindingCipher.open(&stored.sealed_url, owner).unwrap().expose_secret(), SLACK);

    // A new URL on the same origin masks the same, and is still a change that is sealed.
    let changes = WebhookChanges { url: Some(ROTATED.into()), ..WebhookChanges::default() };
    let changed = webhooks.update(&tenant.owner, &id, changes, &IfMatch::Any).await.unwrap();
    assert_eq!(changed.url, MASKED);
    let stored = world.webhooks.stored(&id);
    assert_eq!(BindingCipher.open(&stored.sealed_url, owner).unwrap().expose_secret(), ROTATED);

    let entries = world.webhooks.entries();
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["webhook.created", "webhook.updated"]);
    for entry in &entries {
        let shown = format!("{} {}", entry.changes, entry.data.as_ref().map(ToString::to_string).unwrap_or_default());
        for secret in ["FirstSecretPath", "first", "SecondSecretPath", "/services/"] {
            assert!(!shown.contains(secret), "{secret} is in the {} entry: {shown}", entry.action);
        }
        assert!(shown.contains(MASKED), "the entry shows the masked URL: {shown}");
    }
}
