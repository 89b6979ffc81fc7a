-- Sign-in with OpenID Connect and invitations.

-- A provider's account (issuer and subject) linked to a user: the subject is how a provider names
-- its user for good, where an e-mail address may change hands.
CREATE TABLE user_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX user_identities_by_user ON user_identities (user_id);

-- A sign-in under way: the state's SHA-256 is the key (single use: the callback deletes the row);
-- the browser proves it started the attempt with the PKCE verifier in its cookie, kept here only
-- as a SHA-256.
CREATE TABLE sign_in_attempts (
    state_hash TEXT PRIMARY KEY,
    nonce TEXT NOT NULL,
    verifier_hash TEXT NOT NULL,
    redirect TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX sign_in_attempts_by_expiry ON sign_in_attempts (expires_at);

CREATE TABLE invitations (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    role TEXT NOT NULL,
    department TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    invited_by TEXT NOT NULL REFERENCES users (id),
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    accepted_at TIMESTAMP,
    accepted_by TEXT REFERENCES users (id)
);
CREATE INDEX invitations_newest_first ON invitations (organization_id, created_at, id);
