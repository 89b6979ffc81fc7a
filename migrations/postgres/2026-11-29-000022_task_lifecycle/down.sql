DROP INDEX tasks_by_due;
DROP INDEX tasks_by_approver;
ALTER TABLE tasks
    DROP CONSTRAINT tasks_approver_fkey,
    DROP COLUMN rejection_reason,
    DROP COLUMN last_completed_at,
    DROP COLUMN due_at,
    DROP COLUMN frequency,
    DROP COLUMN approver_id;
-- The lifecycle's own statuses have no meaning without it.
UPDATE tasks SET status = 'in_progress' WHERE status IN ('in_review', 'failed');
