DROP TABLE policy_signatures;
DROP TABLE policy_versions;
ALTER TABLE policies DROP COLUMN rejection_reason;
ALTER TABLE policies DROP COLUMN change_note;
ALTER TABLE policies DROP COLUMN submitted_by;
ALTER TABLE policies DROP COLUMN current_version;
DROP INDEX policies_tenant_key;
