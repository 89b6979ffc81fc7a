-- Tasks with a review lifecycle (docs/api.md, "Tasks"): an approver, a recurrence, a due date,
-- when the task was last completed and why it was last rejected. Every new column is nullable,
-- so existing rows keep working as they were; the status values are unchanged (`in_review` and
-- `failed` are new values of the same text column).
ALTER TABLE tasks
    ADD COLUMN approver_id TEXT,
    ADD COLUMN frequency TEXT,
    ADD COLUMN due_at TIMESTAMP,
    ADD COLUMN last_completed_at TIMESTAMP,
    ADD COLUMN rejection_reason TEXT,
    ADD CONSTRAINT tasks_approver_fkey FOREIGN KEY (organization_id, approver_id) REFERENCES members (organization_id, id);

-- `approverId=` and `dueBefore`/`dueAfter` (and `sort=dueAt` within a due range).
CREATE INDEX tasks_by_approver ON tasks (organization_id, approver_id, created_at, id);
CREATE INDEX tasks_by_due ON tasks (organization_id, due_at, id);
