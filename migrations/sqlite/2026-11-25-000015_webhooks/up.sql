-- Webhook endpoints of an organization and the deliveries of events to them.
CREATE TABLE webhooks (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    description TEXT,
    -- a JSON array of event names and wildcards ("risk.*", "*")
    events TEXT NOT NULL,
    is_enabled BOOLEAN NOT NULL,
    -- why the delivery worker disabled it (NULL when a user did, or while enabled)
    disabled_reason TEXT,
    -- the signing secret, sealed by the vault (bound to the organization and the webhook)
    secret BLOB NOT NULL,
    -- the secret before the last rotation, which keeps signing until previous_secret_expires_at
    previous_secret BLOB,
    previous_secret_expires_at TIMESTAMP,
    -- the last audit seq of the organization the worker has turned into deliveries (or skipped)
    event_cursor BIGINT NOT NULL,
    -- the ordinal the next delivery gets: deliveries are sent in ordinal order
    next_ordinal BIGINT NOT NULL,
    -- when the current run of failed attempts began; NULL after a success
    failing_since TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    CONSTRAINT webhooks_tenant_key UNIQUE (organization_id, id)
);
-- an organization's webhooks, oldest first
CREATE INDEX webhooks_by_organization ON webhooks (organization_id, created_at, id);

CREATE TABLE webhook_deliveries (
    -- the message id (webhook-id header): the same for every attempt
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    webhook_id TEXT NOT NULL,
    ordinal BIGINT NOT NULL,
    event_type TEXT NOT NULL,
    -- the audit entry's seq; NULL for webhook.test
    event_seq BIGINT,
    -- the JSON body, fixed when the delivery is made
    payload TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'sending', 'succeeded', 'failed')),
    attempts INTEGER NOT NULL,
    next_attempt_at TIMESTAMP NOT NULL,
    -- while sending: until when the claiming worker owns it (its fencing token, too)
    claimed_until TIMESTAMP,
    response_status INTEGER,
    -- the first 1 KiB of the last response's body
    response_body TEXT,
    latency_ms BIGINT,
    last_error TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    FOREIGN KEY (organization_id, webhook_id) REFERENCES webhooks (organization_id, id) ON DELETE CASCADE,
    CONSTRAINT webhook_deliveries_ordinal UNIQUE (webhook_id, ordinal)
);
-- the worker's "head of each endpoint's queue"
CREATE INDEX webhook_deliveries_open ON webhook_deliveries (webhook_id, ordinal)
    WHERE status IN ('pending', 'sending');
-- a webhook's deliveries, newest first
CREATE INDEX webhook_deliveries_newest_first ON webhook_deliveries (webhook_id, created_at DESC, id);
