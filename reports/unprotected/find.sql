-- One unprotected grant by its report id (see list.sql), at any time.
-- Parameters: {db:Identifier} {id:String}
SELECT *
FROM
(
    SELECT
        lower(hex(substring(SHA256(concat(cluster, char(31), key, char(31), toString(grant_revision), char(31), spool_id)), 1, 16))) AS id,
        cluster, key, spool_id
    FROM {db:Identifier}.grants FINAL
    PREWHERE unprotected = 1
)
WHERE id = {id:String}
LIMIT 1
