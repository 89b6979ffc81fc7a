-- Internal hosts the operator granted to one organization (the `admin allow-host` command): its
-- webhooks or its browser automations may reach them, no other organization's.
CREATE TABLE organization_allowed_hosts (
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    -- 'webhooks' or 'automations'
    used_for TEXT NOT NULL,
    -- a lower-case host name or an IP address
    host TEXT NOT NULL,
    granted_at TIMESTAMP NOT NULL,
    PRIMARY KEY (organization_id, used_for, host)
);
