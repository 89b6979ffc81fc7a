-- Frameworks an organization adopted (a catalog of requirements: an OSCAL import, a shipped
-- template, its own) and their requirements. Requirements never change after the import; a
-- framework is deleted with its requirements.
CREATE TABLE frameworks (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('oscal', 'custom', 'template')),
    requirement_count BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    CONSTRAINT frameworks_tenant_key UNIQUE (organization_id, id),
    -- the same catalog adopted twice is a 409
    CONSTRAINT frameworks_name_version UNIQUE (organization_id, name, version)
);
-- an organization's frameworks, newest first
CREATE INDEX frameworks_newest_first ON frameworks (organization_id, created_at DESC, id DESC);

CREATE TABLE requirements (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    framework_id TEXT NOT NULL,
    -- the catalog's order (a parent before its children)
    position BIGINT NOT NULL,
    identifier TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT,
    -- the requirement this one refines (an OSCAL control enhancement's control), of the same framework
    parent_id TEXT,
    FOREIGN KEY (organization_id, framework_id) REFERENCES frameworks (organization_id, id) ON DELETE CASCADE,
    FOREIGN KEY (framework_id, parent_id) REFERENCES requirements (framework_id, id) ON DELETE CASCADE,
    -- for references from other tables that must stay within one organization or framework
    CONSTRAINT requirements_tenant_key UNIQUE (organization_id, id),
    CONSTRAINT requirements_framework_key UNIQUE (framework_id, id),
    CONSTRAINT requirements_identifier UNIQUE (framework_id, identifier),
    -- a framework's requirements in catalog order
    CONSTRAINT requirements_position UNIQUE (framework_id, position)
);
-- the cascade from a deleted parent
CREATE INDEX requirements_by_parent ON requirements (framework_id, parent_id);
