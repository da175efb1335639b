-- Schema version 2: a version counter per kind of cached state (IAM state,
-- bucket policies, bucket configurations). A transaction that writes such
-- state adds one to its kind's row and notifies the kind's channel, both
-- at commit: nodes LISTEN for the notification and poll these rows as a
-- fallback. See docs/design/0011-postgres-metadata.md.
CREATE TABLE coffer_changes (
	kind    text PRIMARY KEY,
	version int8 NOT NULL
);
