-- compatible-from: 5
-- asyncexec schema, migration 6: the last run of each job, for /metrics.
-- asyncexec-expire writes one row ('expire') at the end of every run that
-- took the run lock (dry runs and skipped runs write nothing): when it
-- ran, how it ended, when it last succeeded, and what it changed.
-- GET /metrics reads it by primary key (asyncexec_expire_* series), so an
-- operator can alert on an expiry that stopped running or failing runs.
CREATE TABLE IF NOT EXISTS s2r_job_run (
  job             VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  last_run_at     DATETIME(3) NOT NULL,
  last_result     VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  last_success_at DATETIME(3) NULL,
  expired         BIGINT UNSIGNED NOT NULL DEFAULT 0,
  cancelled       BIGINT UNSIGNED NOT NULL DEFAULT 0,
  abandoned       BIGINT UNSIGNED NOT NULL DEFAULT 0,
  purged          BIGINT UNSIGNED NOT NULL DEFAULT 0,
  retries         BIGINT UNSIGNED NOT NULL DEFAULT 0,
  duration_ms     BIGINT UNSIGNED NOT NULL DEFAULT 0,
  PRIMARY KEY (job)
) ENGINE=InnoDB;
