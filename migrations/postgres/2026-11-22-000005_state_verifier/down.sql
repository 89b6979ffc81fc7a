ALTER TABLE oauth_states DROP COLUMN pkce_verifier;
