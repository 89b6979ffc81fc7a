-- API keys carry scopes: what they may be used for, within their creator's role. Keys made before
-- scopes existed (and by the admin CLI) hold `*`: everything the creator's role allows.
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT '*';
CREATE INDEX api_keys_newest_first ON api_keys (organization_id, created_at, id);

-- The organization's access generation: the list_generations row 'access' moves with every
-- committed change that can end or narrow an authenticated caller's access (a member's role,
-- activity or user; a key's revocation, expiry or scopes; a session's end). A process remembers a
-- caller only while this is what it was when the caller was looked up, so a revocation by another
-- process (the admin CLI) is seen at the next request.
CREATE TRIGGER members_updated_access_generation AFTER UPDATE OF role, is_active, user_id ON members BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'access', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER members_deleted_access_generation AFTER DELETE ON members BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'access', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER api_keys_updated_access_generation AFTER UPDATE OF revoked_at, expires_at, scopes ON api_keys BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'access', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER api_keys_deleted_access_generation AFTER DELETE ON api_keys BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'access', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
-- A session is the user's in every organization they belong to.
CREATE TRIGGER sessions_updated_access_generation AFTER UPDATE ON sessions BEGIN
    INSERT INTO list_generations SELECT organization_id, 'access', 0, 1 FROM members WHERE user_id = OLD.user_id
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER sessions_deleted_access_generation AFTER DELETE ON sessions BEGIN
    INSERT INTO list_generations SELECT organization_id, 'access', 0, 1 FROM members WHERE user_id = OLD.user_id
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
