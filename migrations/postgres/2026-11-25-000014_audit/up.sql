-- The change record. Each state-changing operation appends one entry in the same transaction as
-- the change. Entries of one organization form a hash chain: `seq` counts 1, 2, 3… with no gap,
-- `prev_hash` is the previous entry's `hash` (or the pruned prefix's checkpoint hash, or 64 zeros
-- for the first entry), `hash` = SHA-256(prev_hash || canonical JSON of the entry).
--
-- The writer takes the next `seq` from its organization's row in audit_chain_heads with an
-- `INSERT … ON CONFLICT DO UPDATE SET seq = seq + 1 RETURNING seq, hash`: the row stays locked
-- until the transaction ends (PostgreSQL's row lock; SQLite has one writer), so concurrent writers
-- of an organization, on any instance, append one after the other and `seq` order is commit order.
CREATE TABLE audit_chain_heads (
    organization_id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);

-- `changes` is a JSON object {field: {from, to}} (secrets redacted, rich text as lengths);
-- `data` is the JSON of the resource as the API returns it after the change (as it was, for a
-- delete), which webhooks deliver; NULL when there is no such resource (e.g. a sign-in).
CREATE TABLE audit_entries (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    actor_type TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    actor_email TEXT,
    actor_api_key_id TEXT,
    action TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    changes TEXT NOT NULL,
    data TEXT,
    request_id TEXT,
    created_at TIMESTAMP NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    UNIQUE (organization_id, seq)
);
CREATE INDEX audit_entries_newest ON audit_entries (organization_id, created_at DESC, id DESC);
CREATE INDEX audit_entries_resource ON audit_entries (organization_id, resource_type, resource_id, created_at DESC);

-- What pruning removed: entries 1..through_seq of the organization, the last of which had hash
-- `through_hash`. `signature` is an HMAC-SHA256, with the server's checkpoint key, of
-- "{organization_id}.{through_seq}.{through_hash}.{created_at}", so the remaining chain verifies
-- from a prefix no one can forge without the key.
CREATE TABLE audit_checkpoints (
    organization_id TEXT PRIMARY KEY,
    through_seq BIGINT NOT NULL,
    through_hash TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    signature TEXT NOT NULL
);
