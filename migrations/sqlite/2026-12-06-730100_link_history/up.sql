-- Evidence-source links and requirement mappings keep their history: removing one sets
-- `removed_at` instead of deleting the row, so a status `asOf` a past moment counts the links and
-- mappings in force then (docs/decisions/2026-12-06-links-and-mappings-keep-their-history.md).
-- A row is in force from `created_at` (included) to `removed_at` (excluded), or for good while
-- `removed_at` is NULL. The same link or mapping made again is a new row: the key takes its
-- `created_at`, and a partial unique index keeps one in force at a time (the 409 of a second one).
-- SQLite changes no primary key in place: each table is made again and its rows copied.
CREATE TABLE control_evidence_sources_history (
    organization_id TEXT NOT NULL,
    control_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    source_id TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    removed_at TIMESTAMP,
    PRIMARY KEY (control_id, source_id, created_at),
    FOREIGN KEY (organization_id, control_id) REFERENCES controls (organization_id, id) ON DELETE CASCADE
);
INSERT INTO control_evidence_sources_history (organization_id, control_id, kind, source_id, created_at)
    SELECT organization_id, control_id, kind, source_id, created_at FROM control_evidence_sources;
DROP TABLE control_evidence_sources;
ALTER TABLE control_evidence_sources_history RENAME TO control_evidence_sources;
-- The audit-chain hook finds the controls a changed source is linked to.
CREATE INDEX control_evidence_sources_by_source ON control_evidence_sources (organization_id, source_id);
CREATE UNIQUE INDEX control_evidence_sources_in_force ON control_evidence_sources (control_id, source_id)
    WHERE removed_at IS NULL;

CREATE TABLE control_requirements_history (
    organization_id TEXT NOT NULL,
    control_id TEXT NOT NULL,
    requirement_id TEXT NOT NULL,
    framework_id TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    removed_at TIMESTAMP,
    PRIMARY KEY (control_id, requirement_id, created_at),
    FOREIGN KEY (organization_id, control_id) REFERENCES controls (organization_id, id) ON DELETE CASCADE,
    FOREIGN KEY (organization_id, requirement_id) REFERENCES requirements (organization_id, id),
    FOREIGN KEY (framework_id, requirement_id) REFERENCES requirements (framework_id, id)
);
INSERT INTO control_requirements_history (organization_id, control_id, requirement_id, framework_id, created_at)
    SELECT organization_id, control_id, requirement_id, framework_id, created_at FROM control_requirements;
DROP TABLE control_requirements;
ALTER TABLE control_requirements_history RENAME TO control_requirements;
-- a framework's roll-up, and the check before deleting it
CREATE INDEX control_requirements_by_framework ON control_requirements (organization_id, framework_id, requirement_id);
-- the foreign keys' checks when requirements are deleted (with their framework)
CREATE INDEX control_requirements_by_requirement ON control_requirements (requirement_id);
CREATE UNIQUE INDEX control_requirements_in_force ON control_requirements (control_id, requirement_id)
    WHERE removed_at IS NULL;
