-- The row triggers of `list_generations` (see its migration) again.
CREATE FUNCTION bump_list_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO list_generations VALUES (NEW.organization_id, TG_ARGV[0], pg_backend_pid() % 16, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = list_generations.generation + 1;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.organization_id <> NEW.organization_id) THEN
        INSERT INTO list_generations VALUES (OLD.organization_id, TG_ARGV[0], pg_backend_pid() % 16, 1)
        ON CONFLICT (organization_id, list, shard) DO UPDATE SET generation = list_generations.generation + 1;
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER context_entries_rows_inserted ON context_entries;
DROP TRIGGER context_entries_rows_updated ON context_entries;
DROP TRIGGER context_entries_rows_deleted ON context_entries;
CREATE TRIGGER context_entries_list_generation AFTER INSERT OR UPDATE OR DELETE ON context_entries
    FOR EACH ROW EXECUTE FUNCTION bump_list_generation('context');
DROP TRIGGER policies_rows_inserted ON policies;
DROP TRIGGER policies_rows_updated ON policies;
DROP TRIGGER policies_rows_deleted ON policies;
CREATE TRIGGER policies_list_generation AFTER INSERT OR UPDATE OR DELETE ON policies
    FOR EACH ROW EXECUTE FUNCTION bump_list_generation('policies');
DROP TRIGGER vendors_rows_inserted ON vendors;
DROP TRIGGER vendors_rows_updated ON vendors;
DROP TRIGGER vendors_rows_deleted ON vendors;
CREATE TRIGGER vendors_list_generation AFTER INSERT OR UPDATE OR DELETE ON vendors
    FOR EACH ROW EXECUTE FUNCTION bump_list_generation('vendors');
DROP TRIGGER risks_rows_inserted ON risks;
DROP TRIGGER risks_rows_updated ON risks;
DROP TRIGGER risks_rows_deleted ON risks;
CREATE TRIGGER risks_list_generation AFTER INSERT OR UPDATE OR DELETE ON risks
    FOR EACH ROW EXECUTE FUNCTION bump_list_generation('risks');
DROP TRIGGER tasks_rows_inserted ON tasks;
DROP TRIGGER tasks_rows_updated ON tasks;
DROP TRIGGER tasks_rows_deleted ON tasks;
CREATE TRIGGER tasks_list_generation AFTER INSERT OR UPDATE OR DELETE ON tasks
    FOR EACH ROW EXECUTE FUNCTION bump_list_generation('tasks');
DROP TRIGGER members_rows_inserted ON members;
DROP TRIGGER members_rows_updated ON members;
DROP TRIGGER members_rows_deleted ON members;
CREATE TRIGGER members_list_generation AFTER INSERT OR UPDATE OR DELETE ON members
    FOR EACH ROW EXECUTE FUNCTION bump_list_generation('people');
DROP FUNCTION list_rows_inserted();
DROP FUNCTION list_rows_updated();
DROP FUNCTION list_rows_deleted();
DROP TABLE list_row_counts;
