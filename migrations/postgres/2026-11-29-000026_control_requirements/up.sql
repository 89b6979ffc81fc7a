-- The id an OSCAL catalog gives each imported control (`ac-2.1`), which an assessment-results
-- export names the requirement by; NULL for our own shape and the templates (and for catalogs
-- imported before this column).
ALTER TABLE requirements ADD COLUMN catalog_id TEXT;

-- Which requirements of which frameworks each control satisfies (one control often serves several
-- frameworks). A framework that a control maps to cannot be deleted (the foreign key has no
-- cascade; the store answers 409 before it is reached); deleting a control removes its mappings.
CREATE TABLE control_requirements (
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
-- a framework's roll-up, and the check before deleting it
CREATE INDEX control_requirements_by_framework ON control_requirements (organization_id, framework_id, requirement_id);
-- the foreign keys' checks when requirements are deleted (with their framework)
CREATE INDEX control_requirements_by_requirement ON control_requirements (requirement_id);
