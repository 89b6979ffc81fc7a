-- Indexes for the filtered and sorted lists of the largest lists (risks, vendors, tasks), each led
-- by the organization, as every list query is. Measured on 100,000 risks of one organization among
-- a million (docs/performance.md, "Lists at a million rows").
--
-- The filter people use most, "open ones assigned to me": status, then assignee, then the default
-- order (newest first), so that such a page is read in order from the index and its count is an
-- index-only scan of the matching entries. A filter on status alone uses the leading part.
CREATE INDEX risks_by_status_assignee ON risks (organization_id, status, assignee_id, created_at, id);
CREATE INDEX tasks_by_status_assignee ON tasks (organization_id, status, assignee_id, created_at, id);
-- Vendors have no "mine" in the lists people asked for ("vendors not yet assessed"): status only.
CREATE INDEX vendors_by_status ON vendors (organization_id, status, created_at, id);

-- `sort=title` / `sort=name` (either direction, with the id as tie-breaker, as the cursor needs).
CREATE INDEX risks_by_title ON risks (organization_id, title, id);
CREATE INDEX tasks_by_title ON tasks (organization_id, title, id);
CREATE INDEX vendors_by_name ON vendors (organization_id, name, id);
