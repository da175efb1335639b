-- Schema version 4: what the cluster's audit log (internal/audit) decides
-- its size cap by, kept in the database rather than in each node's
-- memory. See docs/design/0011-postgres-metadata.md, "The cluster's audit
-- log".
--
-- events is the number of rows of coffer_audit, kept exact by the
-- triggers below whoever inserts or deletes (a node, an older node during
-- a rolling upgrade, an operator): counting 10 million rows would take
-- seconds, and max(id) - min(id) + 1 counts the gaps that failed inserts
-- and deletions leave. evicted_at_size is the size of the table
-- (pg_total_relation_size) when the cap last made the log evict:
-- PostgreSQL does not shrink a table on DELETE, so the log evicts again
-- only once the table has grown past it. It lived in each node's memory
-- and started at 0, so every node's start evicted a tenth of the log.
CREATE TABLE coffer_audit_state (
	id              int4 PRIMARY KEY CHECK (id = 1),
	events          int8 NOT NULL,
	evicted_at_size int8 NOT NULL DEFAULT 0
);
-- Older nodes may be writing during a rolling upgrade: the table is locked
-- against their inserts and deletes (until this migration commits, the
-- triggers below included), or rows they committed between the count and
-- the triggers would never be counted.
LOCK TABLE coffer_audit IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO coffer_audit_state (id, events) SELECT 1, count(*) FROM coffer_audit;

-- One function for the three triggers; search_path is this schema's, so
-- that a DELETE run from a session with another search_path counts here.
CREATE FUNCTION coffer_audit_count() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		UPDATE coffer_audit_state SET events = events + (SELECT count(*) FROM coffer_audit_new);
	ELSIF TG_OP = 'DELETE' THEN
		UPDATE coffer_audit_state SET events = events - (SELECT count(*) FROM coffer_audit_old);
	ELSE
		UPDATE coffer_audit_state SET events = 0, evicted_at_size = 0;
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER coffer_audit_inserted AFTER INSERT ON coffer_audit
	REFERENCING NEW TABLE AS coffer_audit_new FOR EACH STATEMENT EXECUTE FUNCTION coffer_audit_count();
CREATE TRIGGER coffer_audit_deleted AFTER DELETE ON coffer_audit
	REFERENCING OLD TABLE AS coffer_audit_old FOR EACH STATEMENT EXECUTE FUNCTION coffer_audit_count();
CREATE TRIGGER coffer_audit_truncated AFTER TRUNCATE ON coffer_audit
	FOR EACH STATEMENT EXECUTE FUNCTION coffer_audit_count();
