-- The audit log becomes a queue and a Merkle tree (RFC 9162) per organization: see the
-- PostgreSQL migration of the same name. Here `queued` is the table's rowid (INTEGER PRIMARY
-- KEY), given in insertion order, which on SQLite's single writer is commit order; the table is
-- rebuilt, its entries queued again in their old `seq` order.
CREATE TABLE audit_entries_queued (
    queued INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    organization_id TEXT NOT NULL,
    seq BIGINT,
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
    hash TEXT,
    sealed_at TIMESTAMP,
    UNIQUE (organization_id, seq)
);
INSERT INTO audit_entries_queued (id, organization_id, seq, actor_type, actor_id, actor_email, actor_api_key_id,
    action, resource_type, resource_id, changes, data, request_id, created_at, hash)
SELECT id, organization_id, NULL, actor_type, actor_id, actor_email, actor_api_key_id,
    action, resource_type, resource_id, changes, data, request_id, created_at, NULL
FROM audit_entries ORDER BY organization_id, seq;
DROP TABLE audit_entries;
ALTER TABLE audit_entries_queued RENAME TO audit_entries;
CREATE INDEX audit_entries_newest ON audit_entries (organization_id, created_at DESC, id DESC);
CREATE INDEX audit_entries_resource ON audit_entries (organization_id, resource_type, resource_id, created_at DESC);
CREATE INDEX audit_entries_unsealed ON audit_entries (organization_id, queued) WHERE seq IS NULL;
CREATE INDEX audit_entries_queue ON audit_entries (queued) WHERE seq IS NULL;

DROP TABLE audit_chain_heads;
DROP TABLE audit_checkpoints;

CREATE TABLE audit_tree_heads (
    organization_id TEXT PRIMARY KEY,
    tree_size BIGINT NOT NULL,
    root_hash TEXT NOT NULL,
    frontier TEXT NOT NULL,
    signed_at TIMESTAMP NOT NULL,
    key_id TEXT NOT NULL,
    signature TEXT NOT NULL
);

CREATE TABLE audit_checkpoints (
    organization_id TEXT PRIMARY KEY,
    tree_size BIGINT NOT NULL,
    root_hash TEXT NOT NULL,
    frontier TEXT NOT NULL,
    signed_at TIMESTAMP NOT NULL,
    key_id TEXT NOT NULL,
    signature TEXT NOT NULL
);

CREATE TABLE audit_tree_nodes (
    organization_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (organization_id, level, idx)
);
