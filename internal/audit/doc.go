// Package audit is Coffer's audit log: a record of who did what to which
// bucket and key, from where, with what outcome, kept in a SQLite database
// of its own, apart from the metadata and from the debug log.
//
// # What is recorded
//
// One Event per audited action (PRODUCT.md section 5):
//
//   - every S3 request that may change something: any method but GET, HEAD
//     and OPTIONS, whatever its outcome;
//   - every S3 request that failed authentication or authorization (401,
//     403), whatever its method, with the access key it claimed;
//   - every S3 request answered with a server error (5xx);
//   - a sample of the other reads, at the rate given to NewS3Observer
//     (0 by default: none);
//   - admin API actions (Source "admin", Op "admin:CreateUser", ...), which
//     the admin API records itself with Log.Record.
//
// An Event says who (user, access key, source IP without the port), what
// (operation, bucket, key or admin target), the outcome (HTTP status and
// S3 error code) and the cost (bytes in and out, latency), with the
// request ID that ties it to the debug log and to the client's error.
// Secrets, signatures, headers and bodies are never recorded.
//
// # Durability: best effort, never in the way
//
// The request path never waits for the audit log. Record copies the event
// into a bounded in-memory queue (Config.QueueSize) and returns; one writer
// goroutine stores queued events in batches, one SQLite transaction per
// batch, in WAL mode with synchronous=NORMAL. The consequences, chosen on
// purpose:
//
//   - A crash (process or machine) may lose the events of the last
//     FlushInterval (200ms by default) and the last committed batches that
//     the operating system had not yet written to disk.
//   - When the queue is full, because the disk is slower than the request
//     rate or the database is locked, new events are dropped, not waited
//     for. Stats.Dropped counts them and the log says how many, at most
//     once a minute. A failed write loses its batch: Stats.WriteErrors.
//   - Close writes everything queued before it returns; a graceful
//     shutdown loses nothing.
//
// The audit log is therefore evidence of what happened, not a transaction
// log: Stats (Recorded, Dropped, Written, WriteErrors) says how complete it
// is, and should be exported as metrics.
//
// # Retention
//
// With Config.Retention set, events older than that are deleted when the
// log is opened and then every hour (or every Retention/10, if that is
// shorter), by the writer goroutine in bounded batches between writes so
// that recording never stalls behind a large deletion. Prune deletes on
// demand. Deleted rows leave free pages that new events reuse; the file
// does not shrink.
//
// # Reading it
//
// Query returns a page of events, newest first, filtered by time range,
// source, op, bucket, key prefix, user, access key, source IP and failure;
// Page.Next is the cursor of the next page. Export streams every matching
// event as JSON Lines, oldest first. The database is an ordinary SQLite
// file (table events, see schema.go) that the sqlite3 shell can read
// while Coffer runs.
//
// # Where it lives
//
// The integrator chooses the file: <storage-path>/audit.db by default. Its
// directory is created with mode 0700 and the file is kept at 0600 (the
// -wal and -shm files SQLite keeps next to it get the same mode). The
// schema version is PRAGMA user_version; a newer Coffer migrates older
// files at Open, and an older Coffer refuses a newer file.
package audit
