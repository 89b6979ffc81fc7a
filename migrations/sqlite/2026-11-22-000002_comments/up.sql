-- Tasks, and comments with attachment metadata on tasks, vendors, risks and policies.
-- entity_id is polymorphic (its kind is entity_type), so it has no foreign key: deleting an entity
-- deletes its comments in the same transaction instead.
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL,
    assignee_id TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    FOREIGN KEY (organization_id, assignee_id) REFERENCES members (organization_id, id)
);
CREATE INDEX tasks_newest_first ON tasks (organization_id, created_at, id);

CREATE TABLE comments (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    entity_type TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    author_id TEXT NOT NULL REFERENCES users (id),
    content TEXT NOT NULL,
    context_url TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX comments_by_entity ON comments (organization_id, entity_type, entity_id, created_at, id);

CREATE TABLE attachments (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    comment_id TEXT NOT NULL REFERENCES comments (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    media_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    description TEXT,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX attachments_by_comment ON attachments (comment_id);
