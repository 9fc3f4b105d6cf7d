-- The columns of a grant as an Arrow page serves them (historyArrow.sql,
-- historyArrowDesc.sql): the JSON items' names and meanings, typed.
-- endKinds: core/events.ts END_KINDS (any other end_kind, '' included, is null).
-- Parameters: {endKinds:Array(String)}
    cluster,
    key,
    grant_revision AS grantRevision,
    token,
    holder,
    class,
    namespace,
    granted_at AS grantedAt,
    ended_at AS endedAt,
    if(has({endKinds:Array(String)}, end_kind), end_kind, NULL) AS endKind,
    if(endKind IS NULL, NULL, end_revision) AS endRevision,
    wait_ms AS waitMs,
    if(endKind IS NULL, NULL, duration_ms) AS durationMs,
    toBool(unprotected) AS unprotected,
    if(origin = 'foreign', 'foreign', 'api') AS origin,
    timeline,
    toBool(rolled_back_by > 0) AS rolledBack,
    toBool(start_known) AS startKnown,
    if(endKind IS NULL, NULL, ended_at_error_ms) AS endedAtErrorMs
