-- Grant rows the store refused and the tailer put in quarantine with its
-- proof (sql/240): grantsCheck.ts verifies each proof and excuses the start
-- events of the proven ones (grants_check_events.sql {excused}) — a
-- quarantine row written by hand excuses nothing. `id` is the hash the check
-- compares. Bounded: past {limit} rows the rest excuse nothing.
-- Parameters: {db:Identifier} {cluster:String} {limit:UInt32}
-- (`id` hashes the table's own columns, qualified: an alias of the same name would win inside the SELECT.)
SELECT cluster, timeline, toString(revision) AS revisionText, key, proof, toString(cityHash64(toString(q.cluster), q.timeline, q.revision, q.key)) AS id
FROM {db:Identifier}.quarantine AS q
WHERE ({cluster:String} = '' OR cluster = {cluster:String}) AND op = 'grants-row' AND proof != ''
-- The newest first: rows flooded in by hand push the oldest out, and those only fail the check (never excuse).
ORDER BY at DESC
LIMIT {limit:UInt32}
