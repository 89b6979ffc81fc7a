-- Dropping the columns drops their indexes.
ALTER TABLE connections DROP COLUMN search_body, DROP COLUMN search_title;
ALTER TABLE automation_runs DROP COLUMN search_body, DROP COLUMN search_title;
ALTER TABLE comments DROP COLUMN search_body;
ALTER TABLE users DROP COLUMN search_body, DROP COLUMN search_title;
ALTER TABLE tasks DROP COLUMN search_body, DROP COLUMN search_title;
ALTER TABLE context_entries DROP COLUMN search_body, DROP COLUMN search_title;
ALTER TABLE policies DROP COLUMN search_body, DROP COLUMN search_title;
ALTER TABLE vendors DROP COLUMN search_body, DROP COLUMN search_title;
ALTER TABLE risks DROP COLUMN search_body, DROP COLUMN search_title;
DROP FUNCTION search_phrase(text, text);
DROP FUNCTION search_query(text, text);
DROP FUNCTION search_prefix(text);
DROP FUNCTION search_vector(text);
DROP FUNCTION search_words(text);
-- The extension goes only if this role owns it (it installed it): one an administrator installed
-- beforehand stays theirs.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_extension WHERE extname = 'unaccent' AND extowner = current_user::regrole) THEN
        DROP EXTENSION unaccent;
    END IF;
END
$$;
