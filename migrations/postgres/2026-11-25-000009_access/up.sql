-- API keys carry scopes: what they may be used for, within their creator's role. Keys made before
-- scopes existed (and by the admin CLI) hold `*`: everything the creator's role allows.
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT '*';
CREATE INDEX api_keys_newest_first ON api_keys (organization_id, created_at, id);

-- The organization's access generation: the list_generations row 'access' moves with every
-- committed change that can end or narrow an authenticated caller's access (a member's role,
-- activity or user; a key's revocation, expiry or scopes; a session's end). Every instance's
-- principal cache remembers a caller only while this is what it was when the caller was looked
-- up, so a revocation on one instance (or by the admin CLI) is seen by all at their next request.
CREATE FUNCTION bump_access_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'access', pg_backend_pid() % 16, 1)
    ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = list_generations.generation + 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER members_access_generation AFTER UPDATE OF role, is_active, user_id OR DELETE ON members
    FOR EACH ROW EXECUTE FUNCTION bump_access_generation();
CREATE TRIGGER api_keys_access_generation AFTER UPDATE OF revoked_at, expires_at, scopes OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION bump_access_generation();

-- A session is the user's in every organization they belong to.
CREATE FUNCTION bump_access_of_user() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_generations
        SELECT organization_id, 'access', pg_backend_pid() % 16, 1 FROM members WHERE user_id = OLD.user_id
    ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = list_generations.generation + 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER sessions_access_generation AFTER UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION bump_access_of_user();
