-- compatible-from: 7
-- asyncexec schema, migration 8: progress, retryable failures and the
-- idempotent winner (contract v2). All columns are NULL-able additions
-- (instant ALTER on MariaDB 10.6+); no index changes.
--   progress_payload  the last progress value a heartbeat sent, as sent
--                     (at most 16 KiB); kept after the execution ends.
--   not_before        a retryable failure's retry time: claim skips the
--                     execution until then (checked on the rows
--                     ix_exec_claim yields, like expires_at).
--   last_error        the error object of the last retryable failure.
--   winner_hash       SHA-256 of the winning callback's verb and body,
--                     next to callback_token_hash: the winner repeating
--                     itself byte for byte gets its 200 again.
ALTER TABLE s2r_async_execution
  ADD COLUMN IF NOT EXISTS progress_payload BLOB NULL,
  ADD COLUMN IF NOT EXISTS not_before DATETIME(3) NULL,
  ADD COLUMN IF NOT EXISTS last_error LONGBLOB NULL,
  ADD COLUMN IF NOT EXISTS winner_hash BINARY(32) NULL;
