-- FTS5's default.
INSERT INTO risks_search (risks_search, rank) VALUES ('usermerge', 4);
INSERT INTO vendors_search (vendors_search, rank) VALUES ('usermerge', 4);
INSERT INTO policies_search (policies_search, rank) VALUES ('usermerge', 4);
INSERT INTO context_entries_search (context_entries_search, rank) VALUES ('usermerge', 4);
INSERT INTO tasks_search (tasks_search, rank) VALUES ('usermerge', 4);
INSERT INTO comments_search (comments_search, rank) VALUES ('usermerge', 4);
INSERT INTO users_search (users_search, rank) VALUES ('usermerge', 4);
INSERT INTO automation_runs_search (automation_runs_search, rank) VALUES ('usermerge', 4);
INSERT INTO connections_search (connections_search, rank) VALUES ('usermerge', 4);
