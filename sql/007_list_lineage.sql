-- compatible-from: 6
-- asyncexec schema, migration 7: listing executions and key rotation.
--
-- Keys carry a lineage: lineage_id is the id of the first key of the
-- lineage (`asyncexec-admin key rotate` gives the new key the lineage of
-- the old one). NULL (a key made by a schema-6 binary during a rolling
-- upgrade) reads as the key's own id. A revoked_at in the future is a
-- grace period: the key works until then.
--
-- initiator_lineage: the initiator's lineage identity, SHA-256 of
-- "lineage:<lineage id>". Poll, cancel and list compare it with the
-- caller key's, and a row without it (inserted by a schema-6 binary) is
-- matched by initiator_key_hash as before and is not listed.
--
-- ix_exec_list serves GET /v1/executions/{env}/{svc}/{op} newest first
-- (id descending), ix_exec_list_status the same with ?status=. Both are
-- entered by their whole prefix, so a page reads limit + 1 entries.
ALTER TABLE s2r_api_key ADD COLUMN IF NOT EXISTS lineage_id BIGINT UNSIGNED NULL;
UPDATE s2r_api_key SET lineage_id = id WHERE lineage_id IS NULL;
ALTER TABLE s2r_async_execution
  ADD COLUMN IF NOT EXISTS initiator_lineage BINARY(32) NULL,
  ADD KEY IF NOT EXISTS ix_exec_list (initiator_lineage, environment,
                                      service_key, operation_key, id),
  ADD KEY IF NOT EXISTS ix_exec_list_status (initiator_lineage, environment,
                                             service_key, operation_key,
                                             status, id);
UPDATE s2r_async_execution e JOIN s2r_api_key k
  ON k.key_hash = e.initiator_key_hash
  SET e.initiator_lineage = UNHEX(SHA2(CONCAT('lineage:',
      COALESCE(k.lineage_id, k.id)), 256))
  WHERE e.initiator_lineage IS NULL;
