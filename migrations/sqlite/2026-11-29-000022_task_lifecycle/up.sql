-- Tasks with a review lifecycle (docs/api.md, "Tasks"): an approver, a recurrence, a due date,
-- when the task was last completed and why it was last rejected. Every new column is nullable,
-- so existing rows keep working as they were; the status values are unchanged (`in_review` and
-- `failed` are new values of the same text column).
--
-- Unlike PostgreSQL's, `approver_id` has no foreign key: SQLite's ALTER TABLE cannot add the
-- (organization_id, approver_id) table constraint, and a column constraint would keep the down
-- migration from dropping the column. The use case checks that it names an active member of the
-- organization, and members are deactivated, never deleted.
ALTER TABLE tasks ADD COLUMN approver_id TEXT;
ALTER TABLE tasks ADD COLUMN frequency TEXT;
ALTER TABLE tasks ADD COLUMN due_at TIMESTAMP;
ALTER TABLE tasks ADD COLUMN last_completed_at TIMESTAMP;
ALTER TABLE tasks ADD COLUMN rejection_reason TEXT;

-- `approverId=` and `dueBefore`/`dueAfter` (and `sort=dueAt` within a due range).
CREATE INDEX tasks_by_approver ON tasks (organization_id, approver_id, created_at, id);
CREATE INDEX tasks_by_due ON tasks (organization_id, due_at, id);
