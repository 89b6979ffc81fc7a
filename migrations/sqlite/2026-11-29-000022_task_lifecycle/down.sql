DROP INDEX tasks_by_due;
DROP INDEX tasks_by_approver;
ALTER TABLE tasks DROP COLUMN rejection_reason;
ALTER TABLE tasks DROP COLUMN last_completed_at;
ALTER TABLE tasks DROP COLUMN due_at;
ALTER TABLE tasks DROP COLUMN frequency;
ALTER TABLE tasks DROP COLUMN approver_id;
-- The lifecycle's own statuses have no meaning without it.
UPDATE tasks SET status = 'in_progress' WHERE status IN ('in_review', 'failed');
