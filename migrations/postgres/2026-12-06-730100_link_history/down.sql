-- The history is dropped: only the links and mappings in force stay.
DELETE FROM control_requirements WHERE removed_at IS NOT NULL;
DROP INDEX control_requirements_in_force;
ALTER TABLE control_requirements DROP CONSTRAINT control_requirements_pkey;
ALTER TABLE control_requirements ADD PRIMARY KEY (control_id, requirement_id);
ALTER TABLE control_requirements DROP COLUMN removed_at;

DELETE FROM control_evidence_sources WHERE removed_at IS NOT NULL;
DROP INDEX control_evidence_sources_in_force;
ALTER TABLE control_evidence_sources DROP CONSTRAINT control_evidence_sources_pkey;
ALTER TABLE control_evidence_sources ADD PRIMARY KEY (control_id, source_id);
ALTER TABLE control_evidence_sources DROP COLUMN removed_at;
