-- Schema version 3: the cluster's audit log (internal/audit), one typed
-- table that every node writes in batches and any node queries. Columns
-- mirror the SQLite log's events table (audit/schema.go): times and
-- durations are Unix nanoseconds, so ranges compare as numbers. Text
-- columns use the "C" collation, so a key-prefix range compares bytes, as
-- SQLite's BINARY does, whatever the database's locale. See
-- docs/design/0011-postgres-metadata.md, "The cluster's audit log".
CREATE TABLE coffer_audit (
	id          int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	time_ns     int8 NOT NULL,
	source      text COLLATE "C" NOT NULL,
	op          text COLLATE "C" NOT NULL,
	status      int4 NOT NULL,
	code        text COLLATE "C" NOT NULL,
	bucket      text COLLATE "C" NOT NULL,
	object_key  text COLLATE "C" NOT NULL,
	target      text COLLATE "C" NOT NULL,
	user_name   text COLLATE "C" NOT NULL,
	access_key  text COLLATE "C" NOT NULL,
	source_ip   text COLLATE "C" NOT NULL,
	request_id  text COLLATE "C" NOT NULL,
	bytes_in    int8 NOT NULL,
	bytes_out   int8 NOT NULL,
	duration_ns int8 NOT NULL,
	count       int8 NOT NULL DEFAULT 0
) WITH (
	-- Retention and the size caps delete the oldest rows in batches;
	-- vacuum soon after, so that new events reuse their space instead of
	-- growing the table.
	autovacuum_vacuum_scale_factor = 0.02
);

-- Every query pages newest first by id under its filters. An index on
-- (column, id) answers "column = x AND id < cursor ORDER BY id DESC LIMIT n"
-- by walking backwards and stopping after n entries, however many events
-- match. One per filter an operator asks by: who (user, access key,
-- source IP), what (op, bucket), where in a bucket (key prefix: a range on
-- (bucket, object_key), whose matching IDs are sorted), when (time, also
-- what retention deletes by), and failures (a partial index: they are
-- the few).
CREATE INDEX coffer_audit_time ON coffer_audit (time_ns);
CREATE INDEX coffer_audit_bucket ON coffer_audit (bucket, id);
CREATE INDEX coffer_audit_bucket_key ON coffer_audit (bucket, object_key);
CREATE INDEX coffer_audit_user ON coffer_audit (user_name, id);
CREATE INDEX coffer_audit_access_key ON coffer_audit (access_key, id);
CREATE INDEX coffer_audit_source_ip ON coffer_audit (source_ip, id);
CREATE INDEX coffer_audit_op ON coffer_audit (op, id);
CREATE INDEX coffer_audit_failed ON coffer_audit (id) WHERE status >= 400;
