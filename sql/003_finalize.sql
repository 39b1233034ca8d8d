-- asyncexec schema, migration 3: callback finalization in one round trip.
--
-- s2r_finalize is the compare-and-set behind complete, fail and cancelled:
-- one UPDATE ... WHERE id = ? AND status = 'waiting_callback' AND
-- callback_token_hash = ?, which also requires that the calling backend
-- key serves the execution's route (and, for 'cancelled', a pending
-- cancel request). Of any number of racing callbacks exactly one matches.
-- It then returns one row (none for an unknown id):
--   won, served, correlation_id, status, cancel_requested, created_at,
--   updated_at, completed_at, expires_at
-- so the caller answers 200, 404 or 409 without a second round trip.
CREATE PROCEDURE s2r_finalize(
  IN p_id      BIGINT UNSIGNED,
  IN p_key_id  BIGINT UNSIGNED,
  IN p_token   BINARY(32),
  IN p_to      VARCHAR(16),
  IN p_payload LONGBLOB,
  IN p_now     DATETIME(3))
  MODIFIES SQL DATA
BEGIN
  DECLARE v_won INT DEFAULT 0;

  UPDATE s2r_async_execution e
     SET e.status = p_to,
         e.result_payload = IF(p_to = 'completed', p_payload, e.result_payload),
         e.error_payload = IF(p_to = 'failed', p_payload, e.error_payload),
         e.completed_at = p_now,
         e.updated_at = p_now
   WHERE e.id = p_id
     AND e.status = 'waiting_callback'
     AND e.callback_token_hash = p_token
     AND (p_to <> 'cancelled' OR e.cancel_requested = 1)
     AND EXISTS (SELECT 1 FROM s2r_backend_key_route kr
                   JOIN s2r_route r ON r.id = kr.route_id
                  WHERE kr.key_id = p_key_id
                    AND r.environment = e.environment
                    AND r.service_key = e.service_key
                    AND r.operation_key = e.operation_key);
  SET v_won = ROW_COUNT();

  -- The winner is served by construction; only a loser needs the check.
  SELECT v_won,
         IF(v_won = 1, 1,
            EXISTS (SELECT 1 FROM s2r_backend_key_route kr
                      JOIN s2r_route r ON r.id = kr.route_id
                     WHERE kr.key_id = p_key_id
                       AND r.environment = e.environment
                       AND r.service_key = e.service_key
                       AND r.operation_key = e.operation_key)),
         e.correlation_id, e.status, e.cancel_requested, e.created_at,
         e.updated_at, e.completed_at, e.expires_at
    FROM s2r_async_execution e
   WHERE e.id = p_id;
END
