-- The latest reconcile note of each given unprotected grant, and how many it has.
-- Parameters: {db:Identifier} {ids:Array(String)}
SELECT
    id,
    argMax(note, reconciled_at) AS note,
    argMax(reconciled_by, reconciled_at) AS reconciled_by,
    toUnixTimestamp64Milli(max(reconciled_at)) AS reconciled_at_ms,
    count() AS notes
FROM {db:Identifier}.unprotected_reconciliations
WHERE id IN {ids:Array(String)}
GROUP BY id
