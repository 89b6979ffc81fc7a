-- Full-text search of the lists' text fields (`q=`, see docs/api.md). Each searched table gets two
-- stored, generated tsvector columns: `search_title` (the title, name or question) and
-- `search_body` (the rest), and a GIN index on the two together. A document's words and a query's
-- are made alike by the functions below: lowercase, without accents (`unaccent`), ASCII
-- punctuation as spaces (so that "ada@example.com" holds the words ada, example and com, as
-- SQLite's tokenizer sees them), parsed with the `simple` configuration (no stemming, no stop
-- words: any language). The columns are stored, not computed from the text at each search, because
-- the relevance order tests every match against them: recomputing them cost 50 µs a row.
-- They are not in schema.rs: diesel has no tsvector type, and the store names them in SQL only.
--
-- unaccent is a trusted extension (PostgreSQL 13+): a role with CREATE on the database installs it,
-- no superuser needed. Where even that is not granted, an administrator runs
-- `CREATE EXTENSION unaccent` once beforehand and this line does nothing.
CREATE EXTENSION IF NOT EXISTS unaccent;

-- The functions have SQL-standard bodies (PostgreSQL 14+): their references are bound when they
-- are created, so they work whatever the search_path of the session or of maintenance (REINDEX,
-- which PostgreSQL 17 runs with a safe search_path). unaccent(regdictionary, text) is STABLE only
-- because a dictionary could be changed; the one it names is the extension's own file.
CREATE FUNCTION search_words(input text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN translate(
        lower(unaccent('unaccent'::regdictionary, input)),
        '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~',
        '                                '
    );

-- The words of a text field (a NULL field has none).
CREATE FUNCTION search_vector(field text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('simple'::regconfig, coalesce(search_words(field), ''));

-- A word matched as a prefix ("back" finds "backups"). The word's lexemes are read by
-- plainto_tsquery, which accepts any text, then written back with `:*` on the last: a query built
-- from the user's text itself could fail to parse.
CREATE FUNCTION search_prefix(word text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN numnode(plainto_tsquery('simple'::regconfig, search_words(word))) = 0
            THEN plainto_tsquery('simple'::regconfig, search_words(word))
        ELSE to_tsquery('simple'::regconfig, plainto_tsquery('simple'::regconfig, search_words(word))::text || ':*')
    END;

-- Every word of `words`, and `last_word` as a prefix, anywhere in the document.
CREATE FUNCTION search_query(words text, last_word text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN plainto_tsquery('simple'::regconfig, search_words(words)) && search_prefix(last_word);

-- The same words next to each other, in order (a phrase), for the relevance order.
CREATE FUNCTION search_phrase(words text, last_word text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN tsquery_phrase(phraseto_tsquery('simple'::regconfig, search_words(words)), search_prefix(last_word));

ALTER TABLE risks
    ADD COLUMN search_title tsvector GENERATED ALWAYS AS (search_vector(title)) STORED,
    ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(description)) STORED;
CREATE INDEX risks_search ON risks USING gin ((search_title || search_body));

ALTER TABLE vendors
    ADD COLUMN search_title tsvector GENERATED ALWAYS AS (search_vector(name)) STORED,
    ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(description)) STORED;
CREATE INDEX vendors_search ON vendors USING gin ((search_title || search_body));

ALTER TABLE policies
    ADD COLUMN search_title tsvector GENERATED ALWAYS AS (search_vector(name)) STORED,
    ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(description)) STORED;
CREATE INDEX policies_search ON policies USING gin ((search_title || search_body));

ALTER TABLE context_entries
    ADD COLUMN search_title tsvector GENERATED ALWAYS AS (search_vector(question)) STORED,
    ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(answer)) STORED;
CREATE INDEX context_entries_search ON context_entries USING gin ((search_title || search_body));

ALTER TABLE tasks
    ADD COLUMN search_title tsvector GENERATED ALWAYS AS (search_vector(title)) STORED,
    ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(description)) STORED;
CREATE INDEX tasks_search ON tasks USING gin ((search_title || search_body));

-- A comment has no title: its content is its body.
ALTER TABLE comments ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(content)) STORED;
CREATE INDEX comments_search ON comments USING gin (search_body);

ALTER TABLE users
    ADD COLUMN search_title tsvector GENERATED ALWAYS AS (search_vector(name)) STORED,
    ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(email)) STORED;
CREATE INDEX users_search ON users USING gin ((search_title || search_body));

ALTER TABLE automation_runs
    ADD COLUMN search_title tsvector GENERATED ALWAYS AS (search_vector(verdict_reason)) STORED,
    ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(error)) STORED;
CREATE INDEX automation_runs_search ON automation_runs USING gin ((search_title || search_body));

ALTER TABLE connections
    ADD COLUMN search_title tsvector GENERATED ALWAYS AS (search_vector(provider)) STORED,
    ADD COLUMN search_body tsvector GENERATED ALWAYS AS (search_vector(last_error)) STORED;
CREATE INDEX connections_search ON connections USING gin ((search_title || search_body));
