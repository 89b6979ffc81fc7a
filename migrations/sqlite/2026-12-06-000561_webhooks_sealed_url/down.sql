ALTER TABLE webhooks DROP COLUMN sealed_url;
