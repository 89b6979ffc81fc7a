-- Origins besides the target's that a run's page may go to: a JSON array of origins.
ALTER TABLE browser_automations ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT '[]';
