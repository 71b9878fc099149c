-- Version 1: the keys. A key is stored as the SHA-256 of its text, never
-- the text. Times are Unix seconds; 0 is "never" / "not revoked".
CREATE TABLE api_keys (
    name                  TEXT PRIMARY KEY,
    key_hash              TEXT NOT NULL UNIQUE,
    models                TEXT NOT NULL DEFAULT '',
    rpm                   BIGINT NOT NULL DEFAULT 0,
    tpm                   BIGINT NOT NULL DEFAULT 0,
    budget_tokens         BIGINT NOT NULL DEFAULT 0,
    budget_period_seconds BIGINT NOT NULL DEFAULT 0,
    created_at            BIGINT NOT NULL,
    expires_at            BIGINT NOT NULL DEFAULT 0,
    revoked_at            BIGINT NOT NULL DEFAULT 0
);
