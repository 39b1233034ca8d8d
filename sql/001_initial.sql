-- asyncexec schema, migration 1.
-- All timestamps are UTC DATETIME(3) written by the application.
-- Secrets (API keys, poll tokens, callback tokens) are stored only as
-- their SHA-256 (BINARY(32)).

CREATE TABLE IF NOT EXISTS s2r_route (
  id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  environment     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  service_key     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  operation_key   VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  retention_days  INT UNSIGNED NOT NULL DEFAULT 7,
  enabled         TINYINT(1) NOT NULL DEFAULT 1,
  created_at      DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_route (environment, service_key, operation_key)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS s2r_api_key (
  id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  kind            ENUM('consumer','backend') NOT NULL,
  key_hash        BINARY(32) NOT NULL,
  tenant_id       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  label           VARCHAR(128) NULL,
  created_at      DATETIME(3) NOT NULL,
  revoked_at      DATETIME(3) NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uq_api_key_hash (key_hash)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS s2r_backend_key_route (
  key_id          BIGINT UNSIGNED NOT NULL,
  route_id        BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (key_id, route_id),
  KEY ix_bkr_route (route_id),
  CONSTRAINT fk_bkr_key FOREIGN KEY (key_id) REFERENCES s2r_api_key (id),
  CONSTRAINT fk_bkr_route FOREIGN KEY (route_id) REFERENCES s2r_route (id)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS s2r_async_execution (
  id                  BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  correlation_id      VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  environment         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  service_key         VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  operation_key       VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  status              ENUM('waiting_callback','completed','failed','expired','cancelled')
                      NOT NULL DEFAULT 'waiting_callback',
  request_payload     LONGBLOB NOT NULL,
  request_sha256      BINARY(32) NOT NULL,
  result_payload      LONGBLOB NULL,
  error_payload       BLOB NULL,
  initiator_tenant_id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  initiator_key_hash  BINARY(32) NULL,
  poll_token_hash     BINARY(32) NULL,
  callback_token_hash BINARY(32) NULL,
  attempts            INT UNSIGNED NOT NULL DEFAULT 0,
  lease_expires_at    DATETIME(3) NULL,
  cancel_requested    TINYINT(1) NOT NULL DEFAULT 0,
  created_at          DATETIME(3) NOT NULL,
  updated_at          DATETIME(3) NOT NULL,
  completed_at        DATETIME(3) NULL,
  expires_at          DATETIME(3) NOT NULL,
  PRIMARY KEY (id),
  -- poll, cancel and resubmit: one row by (tenant, route, correlation id)
  UNIQUE KEY uq_exec_correlation (initiator_tenant_id, environment, service_key,
                                  operation_key, correlation_id),
  -- claim: waiting, not cancel-requested executions of a route, oldest first
  KEY ix_exec_claim (environment, service_key, operation_key, status,
                     cancel_requested, id),
  -- expiry and purge: by status and expiry time
  KEY ix_exec_expiry (status, expires_at)
) ENGINE=InnoDB;
