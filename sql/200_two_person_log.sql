-- 200: the life of every two-person request (issue 39): requested, approved,
-- rejected, cancelled, and every approval refused (unproven: edited or written
-- around the API; changed: not the request its approver was shown; self;
-- expired). Pending requests live in etcd outside the tailed prefixes, so the
-- lock API writes this record itself, beside the act. `revision`: the etcd
-- revision of the act where it wrote or read etcd. Append-only.
-- Parameters: {db:Identifier}. Every statement is idempotent (IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS {db:Identifier}.two_person_log
(
    at            DateTime64(3, 'UTC') DEFAULT now64(3),
    cluster       LowCardinality(String),
    kind          LowCardinality(String),   -- force-release | epoch-advance
    action        LowCardinality(String),   -- requested | approved | rejected | cancelled | refused-unproven | refused-changed | refused-self | refused-expired
    request_id    String,
    request_hash  String,                   -- '' where the value under the key was no request at all
    actor         String,                   -- who acted (requester, approver, rejecter)
    requester     String,                   -- as the request says ('' when unreadable)
    key           String,                   -- the lock a force-release names ('' for an epoch advance)
    reason        String,                   -- the requester's, or the rejecter's
    revision      UInt64,
    detail        String DEFAULT ''
)
ENGINE = MergeTree
ORDER BY (cluster, at, request_id);
