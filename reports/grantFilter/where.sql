-- The grant filter, part 2 of 2 (part 1: prewhere.sql): the conditions on
-- columns that change when a grant ends (ended_at, end_kind), for the WHERE
-- (after FINAL) of every grant query. endKind 'held' means still held
-- (end_kind ''); an empty endKind means "no filter". The window rule is
-- prewhere.sql's: overlapping also needs the hold to last until `from`.
-- Parameters: {window:String} {fromMs:Int64} {endKind:String}
({window:String} = 'granted' OR ended_at IS NULL OR ended_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
    AND ({endKind:String} = '' OR end_kind = if({endKind:String} = 'held', '', {endKind:String}))
