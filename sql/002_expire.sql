-- asyncexec schema, migration 2: asyncexec-expire.
-- The abandon rule (still waiting, attempts >= max_attempts, lease lapsed)
-- is served by (attempts): the range attempts >= max_attempts holds only
-- executions claimed that often (few; the waiting ones among them are the
-- candidates), so a run never scans the backlog. status is deliberately
-- not part of the key: finalizing an execution (a status change) then
-- does not move an entry of this index. Heartbeats (which move
-- lease_expires_at) do not touch it either.
-- Expiry and purge use ix_exec_expiry (status, expires_at) from migration 1.
ALTER TABLE s2r_async_execution
  ADD KEY IF NOT EXISTS ix_exec_abandon (attempts),
  ALGORITHM=INPLACE, LOCK=NONE;
