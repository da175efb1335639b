-- Schema version 6: a marker per batch of the cluster's audit log
-- (internal/audit), so that a batch tried again is not stored twice. A
-- node's writer inserts (writer, seq) with its batch, in the same
-- statement, and the batch's rows only if the marker was new: a try
-- whose commit succeeded but whose answer was lost (a connection cut, a
-- timeout) leaves the marker, and the next try of the same batch inserts
-- nothing. writer is random per process; each statement deletes the
-- writer's older markers, so a running writer keeps one row, and markers
-- of stopped writers are deleted when a week old.
CREATE TABLE coffer_audit_batches (
	writer  int8 NOT NULL,
	seq     int8 NOT NULL,
	time_ns int8 NOT NULL,
	PRIMARY KEY (writer, seq)
);
