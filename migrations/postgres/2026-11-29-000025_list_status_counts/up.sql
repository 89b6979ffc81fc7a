-- How many rows of each organization's risks and tasks have each status and assignee, so that
-- the lists people filter most ("open ones assigned to me": `status=` and `assigneeId=` and
-- nothing else) answer `count` by adding a few kept numbers instead of counting every match:
-- counting the 16,666 matching entries of a 100,000-risk organization's index was 14 ms of a
-- 14 ms request (docs/performance.md). `assignee_id` is '' for nobody (a key column cannot be
-- NULL). Sharded like `list_row_counts` (the writing backend's pid modulo 16); a shard may go
-- below zero, the sum over shards cannot.
CREATE TABLE list_status_counts (
    organization_id TEXT NOT NULL,
    list TEXT NOT NULL,
    status TEXT NOT NULL,
    assignee_id TEXT NOT NULL,
    shard INTEGER NOT NULL,
    row_count BIGINT NOT NULL,
    PRIMARY KEY (organization_id, list, status, assignee_id, shard)
);

-- No write may commit between the counting below and the triggers' creation: it would never be
-- counted. (Reads go on.)
LOCK TABLE risks, tasks IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO list_status_counts
    SELECT organization_id, 'risks', status, coalesce(assignee_id, ''), 0, count(*)
    FROM risks GROUP BY organization_id, status, coalesce(assignee_id, '');
INSERT INTO list_status_counts
    SELECT organization_id, 'tasks', status, coalesce(assignee_id, ''), 0, count(*)
    FROM tasks GROUP BY organization_id, status, coalesce(assignee_id, '');

-- One statement-level trigger per event, with the statement's rows as transition tables: +1 per
-- new row, -1 per old row, grouped, so an update that changes neither status, assignee nor
-- organization writes nothing (a trigger with transition tables cannot name columns). Rows are
-- written in key order, so two statements lock them in one order. The branch not taken is never
-- planned, so it may name a transition table its event does not have.
CREATE FUNCTION list_status_counts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO list_status_counts
            SELECT organization_id, TG_ARGV[0], status, coalesce(assignee_id, ''), pg_backend_pid() % 16, count(*)
            FROM new_rows GROUP BY 1, 3, 4 ORDER BY 1, 3, 4
        ON CONFLICT (organization_id, list, status, assignee_id, shard)
            DO UPDATE SET row_count = list_status_counts.row_count + EXCLUDED.row_count;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO list_status_counts
            SELECT organization_id, TG_ARGV[0], status, coalesce(assignee_id, ''), pg_backend_pid() % 16, -count(*)
            FROM old_rows GROUP BY 1, 3, 4 ORDER BY 1, 3, 4
        ON CONFLICT (organization_id, list, status, assignee_id, shard)
            DO UPDATE SET row_count = list_status_counts.row_count + EXCLUDED.row_count;
    ELSE
        INSERT INTO list_status_counts
            SELECT organization_id, TG_ARGV[0], status, assignee, pg_backend_pid() % 16, sum(delta)
            FROM (SELECT organization_id, status, coalesce(assignee_id, '') AS assignee, 1 AS delta FROM new_rows
                  UNION ALL
                  SELECT organization_id, status, coalesce(assignee_id, ''), -1 FROM old_rows) changed
            GROUP BY 1, 3, 4 HAVING sum(delta) <> 0 ORDER BY 1, 3, 4
        ON CONFLICT (organization_id, list, status, assignee_id, shard)
            DO UPDATE SET row_count = list_status_counts.row_count + EXCLUDED.row_count;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER risks_status_counts_inserted AFTER INSERT ON risks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_status_counts_changed('risks');
CREATE TRIGGER risks_status_counts_updated AFTER UPDATE ON risks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_status_counts_changed('risks');
CREATE TRIGGER risks_status_counts_deleted AFTER DELETE ON risks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_status_counts_changed('risks');

CREATE TRIGGER tasks_status_counts_inserted AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_status_counts_changed('tasks');
CREATE TRIGGER tasks_status_counts_updated AFTER UPDATE ON tasks REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_status_counts_changed('tasks');
CREATE TRIGGER tasks_status_counts_deleted AFTER DELETE ON tasks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION list_status_counts_changed('tasks');
