-- An Idempotency-Key is the caller's own (the user and the credential, e.g. 'usr_…/apk_…' or
-- 'usr_…/session'): one member can no longer reserve, and so block for a day, a key another
-- member sends. SQLite cannot change a table's UNIQUE constraint, so the table is made again.
-- Reservations made before this keep '' and are matched by no caller: they expire within
-- IDEMPOTENCY_TTL_HOURS.
CREATE TABLE idempotency_keys_by_caller (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    idempotency_key TEXT NOT NULL,
    -- the method and matched route, e.g. 'POST /v1/risks': a key is scoped to one operation
    route TEXT NOT NULL,
    -- SHA-256 (hex) of the method, path and query, caller and body of the first request
    fingerprint TEXT NOT NULL,
    -- bumped when a retry takes over a reservation whose lease ran out: the fencing token the
    -- change's transaction checks before it marks the key applied
    attempt BIGINT NOT NULL,
    -- while no outcome is stored: until when the reservation blocks a repeat (409)
    locked_until TIMESTAMP NOT NULL,
    -- set in the change's own transaction (with the audit entry): the change committed
    applied_at TIMESTAMP,
    -- the record the change's audit entry names
    resource_type TEXT,
    resource_id TEXT,
    -- the stored outcome; NULL until the request answered
    response_status INTEGER,
    response_content_type TEXT,
    response_location TEXT,
    response_body BLOB,
    -- the answer showed a secret once: its body is not kept (a repeat gets a problem)
    response_withheld BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    response_etag TEXT,
    -- who reserved it: the user and the credential
    caller TEXT NOT NULL DEFAULT '',
    CONSTRAINT idempotency_keys_scope UNIQUE (organization_id, caller, idempotency_key, route)
);
INSERT INTO idempotency_keys_by_caller (
    id, organization_id, idempotency_key, route, fingerprint, attempt, locked_until, applied_at,
    resource_type, resource_id, response_status, response_content_type, response_location,
    response_body, response_withheld, created_at, expires_at, response_etag
)
SELECT id, organization_id, idempotency_key, route, fingerprint, attempt, locked_until, applied_at,
    resource_type, resource_id, response_status, response_content_type, response_location,
    response_body, response_withheld, created_at, expires_at, response_etag
FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_by_caller RENAME TO idempotency_keys;
-- the pruning job's scan
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
