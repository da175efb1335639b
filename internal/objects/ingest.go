package objects

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/diskspace"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// ingested is a body that was read whole and stored: inline in a pooled
// buffer, or as blocks already durable in the block store but not yet
// referenced by any record (they sit in the in-flight set until settled).
type ingested struct {
	size   int64   // bytes read: the declared size, or what a body of unknown size held
	inline []byte  // the data, when stored inline; aliases *buf
	buf    *[]byte // pooled buffer behind inline
	blocks []meta.Block
	md5    [md5.Size]byte
	sum    []byte // raw checksum under the requested algorithm; nil if none
}

// ingest reads exactly size bytes from body, computing MD5 and alg (if
// set) on the way, and stores them inline if size ≤ InlineThreshold and
// !forceBlocks, else as blocks of BlockSize. With size SizeUnknown it reads
// body to its end (at most MaxObjectSize bytes, else EntityTooLarge) and
// decides once it knows. It never holds more than one inline buffer.
// Errors: IncompleteBody if the body ends early or runs long, and any error
// body.Read returns, unchanged. On error nothing is left behind but blocks
// whose deletion failed, which GC collects. Below the free-space reserve
// it is StorageFull, and nothing is read.
func (s *Service) ingest(ctx context.Context, body io.Reader, size int64, alg checksum.Algorithm, forceBlocks bool, res string) (*ingested, error) {
	// Every write of new data comes through here: the reserve first,
	// held until the data is written (or given up).
	space, tell, err := s.reserve(size, res)
	if err != nil {
		return nil, err
	}
	defer space.Release()
	br := &bodyReader{r: body, left: size, md5: md5.New(), res: res, space: tell}
	if size == SizeUnknown {
		br.left, br.unknown = s.cfg.MaxObjectSize, true
	}
	if alg != "" {
		br.sum = alg.New()
	}
	in := &ingested{size: size}
	switch {
	case size == SizeUnknown:
		err = s.ingestUnknown(ctx, br, in, forceBlocks)
	case size <= s.cfg.InlineThreshold && !forceBlocks:
		err = s.ingestInline(br, in, size)
	default:
		err = s.ingestBlocks(ctx, br, in, size)
	}
	if err == nil {
		err = br.finish()
	}
	if err == nil {
		err = s.checkWriteAge(in, res)
	}
	if err != nil {
		err = br.cause(err)
		if diskFull(err) {
			// Answered as the reserve's refusal would have been, and
			// the reserve measures again before the next write.
			s.space.Full(max(size, 1))
			err = s3err.Wrap(s3err.StorageFull, res, err)
		}
		if errors.Is(err, blob.ErrUnavailable) {
			// Deleting what was stored would meet the same outage,
			// and hold up the answer: left to GC.
			s.abandon(ctx, in, err)
		} else {
			s.discard(ctx, in)
		}
		return nil, blocksUnavailable(err, res)
	}
	br.md5.Sum(in.md5[:0])
	if br.sum != nil {
		in.sum = br.sum.Sum(nil)
	}
	return in, nil
}

// writeLimit is how long a write on a shared store may take from its first
// block to its commit: the GC grace less a margin (a quarter of it, at
// most 5 minutes) for the commit itself and for clocks of nodes that
// disagree. A node's GC pass does not see another node's writes in
// flight; it spares their blocks only because they are younger than the
// grace, so a write must commit before its blocks are that old.
func (s *Service) writeLimit() time.Duration {
	return s.cfg.GCGrace - min(s.cfg.GCGrace/4, 5*time.Minute)
}

// checkWriteAge refuses, on a shared store, a write whose first block is
// older than writeLimit: another node's GC may delete its blocks now; and
// a write with blocks while this node cannot publish its GC settings
// (checkPublished).
func (s *Service) checkWriteAge(in *ingested, res string) error {
	t, ok := s.firstBlockTime(in)
	if !ok {
		return nil
	}
	if s.clock().Sub(t) > s.writeLimit() {
		return s.writeTooSlow(res, nil)
	}
	return s.checkPublished(res)
}

