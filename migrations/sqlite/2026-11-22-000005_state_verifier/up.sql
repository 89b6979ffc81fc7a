-- A pending authorization's PKCE verifier, encrypted by the vault, lives and dies with its state
-- row: taking or purging the state removes it too, so an abandoned flow leaves nothing behind.
ALTER TABLE oauth_states ADD COLUMN pkce_verifier BLOB;
