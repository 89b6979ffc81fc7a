ALTER TABLE automation_runs DROP COLUMN steps;
ALTER TABLE automation_runs DROP COLUMN verdict_reason;
ALTER TABLE automation_runs DROP COLUMN verdict_outcome;
