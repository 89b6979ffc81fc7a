DROP INDEX api_keys_by_parent;
ALTER TABLE api_keys DROP COLUMN parent_id;
