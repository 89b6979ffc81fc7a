-- How many rows of each organization's risks and tasks have each status and assignee, so that
-- the lists filtered only by `status=` and `assigneeId=` answer `count` by adding kept numbers
-- (see the PostgreSQL migration). `assignee_id` is '' for nobody. SQLite has one writer at a
-- time: one shard, 0. Row triggers keep it inside the writing transaction.
CREATE TABLE list_status_counts (
    organization_id TEXT NOT NULL,
    list TEXT NOT NULL,
    status TEXT NOT NULL,
    assignee_id TEXT NOT NULL,
    shard INTEGER NOT NULL,
    row_count BIGINT NOT NULL,
    PRIMARY KEY (organization_id, list, status, assignee_id, shard)
);

INSERT INTO list_status_counts
    SELECT organization_id, 'risks', status, coalesce(assignee_id, ''), 0, count(*)
    FROM risks GROUP BY organization_id, status, coalesce(assignee_id, '');
CREATE TRIGGER risks_inserted_status_count AFTER INSERT ON risks BEGIN
    INSERT INTO list_status_counts VALUES (NEW.organization_id, 'risks', NEW.status, coalesce(NEW.assignee_id, ''), 0, 1)
        ON CONFLICT (organization_id, list, status, assignee_id, shard) DO UPDATE SET row_count = row_count + (1);
END;
CREATE TRIGGER risks_deleted_status_count AFTER DELETE ON risks BEGIN
    INSERT INTO list_status_counts VALUES (OLD.organization_id, 'risks', OLD.status, coalesce(OLD.assignee_id, ''), 0, -1)
        ON CONFLICT (organization_id, list, status, assignee_id, shard) DO UPDATE SET row_count = row_count + (-1);
END;
CREATE TRIGGER risks_changed_status_count AFTER UPDATE OF organization_id, status, assignee_id ON risks
    WHEN OLD.organization_id IS NOT NEW.organization_id OR OLD.status IS NOT NEW.status
        OR OLD.assignee_id IS NOT NEW.assignee_id BEGIN
    INSERT INTO list_status_counts VALUES (OLD.organization_id, 'risks', OLD.status, coalesce(OLD.assignee_id, ''), 0, -1)
        ON CONFLICT (organization_id, list, status, assignee_id, shard) DO UPDATE SET row_count = row_count + (-1);
    INSERT INTO list_status_counts VALUES (NEW.organization_id, 'risks', NEW.status, coalesce(NEW.assignee_id, ''), 0, 1)
        ON CONFLICT (organization_id, list, status, assignee_id, shard) DO UPDATE SET row_count = row_count + (1);
END;

INSERT INTO list_status_counts
    SELECT organization_id, 'tasks', status, coalesce(assignee_id, ''), 0, count(*)
    FROM tasks GROUP BY organization_id, status, coalesce(assignee_id, '');
CREATE TRIGGER tasks_inserted_status_count AFTER INSERT ON tasks BEGIN
    INSERT INTO list_status_counts VALUES (NEW.organization_id, 'tasks', NEW.status, coalesce(NEW.assignee_id, ''), 0, 1)
        ON CONFLICT (organization_id, list, status, assignee_id, shard) DO UPDATE SET row_count = row_count + (1);
END;
CREATE TRIGGER tasks_deleted_status_count AFTER DELETE ON tasks BEGIN
    INSERT INTO list_status_counts VALUES (OLD.organization_id, 'tasks', OLD.status, coalesce(OLD.assignee_id, ''), 0, -1)
        ON CONFLICT (organization_id, list, status, assignee_id, shard) DO UPDATE SET row_count = row_count + (-1);
END;
CREATE TRIGGER tasks_changed_status_count AFTER UPDATE OF organization_id, status, assignee_id ON tasks
    WHEN OLD.organization_id IS NOT NEW.organization_id OR OLD.status IS NOT NEW.status
        OR OLD.assignee_id IS NOT NEW.assignee_id BEGIN
    INSERT INTO list_status_counts VALUES (OLD.organization_id, 'tasks', OLD.status, coalesce(OLD.assignee_id, ''), 0, -1)
        ON CONFLICT (organization_id, list, status, assignee_id, shard) DO UPDATE SET row_count = row_count + (-1);
    INSERT INTO list_status_counts VALUES (NEW.organization_id, 'tasks', NEW.status, coalesce(NEW.assignee_id, ''), 0, 1)
        ON CONFLICT (organization_id, list, status, assignee_id, shard) DO UPDATE SET row_count = row_count + (1);
END;
