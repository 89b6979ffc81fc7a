-- How many rows each organization's lists hold, so that a list asked for without any filter
-- answers its `count` from here instead of counting its rows (`count(*)` of 100,000 risks of one
-- organization took 10-20 ms alone, 90 ms under load; the page itself 1 ms). Sharded like
-- `list_generations` (the writing backend's pid modulo 16), so that concurrent writers to one
-- organization's list rarely wait on the same row; the count is the sum of the shards. A shard
-- may go below zero (rows inserted through one backend, deleted through another); the sum cannot.
-- TRUNCATE fires no trigger: truncating a list's table leaves its counts wrong (never done).
CREATE TABLE list_row_counts (
    organization_id TEXT NOT NULL,
    list TEXT NOT NULL,
    shard INTEGER NOT NULL,
    row_count BIGINT NOT NULL,
    PRIMARY KEY (organization_id, list, shard)
);

INSERT INTO list_row_counts SELECT organization_id, 'context', 0, count(*) FROM context_entries GROUP BY organization_id;
INSERT INTO list_row_counts SELECT organization_id, 'policies', 0, count(*) FROM policies GROUP BY organization_id;
INSERT INTO list_row_counts SELECT organization_id, 'vendors', 0, count(*) FROM vendors GROUP BY organization_id;
INSERT INTO list_row_counts SELECT organization_id, 'risks', 0, count(*) FROM risks GROUP BY organization_id;
INSERT INTO list_row_counts SELECT organization_id, 'tasks', 0, count(*) FROM tasks GROUP BY organization_id;
INSERT INTO list_row_counts SELECT organization_id, 'people', 0, count(*) FROM members GROUP BY organization_id;

-- The lists' triggers become statement-level, with the statement's rows as transition tables:
-- one bump of the generation and one change of the count per organization and statement. Row
-- triggers bumped the same `list_generations` row once per row, and inside one transaction each
-- bump leaves a dead version the next must step over: growing the bench's database by a million
-- risks in one INSERT did not finish in 26 minutes (3.5 minutes without the triggers). Rows are
-- written in the organizations' order, so that two statements spanning organizations lock their
-- rows in one order. (A trigger with transition tables has one event, hence three functions.)
CREATE FUNCTION list_rows_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_generations
        SELECT organization_id, TG_ARGV[0], pg_backend_pid() % 16, 1
        FROM new_rows GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = list_generations.generation + 1;
    INSERT INTO list_row_counts
        SELECT organization_id, TG_ARGV[0], pg_backend_pid() % 16, count(*)
        FROM new_rows GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = list_row_counts.row_count + EXCLUDED.row_count;
    RETURN NULL;
END
$$;

-- An update changes the lists of the organizations its rows were and are in; only a row moved to
-- another organization changes counts.
CREATE FUNCTION list_rows_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_generations
        SELECT organization_id, TG_ARGV[0], pg_backend_pid() % 16, 1
        FROM (SELECT organization_id FROM new_rows UNION SELECT organization_id FROM old_rows) changed
        ORDER BY organization_id
    ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = list_generations.generation + 1;
    INSERT INTO list_row_counts
        SELECT organization_id, TG_ARGV[0], pg_backend_pid() % 16, sum(delta)
        FROM (SELECT organization_id, 1 AS delta FROM new_rows
              UNION ALL SELECT organization_id, -1 FROM old_rows) moved
        GROUP BY organization_id HAVING sum(delta) <> 0 ORDER BY organization_id
    ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = list_row_counts.row_count + EXCLUDED.row_count;
    RETURN NULL;
END
$$;

CREATE FUNCTION list_rows_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO list_generations
        SELECT organization_id, TG_ARGV[0], pg_backend_pid() % 16, 1
        FROM old_rows GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = list_generations.generation + 1;
    INSERT INTO list_row_counts
        SELECT organization_id, TG_ARGV[0], pg_backend_pid() % 16, -count(*)
        FROM old_rows GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = list_row_counts.row_count + EXCLUDED.row_count;
    RETURN NULL;
END
$$;

DROP TRIGGER context_entries_list_generation ON context_entries;
CREATE TRIGGER context_entries_rows_inserted AFTER INSERT ON context_entries REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_inserted('context');
CREATE TRIGGER context_entries_rows_updated AFTER UPDATE ON context_entries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_updated('context');
CREATE TRIGGER context_entries_rows_deleted AFTER DELETE ON context_entries REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_deleted('context');

DROP TRIGGER policies_list_generation ON policies;
CREATE TRIGGER policies_rows_inserted AFTER INSERT ON policies REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_inserted('policies');
CREATE TRIGGER policies_rows_updated AFTER UPDATE ON policies REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_updated('policies');
CREATE TRIGGER policies_rows_deleted AFTER DELETE ON policies REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_deleted('policies');

DROP TRIGGER vendors_list_generation ON vendors;
CREATE TRIGGER vendors_rows_inserted AFTER INSERT ON vendors REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_inserted('vendors');
CREATE TRIGGER vendors_rows_updated AFTER UPDATE ON vendors REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_updated('vendors');
CREATE TRIGGER vendors_rows_deleted AFTER DELETE ON vendors REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_deleted('vendors');

DROP TRIGGER risks_list_generation ON risks;
CREATE TRIGGER risks_rows_inserted AFTER INSERT ON risks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_inserted('risks');
CREATE TRIGGER risks_rows_updated AFTER UPDATE ON risks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_updated('risks');
CREATE TRIGGER risks_rows_deleted AFTER DELETE ON risks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_deleted('risks');

DROP TRIGGER tasks_list_generation ON tasks;
CREATE TRIGGER tasks_rows_inserted AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_inserted('tasks');
CREATE TRIGGER tasks_rows_updated AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_updated('tasks');
CREATE TRIGGER tasks_rows_deleted AFTER DELETE ON tasks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_deleted('tasks');

DROP TRIGGER members_list_generation ON members;
CREATE TRIGGER members_rows_inserted AFTER INSERT ON members REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_inserted('people');
CREATE TRIGGER members_rows_updated AFTER UPDATE ON members REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_updated('people');
CREATE TRIGGER members_rows_deleted AFTER DELETE ON members REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_rows_deleted('people');

DROP FUNCTION bump_list_generation();
