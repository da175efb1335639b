-- Coffer metadata on PostgreSQL, schema version 1: the ordered key-value
-- layout of internal/meta (keys.go) in one table, and bucket usage in
-- sharded counter rows. See docs/design/0011-postgres-metadata.md.

-- Every record of the typed layer but usage: bytea keys compare as
-- unsigned bytes (memcmp, then length), exactly as Pebble orders them, so
-- the primary-key B-tree serves every point read and range scan.
-- fillfactor leaves room on each page for HOT updates of overwritten
-- records.
CREATE TABLE coffer_kv (
	k bytea PRIMARY KEY,
	v bytea NOT NULL
) WITH (fillfactor = 90);

-- The usage table ('c' bucket): one row per bucket and shard. A commit adds
-- its change to the shard of its backend (pg_backend_pid() % 64), so
-- concurrent writers of one bucket rarely touch the same row; readers sum
-- the shards.
CREATE TABLE coffer_usage (
	k          bytea NOT NULL,
	shard      int2  NOT NULL,
	objects    int8  NOT NULL,
	bytes      int8  NOT NULL,
	uploads    int8  NOT NULL,
	part_bytes int8  NOT NULL,
	PRIMARY KEY (k, shard)
);

-- Usage values as the typed layer decodes them (usage.go: tag 1, then four
-- big-endian int64 fields).
CREATE VIEW coffer_usage_sum AS
SELECT k,
	'\x01'::bytea || int8send(sum(objects)::int8) || int8send(sum(bytes)::int8)
		|| int8send(sum(uploads)::int8) || int8send(sum(part_bytes)::int8) AS v
FROM coffer_usage
GROUP BY k;

-- The format key ('v' → 1, usage_check.go): a new database has nothing to
-- count.
INSERT INTO coffer_kv (k, v) VALUES ('\x76'::bytea, '\x01'::bytea);
