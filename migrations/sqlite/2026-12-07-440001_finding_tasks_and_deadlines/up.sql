-- The finding a task was made to fix (POST /v1/findings/{id}/task): the task's side of the link
-- whose other side is findings.task_id.
ALTER TABLE tasks ADD COLUMN finding_id TEXT;
-- A deleted task is unlinked from its finding in the delete's transaction, whichever way it is
-- deleted (one, in bulk, by sqlite3). The finding's updated_at moves so that a write over the
-- finding as it was read before is refused; it is written as the store writes times (no trailing
-- zeros in the fraction, none at all for a whole second), which its reads compare as text.
CREATE INDEX findings_by_task ON findings (organization_id, task_id) WHERE task_id IS NOT NULL;
CREATE TRIGGER tasks_deleted_unlink_finding AFTER DELETE ON tasks WHEN OLD.finding_id IS NOT NULL BEGIN
    UPDATE findings
        SET task_id = NULL, updated_at = rtrim(rtrim(strftime('%Y-%m-%d %H:%M:%f', 'now'), '0'), '.')
        WHERE organization_id = OLD.organization_id AND task_id = OLD.id;
END;

-- How long an organization's findings of each severity may stay open; no row: the defaults
-- (7, 30, 90 and 180 days).
CREATE TABLE finding_deadlines (
    organization_id TEXT PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
    critical_days INTEGER NOT NULL CHECK (critical_days BETWEEN 1 AND 365),
    high_days INTEGER NOT NULL CHECK (high_days BETWEEN 1 AND 365),
    medium_days INTEGER NOT NULL CHECK (medium_days BETWEEN 1 AND 365),
    low_days INTEGER NOT NULL CHECK (low_days BETWEEN 1 AND 365),
    updated_at TIMESTAMP NOT NULL
);

-- Where a run's results came from: the service's own checks, or a Prowler findings file imported
-- for the connection (POST /v1/integrations/connections/{id}/check-results).
ALTER TABLE check_runs ADD COLUMN source TEXT NOT NULL DEFAULT 'checks' CHECK (source IN ('checks', 'prowler'));
