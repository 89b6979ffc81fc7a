-- The credential vault's storage: ciphertexts only (never a plaintext secret), pending OAuth
-- states by the hash of their value, and leases that serialise token refreshes across instances.
CREATE TABLE vault_secrets (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    owner_kind TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    ciphertext BLOB NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, owner_kind, owner_id)
);
-- rotation looks for rows under an old key
CREATE INDEX vault_secrets_by_key ON vault_secrets (key_id, updated_at);

CREATE TABLE oauth_states (
    state_hash TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    redirect_url TEXT,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX oauth_states_by_expiry ON oauth_states (expires_at);

CREATE TABLE refresh_leases (
    lease_key TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
