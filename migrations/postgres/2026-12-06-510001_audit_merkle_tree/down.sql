DROP TABLE audit_tree_nodes;
DROP TABLE audit_checkpoints;
DROP TABLE audit_tree_heads;
DROP INDEX audit_entries_queue;
DROP INDEX audit_entries_unsealed;
DELETE FROM audit_entries WHERE seq IS NULL;
ALTER TABLE audit_entries ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_entries ALTER COLUMN seq SET NOT NULL, ALTER COLUMN hash SET NOT NULL, DROP COLUMN queued,
    DROP COLUMN sealed_at;
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
