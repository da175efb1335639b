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
//     403, or a 400 for a malformed signature: RequestRecord.AuthFailed),
//     whatever its method, with the access key it claimed;
//   - every S3 request answered with a server error (5xx);
//   - a sample of the other reads, at the rate given to NewS3Observer
//     (0 by default: none);
//   - admin API actions (Source "admin", Op "admin:CreateUser", ...), which
//     the server records with Log.Record, or Log.RecordBounded when they
//     were refused or unauthenticated;
//   - web console sign-ins, sign-outs and changes (Source "console", Op
//     "SignIn", "CreateBucket", "CreateUser", ...), which the console
//     records itself, bounded in the same way when they were refused or
//     came without a session.
//
// An Event says who (user, access key, source IP without the port), what
// (operation, bucket, key or admin target), the outcome (HTTP status and
// S3 error code) and the cost (bytes in and out, latency), with the
// request ID that ties it to the debug log and to the client's error.
// Secrets, signatures, headers and bodies are never recorded.
//
// # Bounded where strangers write
//
// Refused requests and requests without a verified identity can come from
// anyone, as fast as the network carries them; recorded one by one they
// would fill the disk (one anonymous client sending GETs of 1,000-byte
// keys added 270MB in 10s). Their observers record them with
// RecordBounded, not Record:
//
//   - long strings (keys, claimed access keys, ...) are cut to
//     MaxFieldBytes;
//   - per minute, the first Config.PerSource events of each source (kind,
//     IPv4 address or IPv6 /64, outcome) are kept in full, up to
//     Config.PerMinute over all sources, and the rest are counted: per
//     source for the first Config.PerMinute sources, in one count per
//     kind of source and outcome for the others;
//   - when the minute ends, and at Close, each count becomes one summary
//     event: Count holds the number of requests, Target reads "… and
//     4,213 more AccessDenied from 203.0.113.9 in this minute".
//
// So they add at most 2*PerMinute+12 events a minute, and every one is
// accounted for (an event, a summary's Count, or Stats.Dropped). Events
// of authenticated principals, which only key holders can send, are
// recorded in full, one each.
//
// # Size cap
//
// Config.MaxBytes caps the database's pages in use plus its WAL, and
// Config.MaxEvents the events kept. The writer checks after writes (at
// most every 100ms) and every second; past a cap it deletes the oldest
// events (Stats.Evicted), by MaxBytes until 10% under it: the untrusted
// ones (Event.Untrusted: RecordBounded's and summaries) first, so that
// strangers' requests never evict the history of authenticated
// principals while there are strangers' events to evict. Untrusted
// events may besides take at most a quarter of each cap; past it their
// own oldest go. Deleted rows
// leave free pages that new events reuse, so the file stops growing. The
// WAL is checkpointed and cut back to a sixteenth of the cap (64KiB to
// 4MiB), and may exceed that by one write transaction.
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
//   - After a failed write (a full disk, an I/O error) the writer keeps
//     draining the queue but discards what it takes, counted in
//     Stats.WriteErrors, for a second, then twice as long after each
//     further failure up to 30s, before it tries again: a full disk is
//     not hammered, its last free bytes are not fought over, and requests
//     never wait. Writing resumes by itself once a try succeeds.
//   - Close writes everything queued before it returns, whatever failed
//     before (a back-off is forgotten, a held batch tried at once); a
//     graceful shutdown loses nothing unless writes fail at Close. Then
//     the batches after the first that fails are discarded, so that the
//     shutdown is not held up, and Close returns how many events were
//     not written, with the error.
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
// With Config.Postgres instead of Path the log is a cluster's: the table
// coffer_audit of the shared metadata store's PostgreSQL schema, written
// by every node and read whole by each. What differs there (held batches
// during an outage, retention and caps kept for the whole table) is
// described in postgres.go. The rest of this section is about the file.
//
// The integrator chooses the file: <storage-path>/audit.db by default. Its
// directory is created with mode 0700 and the file is kept at 0600 (the
// -wal and -shm files SQLite keeps next to it get the same mode). The
// schema version is PRAGMA user_version; a newer Coffer migrates older
// files at Open, and an older Coffer refuses a newer file.
package audit
