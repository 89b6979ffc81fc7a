-- Evidence-source links and requirement mappings keep their history: removing one sets
-- `removed_at` instead of deleting the row, so a status `asOf` a past moment counts the links and
-- mappings in force then (docs/decisions/2026-12-06-links-and-mappings-keep-their-history.md).
-- A row is in force from `created_at` (included) to `removed_at` (excluded), or for good while
-- `removed_at` is NULL. The same link or mapping made again is a new row: the key takes its
-- `created_at`, and a partial unique index keeps one in force at a time (the 409 of a second one).
ALTER TABLE control_evidence_sources ADD COLUMN removed_at TIMESTAMP;
ALTER TABLE control_evidence_sources DROP CONSTRAINT control_evidence_sources_pkey;
ALTER TABLE control_evidence_sources ADD PRIMARY KEY (control_id, source_id, created_at);
CREATE UNIQUE INDEX control_evidence_sources_in_force ON control_evidence_sources (control_id, source_id)
    WHERE removed_at IS NULL;

ALTER TABLE control_requirements ADD COLUMN removed_at TIMESTAMP;
ALTER TABLE control_requirements DROP CONSTRAINT control_requirements_pkey;
ALTER TABLE control_requirements ADD PRIMARY KEY (control_id, requirement_id, created_at);
CREATE UNIQUE INDEX control_requirements_in_force ON control_requirements (control_id, requirement_id)
    WHERE removed_at IS NULL;
