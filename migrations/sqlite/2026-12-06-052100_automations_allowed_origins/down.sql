ALTER TABLE browser_automations DROP COLUMN allowed_origins;
