-- compatible-from: 10
-- asyncexec schema, migration 14: the lease in the claim index.
--
-- An execution that a backend claimed stays waiting_callback, at the head
-- of its route's claim order, until its callback; claim skips it while its
-- lease is live. ix_exec_claim did not hold lease_expires_at, so every
-- claim read the row of each such entry ahead of the work it handed out:
-- with 20,000 executions in flight on a route, 84 ms of the server's time
-- per claim. As the index's last column the lease is tested on the entry
-- (index condition pushdown, tests/db/test_claim_plan.c): 16 ms there, and
-- no row read. A claim, a heartbeat, a retryable failure and an
-- operator's requeue (which set lease_expires_at) now move the
-- execution's entry of this index; nothing reads it in another order.
--
-- Indexes only: a binary of schema 10 to 13 runs unchanged on it.
-- Rerunnable after an interruption as it is (as sql/010): the key is
-- dropped and added in one ALTER, which works on either definition.
ALTER TABLE s2r_async_execution
  DROP KEY ix_exec_claim,
  ADD KEY ix_exec_claim (environment, service_key, operation_key, status,
                         cancel_requested, priority DESC, due_at, id,
                         lease_expires_at),
  ALGORITHM=INPLACE, LOCK=NONE;
