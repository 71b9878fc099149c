-- Version 3: one row per key holding its current minute (requests and
-- tokens) and its current budget period (tokens), so that one statement
-- checks a request against every limit of its key and reserves its tokens
-- (limits.go: reserveShared). The budget windows of version 2 carry over.
CREATE TABLE limit_counters (
    key_name        TEXT PRIMARY KEY,
    minute_start    BIGINT NOT NULL,
    minute_requests BIGINT NOT NULL,
    minute_tokens   BIGINT NOT NULL,
    budget_start    BIGINT NOT NULL,
    budget_tokens   BIGINT NOT NULL
);
INSERT INTO limit_counters (key_name, minute_start, minute_requests, minute_tokens, budget_start, budget_tokens)
SELECT w.key_name, 0, 0, 0, w.window_start, w.tokens FROM limit_windows w
WHERE w.window_kind = 'b' AND w.window_start = (SELECT MAX(x.window_start) FROM limit_windows x WHERE x.key_name = w.key_name AND x.window_kind = 'b');
