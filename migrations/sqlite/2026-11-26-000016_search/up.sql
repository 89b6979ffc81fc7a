-- Full-text search of the lists' text fields (`q=`, see docs/api.md): an FTS5 table per searched
-- table, with external content (the text stays in the table only; the FTS table holds the index),
-- kept in step by triggers. unicode61 folds case and, with remove_diacritics 2, accents.
--
-- The organization is an indexed column of every FTS table but users' (a user belongs to several
-- organizations; the people list scopes by membership), so that a search reads the organization's
-- matches only, never every organization's.
--
-- An external-content table refers to its rows by rowid. VACUUM keeps the rowids of these tables
-- (each has an index, its text primary key), but a migration that rebuilds one of them by copying
-- its rows must rebuild its FTS table too: INSERT INTO <name>_search(<name>_search) VALUES ('rebuild').
-- The FTS tables are not in schema.rs: the store names them in SQL only.

CREATE VIRTUAL TABLE risks_search USING fts5(
    organization_id, title, description,
    content = 'risks', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO risks_search (risks_search) VALUES ('rebuild');
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

CREATE VIRTUAL TABLE vendors_search USING fts5(
    organization_id, name, description,
    content = 'vendors', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO vendors_search (vendors_search) VALUES ('rebuild');
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

CREATE VIRTUAL TABLE policies_search USING fts5(
    organization_id, name, description,
    content = 'policies', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO policies_search (policies_search) VALUES ('rebuild');
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

CREATE VIRTUAL TABLE context_entries_search USING fts5(
    organization_id, question, answer,
    content = 'context_entries', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO context_entries_search (context_entries_search) VALUES ('rebuild');
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

CREATE VIRTUAL TABLE tasks_search USING fts5(
    organization_id, title, description,
    content = 'tasks', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO tasks_search (tasks_search) VALUES ('rebuild');
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

CREATE VIRTUAL TABLE comments_search USING fts5(
    organization_id, content,
    content = 'comments', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO comments_search (comments_search) VALUES ('rebuild');
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

CREATE VIRTUAL TABLE users_search USING fts5(
    name, email,
    content = 'users', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO users_search (users_search) VALUES ('rebuild');
CREATE TRIGGER users_search_insert AFTER INSERT ON users BEGIN
    INSERT INTO users_search (rowid, name, email) VALUES (new.rowid, new.name, new.email);
END;
CREATE TRIGGER users_search_delete AFTER DELETE ON users BEGIN
    INSERT INTO users_search (users_search, rowid, name, email) VALUES ('delete', old.rowid, old.name, old.email);
END;
CREATE TRIGGER users_search_update AFTER UPDATE OF name, email ON users
    WHEN old.name IS NOT new.name OR old.email IS NOT new.email
BEGIN
    INSERT INTO users_search (users_search, rowid, name, email) VALUES ('delete', old.rowid, old.name, old.email);
    INSERT INTO users_search (rowid, name, email) VALUES (new.rowid, new.name, new.email);
END;

CREATE VIRTUAL TABLE automation_runs_search USING fts5(
    organization_id, verdict_reason, error,
    content = 'automation_runs', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO automation_runs_search (automation_runs_search) VALUES ('rebuild');
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

CREATE VIRTUAL TABLE connections_search USING fts5(
    organization_id, provider, last_error,
    content = 'connections', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO connections_search (connections_search) VALUES ('rebuild');
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
