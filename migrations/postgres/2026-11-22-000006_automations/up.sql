-- Browser automations of a task, and their runs.
-- tasks has no (organization_id, id) key, so an automation's task is checked by id alone; the store
-- filters every query on the organization. Runs do carry a composite key to their automation.
CREATE TABLE browser_automations (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT,
    target_url TEXT NOT NULL,
    instruction TEXT NOT NULL,
    -- a cron expression, as the user wrote it
    schedule TEXT,
    is_enabled BOOLEAN NOT NULL,
    -- when the schedule next fires; NULL without a schedule or while disabled
    next_run_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    CONSTRAINT browser_automations_tenant_key UNIQUE (organization_id, id)
);
-- a task's automations, oldest first
CREATE INDEX browser_automations_by_task ON browser_automations (organization_id, task_id, created_at, id);
-- the scheduler's "what is due", across organizations
CREATE INDEX browser_automations_due ON browser_automations (next_run_at)
    WHERE is_enabled AND next_run_at IS NOT NULL;

CREATE TABLE automation_runs (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    automation_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    trigger_kind TEXT NOT NULL CHECK (trigger_kind IN ('manual', 'schedule')),
    created_at TIMESTAMP NOT NULL,
    started_at TIMESTAMP,
    completed_at TIMESTAMP,
    duration_ms BIGINT,
    -- where the screenshot is in the blob store
    screenshot_key TEXT,
    -- why the run failed, fit to show the user
    error TEXT,
    FOREIGN KEY (organization_id, automation_id)
        REFERENCES browser_automations (organization_id, id) ON DELETE CASCADE
);
-- One run at a time per automation, enforced by the database so that a manual run and a scheduled
-- one (or two instances' schedulers) cannot both start.
CREATE UNIQUE INDEX automation_runs_one_active ON automation_runs (automation_id)
    WHERE status IN ('pending', 'running');
-- an automation's runs, newest first
CREATE INDEX automation_runs_newest_first ON automation_runs (automation_id, created_at DESC, id);
-- workers claiming the oldest pending run, and the sweep of stale running ones
CREATE INDEX automation_runs_by_status ON automation_runs (status, created_at);
