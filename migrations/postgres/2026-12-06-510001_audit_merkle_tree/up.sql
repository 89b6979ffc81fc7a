-- The audit log becomes a queue and a Merkle tree (RFC 9162) per organization, so that audited
-- writes no longer wait for each other on their organization's chain head.
--
-- A change's transaction inserts its entry with `seq` and `hash` NULL: it touches no shared row.
-- `queued` orders the queue. The sequencer (one instance at a time, under a lease) takes queued
-- entries oldest first, gives each its organization's next `seq`, sets `hash` to its leaf hash
-- (SHA-256 of 0x00 and the entry's canonical JSON), stores the perfect subtrees the new leaves
-- complete in audit_tree_nodes, and replaces the organization's signed tree head.
--
-- Existing entries are queued again in their old `seq` order, so the sequencer seals them with
-- the same numbers (webhook cursors stay valid) into the tree. Checkpoints of the old hash chain
-- cannot stand for a tree and are dropped (pruning was not yet run by the server).
ALTER TABLE audit_entries ADD COLUMN queued BIGINT;
UPDATE audit_entries SET queued = ordered.n
FROM (SELECT id, row_number() OVER (ORDER BY organization_id, seq) AS n FROM audit_entries) AS ordered
WHERE audit_entries.id = ordered.id;
CREATE SEQUENCE audit_entries_queued_seq OWNED BY audit_entries.queued;
SELECT setval('audit_entries_queued_seq', COALESCE((SELECT max(queued) FROM audit_entries), 0) + 1, false);
ALTER TABLE audit_entries
    ALTER COLUMN queued SET DEFAULT nextval('audit_entries_queued_seq'),
    ALTER COLUMN queued SET NOT NULL,
    ALTER COLUMN seq DROP NOT NULL,
    ALTER COLUMN hash DROP NOT NULL,
    DROP COLUMN prev_hash;
-- When the sequencer sealed the entry (its seal delay is `sealed_at - created_at`).
ALTER TABLE audit_entries ADD COLUMN sealed_at TIMESTAMP;
UPDATE audit_entries SET seq = NULL, hash = NULL;
CREATE INDEX audit_entries_unsealed ON audit_entries (organization_id, queued) WHERE seq IS NULL;
CREATE INDEX audit_entries_queue ON audit_entries (queued) WHERE seq IS NULL;

DROP TABLE audit_chain_heads;
DROP TABLE audit_checkpoints;

-- An organization's latest signed tree head: `frontier` holds the hex hashes of the perfect
-- subtrees of a tree of `tree_size` leaves, largest first (one per set bit of the size), enough
-- to append leaves and to compute `root_hash`. `signature` is the Ed25519 signature (base64),
-- by the key `key_id` names, of the C2SP checkpoint text of size, root and `signed_at`.
CREATE TABLE audit_tree_heads (
    organization_id TEXT PRIMARY KEY,
    tree_size BIGINT NOT NULL,
    root_hash TEXT NOT NULL,
    frontier TEXT NOT NULL,
    signed_at TIMESTAMP NOT NULL,
    key_id TEXT NOT NULL,
    signature TEXT NOT NULL
);

-- The signed head of an organization's pruned prefix: the tree of entries 1..tree_size, whose
-- frontier the remaining entries are appended to when the log is verified.
CREATE TABLE audit_checkpoints (
    organization_id TEXT PRIMARY KEY,
    tree_size BIGINT NOT NULL,
    root_hash TEXT NOT NULL,
    frontier TEXT NOT NULL,
    signed_at TIMESTAMP NOT NULL,
    key_id TEXT NOT NULL,
    signature TEXT NOT NULL
);

-- Every perfect subtree of an organization's tree, as it completes: leaves `idx·2^level` up to
-- `(idx+1)·2^level`, its hash in hex. Level 0 holds the leaves. Inclusion and consistency
-- proofs are folded from these, and they outlive pruning.
CREATE TABLE audit_tree_nodes (
    organization_id TEXT NOT NULL,
    level INTEGER NOT NULL,
    idx BIGINT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (organization_id, level, idx)
);
