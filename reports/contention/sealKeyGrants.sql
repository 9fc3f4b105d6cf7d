-- The grants a seal's windows read (sealHandoffs.sql, sealIrregular.sql): every grant, back to {lookbackMs}, of
-- the keys granted in the sealed hours, as of the checkpoint; every timeline's grants, each once (sql/065).
-- One definition, so both parts see the same rows. Included with `-- @include`.
-- Parameters: {db:Identifier} {cluster:String} {hours:Array(UInt32)} {checkpoint:UInt64} {lookbackMs:Int64}
    FROM {db:Identifier}.grants FINAL
    PREWHERE cluster = {cluster:String}
        AND granted_at >= fromUnixTimestamp64Milli({lookbackMs:Int64}, 'UTC')
        AND key IN (
            SELECT key FROM {db:Identifier}.grants
            PREWHERE cluster = {cluster:String}
                AND granted_at >= toDateTime(arrayMin({hours:Array(UInt32)}), 'UTC')
                AND granted_at < toDateTime(arrayMax({hours:Array(UInt32)}) + 3600, 'UTC')
        )
        AND grant_revision <= {checkpoint:UInt64} AND row_version <= {checkpoint:UInt64}
    WHERE (superseded_by = 0 OR rolled_back_by > 0)
