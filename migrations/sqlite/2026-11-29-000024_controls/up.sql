-- Controls, the sources linked to them as evidence, and the evidence items recorded for them.
CREATE TABLE controls (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    owner_id TEXT,
    frequency TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    CONSTRAINT controls_tenant_key UNIQUE (organization_id, id),
    FOREIGN KEY (organization_id, owner_id) REFERENCES members (organization_id, id)
);
CREATE INDEX controls_newest_first ON controls (organization_id, created_at, id);

-- A source is a policy, task, connection or automation, by kind; no foreign key (polymorphic).
CREATE TABLE control_evidence_sources (
    organization_id TEXT NOT NULL,
    control_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    source_id TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (control_id, source_id),
    FOREIGN KEY (organization_id, control_id) REFERENCES controls (organization_id, id) ON DELETE CASCADE
);
-- The audit-chain hook finds the controls a changed source is linked to.
CREATE INDEX control_evidence_sources_by_source ON control_evidence_sources (organization_id, source_id);

-- Immutable rows: written when the change that produced them commits, never updated.
CREATE TABLE evidence (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    control_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    source_id TEXT,
    outcome TEXT NOT NULL,
    collected_at TIMESTAMP NOT NULL,
    detail TEXT NOT NULL,
    blob_key TEXT,
    run_id TEXT,
    FOREIGN KEY (organization_id, control_id) REFERENCES controls (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX evidence_newest_first ON evidence (organization_id, control_id, collected_at, id);
-- A source's latest evidence at a moment (status, `asOf`).
CREATE INDEX evidence_latest ON evidence (organization_id, control_id, source_id, collected_at, id);
