-- compatible-from: 10
-- asyncexec schema, migration 15: a small final payload in the row.
--
--   payload_inline  the result (completed) or error (failed) as received,
--                   when the callback that ended the execution sent at
--                   most 1024 bytes (REPO_INLINE_MAX, src/repo/repo.h;
--                   tests/db/test_repo.c compares the two); NULL for a
--                   larger one, and for every execution that something
--                   else ended (expiry, revocation, an operator). A copy:
--                   result_payload and error_payload still hold every
--                   payload, and stay what every other reader reads.
--
-- A poll reads it with the row, in the poll's one statement, only where
-- the caller's poll token and key lineage hashes match there (an
-- outsider's poll reads no more than before); a larger payload, and a
-- row without a lineage (from before migration 7), take a second
-- statement as before. Nothing sets it on an execution that has not ended, and an
-- execution ends once, so it never disagrees with the payload columns.
--
-- One column added at the end, instantly (no table copy): a binary of
-- schema 10 to 14 runs unchanged on it (what it ends has no copy, and
-- polls of those take the second statement).
ALTER TABLE s2r_async_execution
  ADD COLUMN IF NOT EXISTS payload_inline VARBINARY(1024) NULL,
  ALGORITHM=INSTANT;
