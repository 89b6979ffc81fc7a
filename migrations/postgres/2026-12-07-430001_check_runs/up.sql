-- Runs of a connection's checks (docs/checks.md, "Runs"): queued by a person or the schedule,
-- claimed under a lease by one server instance, finished with every result they saw.
CREATE TABLE check_runs (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    trigger_kind TEXT NOT NULL CHECK (trigger_kind IN ('manual', 'scheduled')),
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'finished', 'failed')),
    requested_by TEXT,
    -- a scheduled run's period (whole periods since the Unix epoch); NULL for a manual run
    period BIGINT,
    queued_at TIMESTAMP NOT NULL,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    -- until when the instance that claimed the run holds it
    lease_until TIMESTAMP,
    attempts INTEGER NOT NULL DEFAULT 0,
    -- why the run failed as a whole, fit to show the user
    error TEXT,
    passed INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    not_applicable INTEGER NOT NULL DEFAULT 0,
    population_digest TEXT
);
-- One scheduled run per connection and period, however many instances schedule it.
CREATE UNIQUE INDEX check_runs_one_per_period ON check_runs (connection_id, period) WHERE period IS NOT NULL;
-- The runs waiting for an instance, or held by one.
CREATE INDEX check_runs_waiting ON check_runs (queued_at, id) WHERE status IN ('queued', 'running');
CREATE INDEX check_runs_newest_first ON check_runs (organization_id, queued_at DESC, id DESC);
CREATE INDEX check_runs_of_connection ON check_runs (organization_id, connection_id, queued_at DESC);

-- Every resource a run saw, pass or fail: the population an auditor samples from.
CREATE TABLE check_results (
    run_id TEXT NOT NULL REFERENCES check_runs (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    check_id TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    resource_name TEXT NOT NULL,
    region TEXT,
    outcome TEXT NOT NULL CHECK (outcome IN ('pass', 'fail', 'error', 'not_applicable')),
    detail TEXT NOT NULL,
    failure_code TEXT,
    failure_message TEXT,
    failure_action TEXT,
    PRIMARY KEY (run_id, position)
);

-- A resource a check failed, from its first failure until a run passes it (docs/checks.md, "Findings").
CREATE TABLE findings (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
    check_id TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    resource_name TEXT NOT NULL,
    -- '' for a resource with no region, so that the key below is unique
    region TEXT NOT NULL,
    severity TEXT NOT NULL CHECK (severity IN ('low', 'medium', 'high', 'critical')),
    status TEXT NOT NULL CHECK (status IN ('open', 'resolved', 'excepted')),
    detail TEXT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    last_seen_at TIMESTAMP NOT NULL,
    resolved_at TIMESTAMP,
    due_at TIMESTAMP NOT NULL,
    last_run_id TEXT NOT NULL,
    exception_reason TEXT,
    exception_expires_at TIMESTAMP,
    exception_by TEXT,
    exception_at TIMESTAMP,
    task_id TEXT,
    updated_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX findings_one_per_resource
    ON findings (organization_id, connection_id, check_id, resource_type, resource_id, region);
CREATE INDEX findings_newest_first ON findings (organization_id, last_seen_at DESC, id DESC);
-- Exceptions that lapse, for the worker that opens them again.
CREATE INDEX findings_excepted ON findings (exception_expires_at) WHERE status = 'excepted';
-- At most one run of a connection held at a time: a claim of a second one fails (and is skipped).
CREATE UNIQUE INDEX check_runs_one_running ON check_runs (connection_id) WHERE status = 'running';
-- One run asked for per connection waits at a time: asking again while it waits is a 409.
CREATE UNIQUE INDEX check_runs_one_queued_manual ON check_runs (connection_id)
    WHERE status = 'queued' AND trigger_kind = 'manual';
