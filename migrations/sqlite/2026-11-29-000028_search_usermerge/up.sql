-- Lets FTS5's `merge` command merge as few as two segments of a level (default 4), so that the
-- server's upkeep (`Store::merge_search_indexes`, crates/store/src/search/merge.rs) leaves each
-- search index about one segment per size class: a search seeks its words in every segment.
-- A setting of each index (kept in its `_config` table); it changes no indexed data.
INSERT INTO risks_search (risks_search, rank) VALUES ('usermerge', 2);
INSERT INTO vendors_search (vendors_search, rank) VALUES ('usermerge', 2);
INSERT INTO policies_search (policies_search, rank) VALUES ('usermerge', 2);
INSERT INTO context_entries_search (context_entries_search, rank) VALUES ('usermerge', 2);
INSERT INTO tasks_search (tasks_search, rank) VALUES ('usermerge', 2);
INSERT INTO comments_search (comments_search, rank) VALUES ('usermerge', 2);
INSERT INTO users_search (users_search, rank) VALUES ('usermerge', 2);
INSERT INTO automation_runs_search (automation_runs_search, rank) VALUES ('usermerge', 2);
INSERT INTO connections_search (connections_search, rank) VALUES ('usermerge', 2);
