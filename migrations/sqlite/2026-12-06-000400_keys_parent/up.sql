-- The key that made a key (POST /v1/api-keys with an API key): the child expires no later than
-- its parent and is revoked with it, in the parent's revocation transaction. NULL for a key made
-- with a session or by the operator's CLI, and for every key made before this was recorded.
ALTER TABLE api_keys ADD COLUMN parent_id TEXT REFERENCES api_keys (id) ON DELETE CASCADE;
-- a revocation's walk down to the keys each key made
CREATE INDEX api_keys_by_parent ON api_keys (organization_id, parent_id);
