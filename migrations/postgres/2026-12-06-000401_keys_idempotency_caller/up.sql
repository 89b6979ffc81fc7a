-- An Idempotency-Key is the caller's own (the user and the credential, e.g. 'usr_…/apk_…' or
-- 'usr_…/session'): one member can no longer reserve, and so block for a day, a key another
-- member sends. Reservations made before this keep '' and are matched by no caller: they expire
-- within IDEMPOTENCY_TTL_HOURS.
ALTER TABLE idempotency_keys ADD COLUMN caller TEXT NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_scope;
ALTER TABLE idempotency_keys
    ADD CONSTRAINT idempotency_keys_scope UNIQUE (organization_id, caller, idempotency_key, route);
