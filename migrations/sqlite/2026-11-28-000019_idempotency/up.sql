-- Idempotency-Key reservations and the outcomes they replay (docs/api.md, "Idempotency keys").
CREATE TABLE idempotency_keys (
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
    CONSTRAINT idempotency_keys_scope UNIQUE (organization_id, idempotency_key, route)
);
-- the pruning job's scan
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
