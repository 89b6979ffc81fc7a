-- How many changes of each organization's lists have committed. A list page kept in memory is
-- current while the sum of its list's shards is what it was when the page was read. Triggers bump
-- it inside the writing transaction, so every writer counts: the server, the admin CLI, sqlite3.
-- Rows are only ever added or incremented, never deleted or lowered: then an equal sum means no
-- change. SQLite has one writer at a time, so every list has the one shard 0 (PostgreSQL spreads
-- concurrent writers over 16).
CREATE TABLE list_generations (
    organization_id TEXT NOT NULL,
    list TEXT NOT NULL,
    shard INTEGER NOT NULL,
    generation BIGINT NOT NULL,
    PRIMARY KEY (organization_id, list, shard)
);

CREATE TRIGGER context_entries_inserted_list_generation AFTER INSERT ON context_entries BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'context', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER context_entries_updated_list_generation AFTER UPDATE ON context_entries BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'context', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER context_entries_moved_list_generation AFTER UPDATE OF organization_id ON context_entries
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'context', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER context_entries_deleted_list_generation AFTER DELETE ON context_entries BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'context', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER policies_inserted_list_generation AFTER INSERT ON policies BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'policies', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER policies_updated_list_generation AFTER UPDATE ON policies BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'policies', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER policies_moved_list_generation AFTER UPDATE OF organization_id ON policies
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'policies', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER policies_deleted_list_generation AFTER DELETE ON policies BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'policies', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER vendors_inserted_list_generation AFTER INSERT ON vendors BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'vendors', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vendors_updated_list_generation AFTER UPDATE ON vendors BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'vendors', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vendors_moved_list_generation AFTER UPDATE OF organization_id ON vendors
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'vendors', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER vendors_deleted_list_generation AFTER DELETE ON vendors BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'vendors', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER risks_inserted_list_generation AFTER INSERT ON risks BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'risks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER risks_updated_list_generation AFTER UPDATE ON risks BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'risks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER risks_moved_list_generation AFTER UPDATE OF organization_id ON risks
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'risks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER risks_deleted_list_generation AFTER DELETE ON risks BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'risks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER tasks_inserted_list_generation AFTER INSERT ON tasks BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'tasks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER tasks_updated_list_generation AFTER UPDATE ON tasks BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'tasks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER tasks_moved_list_generation AFTER UPDATE OF organization_id ON tasks
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'tasks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER tasks_deleted_list_generation AFTER DELETE ON tasks BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'tasks', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER members_inserted_list_generation AFTER INSERT ON members BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'people', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER members_updated_list_generation AFTER UPDATE ON members BEGIN
    INSERT INTO list_generations VALUES (NEW.organization_id, 'people', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER members_moved_list_generation AFTER UPDATE OF organization_id ON members
    WHEN OLD.organization_id <> NEW.organization_id BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'people', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER members_deleted_list_generation AFTER DELETE ON members BEGIN
    INSERT INTO list_generations VALUES (OLD.organization_id, 'people', 0, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;

-- The people list shows each member's user: a changed user changes it in every organization the
-- user belongs to.
CREATE TRIGGER users_updated_list_generation AFTER UPDATE ON users BEGIN
    INSERT INTO list_generations SELECT organization_id, 'people', 0, 1 FROM members WHERE user_id = NEW.id
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = generation + 1;
END;
