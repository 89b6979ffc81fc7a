DROP TABLE audit_checkpoints;
DROP INDEX audit_entries_resource;
DROP INDEX audit_entries_newest;
DROP TABLE audit_entries;
DROP TABLE audit_chain_heads;
