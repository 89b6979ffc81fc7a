DELETE FROM vault_secrets WHERE owner_kind = 'automation_secret';
ALTER TABLE browser_automations DROP COLUMN post_result_to_task;
ALTER TABLE browser_automations DROP COLUMN connection_id;
ALTER TABLE browser_automations DROP COLUMN created_by;
