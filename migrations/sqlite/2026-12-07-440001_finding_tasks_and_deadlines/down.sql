ALTER TABLE check_runs DROP COLUMN source;
DROP TABLE finding_deadlines;
DROP TRIGGER tasks_deleted_unlink_finding;
DROP INDEX findings_by_task;
ALTER TABLE tasks DROP COLUMN finding_id;
