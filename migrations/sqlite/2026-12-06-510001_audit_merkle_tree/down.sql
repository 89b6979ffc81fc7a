DROP TABLE audit_tree_nodes;
DROP TABLE audit_checkpoints;
DROP TABLE audit_tree_heads;
DELETE FROM audit_entries WHERE seq IS NULL;
CREATE TABLE audit_chain_heads (
    organization_id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE audit_checkpoints (
    organization_id TEXT PRIMARY KEY,
    through_seq BIGINT NOT NULL,
    through_hash TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    signature TEXT NOT NULL
);
