-- Policies with a life: the published versions, who signed which, and the approval in progress.

-- What the versions' and signatures' composite foreign keys refer to.
CREATE UNIQUE INDEX policies_tenant_key ON policies (organization_id, id);

-- the number of the published version readers and signers see (0: never published)
ALTER TABLE policies ADD COLUMN current_version INTEGER NOT NULL DEFAULT 0;
-- the user who submitted the pending approval, and the note they gave
ALTER TABLE policies ADD COLUMN submitted_by TEXT;
ALTER TABLE policies ADD COLUMN change_note TEXT;
-- why the approver returned the last submission to draft
ALTER TABLE policies ADD COLUMN rejection_reason TEXT;

-- Each publish snapshots the content as an immutable version, numbered from 1 per policy.
CREATE TABLE policy_versions (
    organization_id TEXT NOT NULL,
    policy_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    name TEXT NOT NULL,
    content TEXT NOT NULL,
    change_note TEXT,
    published_at TIMESTAMP NOT NULL,
    -- user ids; NULL for the versions this migration made of policies already published
    published_by TEXT,
    approved_by TEXT,
    approved_at TIMESTAMP,
    PRIMARY KEY (organization_id, policy_id, number),
    FOREIGN KEY (organization_id, policy_id) REFERENCES policies (organization_id, id) ON DELETE CASCADE
);

-- Who acknowledged which version: a new version starts a new round.
CREATE TABLE policy_signatures (
    organization_id TEXT NOT NULL,
    policy_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    signed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, policy_id, version, user_id),
    FOREIGN KEY (organization_id, policy_id, version)
        REFERENCES policy_versions (organization_id, policy_id, number) ON DELETE CASCADE
);

-- Policies published before versions existed become their version 1.
INSERT INTO policy_versions (organization_id, policy_id, number, name, content, published_at)
    SELECT organization_id, id, 1, name, content, COALESCE(last_published_at, updated_at)
    FROM policies WHERE status = 'published';
UPDATE policies SET current_version = 1, signed_by = '[]' WHERE status = 'published';
