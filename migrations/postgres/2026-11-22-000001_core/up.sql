-- The core schema. Instants are UTC in TIMESTAMP columns; JSON values are kept as TEXT so that both
-- backends share one diesel schema.
CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    slug TEXT NOT NULL UNIQUE,
    logo TEXT,
    metadata TEXT,
    website TEXT,
    onboarding_completed BOOLEAN NOT NULL,
    has_access BOOLEAN NOT NULL,
    device_manager_label_id BIGINT,
    is_device_manager_setup_completed BOOLEAN NOT NULL,
    primary_color TEXT,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    email_verified BOOLEAN NOT NULL,
    image TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    last_login TIMESTAMP
);

CREATE TABLE members (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id),
    role TEXT NOT NULL,
    department TEXT NOT NULL,
    is_active BOOLEAN NOT NULL,
    device_manager_label_id BIGINT,
    created_at TIMESTAMP NOT NULL,
    CONSTRAINT members_one_per_user UNIQUE (organization_id, user_id),
    -- lets records reference a member of their own organization only
    CONSTRAINT members_tenant_key UNIQUE (organization_id, id)
);
CREATE INDEX members_newest_first ON members (organization_id, created_at, id);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    created_by TEXT NOT NULL REFERENCES users (id),
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP,
    revoked_at TIMESTAMP,
    last_used_at TIMESTAMP
);
CREATE INDEX api_keys_by_organization ON api_keys (organization_id);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX sessions_by_user ON sessions (user_id);

CREATE TABLE context_entries (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    tags TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX context_entries_newest_first ON context_entries (organization_id, created_at, id);

CREATE TABLE policies (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL,
    content TEXT NOT NULL,
    frequency TEXT NOT NULL,
    department TEXT NOT NULL,
    is_required_to_sign BOOLEAN NOT NULL,
    signed_by TEXT NOT NULL,
    review_date TIMESTAMP NOT NULL,
    is_archived BOOLEAN NOT NULL,
    last_archived_at TIMESTAMP,
    last_published_at TIMESTAMP,
    assignee_id TEXT,
    approver_id TEXT,
    policy_template_id TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    FOREIGN KEY (organization_id, assignee_id) REFERENCES members (organization_id, id),
    FOREIGN KEY (organization_id, approver_id) REFERENCES members (organization_id, id)
);
CREATE INDEX policies_newest_first ON policies (organization_id, created_at, id);

CREATE TABLE vendors (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    category TEXT NOT NULL,
    status TEXT NOT NULL,
    inherent_probability TEXT NOT NULL,
    inherent_impact TEXT NOT NULL,
    residual_probability TEXT NOT NULL,
    residual_impact TEXT NOT NULL,
    website TEXT,
    assignee_id TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    FOREIGN KEY (organization_id, assignee_id) REFERENCES members (organization_id, id)
);
CREATE INDEX vendors_newest_first ON vendors (organization_id, created_at, id);

CREATE TABLE risks (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    category TEXT NOT NULL,
    department TEXT,
    status TEXT NOT NULL,
    likelihood TEXT NOT NULL,
    impact TEXT NOT NULL,
    residual_likelihood TEXT NOT NULL,
    residual_impact TEXT NOT NULL,
    treatment_strategy_description TEXT,
    treatment_strategy TEXT NOT NULL,
    assignee_id TEXT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    FOREIGN KEY (organization_id, assignee_id) REFERENCES members (organization_id, id)
);
CREATE INDEX risks_newest_first ON risks (organization_id, created_at, id);
