package fsblob

import (
	"errors"
	"hash/maphash"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"
)

// Reuse of freed files (see "Reuse" in the package doc).

const (
	// freePrefix starts the names, in .tmp, of freed files kept for
	// reuse. Temporary file names are base-36 digits and a dash, so the
	// two never meet.
	freePrefix = "free."
	// defaultReuseMin is the smallest blob whose file is kept for reuse:
	// below it a file is a few blocks, and allocating them costs little.
	defaultReuseMin = 16 << 10
	// reuseAlloc is the allocation unit the size classes assume (ext4's
	// and XFS's default block size): a file is reused only for a blob
	// that needs exactly as many of them, so that neither extends nor
	// truncates an allocation.
	reuseAlloc = 4 << 10
	// reuseMax bounds the blobs whose files are kept for reuse: only
	// those smaller, and a Reader of a file that small never hands it to
	// sendfile(2). sendfile queues references to the file's page-cache
	// pages on the socket, not copies, and returns before the peer has
	// read them (on loopback, before it has even received them); a file
	// rewritten in place after its Reader closed would change bytes still
	// on their way, so a GET could send another object's data. Larger
	// blobs keep sendfile and are deleted when freed, never rewritten.
	reuseMax = directMin
	// DefaultReuseIdle is how long a kept file waits for a Put of its size
	// before it is deleted after all.
	DefaultReuseIdle = time.Minute
	// readerStripes is the number of locks over the open-reader counts.
	readerStripes = 64
)

// freeFile is a freed blob's file, renamed into .tmp, waiting for a Put
// of a blob in its size class.
type freeFile struct {
	name  string // in .tmp
	size  int64
	added time.Time
	taken bool // taken by a Put or deleted; still in pool.order until compacted
}

// pool is the set of freed files kept for reuse, by size class and in the
// order they came. It is safe for concurrent use.
type pool struct {
	maxBytes int64
	maxFiles int

	mu      sync.Mutex
	byClass map[int64][]*freeFile // class → files, oldest first
	order   []*freeFile           // every file kept, oldest first, with taken ones not yet compacted
	files   int
	bytes   int64

	reused  int64 // Puts that reused a file
	evicted int64 // kept files deleted for room, age or low disk space
}

func sizeClass(size int64) int64 { return (size + reuseAlloc - 1) / reuseAlloc }

// take removes and returns the newest kept file of size's class, or nil.
func (p *pool) take(size int64) *freeFile {
	c := sizeClass(size)
	p.mu.Lock()
	defer p.mu.Unlock()
	fs := p.byClass[c]
	if len(fs) == 0 {
		return nil
	}
	f := fs[len(fs)-1]
	fs[len(fs)-1] = nil
	if len(fs) == 1 {
		delete(p.byClass, c)
	} else {
		p.byClass[c] = fs[:len(fs)-1]
	}
	p.dropLocked(f)
	p.reused++
	return f
}

// add keeps f, and returns the files that must go to make room for it.
func (p *pool) add(f *freeFile) (evict []*freeFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := sizeClass(f.size)
	p.byClass[c] = append(p.byClass[c], f)
	p.order = append(p.order, f)
	p.files++
	p.bytes += f.size
	for p.files > p.maxFiles || p.bytes > p.maxBytes {
		evict = append(evict, p.popOldestLocked())
	}
	p.compactLocked()
	return evict
}

// expire removes and returns the files kept since before cutoff.
func (p *pool) expire(cutoff time.Time) (evict []*freeFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.files > 0 {
		f := p.oldestLocked()
		if !f.added.Before(cutoff) {
			break
		}
		evict = append(evict, p.popOldestLocked())
	}
	p.compactLocked()
	return evict
}

// drain removes and returns every kept file.
func (p *pool) drain() (evict []*freeFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.files > 0 {
		evict = append(evict, p.popOldestLocked())
	}
	p.compactLocked()
	return evict
}

// oldestLocked returns the oldest kept file; p.files > 0. It drops taken
// files from the front of p.order on the way.
func (p *pool) oldestLocked() *freeFile {
	for p.order[0].taken {
		p.order[0] = nil
		p.order = p.order[1:]
	}
	return p.order[0]
}

// popOldestLocked removes the oldest kept file from the pool.
func (p *pool) popOldestLocked() *freeFile {
	f := p.oldestLocked()
	c := sizeClass(f.size)
	fs := p.byClass[c]
	// f is the oldest of its class too.
	fs[0] = nil
	if len(fs) == 1 {
		delete(p.byClass, c)
	} else {
		p.byClass[c] = fs[1:]
	}
	p.dropLocked(f)
	p.evicted++
	return f
}

// dropLocked marks f as gone from the pool's counts; p.order forgets it
// lazily.
func (p *pool) dropLocked(f *freeFile) {
	f.taken = true
	p.files--
	p.bytes -= f.size
}

// compactLocked rebuilds p.order without taken files once they are the
// majority, so that a pool whose files are all reused does not grow it.
func (p *pool) compactLocked() {
	if len(p.order) < 64 || len(p.order) < 2*p.files {
		return
	}
	kept := make([]*freeFile, 0, 2*p.files+16)
	for _, f := range p.order {
		if !f.taken {
			kept = append(kept, f)
		}
	}
	p.order = kept
}

// ReuseStats are the figures of the pool of freed files kept for reuse.
type ReuseStats struct {
	Files   int   // files kept now
	Bytes   int64 // their sizes
	Reused  int64 // Puts that reused a kept file, so far
	Evicted int64 // kept files deleted unused (for room, age or low free space), so far
}

