-- The columns of a grant as grant history serves it (toItem() reads them):
-- the SELECT list of history.sql and of the timeline's bars
-- (reports/timeline/grants.sql).
-- Parameters: (none)
    cluster,
    key,
    grant_revision,                      -- 64-bit: arrives as a decimal string
    token,
    holder,
    class,
    namespace,
    toUnixTimestamp64Milli(granted_at) AS granted_at_ms,
    toUnixTimestamp64Milli(ended_at) AS ended_at_ms,
    end_kind,
    end_revision,
    wait_ms,
    duration_ms,
    unprotected,
    spool_id,
    origin,                              -- foreign: put straight into etcd, not by the lock API
    timeline,                            -- the etcd timeline that captured it (sql/065)
    rolled_back_by,                      -- > 0: a restore rolled it back (it was still a real hold)
    start_known,                         -- 0: granted inside a recorded gap; granted_at is when it was first seen
    ended_at_error_ms                    -- the end time's error bound (an estimated end: an expiry, a hand delete)
