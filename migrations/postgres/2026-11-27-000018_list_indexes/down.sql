DROP INDEX vendors_by_name;
DROP INDEX tasks_by_title;
DROP INDEX risks_by_title;
DROP INDEX vendors_by_status;
DROP INDEX tasks_by_status_assignee;
DROP INDEX risks_by_status_assignee;
