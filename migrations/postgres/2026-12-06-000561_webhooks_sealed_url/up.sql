-- A webhook's full URL is a credential (Slack and Teams put their key in the path): it is kept
-- sealed by the vault (bound to the organization and the webhook), and `url` holds only what is
-- shown, its origin and "/…". Rows made before keep their clear URL in `url` and no sealed_url
-- until their URL is next changed.
ALTER TABLE webhooks ADD COLUMN sealed_url BYTEA;
