DROP TRIGGER connections_search_update;
DROP TRIGGER connections_search_delete;
DROP TRIGGER connections_search_insert;
DROP TABLE connections_search;

DROP TRIGGER automation_runs_search_update;
DROP TRIGGER automation_runs_search_delete;
DROP TRIGGER automation_runs_search_insert;
DROP TABLE automation_runs_search;

DROP TRIGGER users_search_update;
DROP TRIGGER users_search_delete;
DROP TRIGGER users_search_insert;
DROP TABLE users_search;

DROP TRIGGER comments_search_update;
DROP TRIGGER comments_search_delete;
DROP TRIGGER comments_search_insert;
DROP TABLE comments_search;

DROP TRIGGER tasks_search_update;
DROP TRIGGER tasks_search_delete;
DROP TRIGGER tasks_search_insert;
DROP TABLE tasks_search;

DROP TRIGGER context_entries_search_update;
DROP TRIGGER context_entries_search_delete;
DROP TRIGGER context_entries_search_insert;
DROP TABLE context_entries_search;

DROP TRIGGER policies_search_update;
DROP TRIGGER policies_search_delete;
DROP TRIGGER policies_search_insert;
DROP TABLE policies_search;

DROP TRIGGER vendors_search_update;
DROP TRIGGER vendors_search_delete;
DROP TRIGGER vendors_search_insert;
DROP TABLE vendors_search;

DROP TRIGGER risks_search_update;
DROP TRIGGER risks_search_delete;
DROP TRIGGER risks_search_insert;
DROP TABLE risks_search;
