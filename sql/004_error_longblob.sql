-- compatible-from: 3
-- asyncexec schema, migration 4: failure payloads as large as results.
-- fail accepts a body of up to max_result_bytes (default 4 MiB), but
-- error_payload was a BLOB (65,535 bytes): a larger error got MariaDB
-- error 1406 for ever (strict mode) or was cut silently (non-strict).
-- LONGBLOB, like request_payload and result_payload. The connection's
-- init command also pins a strict sql_mode (src/db.c), so no server
-- setting can truncate a payload.
-- Rerunnable after an interruption as it is: the MODIFY states the
-- column's whole definition, the same where it ran.
ALTER TABLE s2r_async_execution
  MODIFY error_payload LONGBLOB NULL;
