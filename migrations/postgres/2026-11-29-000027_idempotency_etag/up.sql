-- A replayed answer carries the first answer's ETag too (a create's or change's tag of the state it made).
ALTER TABLE idempotency_keys ADD COLUMN response_etag TEXT;
