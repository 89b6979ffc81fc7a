-- The organization's Statement of Applicability (ISO/IEC 27001 6.1.3 d): whether each requirement
-- of a framework applies to it, and why. A requirement without a row in force applies. Each change
-- closes the row in force (removed_at) and adds one, so the statement as it stood at a past
-- moment can be answered (GET /v1/frameworks/{id}/soa?asOf=).
CREATE TABLE requirement_applicability (
    organization_id TEXT NOT NULL,
    framework_id TEXT NOT NULL,
    requirement_id TEXT NOT NULL,
    applicable BOOLEAN NOT NULL,
    justification TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    removed_at TIMESTAMP,
    PRIMARY KEY (organization_id, requirement_id, created_at),
    -- the organization's requirement of that framework; the statement goes with its framework
    FOREIGN KEY (organization_id, requirement_id) REFERENCES requirements (organization_id, id) ON DELETE CASCADE,
    FOREIGN KEY (framework_id, requirement_id) REFERENCES requirements (framework_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX requirement_applicability_in_force
    ON requirement_applicability (organization_id, requirement_id) WHERE removed_at IS NULL;
CREATE INDEX requirement_applicability_by_framework ON requirement_applicability (organization_id, framework_id);
