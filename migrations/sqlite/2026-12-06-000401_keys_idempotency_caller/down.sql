CREATE TABLE idempotency_keys_by_organization (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    idempotency_key TEXT NOT NULL,
    route TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    attempt BIGINT NOT NULL,
    locked_until TIMESTAMP NOT NULL,
    applied_at TIMESTAMP,
    resource_type TEXT,
    resource_id TEXT,
    response_status INTEGER,
    response_content_type TEXT,
    response_location TEXT,
    response_body BLOB,
    response_withheld BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    response_etag TEXT,
    CONSTRAINT idempotency_keys_scope UNIQUE (organization_id, idempotency_key, route)
);
-- Keys of several callers may share an organization's key and route now: keep one of each.
INSERT OR IGNORE INTO idempotency_keys_by_organization
SELECT id, organization_id, idempotency_key, route, fingerprint, attempt, locked_until, applied_at,
    resource_type, resource_id, response_status, response_content_type, response_location,
    response_body, response_withheld, created_at, expires_at, response_etag
FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_by_organization RENAME TO idempotency_keys;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
