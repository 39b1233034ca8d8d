-- compatible-from: 9
-- asyncexec schema, migration 10: completion notifications (contract v3).
--
-- s2r_webhook_endpoint: a tenant's receiver (asyncexec-admin webhook add).
-- The route columns are all NULL (every route of the tenant) or all set.
-- events is the set of terminal statuses it wants. The signing secret
-- cannot be a hash (it signs): secret_sealed is AES-256-GCM under a key
-- derived from webhook_key_file, a file outside the database, so a dump
-- alone does not reveal it. During a rotation the previous secret
-- (secret_old_sealed) signs as well until secret_old_until.
--
-- The outbox: every statement that ends an execution also sets
-- s2r_async_execution.notify to whether its tenant has an enabled
-- endpoint (a subquery on ix_endpoint_tenant, in the same statement and
-- transaction, so no transition can happen without its mark). The mark
-- rides in ix_exec_tenant_open, whose entry the status change rewrites
-- anyway: a tenant without endpoints pays no index write more than
-- before. asyncexec-notify reads a tenant's marked terminal executions on
-- that index, creates one delivery per matching endpoint and clears the
-- mark, in one transaction; uq_delivery makes a repeat a no-op.
--
-- s2r_webhook_delivery: one event for one endpoint. webhook_id and body
-- are fixed at creation (every attempt sends the same). due_at is the
-- next attempt while pending and the lease's end while leased: the sender
-- leases due rows on ix_delivery_due with SKIP LOCKED and a fresh
-- lease_token, and only the holder of the token records the outcome.
CREATE TABLE IF NOT EXISTS s2r_webhook_endpoint (
  id                BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  tenant_id         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  environment       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  service_key       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  operation_key     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  url               VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  events            SET('completed','failed','expired','cancelled') NOT NULL,
  enabled           TINYINT(1) NOT NULL DEFAULT 1,
  disabled_reason   VARCHAR(255) CHARACTER SET utf8mb4 NULL,
  secret_sealed     VARBINARY(128) NOT NULL,
  secret_old_sealed VARBINARY(128) NULL,
  secret_old_until  DATETIME(3) NULL,
  created_at        DATETIME(3) NOT NULL,
  updated_at        DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  KEY ix_endpoint_tenant (tenant_id, enabled)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS s2r_webhook_delivery (
  id                BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  endpoint_id       BIGINT UNSIGNED NOT NULL,
  execution_id      BIGINT UNSIGNED NOT NULL,
  webhook_id        VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  event             ENUM('completed','failed','expired','cancelled') NOT NULL,
  body              BLOB NOT NULL,
  state             ENUM('pending','leased','delivered','dead') NOT NULL
                    DEFAULT 'pending',
  attempts          INT UNSIGNED NOT NULL DEFAULT 0,
  due_at            DATETIME(3) NOT NULL,
  lease_token       BINARY(16) NULL,
  last_status       SMALLINT UNSIGNED NULL,
  last_error        VARCHAR(255) CHARACTER SET utf8mb4 NULL,
  created_at        DATETIME(3) NOT NULL,
  updated_at        DATETIME(3) NOT NULL,
  delivered_at      DATETIME(3) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_delivery (endpoint_id, execution_id),
  KEY ix_delivery_due (state, due_at),
  KEY ix_delivery_endpoint (endpoint_id, created_at)
) ENGINE=InnoDB;
ALTER TABLE s2r_async_execution
  ADD COLUMN IF NOT EXISTS notify TINYINT(1) NOT NULL DEFAULT 0, ALGORITHM=INSTANT;
-- Rerunnable after an interruption (migrate runs an unrecorded migration
-- again): every statement is a no-op where it ran (IF NOT EXISTS), and the
-- key redefined here is dropped and added in one ALTER without IF EXISTS /
-- IF NOT EXISTS, which works on the old and on the new definition alike
-- (with both clauses MariaDB tests IF NOT EXISTS before the DROP, skips the
-- ADD and loses the key).
ALTER TABLE s2r_async_execution
  DROP KEY ix_exec_tenant_open,
  ADD KEY ix_exec_tenant_open (initiator_tenant_id, status, notify),
  ALGORITHM=INPLACE, LOCK=NONE;
