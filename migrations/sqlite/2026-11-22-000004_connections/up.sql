-- Organizations' connections to third-party services. Their secrets are not here: they live in
-- vault_secrets (owner_kind 'connection', owner_id = connections.id), encrypted.
-- A disconnected connection is kept for the record rather than deleted, so the rule "one
-- connection per organization and provider" holds only for the live ones (see the index below).
CREATE TABLE connections (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    -- the provider manifest's slug, e.g. 'github'
    provider TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'needs_reauth', 'error', 'disconnected')),
    created_by TEXT NOT NULL REFERENCES users (id),
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    connected_at TIMESTAMP,
    disconnected_at TIMESTAMP,
    token_expires_at TIMESTAMP,
    last_checked_at TIMESTAMP,
    -- a short message with no secret in it
    last_error TEXT
);
-- At most one live connection per organization and provider, enforced by the database so that two
-- racing "connect" requests cannot both win; both backends support partial unique indexes.
CREATE UNIQUE INDEX connections_one_live_per_provider ON connections (organization_id, provider)
    WHERE status <> 'disconnected';
-- listing an organization's connections, newest first
CREATE INDEX connections_newest_first ON connections (organization_id, created_at DESC, id);
