// Package objects is the object service: bucket, object and multipart
// semantics over the metadata index (meta) and the block store (blob). It
// decides everything S3 defines about objects — ETags, checksums,
// preconditions, atomic overwrite — and returns *s3err.Error for every
// failure a client caused. It never sees HTTP.
//
// See docs/design/0001-storage-engine.md for the storage design: small
// objects inline in the metadata store (beside their record, in the same
// batch), larger ones as blocks written and synced before the record
// commits, old blocks moved to a garbage queue in the commit's batch, and a
// GC that never touches a write in flight or a block a reader streams.
package objects

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/diskspace"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Defaults for zero Config fields. DefaultInlineThreshold is where inline
// storage stops paying: under the mixed benchmark, objects of 32 KiB were
// faster inline, of 48 KiB about even, and of 64 and 100 KiB faster as
// blocks, since Pebble rewrites inline data in every compaction
// (docs/design/0001-storage-engine.md, "Inline threshold").
const (
	DefaultInlineThreshold = 32 << 10
	DefaultBlockSize       = 8 << 20
	DefaultMaxObjectSize   = 5 << 30
	DefaultMinPartSize     = 5 << 20
	DefaultGCInterval      = 10 * time.Minute
	DefaultGCGrace         = time.Hour
	DefaultSharedFreeDelay = 5 * time.Minute
)

// Limits S3 sets.
const (
	maxInlineThreshold = 16 << 20 // inline data is buffered whole; keep it small
	maxPartSize        = 5 << 30
	maxMultipartSize   = 5 << 40 // largest object a multipart upload makes, as S3
	maxPartNumber      = 10000
	maxKeyLen          = 1024
	maxUserMetadata    = 2 << 10
	maxDeleteKeys      = 1000
	maxListParts       = 1000
	maxListUploads     = 1000
)

// Config tunes the service. Zero values take the defaults noted.
type Config struct {
	InlineThreshold int64         // objects up to this size are stored in the metadata store, under their data key (default 32 KiB)
	BlockSize       int64         // larger objects are cut into blocks of this size (default 8 MiB)
	MaxObjectSize   int64         // largest single PUT (default 5 GiB, as S3)
	MinPartSize     int64         // smallest part but the last one of a completed upload (default 5 MiB, as S3)
	GCInterval      time.Duration // background GC period (default 10 min; < 0 disables)
	GCGrace         time.Duration // a blob younger than this is never collected (default 1 h)
	// FreeDelay is how long after the commit that drops them the blocks of
	// deleted and overwritten objects, replaced parts and aborted uploads
	// are freed (default 0: at once, at most one pass a second; < 0 leaves
	// them to the periodic GC and its grace). A block that a reader still
	// streams is freed when the reader is done.
	FreeDelay time.Duration
	// SharedFreeDelay is the least FreeDelay on a metadata store shared
	// by several nodes (PostgreSQL), where a reader on another node is not
	// seen: a GET streaming a version through another node must finish
	// within it (default 5 min).
	SharedFreeDelay time.Duration
	// NodeID names this node among those of a shared metadata store: when
	// set, the service publishes its GC grace and free delay there
	// (Publish), so that every node's GC spares what this one's writes and
	// reads need. The server keeps it in the node's storage path.
	NodeID string `toml:"-"`

	// Clock returns the current time; nil means time.Now. Tests inject a
	// fixed or stepping clock.
	Clock func() time.Time `toml:"-"`
}