// firstBlockTime returns, on a shared store, when in's first block was
// made (its key says), from which another node's GC counts its grace;
// false on a store of one node or for a write without blocks.
func (s *Service) firstBlockTime(in *ingested) (time.Time, bool) {
	if !s.shared || len(in.blocks) == 0 {
		return time.Time{}, false
	}
	return blobKeyTime(in.blocks[0].Key)
}

// writeTooSlow is the answer to a write on a shared store that did not
// commit within the time the cluster allows it (RequestTimeout).
func (s *Service) writeTooSlow(res string, cause error) error {
	return &s3err.Error{Code: s3err.RequestTimeout, Resource: res, Err: cause,
		Message: "The upload took longer than the cluster allows a write (" + s.writeLimit().String() + "); please retry."}
}

// commitContext bounds, on a shared store, the commit of a write whose
// blocks data holds: checkWriteAge let it through when its body ended, but
// the commit can still wait (for a database connection, for the key's
// locks), and it must be done before another node's GC may take its
// blocks for orphans, grace after the first one, and before this node's
// published record stops counting (nodes.go). The deadline is half way
// through the margin writeLimit leaves, so that the other half still
// covers clocks that disagree. The error to answer when it passes is
// commitTimeout's.
func (s *Service) commitContext(ctx context.Context, data *ingested) (context.Context, context.CancelFunc) {
	t, ok := s.firstBlockTime(data)
	if !ok {
		return ctx, func() {}
	}
	margin := s.cfg.GCGrace - s.writeLimit()
	deadline := t.Add(s.writeLimit() + margin/2)
	if p := s.published.Load(); p != 0 {
		// And before this node's last record stops counting (nodes.go),
		// with half the slack left for clocks.
		deadline = minTime(deadline, time.Unix(0, p).Add(s.cfg.GCGrace+nodeSlack(s.cfg.GCGrace)/2))
	}
	return context.WithTimeout(ctx, deadline.Sub(s.clock()))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// commitTimeout returns, for err from a commit under commitContext's cctx,
// RequestTimeout if cctx's deadline ended it, else err.
func (s *Service) commitTimeout(cctx context.Context, err error, res string) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return &s3err.Error{Code: s3err.RequestTimeout, Resource: res, Err: err,
			Message: "The write could not commit in the time the cluster allows it (within " + s.writeLimit().String() +
				" of its first block, and while this node reaches the database); please retry."}
	}
	return err
}

func (s *Service) ingestInline(br *bodyReader, in *ingested, size int64) error {
	in.buf = s.inlineBufs.Get().(*[]byte)
	b := (*in.buf)[:size]
	if _, err := io.ReadFull(br, b); err != nil {
		return err
	}
	in.inline = b
	return nil
}

