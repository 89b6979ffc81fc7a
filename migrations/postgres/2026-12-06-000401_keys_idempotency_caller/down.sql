-- Keys of several callers may share an organization's key and route now: keep one of each.
DELETE FROM idempotency_keys a USING idempotency_keys b
    WHERE a.organization_id = b.organization_id AND a.idempotency_key = b.idempotency_key
      AND a.route = b.route AND a.id > b.id;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_scope;
ALTER TABLE idempotency_keys DROP COLUMN caller;
ALTER TABLE idempotency_keys
    ADD CONSTRAINT idempotency_keys_scope UNIQUE (organization_id, idempotency_key, route);
