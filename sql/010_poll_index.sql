-- compatible-from: 8
-- asyncexec schema, migration 10: the completed poll in one statement.
-- A poll reads the execution by id and, in the same SELECT, its payloads
-- through a self-join on this index: the joined row is looked up by the
-- caller's poll token hash, so a caller without the token matches no
-- index entry and the payloads (up to max_result_bytes) are never read:
-- an outsider's poll of an execution with a large result costs what a
-- poll of an unknown id costs (tests/http test_http_poll timing_oracle).
-- Only an index is added: binaries of schema 8 and 9 serve it unchanged.
ALTER TABLE s2r_async_execution
  ADD KEY ix_exec_poll (poll_token_hash),
  ALGORITHM=INPLACE, LOCK=NONE;
