-- compatible-from: 4
-- asyncexec schema, migration 5: poll-token key versions and rolling upgrades.
--
-- The key that seals execution ids in poll tokens can be rotated
-- (`asyncexec-admin poll-key rotate`): version N >= 1 is the row named
-- 'poll_token_id_key.N' of s2r_secret, version 0 the original
-- 'poll_token_id_key'. A token sealed with version N >= 1 starts with one
-- base64url character naming N; version-0 tokens keep their 65-character
-- form, so binaries of schema 4 still open them during a rolling upgrade.
-- retire_at: when a rotated-out key stops opening tokens (NULL: never).
--
-- compatible_from: the oldest schema version a binary may be built for
-- and still run on a database that has this migration (the line
-- "-- compatible-from: N" at the top of each migration, recorded by
-- migrate). /readyz of a binary built for schema B reports ready on a
-- newer schema when every migration after B is compatible from B or
-- earlier. NULL (migrations before this one): compatible only with its
-- own version.
ALTER TABLE s2r_secret ADD COLUMN IF NOT EXISTS retire_at DATETIME(3) NULL;
ALTER TABLE s2r_schema_version ADD COLUMN IF NOT EXISTS compatible_from INT UNSIGNED NULL;
