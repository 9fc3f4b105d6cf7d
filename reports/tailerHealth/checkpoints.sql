-- Every cluster's checkpoint as the tailer reads it (tailer/offsets.ts and
-- restores.ts' readPosition), read here with the report's own SQL: the
-- highest checkpoint ever written; after a restore (etcd_timelines
-- generation > 0) only checkpoints written since the restore was detected
-- count, and never below the restored timeline's resume revision.
-- Parameters: {db:Identifier}
SELECT c.cluster AS cluster,
       toString(if(t.newest_generation > 0, greatest(t.resume, s.since_highest), c.highest)) AS revision,
       c.leader AS leader
FROM
(
    SELECT cluster, max(revision) AS highest, argMax(leader, revision) AS leader
    FROM {db:Identifier}.checkpoints_highest
    GROUP BY cluster
) AS c
LEFT JOIN
(
    SELECT cluster, max(generation) AS newest_generation, argMax(resume_revision, generation) AS resume
    FROM {db:Identifier}.etcd_timelines FINAL
    GROUP BY cluster
) AS t ON t.cluster = c.cluster
LEFT JOIN
(
    SELECT k.cluster AS cluster, max(k.revision) AS since_highest
    FROM {db:Identifier}.checkpoints AS k
    INNER JOIN
    (
        SELECT cluster, argMax(detected_at, generation) AS detected
        FROM {db:Identifier}.etcd_timelines FINAL
        GROUP BY cluster
    ) AS d ON d.cluster = k.cluster
    WHERE k.updated_at >= d.detected
    GROUP BY k.cluster
) AS s ON s.cluster = c.cluster
ORDER BY cluster
