-- asyncexec schema, migration 2: asyncexec-expire.
-- The abandon rule (still waiting, attempts >= max_attempts, lease lapsed)
-- is served by (status, attempts): the range holds only executions that
-- reached max_attempts and still wait, so a run never scans the backlog.
-- Heartbeats (which move lease_expires_at) do not touch this index.
-- Expiry and purge use ix_exec_expiry (status, expires_at) from migration 1.
ALTER TABLE s2r_async_execution
  ADD KEY ix_exec_abandon (status, attempts),
  ALGORITHM=INPLACE, LOCK=NONE;
