-- 002: API tokens, stored hashed (sha256 of the secret; the secret itself is shown once).
-- Parameters: {db:Identifier}.

CREATE TABLE IF NOT EXISTS {db:Identifier}.api_tokens
(
    token_hash  String,
    token_id    String,                 -- the public prefix of the token, for listing and revoking
    identity    String,
    roles       Array(LowCardinality(String)),
    created_at  DateTime64(3, 'UTC') DEFAULT now64(3),
    revoked     UInt8 DEFAULT 0
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY token_hash;
