-- compatible-from: 8
-- asyncexec schema, migration 9: per-tenant quota of open executions.
-- s2r_tenant holds the limit asyncexec-admin tenant set TENANT --max-open N
-- writes (a tenant without a row, or with 0, is unlimited). Submit reads
-- it by primary key, at most once per cache_ttl_seconds per worker and
-- tenant, never on a hot row: nothing is written per submit.
CREATE TABLE IF NOT EXISTS s2r_tenant (
  tenant_id       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  max_open        INT UNSIGNED NOT NULL DEFAULT 0,
  updated_at      DATETIME(3) NOT NULL,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB;
-- The waiting executions of a tenant with a limit N are counted on this
-- index's range (tenant, 'waiting_callback'), at most N + 1 entries
-- (a LIMIT), so the count is bounded by the quota itself and never scans
-- the tenant's history. uq_exec_correlation also starts with the tenant,
-- but its range holds every status (it grows until the purge).
ALTER TABLE s2r_async_execution
  ADD KEY IF NOT EXISTS ix_exec_tenant_open (initiator_tenant_id, status),
  ALGORITHM=INPLACE, LOCK=NONE;
