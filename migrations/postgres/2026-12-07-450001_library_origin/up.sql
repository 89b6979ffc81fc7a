-- The library template a control, policy or task was made from when a framework was adopted
-- (POST /v1/framework-templates/{key}/adopt): its id, its version then, and the fields as that
-- version made them (JSON), the base of a later three-way merge with a newer version. An
-- organization has at most one record of each template: adopting a second framework reuses it.
ALTER TABLE controls ADD COLUMN library_id TEXT;
ALTER TABLE controls ADD COLUMN library_version INTEGER;
ALTER TABLE controls ADD COLUMN library_base TEXT;
CREATE UNIQUE INDEX controls_by_library_id ON controls (organization_id, library_id) WHERE library_id IS NOT NULL;
ALTER TABLE policies ADD COLUMN library_id TEXT;
ALTER TABLE policies ADD COLUMN library_version INTEGER;
ALTER TABLE policies ADD COLUMN library_base TEXT;
CREATE UNIQUE INDEX policies_by_library_id ON policies (organization_id, library_id) WHERE library_id IS NOT NULL;
ALTER TABLE tasks ADD COLUMN library_id TEXT;
ALTER TABLE tasks ADD COLUMN library_version INTEGER;
ALTER TABLE tasks ADD COLUMN library_base TEXT;
CREATE UNIQUE INDEX tasks_by_library_id ON tasks (organization_id, library_id) WHERE library_id IS NOT NULL;
