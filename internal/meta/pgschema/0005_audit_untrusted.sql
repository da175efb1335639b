-- Schema version 5: untrusted events of the cluster's audit log
-- (internal/audit, Event.Untrusted): those a stranger could cause
-- (refused or unauthenticated requests, and the summaries of their
-- counts). They may take at most a quarter of the size cap and are
-- evicted first, oldest first, through the partial index. Existing rows
-- count as trusted: nothing told them apart. The column has a constant
-- default, so adding it rewrites nothing; building the index reads the
-- table once.
ALTER TABLE coffer_audit ADD COLUMN untrusted boolean NOT NULL DEFAULT false;
CREATE INDEX coffer_audit_untrusted ON coffer_audit (id) WHERE untrusted;

ALTER TABLE coffer_audit_state ADD COLUMN untrusted int8 NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION coffer_audit_count() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		UPDATE coffer_audit_state SET events = events + (SELECT count(*) FROM coffer_audit_new),
			untrusted = untrusted + (SELECT count(*) FROM coffer_audit_new WHERE untrusted);
	ELSIF TG_OP = 'DELETE' THEN
		UPDATE coffer_audit_state SET events = events - (SELECT count(*) FROM coffer_audit_old),
			untrusted = untrusted - (SELECT count(*) FROM coffer_audit_old WHERE untrusted);
	ELSE
		UPDATE coffer_audit_state SET events = 0, untrusted = 0, evicted_at_size = 0;
	END IF;
	RETURN NULL;
END $$;
