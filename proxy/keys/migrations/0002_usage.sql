-- Version 2: one row per request made with a key, and the windows the
-- limits count in (shared by every replica on Postgres).
CREATE TABLE usage_records (
    at_ms         BIGINT NOT NULL,
    key_name      TEXT NOT NULL,
    alias         TEXT NOT NULL,
    backend       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    input_tokens  BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cached_tokens BIGINT NOT NULL,
    estimated     INTEGER NOT NULL,
    duration_ms   BIGINT NOT NULL,
    status        INTEGER NOT NULL
);
CREATE INDEX usage_records_key_at ON usage_records (key_name, at_ms);
CREATE INDEX usage_records_at ON usage_records (at_ms);
CREATE TABLE limit_windows (
    key_name     TEXT NOT NULL,
    window_kind  TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    requests     BIGINT NOT NULL,
    tokens       BIGINT NOT NULL,
    PRIMARY KEY (key_name, window_kind, window_start)
);
