-- The grants of one cluster per period of {periodMs} (aligned to multiples
-- of it, as digest periods are) in [from, to): how many, how many are still
-- open, and their hash (exporters/checks/grantSeals.ts). A row's fingerprint is two
-- independent 64-bit hashes of every column a report or an export shows
-- (cityHash64 and farmFingerprint64: a row edited to keep both is a second
-- preimage of two hash families at once; the nullable end columns as text, a
-- NULL would make both NULL); the period's hash is the SHA-256 of its rows'
-- fingerprints sorted, as 16 bytes each. Periods with no grant are absent.
-- Parameters: {db:Identifier} {cluster:String} {fromMs:Int64} {toMs:Int64} {periodMs:Int64}
SELECT toString(intDiv(toUnixTimestamp64Milli(granted_at), {periodMs:Int64}) * {periodMs:Int64}) AS periodStartMs,
       toString(count()) AS rows,
       toString(countIf(end_kind = '')) AS open,
       lower(hex(SHA256(arrayStringConcat(arrayMap(x -> reinterpretAsString(x), arraySort(groupArray(fp))))))) AS sha256
FROM
(
    SELECT granted_at, end_kind,
           bitOr(bitShiftLeft(toUInt128(cityHash64(cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id,
                     granted_at, wait_ms, end_kind, end_revision, ifNull(toString(ended_at), 'NULL'), ended_at_error_ms,
                     ifNull(toString(duration_ms), 'NULL'), unprotected, start_known, row_version, origin, timeline, rolled_back_by, superseded_by)), 64),
                 toUInt128(farmFingerprint64(cluster, key, namespace, lock_path, class, holder, session, token, epoch, grant_revision, spool_id,
                     granted_at, wait_ms, end_kind, end_revision, ifNull(toString(ended_at), 'NULL'), ended_at_error_ms,
                     ifNull(toString(duration_ms), 'NULL'), unprotected, start_known, row_version, origin, timeline, rolled_back_by, superseded_by))) AS fp
    FROM {db:Identifier}.grants FINAL
    PREWHERE cluster = {cluster:String}
        AND granted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC') AND granted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
)
GROUP BY periodStartMs
ORDER BY toInt64(periodStartMs)
