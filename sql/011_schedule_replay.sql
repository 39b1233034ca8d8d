-- compatible-from: 10
-- asyncexec schema, migration 11: scheduled start, deadline, priority,
-- revoked initiators and replay (contract v3).
--
--   priority     X-Priority, 0..9 (claim: higher first).
--   due_at       when the execution may be claimed: X-Not-Before (or
--                created_at + X-Delay-Seconds), else created_at; a
--                retryable failure moves it to the retry time (with
--                not_before, which claim checks as before). A schema-10
--                binary does not write it: the default, the server's UTC
--                clock, is its created_at; its retries keep an earlier
--                due_at and are held back by not_before alone.
--   sched_hash   SHA-256 of the scheduling headers as stored
--                ("nb=MS;dl=MS;p=N"), NULL without any: an identical
--                resubmit must repeat them.
--   replay_of    the execution this one replays (asyncexec-admin execution
--                replay); unique, so racing replays of one execution
--                create one. replaced_by: the original's link to it.
--
-- ix_exec_claim gets (priority DESC, due_at) after the equality prefix:
-- the claim reads it as one range per priority, (route, waiting, not
-- cancel-requested, p, due_at <= now), in index order, so it hands out
-- higher priorities first, then the earliest due, with no filesort, and
-- never reads an entry that is not due yet.
--
-- initiator_lineage_id: the lineage (the id of its first key, migration 7)
-- of the submitting key, beside initiator_lineage (its hash), so that
-- claim can ask whether the lineage still has a live key: the first key
-- (id) or a rotated one (lineage_id, ix_key_lineage), read without
-- locking the keys. NULL (a row a schema-10 binary inserted) is not
-- checked.
--
-- Rerunnable after an interruption, as sql/010: IF NOT EXISTS, the
-- redefined ix_exec_claim dropped and added in one ALTER (a rerun builds
-- it again), and the two UPDATEs set values that depend only on the row
-- and its key, the same each time.
ALTER TABLE s2r_async_execution
  ADD COLUMN IF NOT EXISTS priority TINYINT UNSIGNED NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS due_at DATETIME(3) NOT NULL DEFAULT (UTC_TIMESTAMP(3)),
  ADD COLUMN IF NOT EXISTS sched_hash BINARY(32) NULL,
  ADD COLUMN IF NOT EXISTS replay_of BIGINT UNSIGNED NULL,
  ADD COLUMN IF NOT EXISTS replaced_by BIGINT UNSIGNED NULL,
  ADD COLUMN IF NOT EXISTS initiator_lineage_id BIGINT UNSIGNED NULL;
UPDATE s2r_async_execution SET due_at = COALESCE(not_before, created_at)
  WHERE status = 'waiting_callback';
ALTER TABLE s2r_async_execution
  DROP KEY ix_exec_claim,
  ADD KEY ix_exec_claim (environment, service_key, operation_key, status,
                         cancel_requested, priority DESC, due_at, id),
  ADD UNIQUE KEY IF NOT EXISTS uq_exec_replay_of (replay_of),
  ALGORITHM=INPLACE, LOCK=NONE;
UPDATE s2r_async_execution e JOIN s2r_api_key k
  ON k.key_hash = e.initiator_key_hash
  SET e.initiator_lineage_id = COALESCE(k.lineage_id, k.id)
  WHERE e.status = 'waiting_callback';
ALTER TABLE s2r_api_key ADD KEY IF NOT EXISTS ix_key_lineage (lineage_id);
