-- What a run found (issue 22): its verdict, and the steps it carried out.
-- The verdict of a completed run: 'passed' or 'failed', and why; NULL for pending, running and
-- failed runs.
ALTER TABLE automation_runs ADD COLUMN verdict_outcome TEXT CHECK (verdict_outcome IN ('passed', 'failed'));
ALTER TABLE automation_runs ADD COLUMN verdict_reason TEXT;
-- The steps as a JSON array of {index, action, target, outcome, detail, durationMs, screenshotKey},
-- at most 120 (MAX_RUN_STEPS): always read and written with the run as a whole, never queried
-- into, so one column rather than a child table.
ALTER TABLE automation_runs ADD COLUMN steps TEXT NOT NULL DEFAULT '[]';
-- The retention sweep removes finished runs by age; automation_runs_by_status (status, created_at)
-- serves it.
