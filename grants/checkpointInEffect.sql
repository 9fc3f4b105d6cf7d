-- Every cluster's checkpoint in effect: the one definition, which the tailer
-- (tailer/recovery/restores.ts readPosition, through checkpointOfCluster.sql),
-- the tailer health report, the contention seal and the alert sinks all read.
-- In the current timeline, the highest term's highest checkpoint (sql/110: a deposed
-- leader's late row does not count), after a restore never below the
-- timeline's resume revision. Rows from before sql/110 (no timeline, term 0):
-- the highest checkpoint ever written, or after a restore only those written
-- since it was detected; a timeline recorded before sql/065 (generation > 0,
-- timeline 0) counts every row written since its detection.
-- Parameters: {db:Identifier}
SELECT c.cluster AS cluster,
       toString(multiIf(
           t.newest > 0 AND t.tline = 0, greatest(t.resume, s.since_all),
           f.n > 0, if(t.newest > 0, greatest(t.resume, f.revision), f.revision),
           t.newest > 0, greatest(t.resume, s.since_unfenced),
           c.highest)) AS revision,
       if(f.n > 0 AND NOT (t.newest > 0 AND t.tline = 0), f.leader, c.leader) AS leader,
       -- The writer's leadership term: 0 for a row from before sql/110 (or counted by its time after a restore).
       toString(if(f.n > 0 AND NOT (t.newest > 0 AND t.tline = 0), f.term, 0)) AS term
FROM
(
    SELECT cluster, max(revision) AS highest, argMax(leader, revision) AS leader
    FROM {db:Identifier}.checkpoints_highest
    GROUP BY cluster
) AS c
LEFT JOIN
(
    SELECT cluster, max(generation) AS newest, argMax(timeline, generation) AS tline, argMax(resume_revision, generation) AS resume
    FROM {db:Identifier}.etcd_timelines FINAL
    GROUP BY cluster
) AS t ON t.cluster = c.cluster
LEFT JOIN
(
    SELECT cluster, timeline, argMax(revision, replace_version) AS revision, argMax(leader, replace_version) AS leader, argMax(term, replace_version) AS term, count() AS n
    FROM {db:Identifier}.checkpoints_fenced
    GROUP BY cluster, timeline
) AS f ON f.cluster = c.cluster AND f.timeline = t.tline
LEFT JOIN
(
    SELECT k.cluster AS cluster, max(k.revision) AS since_all, maxIf(k.revision, k.term = 0) AS since_unfenced
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
