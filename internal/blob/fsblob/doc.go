// Package fsblob is the default blob.Store: one file per blob under a root
// directory on a local filesystem.
//
// # Layout
//
// The blob with key "b/00/abc" is the file <root>/b/00/abc; directories are
// created as keys need them and never removed. All access goes through an
// os.Root, so neither a crafted key nor a symbolic link planted in the tree
// can reach outside the root. Each directory is resolved once and kept
// open (up to 4,096): os.Root resolves a path one directory at a time on
// every call, which cost a 100 KiB PUT about fifteen system calls and a
// GET four; through the open directory an open, stat, unlink or rename
// (renameat(2) between two open directories) is one call on one name,
// which never follows a symbolic link. Keys are checked against blob.Store's
// syntax ([0-9a-z/._-], at most 200 bytes, no leading or trailing slash, no
// "..", no empty or "." segment) before the filesystem is touched. Temporary
// files live in <root>/.tmp, so keys whose first segment is ".tmp" are
// refused. Because a key names a file, a key cannot also be a directory on
// another key's path: with "a" stored, a Put of "a/b" fails, and the other
// way round. The object service's key scheme never produces such pairs.
//
// # Durability protocol
//
// Put never exposes a partial blob, whatever happens to the process or the
// machine:
//
//  1. The bytes go to a new file in .tmp with a unique name (O_EXCL), through
//     a pooled 256 KiB buffer. Exactly size bytes must arrive and the reader
//     must then report EOF; otherwise the temporary file is removed and Put
//     fails with blob.ErrSize or the reader's error. With Config.Sync, blobs
//     of 1 MiB and more (and of unknown size) are written with direct I/O
//     on Linux (see below).
//  2. With Config.Sync, the file's data is synced (fdatasync), so its data
//     and size are on stable storage before any name points at it.
//  3. The file is closed and renamed to its key, replacing any previous blob
//     atomically: a reader that opened the old file keeps reading the old
//     bytes, a later one opens the new file, and nobody sees a mix.
//     Missing parent directories are created and the rename retried.
//  4. With Config.Sync, the directory that now holds the name is fsynced, so
//     the rename itself is durable. So is every directory on the key's path
//     not yet known to be durable: for each one, its parent is fsynced,
//     because a newly created directory's own entry lives in its parent and
//     is lost in a crash unless that parent is synced too. A directory is
//     known durable once this has been done for it and all its ancestors;
//     the set is kept in memory, so each directory costs the extra syncs
//     once per process.
//
// Only then does Put return nil. Any error removes the temporary file, and
// an error after the rename removes the blob again, so a failed Put leaves
// nothing visible; errors are wrapped with %w, so callers can test for
// syscall.ENOSPC and the like with errors.Is.
//
// # Group commit
//
// Directory fsyncs are shared. Each directory has a syncer: a Put that needs
// the directory synced while an fsync of it is already running cannot count
// on that one (its rename may have come too late), so it queues for the next
// fsync, which starts as soon as the running one ends and covers everyone
// who queued meanwhile. Under many concurrent writers into one directory
// the number of directory fsyncs stays near the number of fsync round
// trips, not the number of Puts. File fsyncs are per file and cannot be
// shared.
//
// # Why one shared .tmp
//
// A synced Put costs two fsyncs in sequence, and the protocol needs both:
// the file's before any name points at it (so a crash never shows a
// partial blob under a key), and the directory's before the caller may
// reference the key. Other layouts were measured against this one in
// November 2026 (100 KiB blobs over 256 directories, 1 to 16 writers, on
// ext4 without a journal, the reference machine's disk, and on ext4 with
// one): a temporary file in the key's own directory, renamed there; an
// O_TMPFILE linked into place (which on a filesystem without a journal
// also needs the file's inode written again after the link, or fsck drops
// the name); and files pre-created and synced in the background. All were
// within a few per cent of this protocol, and under the mixed load of
// coffer bench the first raised PUT p99 by 10 %. Nor does fdatasync help a
// new file: its size must be written either way (it does help a rewrite
// in place; see Reuse). The time is in the device
// round trips of the two fsyncs, which no layout removes.
//
// # Direct I/O
//
// A synced Put of a large blob opens its temporary file with O_DIRECT and
// writes it from aligned 1 MiB buffers, each filled from the reader first:
// the device reads the buffer itself, and the kernel neither copies the
// bytes into the page cache nor has them to write back later. On the
// reference machine (a 2-core VM) that copy was 44 % of the server's CPU
// under large PUTs while the page cache grew into memory the host had not
// backed yet (as much as the MD5 and SHA-256 of the bytes together), and
// 17 % later; with direct I/O it is ~4 %, and the server's CPU per byte of
// a 10 MiB PUT fell by 11–16 % on the warm machine
// (bench/2026-11-26-large-put).
// The tail of a blob that is not a multiple of 4 KiB, and every write of a
// filesystem that refuses direct I/O (found once, then remembered), go
// through the page cache. Nothing about durability changes: step 2's fsync
// still makes the data and the file's size durable, since O_DIRECT alone
// promises neither (the device may cache the data, and the size is
// metadata). A GET soon after such a Put reads from the device, not from
// memory; large blobs written once are the ones least likely to be read
// again soon, and they no longer push small hot objects out of the cache.
// Smaller blobs (the mixed workload's) keep the page cache. Without Sync,
// writes go through the page cache as before, and the copy loop writes
// each read as it arrives, while it is still in the CPU cache from the
// reader's digests. Two other ways to the same end were measured and lost:
// sync_file_range(2) to start writeback after every 1 MiB (0.81× the
// throughput of the same code without it: ext4 then allocates and submits
// in small pieces) and dropping written blobs from the page cache after
// the fsync (up to 1.12× the old code, against direct I/O's 1.12–1.16×).
//
// # Reuse
//
// With Config.Reuse, Delete does not unlink a blob's file (of 16 KiB or
// more): it renames it into .tmp as a "free." file, and a later Put of a
// blob that needs as many 4 KiB blocks writes over that file in place, then
// renames it to its key as step 3 does. On a store under churn — objects
// overwritten and deleted while others are written, the mixed workload —
// most blobs then land in blocks the filesystem has already allocated, and
// the filesystem frees and allocates next to nothing. That matters most
// for the tail: on ext4 mounted with "discard" (common on cloud VMs and
// the reference machine), freeing a file's extents issues trims — inside
// the journal commit, or, without a journal (the reference machine), in
// the unlink itself — and every fsync of the process waited behind them:
// PUTs waited 35–113 ms for a WAL sync that otherwise takes under 3 ms. An
// overwrite in place of the same size also needs no metadata write (no
// journal commit, where there is one) when synced with fdatasync(2),
// which Put uses for every file: it makes
// the data durable together with what is needed to read it back (size and
// allocation), which is all step 2 asks for.
//
// Reuse never changes bytes someone can read: a file is kept only if no
// Reader of this Store has it open (Get counts its readers per key, under
// the same lock Delete takes to check the count and rename the file), and
// a kept file has no key, so a Get cannot open it later. Nothing about a
// Put's durability changes either: the kept file's old bytes are garbage
// until the new ones are written and synced, and the name appears only by
// the rename after that. A crash mid-rewrite leaves a "free." file in
// .tmp, which Open removes with the other temporary files. Delete does not
// sync the move into the pool, so after a power loss on a filesystem
// without a journal the file can come back under its old key as well as
// the new one it was reused for (fsck counts both names): a file with
// more than one name is therefore never kept, only unlinked, so that its
// old key's deletion cannot hand the live blob's file to a Put.
//
// Kept files are bounded by Config.Reuse (bytes, and 5 % of the
// filesystem) and 16,384 files, oldest
// deleted first past either; a file not reused within Config.ReuseIdle (a
// minute by default) is deleted after all, so a store that has gone quiet
// gives the space of its deleted objects back; and Reclaim deletes them
// all at once, which diskspace.Guard does when free space runs low.
// ReuseStats counts them. Only blobs under 1 MiB are kept, and a Reader of
// one never hands its file to sendfile(2) but copies it through a buffer:
// sendfile leaves references to the file's page-cache pages in the socket
// until the peer has read them, after the Reader has closed, and a Put
// rewriting the file then would change bytes on their way (a GET of one
// object sent another's bytes in a test under load). Larger blobs keep
// sendfile and are deleted when freed. Puts of other sizes, or of unknown size, create
// files as before.
//
// # Spare files
//
// A Put that finds no kept file to rewrite — a new object while the store
// grows, a third of the mixed workload's PUTs — must have a new file, and
// creating one (allocating an inode) is not always cheap: on the reference
// machine's ext4, which runs without a journal, the allocator skips every
// inode of the directory's group freed in the last 12 hours (dirtytime's
// expiry) one by one, and a create cost from 25 µs to 770 µs of CPU,
// growing with the files the store had deleted. With Config.Spares a
// background goroutine keeps that many empty "spare." files open in .tmp,
// and a Put through the page cache (any blob under 1 MiB, or without
// Sync) takes one instead of creating a file on the request path; the
// creation still costs the same CPU, but not in the request's time. A/B on
// the mixed workload (bench/2026-11-26-spares): 1.04× the requests, PUT
// p99 15.8 → 14.6 ms. Nothing about durability changes: a spare is a new
// empty file like the one Put would create, written and synced by step 2,
// named by step 3. Close removes the spares; a crash leaves them to Open.
//
// # Crashes
//
// A crash can leave files in .tmp: blobs whose Put never returned. The root
// is used by one process at a time: Open takes an exclusive flock(2) on the
// file LOCK in the root, held until Close or the process's end, before it
// looks at .tmp, and fails with ErrLocked if another Store holds it (a
// server or an admin command, in this process or another; with metadata
// on PostgreSQL nothing else stops a coffer admin gc --offline beside a
// running node). So every file in .tmp is garbage when Open runs, and Open
// removes them all. A crash cannot leave a partial file under a key: the name
// appears only by rename, after the data was written (and, with Sync,
// synced). Blobs that were renamed into place but whose Put did not return
// (or whose metadata never committed) are orphans that the object service's
// GC finds with List.
//
// Delete does not fsync: a deletion (or a move into the reuse pool) lost in
// a crash brings back a blob that no metadata references, which GC removes
// again.
//
// # The claim
//
// Garbage collection deletes every block that its metadata store does not
// reference, so a directory that two deployments with different metadata
// stores use in turn loses data: a server started with meta.kind postgres
// on a single node's storage path, or one whose meta directory was
// removed, would delete the blocks of every object it does not know. Claim
// (blob.Claimer) prevents that as s3blob's prefix claim does: the file
// blob.ClaimName ("coffer-owner.json") in the root names the metadata
// store that owns the directory; Claim writes it if it is absent (synced
// in .tmp, then linked into place, which never replaces a claim) and fails
// with blob.ErrClaimed if it names another store. The server claims its
// blob directory at start, and so do coffer admin gc; garbage collection
// checks the claim again before every sweep (CheckClaim). Neither the
// claim nor LOCK is a key: Put, Get and Delete refuse them and List skips
// them.
//
// # Reads
//
// Get opens the file and returns a [*Reader] over the requested range. The
// open descriptor pins the blob's contents even if the key is replaced or
// deleted meanwhile. Reader implements io.WriterTo, handing a plain
// *os.File (limited to the range) to a destination's ReadFrom, so io.Copy to
// an http.ResponseWriter or a *net.TCPConn uses sendfile(2) on Linux;
// [Reader.File] exposes the descriptor for callers that want it directly.
package fsblob
