-- Who created each automation (the author of the comments its runs post on the task; NULL for
-- automations created before it was recorded), the integration connection whose credential fields
-- `type secret` may read (checked by the application to be the organization's), and whether a
-- completed run posts its verdict to the task. An automation's own secrets live in vault_secrets
-- (owner kind `automation_secret`, owner id `{automation id}/{NAME}`).
ALTER TABLE browser_automations ADD COLUMN created_by TEXT;
ALTER TABLE browser_automations ADD COLUMN connection_id TEXT;
ALTER TABLE browser_automations ADD COLUMN post_result_to_task BOOLEAN NOT NULL DEFAULT TRUE;
