-- compatible-from: 10
-- asyncexec schema, migration 13: terminal outcomes per route over time,
-- for the dashboard's Routes page (contract v3).
--
--   ix_exec_completed   executions by status and the time they ended:
--                       asyncexec-expire reads the ones that ended since its
--                       last count as one range per terminal status (never
--                       the whole table); the dashboard's Attention page reads
--                       the latest failures and expiries from its end. Every
--                       terminal transition rewrites the status anyway.
--   s2r_route_outcome   the rollup: how many executions of a route ended
--                       in each status in each 5-minute UTC interval
--                       (bucket, its start). asyncexec-expire adds to it
--                       every run and deletes intervals older than two
--                       days; the dashboard sums a route's last hour and
--                       day by primary key.
--   s2r_rollup_mark     one row (id 1): the completed_at up to which the
--                       rollup has counted, moved in the transaction that
--                       adds the counts, so that each execution is counted
--                       once.
--
-- Additive: a binary of schema 10, 11 or 12 runs unchanged on it.
ALTER TABLE s2r_async_execution
  ADD KEY IF NOT EXISTS ix_exec_completed (status, completed_at),
  ALGORITHM=INPLACE, LOCK=NONE;
CREATE TABLE IF NOT EXISTS s2r_route_outcome (
  environment     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  service_key     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  operation_key   VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  bucket          DATETIME NOT NULL,
  status          ENUM('completed','failed','expired','cancelled') NOT NULL,
  ended           BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (environment, service_key, operation_key, bucket, status)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS s2r_rollup_mark (
  id              TINYINT UNSIGNED NOT NULL,
  counted_until   DATETIME(3) NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB;
