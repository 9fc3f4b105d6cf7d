-- The grant filter, part 2 of 2 (part 1: filterPrewhere.sql): the conditions on
-- columns that change when a grant ends (ended_at, end_kind) or may have
-- (origin: before 0b25a57 the replay check made a copy stored ahead of its
-- original `foreign` from its closed row on, its open row kept `api`; read in
-- PREWHERE, origin=api kept the open row alone and showed the copy as still
-- held), for the WHERE (after FINAL) of every grant query. endKind 'held' means still held
-- (end_kind ''); an empty endKind means "no filter". The window rule is
-- prewhere.sql's: overlapping also needs the hold to last until `from`.
-- ClickHouse reads a name as the SELECT's alias before the column: a query
-- whose SELECT renames something into end_kind, ended_at, origin, … must
-- filter in a subquery (exporters/sql/grants_export.sql does). Every etcd
-- timeline's grants, each once: the current timeline's and those a restore
-- rolled back (a grant carried into a later timeline shows as that timeline's
-- row only) — sql/065.
-- Parameters: {window:String} {fromMs:Int64} {endKind:String} {origin:String}
({window:String} = 'granted' OR ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
    AND ({endKind:String} = '' OR end_kind = if({endKind:String} = 'held', '', {endKind:String}))
    AND ({origin:String} = '' OR origin = {origin:String})
    AND (superseded_by = 0 OR rolled_back_by > 0)  -- every etcd timeline's grants, each once (sql/065)
