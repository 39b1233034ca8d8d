-- compatible-from: 10
-- asyncexec schema, migration 12: revoked initiators (contract v3).
--
-- When the last live key of a lineage is revoked (asyncexec-admin key
-- revoke) or its rotation grace ends, the lineage's unclaimed waiting
-- executions fail with the error code initiator_revoked (claim already
-- refuses them: migration 11).
--
--   ix_exec_lineage  a lineage's executions by status, in id order: key
--                    revoke and asyncexec-expire's revoked step read the
--                    waiting ones of one lineage as one range (no other
--                    status, no other lineage read).
--   ix_key_revoked   the keys whose revoked_at has passed: where the
--                    revoked step looks for dead lineages.
--
-- Indexes only: a binary of schema 10 or 11 runs unchanged on it.
ALTER TABLE s2r_async_execution
  ADD KEY IF NOT EXISTS ix_exec_lineage (initiator_lineage_id, status, id),
  ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE s2r_api_key ADD KEY IF NOT EXISTS ix_key_revoked (revoked_at);
