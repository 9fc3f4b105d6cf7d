-- The events of one digest period (exporters/digests/format.ts,
-- docs/digests.md), for the WHERE (after FINAL) of the queries that hash or
-- count them: the changes etcd committed after the boundary position
-- (after, a (timeline, revision) pair; hasAfter 0: from the very start) up to
-- and including the through position, and the spooled fail-open grants
-- (revision 0: etcd never saw them) whose wall time falls in [fromMs, toMs)
-- (hasAfter 0: before toMs). `revision` is also bounded by {lo, hi} in the
-- PREWHERE of the including query (the primary key).
-- Parameters: {hasAfter:UInt8} {afterTimeline:UInt32} {afterRevision:UInt64} {throughTimeline:UInt32} {throughRevision:UInt64} {fromMs:Int64} {toMs:Int64}
(
    (revision > 0
        AND ({hasAfter:UInt8} = 0 OR (timeline, revision) > ({afterTimeline:UInt32}, {afterRevision:UInt64}))
        AND (timeline, revision) <= ({throughTimeline:UInt32}, {throughRevision:UInt64}))
    OR (revision = 0
        AND ({hasAfter:UInt8} = 0 OR wall_time >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC'))
        AND wall_time < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC'))
)
