-- The history is dropped: only the links and mappings in force stay, in the tables as they were.
CREATE TABLE control_requirements_without_history (
    organization_id TEXT NOT NULL,
    control_id TEXT NOT NULL,
    requirement_id TEXT NOT NULL,
    framework_id TEXT NOT NULL,
    -- when it was mapped: a status `asOf` an earlier moment leaves it out
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (control_id, requirement_id),
    FOREIGN KEY (organization_id, control_id) REFERENCES controls (organization_id, id) ON DELETE CASCADE,
    -- the requirement is the organization's, and of the framework named beside it
    FOREIGN KEY (organization_id, requirement_id) REFERENCES requirements (organization_id, id),
    FOREIGN KEY (framework_id, requirement_id) REFERENCES requirements (framework_id, id)
);
INSERT INTO control_requirements_without_history (organization_id, control_id, requirement_id, framework_id, created_at)
    SELECT organization_id, control_id, requirement_id, framework_id, created_at FROM control_requirements
    WHERE removed_at IS NULL;
DROP TABLE control_requirements;
ALTER TABLE control_requirements_without_history RENAME TO control_requirements;
-- a framework's roll-up, and the check before deleting it
CREATE INDEX control_requirements_by_framework ON control_requirements (organization_id, framework_id, requirement_id);
-- the foreign keys' checks when requirements are deleted (with their framework)
CREATE INDEX control_requirements_by_requirement ON control_requirements (requirement_id);

CREATE TABLE control_evidence_sources_without_history (
    organization_id TEXT NOT NULL,
    control_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    source_id TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (control_id, source_id),
    FOREIGN KEY (organization_id, control_id) REFERENCES controls (organization_id, id) ON DELETE CASCADE
);
INSERT INTO control_evidence_sources_without_history (organization_id, control_id, kind, source_id, created_at)
    SELECT organization_id, control_id, kind, source_id, created_at FROM control_evidence_sources
    WHERE removed_at IS NULL;
DROP TABLE control_evidence_sources;
ALTER TABLE control_evidence_sources_without_history RENAME TO control_evidence_sources;
-- The audit-chain hook finds the controls a changed source is linked to.
CREATE INDEX control_evidence_sources_by_source ON control_evidence_sources (organization_id, source_id);
