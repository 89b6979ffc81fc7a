DROP TRIGGER sessions_deleted_access_generation;
DROP TRIGGER sessions_updated_access_generation;
DROP TRIGGER api_keys_deleted_access_generation;
DROP TRIGGER api_keys_updated_access_generation;
DROP TRIGGER members_deleted_access_generation;
DROP TRIGGER members_updated_access_generation;
DELETE FROM list_generations WHERE list = 'access';
DROP INDEX api_keys_newest_first;
ALTER TABLE api_keys DROP COLUMN scopes;
