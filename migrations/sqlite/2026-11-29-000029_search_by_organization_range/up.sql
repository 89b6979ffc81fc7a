-- Each organization's rows of a searched table get FTS5 rowids in a range of their own, so that a
-- search reads only that range of each word's list of rows (`rowid BETWEEN first AND last`, which
-- FTS5 seeks to) instead of intersecting the words with the organization as a term of every row:
-- that term's list held a row per row of the organization, and FTS5 stepped through it (the bench's
-- organization of 100,000 risks: 0.31 ms a search, 0.07 ms by range; see docs/performance.md).
--
-- An FTS row's key is the organization's bucket times 2^32 plus the table row's rowid. The bucket
-- is 30 bits of the organization id's last six characters (each character's code point & 31), so
-- it needs no lookup; two organizations sharing a bucket share a range, and the list's own
-- `organization_id = ?` keeps each one's rows. A table's rowids must stay below 2^32 (4 billion
-- rows ever inserted). crates/store/src/search/sqlite.rs (`organization_keys`) computes the same
-- range; the view `<table>_search_rows` gives each row's key to FTS5 ('rebuild', integrity checks).
--
-- The organization is no longer a column of these FTS tables. usermerge 2: see 000028.

DROP TRIGGER risks_search_insert;
DROP TRIGGER risks_search_delete;
DROP TRIGGER risks_search_update;
DROP TABLE risks_search;
CREATE VIEW risks_search_rows AS SELECT (((((unicode(substr(risks.organization_id, -1, 1)) & 31)) + ((unicode(substr(risks.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(risks.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(risks.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(risks.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(risks.organization_id, -6, 1)) & 31) << 25)) << 32) + risks.rowid) AS search_key, title, description FROM risks;
CREATE VIRTUAL TABLE risks_search USING fts5(
    title, description,
    content = 'risks_search_rows', content_rowid = 'search_key', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO risks_search (risks_search) VALUES ('rebuild');
INSERT INTO risks_search (risks_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER risks_search_insert AFTER INSERT ON risks BEGIN
    INSERT INTO risks_search (rowid, title, description) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.title, new.description);
END;
CREATE TRIGGER risks_search_delete AFTER DELETE ON risks BEGIN
    INSERT INTO risks_search (risks_search, rowid, title, description) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.title, old.description);
END;
CREATE TRIGGER risks_search_update AFTER UPDATE OF organization_id, title, description ON risks
    WHEN old.organization_id IS NOT new.organization_id OR old.title IS NOT new.title OR old.description IS NOT new.description
BEGIN
    INSERT INTO risks_search (risks_search, rowid, title, description) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.title, old.description);
    INSERT INTO risks_search (rowid, title, description) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.title, new.description);
END;

DROP TRIGGER vendors_search_insert;
DROP TRIGGER vendors_search_delete;
DROP TRIGGER vendors_search_update;
DROP TABLE vendors_search;
CREATE VIEW vendors_search_rows AS SELECT (((((unicode(substr(vendors.organization_id, -1, 1)) & 31)) + ((unicode(substr(vendors.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(vendors.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(vendors.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(vendors.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(vendors.organization_id, -6, 1)) & 31) << 25)) << 32) + vendors.rowid) AS search_key, name, description FROM vendors;
CREATE VIRTUAL TABLE vendors_search USING fts5(
    name, description,
    content = 'vendors_search_rows', content_rowid = 'search_key', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO vendors_search (vendors_search) VALUES ('rebuild');
INSERT INTO vendors_search (vendors_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER vendors_search_insert AFTER INSERT ON vendors BEGIN
    INSERT INTO vendors_search (rowid, name, description) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.name, new.description);
END;
CREATE TRIGGER vendors_search_delete AFTER DELETE ON vendors BEGIN
    INSERT INTO vendors_search (vendors_search, rowid, name, description) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.name, old.description);
END;
CREATE TRIGGER vendors_search_update AFTER UPDATE OF organization_id, name, description ON vendors
    WHEN old.organization_id IS NOT new.organization_id OR old.name IS NOT new.name OR old.description IS NOT new.description
BEGIN
    INSERT INTO vendors_search (vendors_search, rowid, name, description) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.name, old.description);
    INSERT INTO vendors_search (rowid, name, description) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.name, new.description);
END;

DROP TRIGGER policies_search_insert;
DROP TRIGGER policies_search_delete;
DROP TRIGGER policies_search_update;
DROP TABLE policies_search;
CREATE VIEW policies_search_rows AS SELECT (((((unicode(substr(policies.organization_id, -1, 1)) & 31)) + ((unicode(substr(policies.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(policies.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(policies.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(policies.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(policies.organization_id, -6, 1)) & 31) << 25)) << 32) + policies.rowid) AS search_key, name, description FROM policies;
CREATE VIRTUAL TABLE policies_search USING fts5(
    name, description,
    content = 'policies_search_rows', content_rowid = 'search_key', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO policies_search (policies_search) VALUES ('rebuild');
INSERT INTO policies_search (policies_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER policies_search_insert AFTER INSERT ON policies BEGIN
    INSERT INTO policies_search (rowid, name, description) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.name, new.description);
END;
CREATE TRIGGER policies_search_delete AFTER DELETE ON policies BEGIN
    INSERT INTO policies_search (policies_search, rowid, name, description) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.name, old.description);
END;
CREATE TRIGGER policies_search_update AFTER UPDATE OF organization_id, name, description ON policies
    WHEN old.organization_id IS NOT new.organization_id OR old.name IS NOT new.name OR old.description IS NOT new.description
BEGIN
    INSERT INTO policies_search (policies_search, rowid, name, description) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.name, old.description);
    INSERT INTO policies_search (rowid, name, description) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.name, new.description);
END;

DROP TRIGGER context_entries_search_insert;
DROP TRIGGER context_entries_search_delete;
DROP TRIGGER context_entries_search_update;
DROP TABLE context_entries_search;
CREATE VIEW context_entries_search_rows AS SELECT (((((unicode(substr(context_entries.organization_id, -1, 1)) & 31)) + ((unicode(substr(context_entries.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(context_entries.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(context_entries.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(context_entries.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(context_entries.organization_id, -6, 1)) & 31) << 25)) << 32) + context_entries.rowid) AS search_key, question, answer FROM context_entries;
CREATE VIRTUAL TABLE context_entries_search USING fts5(
    question, answer,
    content = 'context_entries_search_rows', content_rowid = 'search_key', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO context_entries_search (context_entries_search) VALUES ('rebuild');
INSERT INTO context_entries_search (context_entries_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER context_entries_search_insert AFTER INSERT ON context_entries BEGIN
    INSERT INTO context_entries_search (rowid, question, answer) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.question, new.answer);
END;
CREATE TRIGGER context_entries_search_delete AFTER DELETE ON context_entries BEGIN
    INSERT INTO context_entries_search (context_entries_search, rowid, question, answer) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.question, old.answer);
END;
CREATE TRIGGER context_entries_search_update AFTER UPDATE OF organization_id, question, answer ON context_entries
    WHEN old.organization_id IS NOT new.organization_id OR old.question IS NOT new.question OR old.answer IS NOT new.answer
BEGIN
    INSERT INTO context_entries_search (context_entries_search, rowid, question, answer) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.question, old.answer);
    INSERT INTO context_entries_search (rowid, question, answer) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.question, new.answer);
END;

DROP TRIGGER tasks_search_insert;
DROP TRIGGER tasks_search_delete;
DROP TRIGGER tasks_search_update;
DROP TABLE tasks_search;
CREATE VIEW tasks_search_rows AS SELECT (((((unicode(substr(tasks.organization_id, -1, 1)) & 31)) + ((unicode(substr(tasks.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(tasks.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(tasks.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(tasks.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(tasks.organization_id, -6, 1)) & 31) << 25)) << 32) + tasks.rowid) AS search_key, title, description FROM tasks;
CREATE VIRTUAL TABLE tasks_search USING fts5(
    title, description,
    content = 'tasks_search_rows', content_rowid = 'search_key', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO tasks_search (tasks_search) VALUES ('rebuild');
INSERT INTO tasks_search (tasks_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER tasks_search_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO tasks_search (rowid, title, description) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.title, new.description);
END;
CREATE TRIGGER tasks_search_delete AFTER DELETE ON tasks BEGIN
    INSERT INTO tasks_search (tasks_search, rowid, title, description) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.title, old.description);
END;
CREATE TRIGGER tasks_search_update AFTER UPDATE OF organization_id, title, description ON tasks
    WHEN old.organization_id IS NOT new.organization_id OR old.title IS NOT new.title OR old.description IS NOT new.description
BEGIN
    INSERT INTO tasks_search (tasks_search, rowid, title, description) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.title, old.description);
    INSERT INTO tasks_search (rowid, title, description) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.title, new.description);
END;

DROP TRIGGER comments_search_insert;
DROP TRIGGER comments_search_delete;
DROP TRIGGER comments_search_update;
DROP TABLE comments_search;
CREATE VIEW comments_search_rows AS SELECT (((((unicode(substr(comments.organization_id, -1, 1)) & 31)) + ((unicode(substr(comments.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(comments.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(comments.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(comments.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(comments.organization_id, -6, 1)) & 31) << 25)) << 32) + comments.rowid) AS search_key, content FROM comments;
CREATE VIRTUAL TABLE comments_search USING fts5(
    content,
    content = 'comments_search_rows', content_rowid = 'search_key', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO comments_search (comments_search) VALUES ('rebuild');
INSERT INTO comments_search (comments_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER comments_search_insert AFTER INSERT ON comments BEGIN
    INSERT INTO comments_search (rowid, content) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.content);
END;
CREATE TRIGGER comments_search_delete AFTER DELETE ON comments BEGIN
    INSERT INTO comments_search (comments_search, rowid, content) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.content);
END;
CREATE TRIGGER comments_search_update AFTER UPDATE OF organization_id, content ON comments
    WHEN old.organization_id IS NOT new.organization_id OR old.content IS NOT new.content
BEGIN
    INSERT INTO comments_search (comments_search, rowid, content) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.content);
    INSERT INTO comments_search (rowid, content) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.content);
END;

DROP TRIGGER automation_runs_search_insert;
DROP TRIGGER automation_runs_search_delete;
DROP TRIGGER automation_runs_search_update;
DROP TABLE automation_runs_search;
CREATE VIEW automation_runs_search_rows AS SELECT (((((unicode(substr(automation_runs.organization_id, -1, 1)) & 31)) + ((unicode(substr(automation_runs.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(automation_runs.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(automation_runs.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(automation_runs.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(automation_runs.organization_id, -6, 1)) & 31) << 25)) << 32) + automation_runs.rowid) AS search_key, verdict_reason, error FROM automation_runs;
CREATE VIRTUAL TABLE automation_runs_search USING fts5(
    verdict_reason, error,
    content = 'automation_runs_search_rows', content_rowid = 'search_key', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO automation_runs_search (automation_runs_search) VALUES ('rebuild');
INSERT INTO automation_runs_search (automation_runs_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER automation_runs_search_insert AFTER INSERT ON automation_runs BEGIN
    INSERT INTO automation_runs_search (rowid, verdict_reason, error) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.verdict_reason, new.error);
END;
CREATE TRIGGER automation_runs_search_delete AFTER DELETE ON automation_runs BEGIN
    INSERT INTO automation_runs_search (automation_runs_search, rowid, verdict_reason, error) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.verdict_reason, old.error);
END;
CREATE TRIGGER automation_runs_search_update AFTER UPDATE OF organization_id, verdict_reason, error ON automation_runs
    WHEN old.organization_id IS NOT new.organization_id OR old.verdict_reason IS NOT new.verdict_reason OR old.error IS NOT new.error
BEGIN
    INSERT INTO automation_runs_search (automation_runs_search, rowid, verdict_reason, error) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.verdict_reason, old.error);
    INSERT INTO automation_runs_search (rowid, verdict_reason, error) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.verdict_reason, new.error);
END;

DROP TRIGGER connections_search_insert;
DROP TRIGGER connections_search_delete;
DROP TRIGGER connections_search_update;
DROP TABLE connections_search;
CREATE VIEW connections_search_rows AS SELECT (((((unicode(substr(connections.organization_id, -1, 1)) & 31)) + ((unicode(substr(connections.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(connections.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(connections.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(connections.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(connections.organization_id, -6, 1)) & 31) << 25)) << 32) + connections.rowid) AS search_key, provider, last_error FROM connections;
CREATE VIRTUAL TABLE connections_search USING fts5(
    provider, last_error,
    content = 'connections_search_rows', content_rowid = 'search_key', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO connections_search (connections_search) VALUES ('rebuild');
INSERT INTO connections_search (connections_search, rank) VALUES ('usermerge', 2);
CREATE TRIGGER connections_search_insert AFTER INSERT ON connections BEGIN
    INSERT INTO connections_search (rowid, provider, last_error) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.provider, new.last_error);
END;
CREATE TRIGGER connections_search_delete AFTER DELETE ON connections BEGIN
    INSERT INTO connections_search (connections_search, rowid, provider, last_error) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.provider, old.last_error);
END;
CREATE TRIGGER connections_search_update AFTER UPDATE OF organization_id, provider, last_error ON connections
    WHEN old.organization_id IS NOT new.organization_id OR old.provider IS NOT new.provider OR old.last_error IS NOT new.last_error
BEGIN
    INSERT INTO connections_search (connections_search, rowid, provider, last_error) VALUES ('delete', (((((unicode(substr(old.organization_id, -1, 1)) & 31)) + ((unicode(substr(old.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(old.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(old.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(old.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(old.organization_id, -6, 1)) & 31) << 25)) << 32) + old.rowid), old.provider, old.last_error);
    INSERT INTO connections_search (rowid, provider, last_error) VALUES ((((((unicode(substr(new.organization_id, -1, 1)) & 31)) + ((unicode(substr(new.organization_id, -2, 1)) & 31) << 5) + ((unicode(substr(new.organization_id, -3, 1)) & 31) << 10) + ((unicode(substr(new.organization_id, -4, 1)) & 31) << 15) + ((unicode(substr(new.organization_id, -5, 1)) & 31) << 20) + ((unicode(substr(new.organization_id, -6, 1)) & 31) << 25)) << 32) + new.rowid), new.provider, new.last_error);
END;
