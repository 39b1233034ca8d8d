-- asyncexec schema, migration 3: the key that seals execution ids in poll tokens.
-- A poll token is the sealed id (AES-128 of the execution id, 22 base64url
-- characters) followed by the 43-character secret whose SHA-256 is
-- poll_token_hash. The sealed id lets poll and cancel read the row by its
-- primary key; without this key it reveals nothing, not even how many
-- executions exist. The key itself is not made here: `asyncexec-admin
-- migrate` draws it from its own random source and inserts it with
-- INSERT IGNORE right after this migration (the server's RANDOM_BYTES
-- needs MariaDB 10.10+, and MySQL 8 has no such function). A key already
-- present (made by an earlier build's migration) stays; replacing it
-- invalidates every poll token issued so far.
CREATE TABLE IF NOT EXISTS s2r_secret (
  name        VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  secret      VARBINARY(64) NOT NULL,
  created_at  DATETIME(3) NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB;