// withDefaults returns c with zero fields set to their defaults, or an
// error for values that make no sense.
func (c Config) withDefaults() (Config, error) {
	for _, f := range []struct {
		name string
		v    *int64
		def  int64
	}{
		{"inline threshold", &c.InlineThreshold, DefaultInlineThreshold},
		{"block size", &c.BlockSize, DefaultBlockSize},
		{"max object size", &c.MaxObjectSize, DefaultMaxObjectSize},
		{"min part size", &c.MinPartSize, DefaultMinPartSize},
	} {
		if *f.v < 0 {
			return c, fmt.Errorf("objects: negative %s %d", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.InlineThreshold > maxInlineThreshold {
		return c, fmt.Errorf("objects: inline threshold %d above %d", c.InlineThreshold, maxInlineThreshold)
	}
	if c.GCInterval == 0 {
		c.GCInterval = DefaultGCInterval
	}
	if c.GCGrace < 0 {
		return c, fmt.Errorf("objects: negative GC grace %v", c.GCGrace)
	}
	if c.GCGrace == 0 {
		c.GCGrace = DefaultGCGrace
	}
	if c.SharedFreeDelay < 0 {
		return c, fmt.Errorf("objects: negative shared free delay %v", c.SharedFreeDelay)
	}
	if c.SharedFreeDelay == 0 {
		c.SharedFreeDelay = DefaultSharedFreeDelay
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c, nil
}

// copyBufSize is the size of the pooled buffers that stream block data.
const copyBufSize = 64 << 10

// dataSlack is room beyond InlineThreshold in the pooled buffers, so that a
// read buffer holds the whole value of an inline object's data key: the
// data and a short header naming its version.
const dataSlack = 64

// Service implements the object operations. It is safe for concurrent use.
type Service struct {
	cfg   Config
	db    *meta.DB
	store blob.Store
	log   *slog.Logger
	clock func() time.Time

	inlineBufs sync.Pool // *[]byte of capacity cfg.InlineThreshold+dataSlack
	copyBufs   sync.Pool // *[]byte of length copyBufSize
	// scribble (tests) overwrites the buffers given back to inlineBufs,
	// so that a use after release reads wrong bytes instead of passing.
	scribble bool

	inflight inflightSet // blob keys being written, not yet committed
	readers  readerTable // object versions being streamed

	space *diskspace.Guard // the free-space reserve; nil admits everything
	// What of a write the reserve counts: its blocks if they are stored
	// on the guarded disk (not upstream), its inline data if the
	// metadata is (not in PostgreSQL).
	spaceBlocks, spaceInline bool

	// shared is set when other nodes share the metadata store and the
	// block store (meta.DB.Shared): GC takes the cluster's lease, prompt
	// freeing frees only what this node queued, and writes must commit
	// within writeLimit.
	shared bool
	// published is when this node last published its record (Publish), in
	// Unix nanoseconds by its clock; 0 before the first time. cluster is
	// what the live nodes' records asked for then.
	published atomic.Int64
	cluster   atomic.Pointer[clusterNeeds]

	gcMu sync.Mutex // serialises GC passes
	// lastRefs is how many blocks the last orphan sweep found referenced:
	// the next sizes its filter from it.
	lastRefs atomic.Int64
	drainMu  sync.Mutex    // serialises drains of the garbage queue
	freed    chan struct{} // signalled when a commit queued garbage; capacity 1

	configGen configGen // see ConfigGeneration
	// versioned knows which buckets have versioning configured, for the
	// version ID of a null version written before (see reportedVersion).
	versioned versionedCache
	// publicAccess keeps buckets' Block Public Access settings decoded:
	// an anonymous read through a public bucket policy consults them.
	publicAccess *ConfigCache[PublicAccessBlock]
}

// New returns a Service over db and store. A nil log discards.
func New(cfg Config, db *meta.DB, store blob.Store, log *slog.Logger) (*Service, error) {
	if db == nil || store == nil {
		return nil, errors.New("objects: nil meta.DB or blob.Store")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Service{cfg: cfg, db: db, store: store, log: log, clock: cfg.Clock, freed: make(chan struct{}, 1), shared: db.Shared()}
	s.publicAccess = NewConfigCache(s, ConfigPublicAccessBlock, decodePublicAccessBlock)
	if cfg.FreeDelay >= 0 {
		db.OnGarbage(s.garbageQueued)
	}
	s.inlineBufs.New = func() any {
		b := make([]byte, 0, cfg.InlineThreshold+dataSlack)
		return &b
	}
	s.copyBufs.New = func() any {
		b := make([]byte, copyBufSize)
		return &b
	}
	return s, nil
}

// writeContext detaches a mutation from the cancellation of its request.
// Once a write's input has been received it is carried out whole, as S3
// does: net/http cancels the request context when a client merely
// half-closes its connection after sending everything, and a commit must
// not fail (or, worse, look failed after it happened) because of that. A
// client that really goes away mid-body is still noticed: reading the body
// fails, and nothing is committed. Values (request ID, principal) are kept.
func writeContext(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// UseSpace makes writes of new data (PutObject, UploadPart, CopyObject,
// UploadPartCopy, form uploads) ask g for room first, so that they are
// refused with StorageFull before the disk fills; deletes and metadata
// changes are never refused. Call it before serving requests.
// blocks says whether the block store writes to the disk g watches (not
// an upstream bucket), inline whether the metadata store does (not
// PostgreSQL): only what lands there counts against the reserve, and
// with neither nothing is refused.
func (s *Service) UseSpace(g *diskspace.Guard, blocks, inline bool) {
	s.space, s.spaceBlocks, s.spaceInline = g, blocks, inline
}

// reserve asks the free-space reserve for what a write of size bytes (or
// SizeUnknown) puts on the guarded disk, for the object res: all of it
// with local blocks (a body of unknown size then reports what it reads,
// through the bodyReader, and grows its reservation), an inline object's
// bytes with local metadata, else nothing. The caller releases the
// reservation when the data is written or given up; tell is the
// Reservation to report bytes read to, nil when they need no reporting.
func (s *Service) reserve(size int64, res string) (r, tell *diskspace.Reservation, err error) {
	var n int64
	switch {
	case s.spaceBlocks:
		n = max(size, 0)
	case s.spaceInline && size >= 0 && size <= s.cfg.InlineThreshold:
		n = size
	case !s.spaceInline:
		return nil, nil, nil // nothing of the write lands on the guarded disk
	}
	r, err = s.space.Reserve(n)
	if err != nil {
		return nil, nil, spaceError(err, res)
	}
	if s.spaceBlocks {
		tell = r
	}
	return r, tell, nil
}

// spaceError is the answer to a write the free-space reserve refused
// (StorageFull), or could not decide on.
func spaceError(err error, res string) error {
	if errors.Is(err, diskspace.ErrFull) {
		return s3err.Wrap(s3err.StorageFull, res, err)
	}
	return fmt.Errorf("measure free space: %w", err)
}

// diskFull reports whether err is a filesystem's refusal for want of
// space or quota, which the reserve is there to prevent but cannot
// always (another process filled the disk; the blocks live on a
// filesystem of their own that filled first).
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// ErrUnavailable is in the chain of an error caused by a shared metadata
// store (PostgreSQL) that cannot be reached for now: the request may
// succeed if retried, on this node, once the database is back. The S3
// layer answers it with 503 ServiceUnavailable and Retry-After. It is
// meta's sentinel, so that callers need not import meta.
var ErrUnavailable = meta.ErrUnavailable

// retryAfterBlocks is the Retry-After, in seconds, of a 503 for a block
// store that cannot be reached.
const retryAfterBlocks = "1"

// blocksUnavailable translates err, if it says that the block store's
// backing service (gateway mode's upstream) cannot be reached for now
// (blob.ErrUnavailable), into 503 ServiceUnavailable with Retry-After:
// transient, so the client should come back. Any other err is returned
// unchanged: a 403 or a missing block stays an internal error.
func blocksUnavailable(err error, res string) error {
	if err == nil || !errors.Is(err, blob.ErrUnavailable) {
		return err
	}
	if e, ok := errors.AsType[*s3err.Error](err); ok && e.Code == s3err.ServiceUnavailable {
		return err
	}
	return &s3err.Error{
		Code:     s3err.ServiceUnavailable,
		Message:  "The block store cannot be reached; please retry.",
		Resource: res,
		Header:   []s3err.Field{{Name: "Retry-After", Value: retryAfterBlocks}},
		Err:      err,
	}
}

// Err returns nil while the metadata store can commit writes. Once it has
// failed (meta.DB.Err: a full or failing disk under it, or an error its
// engine cannot continue from) no write can succeed again in this process,
// and Err returns the error every write answers from then on:
// ServiceUnavailable, naming the cause; the server stops soon after, for
// its supervisor to restart it, and clients retry. Reads go on meanwhile.
// It costs one atomic load, so callers check it before a write reads its
// body.
func (s *Service) Err() error {
	err := s.db.Err()
	if err == nil {
		return nil
	}
	reason := "storage engine error"
	if fe, ok := errors.AsType[*meta.FailedError](err); ok {
		reason = fe.Reason()
	}
	return &s3err.Error{
		Code:    s3err.ServiceUnavailable,
		Message: "The metadata store failed (" + reason + "); the server is restarting. Please retry.",
		Err:     err,
	}
}
