-- How many rows each organization's lists hold, so that a list asked for without any filter
-- answers its `count` from here instead of counting its rows (see the PostgreSQL migration).
-- SQLite has one writer at a time: every list has the one shard 0. Triggers keep it inside the
-- writing transaction, so every writer counts. TRUNCATE does not exist here; `DELETE` fires them.
CREATE TABLE list_row_counts (
    organization_id TEXT NOT NULL,
    list TEXT NOT NULL,
    shard INTEGER NOT NULL,
    row_count BIGINT NOT NULL,
    PRIMARY KEY (organization_id, list, shard)
);

INSERT INTO list_row_counts SELECT organization_id, 'context', 0, count(*) FROM context_entries GROUP BY organization_id;
CREATE TRIGGER context_entries_inserted_row_count AFTER INSERT ON context_entries BEGIN
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'context', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;
CREATE TRIGGER context_entries_deleted_row_count AFTER DELETE ON context_entries BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'context', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
END;
CREATE TRIGGER context_entries_moved_row_count AFTER UPDATE OF organization_id ON context_entries
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'context', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'context', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;

INSERT INTO list_row_counts SELECT organization_id, 'policies', 0, count(*) FROM policies GROUP BY organization_id;
CREATE TRIGGER policies_inserted_row_count AFTER INSERT ON policies BEGIN
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'policies', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;
CREATE TRIGGER policies_deleted_row_count AFTER DELETE ON policies BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'policies', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
END;
CREATE TRIGGER policies_moved_row_count AFTER UPDATE OF organization_id ON policies
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'policies', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'policies', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;

INSERT INTO list_row_counts SELECT organization_id, 'vendors', 0, count(*) FROM vendors GROUP BY organization_id;
CREATE TRIGGER vendors_inserted_row_count AFTER INSERT ON vendors BEGIN
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'vendors', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;
CREATE TRIGGER vendors_deleted_row_count AFTER DELETE ON vendors BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'vendors', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
END;
CREATE TRIGGER vendors_moved_row_count AFTER UPDATE OF organization_id ON vendors
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'vendors', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'vendors', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;

INSERT INTO list_row_counts SELECT organization_id, 'risks', 0, count(*) FROM risks GROUP BY organization_id;
CREATE TRIGGER risks_inserted_row_count AFTER INSERT ON risks BEGIN
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'risks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;
CREATE TRIGGER risks_deleted_row_count AFTER DELETE ON risks BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'risks', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
END;
CREATE TRIGGER risks_moved_row_count AFTER UPDATE OF organization_id ON risks
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'risks', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'risks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;

INSERT INTO list_row_counts SELECT organization_id, 'tasks', 0, count(*) FROM tasks GROUP BY organization_id;
CREATE TRIGGER tasks_inserted_row_count AFTER INSERT ON tasks BEGIN
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'tasks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;
CREATE TRIGGER tasks_deleted_row_count AFTER DELETE ON tasks BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'tasks', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
END;
CREATE TRIGGER tasks_moved_row_count AFTER UPDATE OF organization_id ON tasks
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'tasks', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'tasks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;

INSERT INTO list_row_counts SELECT organization_id, 'people', 0, count(*) FROM members GROUP BY organization_id;
CREATE TRIGGER members_inserted_row_count AFTER INSERT ON members BEGIN
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'people', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;
CREATE TRIGGER members_deleted_row_count AFTER DELETE ON members BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'people', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
END;
CREATE TRIGGER members_moved_row_count AFTER UPDATE OF organization_id ON members
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_row_counts VALUES (OLD.organization_id, 'people', 0, -1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (-1);
    INSERT INTO list_row_counts VALUES (NEW.organization_id, 'people', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET row_count = row_count + (1);
END;

