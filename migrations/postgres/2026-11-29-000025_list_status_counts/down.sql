DROP TRIGGER risks_status_counts_inserted ON risks;
DROP TRIGGER risks_status_counts_updated ON risks;
DROP TRIGGER risks_status_counts_deleted ON risks;
DROP TRIGGER tasks_status_counts_inserted ON tasks;
DROP TRIGGER tasks_status_counts_updated ON tasks;
DROP TRIGGER tasks_status_counts_deleted ON tasks;
DROP FUNCTION list_status_counts_changed();
DROP TABLE list_status_counts;
