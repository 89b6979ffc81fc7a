ALTER TABLE check_runs DROP COLUMN source;
DROP TABLE finding_deadlines;
DROP TRIGGER tasks_deleted_unlink_finding ON tasks;
DROP FUNCTION unlink_deleted_task();
DROP INDEX findings_by_task;
ALTER TABLE tasks DROP COLUMN finding_id;