// ingestUnknown stores a body of unknown length: inline if it ends within
// InlineThreshold bytes (and !forceBlocks), else as blocks of BlockSize
// and a shorter last one, each streamed to the store as it arrives.
func (s *Service) ingestUnknown(ctx context.Context, br *bodyReader, in *ingested, forceBlocks bool) error {
	var head []byte
	if !forceBlocks {
		// One byte past the threshold tells whether the body fits.
		in.buf = s.inlineBufs.Get().(*[]byte)
		b := (*in.buf)[:s.cfg.InlineThreshold+1]
		n, err := io.ReadFull(br, b)
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			in.inline, in.size = b[:n], int64(n)
			return nil
		case err != nil:
			return err
		}
		head = b
	}
	// The blocks start with what was read; a 16-byte buffer (bufio's
	// least) is enough to peek whether a full block was the last, and
	// larger reads go straight to the body.
	hr := bytes.NewReader(head)
	r := bufio.NewReaderSize(io.MultiReader(hr, br), 16)
	in.size = 0
	for {
		key := newBlobKey(s.clock())
		s.inflight.add(key)
		in.blocks = append(in.blocks, meta.Block{Key: key})
		cr := &countingReader{r: io.LimitReader(r, s.cfg.BlockSize)}
		if err := s.store.Put(ctx, key, cr, blob.SizeUnknown); err != nil {
			return fmt.Errorf("store block %s: %w", key, err)
		}
		in.blocks[len(in.blocks)-1].Size = cr.n
		in.size += cr.n
		if head != nil && hr.Len() == 0 {
			// Copied into the blocks (or into r's own buffer): the
			// buffer can go. With InlineThreshold == BlockSize its last
			// byte is the next block's first, still to be read.
			s.releaseInline(in)
			head = nil
		}
		if cr.n < s.cfg.BlockSize {
			return nil
		}
		if _, err := r.Peek(1); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (s *Service) ingestBlocks(ctx context.Context, br *bodyReader, in *ingested, size int64) error {
	for left := size; left > 0; {
		n := min(left, s.cfg.BlockSize)
		key := newBlobKey(s.clock())
		// Registered before the first byte is written: the orphan sweep
		// skips every key in the set.
		s.inflight.add(key)
		in.blocks = append(in.blocks, meta.Block{Key: key, Size: n})
		if err := s.store.Put(ctx, key, io.LimitReader(br, n), n); err != nil {
			return fmt.Errorf("store block %s: %w", key, err)
		}
		left -= n
	}
	return nil
}

// settle ends a write whose record committed: its blocks are referenced
// now, so they leave the in-flight set; the inline buffer is returned.
func (s *Service) settle(in *ingested) {
	if in == nil {
		return
	}
	for _, b := range in.blocks {
		s.inflight.remove(b.Key)
	}
	s.releaseInline(in)
}

// discard ends a write that will not commit: its blocks are deleted (best
// effort: the orphan sweep collects what is left) and leave the in-flight
// set only afterwards.
func (s *Service) discard(ctx context.Context, in *ingested) {
	if in == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, b := range in.blocks {
		if err := s.store.Delete(ctx, b.Key); err != nil {
			s.log.WarnContext(ctx, "delete block of failed write", "blob", b.Key, "err", err)
		}
		s.inflight.remove(b.Key)
	}
	in.blocks = nil
	s.releaseInline(in)
}

// abandon ends a write that will not commit because the block store cannot
// be reached: its blocks leave the in-flight set without being deleted, and
// the orphan sweep collects those that were stored once they are older
// than the GC grace.
func (s *Service) abandon(ctx context.Context, in *ingested, err error) {
	if in == nil {
		return
	}
	if len(in.blocks) > 0 {
		s.log.DebugContext(ctx, "blocks of failed write left to GC", "blocks", len(in.blocks), "err", err)
	}
	for _, b := range in.blocks {
		s.inflight.remove(b.Key)
	}
	in.blocks = nil
	s.releaseInline(in)
}

func (s *Service) releaseInline(in *ingested) {
	if in.buf != nil {
		s.putReadBuf(in.buf)
		in.buf, in.inline = nil, nil
	}
}

// finishWrite settles or discards in after a commit attempt. committing
// tells whether the commit was reached with a record: if it then failed,
// the record may or may not be durable, so the blocks are left for GC to
// decide rather than deleted.
func (s *Service) finishWrite(ctx context.Context, in *ingested, err error, committing bool) {
	switch {
	case err == nil:
		s.settle(in)
	case committing:
		s.log.WarnContext(ctx, "commit failed; blocks left to GC", "err", err)
		s.settle(in)
	default:
		s.discard(ctx, in)
	}
}

// errShort marks a body that ended before its declared size.
var errShort = errors.New("body shorter than declared")

// bodyReader reads exactly left bytes of a request body, hashing them. It
// reports a body that ends early as errShort and remembers any error of the
// underlying reader, so that the caller can return it unchanged even after
// the block store wrapped it.
//
// With unknown set, the size is not known: left is the most the body may
// hold, and a body that goes past it fails with EntityTooLarge.
type bodyReader struct {
	r       io.Reader
	left    int64
	unknown bool
	md5     hash.Hash
	sum     hash.Hash // nil if no checksum
	res     string
	space   *diskspace.Reservation // told what is read, which is about to be written
	eof     bool                   // r returned io.EOF
	err     error                  // first error r returned other than io.EOF
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left == 0 {
		if b.unknown && !b.eof {
			return 0, b.checkEnd()
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if serr := b.space.Wrote(int64(n)); serr != nil {
		// A body of unknown size past the room left.
		b.err = spaceError(serr, b.res)
		return n, b.err
	}
	b.md5.Write(p[:n])
	if b.sum != nil {
		b.sum.Write(p[:n])
	}
	switch {
	case err == io.EOF && b.unknown:
		b.eof = true
		return n, io.EOF
	case err == io.EOF:
		b.eof = true
		if b.left > 0 {
			return n, errShort
		}
		return n, nil
	case err != nil:
		b.err = err
		return n, err
	}
	return n, nil
}

// checkEnd is called when a body of unknown size has delivered the most
// it may: it ends there (io.EOF) or is EntityTooLarge.
func (b *bodyReader) checkEnd() error {
	var one [1]byte
	for range 100 {
		n, err := b.r.Read(one[:])
		switch {
		case n > 0:
			b.err = s3err.New(s3err.EntityTooLarge, b.res)
			return b.err
		case err == io.EOF:
			b.eof = true
			return io.EOF
		case err != nil:
			b.err = err
			return err
		}
	}
	return io.ErrNoProgress
}

// finish checks that the body ends where declared. Reading to EOF also lets
// a streaming-signature reader verify its final chunk and trailer.
func (b *bodyReader) finish() error {
	if b.eof {
		return nil
	}
	if b.unknown {
		if err := b.checkEnd(); err != io.EOF {
			return err
		}
		return nil
	}
	var one [1]byte
	for range 100 {
		n, err := b.r.Read(one[:])
		switch {
		case n > 0:
			return s3err.New(s3err.IncompleteBody, b.res)
		case err == io.EOF:
			b.eof = true
			return nil
		case err != nil:
			b.err = err
			return err
		}
	}
	return io.ErrNoProgress
}

// cause returns the error a failed ingest reports: the body's own error
// unchanged (for example the signature layer's *s3err.Error), IncompleteBody
// for a short body, else err.
func (b *bodyReader) cause(err error) error {
	switch {
	case b.err != nil:
		return b.err
	case errors.Is(err, errShort):
		return s3err.New(s3err.IncompleteBody, b.res)
	}
	return err
}

// inflightSet holds the keys of blobs being written whose records have not
// committed. The orphan sweep never deletes a key in it, nor one added
// while it runs (watch).
type inflightSet struct {
	mu   sync.Mutex // guards keys and added
	keys map[string]struct{}
	// added records every key added since watch, while a sweep runs;
	// nil otherwise.
	added map[string]struct{}
}

func (f *inflightSet) add(k string) {
	f.mu.Lock()
	if f.keys == nil {
		f.keys = make(map[string]struct{})
	}
	f.keys[k] = struct{}{}
	if f.added != nil {
		f.added[k] = struct{}{}
	}
	f.mu.Unlock()
}

// watch returns a copy of the set and starts recording every key added
// from now on, until stop: the orphan sweep spares both. A key's time
// alone says it was added before the sweep began only if the clock never
// stepped back; the record does not depend on the clock. One sweep
// watches at a time (GC passes are serialised).
func (f *inflightSet) watch() (spared func(k string) bool, stop func()) {
	f.mu.Lock()
	snap := make(map[string]struct{}, len(f.keys))
	for k := range f.keys {
		snap[k] = struct{}{}
	}
	f.added = make(map[string]struct{})
	f.mu.Unlock()
	spared = func(k string) bool {
		if _, ok := snap[k]; ok {
			return true
		}
		f.mu.Lock()
		_, ok := f.added[k]
		f.mu.Unlock()
		return ok
	}
	stop = func() {
		f.mu.Lock()
		f.added = nil
		f.mu.Unlock()
	}
	return spared, stop
}

func (f *inflightSet) remove(k string) {
	f.mu.Lock()
	delete(f.keys, k)
	f.mu.Unlock()
}
