DROP TRIGGER sessions_access_generation ON sessions;
DROP FUNCTION bump_access_of_user();
DROP TRIGGER api_keys_access_generation ON api_keys;
DROP TRIGGER members_access_generation ON members;
DROP FUNCTION bump_access_generation();
DELETE FROM list_generations WHERE list = 'access';
DROP INDEX api_keys_newest_first;
ALTER TABLE api_keys DROP COLUMN scopes;
