-- The FTS tables of 2026-11-26-000016_search, with the organization as a column, and 000028's usermerge.

DROP TRIGGER risks_search_insert;
DROP TRIGGER risks_search_delete;
DROP TRIGGER risks_search_update;
DROP TABLE risks_search;
DROP VIEW risks_search_rows;
CREATE VIRTUAL TABLE risks_search USING fts5(
    organization_id, title, description,
    content = 'risks', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO risks_search (risks_search) VALUES ('rebuild');
INSERT INTO risks_search (risks_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER risks_search_insert AFTER INSERT ON risks BEGIN
    INSERT INTO risks_search (rowid, organization_id, title, description) VALUES (new.rowid, new.organization_id, new.title, new.description);
END;
CREATE TRIGGER risks_search_delete AFTER DELETE ON risks BEGIN
    INSERT INTO risks_search (risks_search, rowid, organization_id, title, description) VALUES ('delete', old.rowid, old.organization_id, old.title, old.description);
END;
CREATE TRIGGER risks_search_update AFTER UPDATE OF organization_id, title, description ON risks
    WHEN old.organization_id IS NOT new.organization_id OR old.title IS NOT new.title OR old.description IS NOT new.description
BEGIN
    INSERT INTO risks_search (risks_search, rowid, organization_id, title, description) VALUES ('delete', old.rowid, old.organization_id, old.title, old.description);
    INSERT INTO risks_search (rowid, organization_id, title, description) VALUES (new.rowid, new.organization_id, new.title, new.description);
END;

DROP TRIGGER vendors_search_insert;
DROP TRIGGER vendors_search_delete;
DROP TRIGGER vendors_search_update;
DROP TABLE vendors_search;
DROP VIEW vendors_search_rows;
CREATE VIRTUAL TABLE vendors_search USING fts5(
    organization_id, name, description,
    content = 'vendors', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO vendors_search (vendors_search) VALUES ('rebuild');
INSERT INTO vendors_search (vendors_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER vendors_search_insert AFTER INSERT ON vendors BEGIN
    INSERT INTO vendors_search (rowid, organization_id, name, description) VALUES (new.rowid, new.organization_id, new.name, new.description);
END;
CREATE TRIGGER vendors_search_delete AFTER DELETE ON vendors BEGIN
    INSERT INTO vendors_search (vendors_search, rowid, organization_id, name, description) VALUES ('delete', old.rowid, old.organization_id, old.name, old.description);
END;
CREATE TRIGGER vendors_search_update AFTER UPDATE OF organization_id, name, description ON vendors
    WHEN old.organization_id IS NOT new.organization_id OR old.name IS NOT new.name OR old.description IS NOT new.description
BEGIN
    INSERT INTO vendors_search (vendors_search, rowid, organization_id, name, description) VALUES ('delete', old.rowid, old.organization_id, old.name, old.description);
    INSERT INTO vendors_search (rowid, organization_id, name, description) VALUES (new.rowid, new.organization_id, new.name, new.description);
END;

DROP TRIGGER policies_search_insert;
DROP TRIGGER policies_search_delete;
DROP TRIGGER policies_search_update;
DROP TABLE policies_search;
DROP VIEW policies_search_rows;
CREATE VIRTUAL TABLE policies_search USING fts5(
    organization_id, name, description,
    content = 'policies', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO policies_search (policies_search) VALUES ('rebuild');
INSERT INTO policies_search (policies_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER policies_search_insert AFTER INSERT ON policies BEGIN
    INSERT INTO policies_search (rowid, organization_id, name, description) VALUES (new.rowid, new.organization_id, new.name, new.description);
END;
CREATE TRIGGER policies_search_delete AFTER DELETE ON policies BEGIN
    INSERT INTO policies_search (policies_search, rowid, organization_id, name, description) VALUES ('delete', old.rowid, old.organization_id, old.name, old.description);
END;
CREATE TRIGGER policies_search_update AFTER UPDATE OF organization_id, name, description ON policies
    WHEN old.organization_id IS NOT new.organization_id OR old.name IS NOT new.name OR old.description IS NOT new.description
BEGIN
    INSERT INTO policies_search (policies_search, rowid, organization_id, name, description) VALUES ('delete', old.rowid, old.organization_id, old.name, old.description);
    INSERT INTO policies_search (rowid, organization_id, name, description) VALUES (new.rowid, new.organization_id, new.name, new.description);
END;

DROP TRIGGER context_entries_search_insert;
DROP TRIGGER context_entries_search_delete;
DROP TRIGGER context_entries_search_update;
DROP TABLE context_entries_search;
DROP VIEW context_entries_search_rows;
CREATE VIRTUAL TABLE context_entries_search USING fts5(
    organization_id, question, answer,
    content = 'context_entries', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO context_entries_search (context_entries_search) VALUES ('rebuild');
INSERT INTO context_entries_search (context_entries_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER context_entries_search_insert AFTER INSERT ON context_entries BEGIN
    INSERT INTO context_entries_search (rowid, organization_id, question, answer) VALUES (new.rowid, new.organization_id, new.question, new.answer);
END;
CREATE TRIGGER context_entries_search_delete AFTER DELETE ON context_entries BEGIN
    INSERT INTO context_entries_search (context_entries_search, rowid, organization_id, question, answer) VALUES ('delete', old.rowid, old.organization_id, old.question, old.answer);
END;
CREATE TRIGGER context_entries_search_update AFTER UPDATE OF organization_id, question, answer ON context_entries
    WHEN old.organization_id IS NOT new.organization_id OR old.question IS NOT new.question OR old.answer IS NOT new.answer
BEGIN
    INSERT INTO context_entries_search (context_entries_search, rowid, organization_id, question, answer) VALUES ('delete', old.rowid, old.organization_id, old.question, old.answer);
    INSERT INTO context_entries_search (rowid, organization_id, question, answer) VALUES (new.rowid, new.organization_id, new.question, new.answer);
END;

DROP TRIGGER tasks_search_insert;
DROP TRIGGER tasks_search_delete;
DROP TRIGGER tasks_search_update;
DROP TABLE tasks_search;
DROP VIEW tasks_search_rows;
CREATE VIRTUAL TABLE tasks_search USING fts5(
    organization_id, title, description,
    content = 'tasks', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO tasks_search (tasks_search) VALUES ('rebuild');
INSERT INTO tasks_search (tasks_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER tasks_search_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO tasks_search (rowid, organization_id, title, description) VALUES (new.rowid, new.organization_id, new.title, new.description);
END;
CREATE TRIGGER tasks_search_delete AFTER DELETE ON tasks BEGIN
    INSERT INTO tasks_search (tasks_search, rowid, organization_id, title, description) VALUES ('delete', old.rowid, old.organization_id, old.title, old.description);
END;
CREATE TRIGGER tasks_search_update AFTER UPDATE OF organization_id, title, description ON tasks
    WHEN old.organization_id IS NOT new.organization_id OR old.title IS NOT new.title OR old.description IS NOT new.description
BEGIN
    INSERT INTO tasks_search (tasks_search, rowid, organization_id, title, description) VALUES ('delete', old.rowid, old.organization_id, old.title, old.description);
    INSERT INTO tasks_search (rowid, organization_id, title, description) VALUES (new.rowid, new.organization_id, new.title, new.description);
END;

DROP TRIGGER comments_search_insert;
DROP TRIGGER comments_search_delete;
DROP TRIGGER comments_search_update;
DROP TABLE comments_search;
DROP VIEW comments_search_rows;
CREATE VIRTUAL TABLE comments_search USING fts5(
    organization_id, content,
    content = 'comments', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO comments_search (comments_search) VALUES ('rebuild');
INSERT INTO comments_search (comments_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER comments_search_insert AFTER INSERT ON comments BEGIN
    INSERT INTO comments_search (rowid, organization_id, content) VALUES (new.rowid, new.organization_id, new.content);
END;
CREATE TRIGGER comments_search_delete AFTER DELETE ON comments BEGIN
    INSERT INTO comments_search (comments_search, rowid, organization_id, content) VALUES ('delete', old.rowid, old.organization_id, old.content);
END;
CREATE TRIGGER comments_search_update AFTER UPDATE OF organization_id, content ON comments
    WHEN old.organization_id IS NOT new.organization_id OR old.content IS NOT new.content
BEGIN
    INSERT INTO comments_search (comments_search, rowid, organization_id, content) VALUES ('delete', old.rowid, old.organization_id, old.content);
    INSERT INTO comments_search (rowid, organization_id, content) VALUES (new.rowid, new.organization_id, new.content);
END;

DROP TRIGGER automation_runs_search_insert;
DROP TRIGGER automation_runs_search_delete;
DROP TRIGGER automation_runs_search_update;
DROP TABLE automation_runs_search;
DROP VIEW automation_runs_search_rows;
CREATE VIRTUAL TABLE automation_runs_search USING fts5(
    organization_id, verdict_reason, error,
    content = 'automation_runs', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO automation_runs_search (automation_runs_search) VALUES ('rebuild');
INSERT INTO automation_runs_search (automation_runs_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER automation_runs_search_insert AFTER INSERT ON automation_runs BEGIN
    INSERT INTO automation_runs_search (rowid, organization_id, verdict_reason, error) VALUES (new.rowid, new.organization_id, new.verdict_reason, new.error);
END;
CREATE TRIGGER automation_runs_search_delete AFTER DELETE ON automation_runs BEGIN
    INSERT INTO automation_runs_search (automation_runs_search, rowid, organization_id, verdict_reason, error) VALUES ('delete', old.rowid, old.organization_id, old.verdict_reason, old.error);
END;
CREATE TRIGGER automation_runs_search_update AFTER UPDATE OF organization_id, verdict_reason, error ON automation_runs
    WHEN old.organization_id IS NOT new.organization_id OR old.verdict_reason IS NOT new.verdict_reason OR old.error IS NOT new.error
BEGIN
    INSERT INTO automation_runs_search (automation_runs_search, rowid, organization_id, verdict_reason, error) VALUES ('delete', old.rowid, old.organization_id, old.verdict_reason, old.error);
    INSERT INTO automation_runs_search (rowid, organization_id, verdict_reason, error) VALUES (new.rowid, new.organization_id, new.verdict_reason, new.error);
END;

DROP TRIGGER connections_search_insert;
DROP TRIGGER connections_search_delete;
DROP TRIGGER connections_search_update;
DROP TABLE connections_search;
DROP VIEW connections_search_rows;
CREATE VIRTUAL TABLE connections_search USING fts5(
    organization_id, provider, last_error,
    content = 'connections', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO connections_search (connections_search) VALUES ('rebuild');
INSERT INTO connections_search (connections_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER connections_search_insert AFTER INSERT ON connections BEGIN
    INSERT INTO connections_search (rowid, organization_id, provider, last_error) VALUES (new.rowid, new.organization_id, new.provider, new.last_error);
END;
CREATE TRIGGER connections_search_delete AFTER DELETE ON connections BEGIN
    INSERT INTO connections_search (connections_search, rowid, organization_id, provider, last_error) VALUES ('delete', old.rowid, old.organization_id, old.provider, old.last_error);
END;
CREATE TRIGGER connections_search_update AFTER UPDATE OF organization_id, provider, last_error ON connections
    WHEN old.organization_id IS NOT new.organization_id OR old.provider IS NOT new.provider OR old.last_error IS NOT new.last_error
BEGIN
    INSERT INTO connections_search (connections_search, rowid, organization_id, provider, last_error) VALUES ('delete', old.rowid, old.organization_id, old.provider, old.last_error);
    INSERT INTO connections_search (rowid, organization_id, provider, last_error) VALUES (new.rowid, new.organization_id, new.provider, new.last_error);
END;