// ReuseStats returns the pool's figures; all zero when reuse is off.
func (s *Store) ReuseStats() ReuseStats {
	if s.pool == nil {
		return ReuseStats{}
	}
	p := s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	return ReuseStats{Files: p.files, Bytes: p.bytes, Reused: p.reused, Evicted: p.evicted}
}

// Reclaim deletes every freed file kept for reuse and returns the bytes it
// gave back to the filesystem. diskspace.Guard calls it when free space
// runs low, so that files kept for reuse never stand between a full disk
// and the space its deletes freed.
func (s *Store) Reclaim() int64 {
	if s.pool == nil {
		return 0
	}
	return s.remove(s.pool.drain())
}

// remove deletes kept files that left the pool and returns their bytes.
func (s *Store) remove(fs []*freeFile) int64 {
	if len(fs) == 0 {
		return 0
	}
	tmpd, err := s.dir(tmpDir)
	if err != nil {
		return 0
	}
	defer tmpd.done()
	var n int64
	for _, f := range fs {
		if err := tmpd.root.Remove(f.name); err == nil || errors.Is(err, os.ErrNotExist) {
			n += f.size
		}
	}
	return n
}

// expireLoop deletes files kept longer than idle, every idle/4, until
// stop is closed: reuse is for a store under churn, and a quiet store
// gives the space of its deleted objects back within about idle.
func (s *Store) expireLoop(idle time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(idle / 4)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.remove(s.pool.expire(s.clock().Add(-idle)))
	}
}

// keep moves the blob file name of directory d, key's, of the given size,
// into the pool instead of deleting it, unless a Reader of this Store has
// key open (a Put reusing the file would change bytes under the reader).
// It reports whether it did, and returns the kept files that must go to
// make room; the caller deletes them, and key's file if it was not kept.
// It holds key's reader stripe, so that no Get opens the file between the
// check and the rename.
func (s *Store) keep(d *dirHandle, key, name string, size int64) (kept bool, evict []*freeFile, err error) {
	st := s.readers.stripe(key)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.n[key] > 0 {
		return false, nil, nil
	}
	tmpd, err := s.dir(tmpDir)
	if err != nil {
		return false, nil, err
	}
	defer tmpd.done()
	free := freePrefix + strconv.FormatUint(s.tmpSeq.Add(1), 36)
	if err := renameAt(d, name, tmpd, free); err != nil {
		return false, nil, err
	}
	return true, s.pool.add(&freeFile{name: free, size: size, added: s.clock()}), nil
}

// reusable reports whether a blob file of size is kept for reuse when
// freed, and so may be rewritten in place once no Reader has it open.
func (s *Store) reusable(size int64) bool {
	return s.pool != nil && size >= s.reuseMin && size < reuseMax
}

// openKept opens a kept file of size's class in tmpd (.tmp) for a Put, or
// returns nil.
func (s *Store) openKept(tmpd *dirHandle, size int64, direct bool) (*os.File, *freeFile, bool) {
	if !s.reusable(size) {
		return nil, nil, direct
	}
	for {
		f := s.pool.take(size)
		if f == nil {
			return nil, nil, direct
		}
		var file *os.File
		var err error
		file, direct, err = s.openTmp(tmpd, f.name, os.O_WRONLY, direct)
		if err == nil {
			// The size Delete saw may not be the file's: a Put that
			// replaced the key in between would have put another file
			// there. Rewrite only a file of the class asked for.
			fi, serr := file.Stat()
			if serr == nil && sizeClass(fi.Size()) == sizeClass(size) {
				f.size = fi.Size()
				return file, f, direct
			}
			file.Close()
		}
		// Gone, unusable or of another size: forget it and try another.
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			tmpd.root.Remove(f.name)
		}
	}
}

// readerCounts counts the Readers open on each key, so that Delete never
// hands a file someone reads to a Put that would overwrite it.
type readerCounts struct {
	seed    maphash.Seed
	stripes [readerStripes]readerStripe
}

// readerStripe counts the readers of the keys that hash to it.
type readerStripe struct {
	mu sync.Mutex
	n  map[string]int
	_  [48]byte // one stripe per 64-byte cache line
}

func newReaderCounts() *readerCounts {
	rc := &readerCounts{seed: maphash.MakeSeed()}
	for i := range rc.stripes {
		rc.stripes[i].n = make(map[string]int)
	}
	return rc
}

// stripe returns key's stripe.
func (rc *readerCounts) stripe(key string) *readerStripe {
	return &rc.stripes[maphash.String(rc.seed, key)%readerStripes]
}

// inc counts a reader of key that is about to open it.
func (rc *readerCounts) inc(key string) {
	st := rc.stripe(key)
	st.mu.Lock()
	st.n[key]++
	st.mu.Unlock()
}

// dec uncounts a reader of key.
func (rc *readerCounts) dec(key string) {
	st := rc.stripe(key)
	st.mu.Lock()
	if st.n[key] <= 1 {
		delete(st.n, key)
	} else {
		st.n[key]--
	}
	st.mu.Unlock()
}

// deleteOrKeep removes the file name of directory d, key's, of the given
// size, or keeps it for reuse.
func (s *Store) deleteOrKeep(d *dirHandle, key, name string, size int64) error {
	if s.reusable(size) {
		kept, evict, err := s.keep(d, key, name, size)
		s.remove(evict)
		if kept || err != nil {
			return err
		}
	}
	return d.root.Remove(name)
}
