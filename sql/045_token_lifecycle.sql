-- 045: API token lifecycle: expiry, who issued it, and an audit trail of
-- creating, revoking and using tokens (a use at most once a minute per token
-- and process: enough for "last used", not a row per request).
-- Parameters: {db:Identifier}.

ALTER TABLE {db:Identifier}.api_tokens ADD COLUMN IF NOT EXISTS expires_at_ms Int64 DEFAULT 0;

ALTER TABLE {db:Identifier}.api_tokens ADD COLUMN IF NOT EXISTS issued_at_ms Int64 DEFAULT toUnixTimestamp64Milli(created_at);

ALTER TABLE {db:Identifier}.api_tokens ADD COLUMN IF NOT EXISTS issued_by String DEFAULT '';

CREATE TABLE IF NOT EXISTS {db:Identifier}.token_audit
(
    at          DateTime64(3, 'UTC') DEFAULT now64(3),
    action      LowCardinality(String),   -- create | revoke | use
    token_id    String,
    identity    String,                   -- the token's identity
    actor       String,                   -- who created or revoked it (the identity itself for a use)
    detail      String DEFAULT ''
)
ENGINE = MergeTree
ORDER BY (token_id, at);
