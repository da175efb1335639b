package objects

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// Small sizes keep multi-block objects cheap in tests.
const (
	testInline = 1 << 10
	testBlock  = 4 << 10
)

type env struct {
	s     *Service
	db    *meta.DB
	store *memblob.Store
	dir   string
	sync  bool // meta commits fsync, as in production
}

// newEnv returns a Service over memblob and meta on a temporary directory,
// with small inline threshold, block and part sizes, and a bucket "bkt".
func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvConfig(t, Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock})
}

func newEnvConfig(t testing.TB, cfg Config) *env {
	t.Helper()
	return newEnvSync(t, cfg, false)
}

// newEnvSync is newEnvConfig with meta's Sync set as given.
func newEnvSync(t testing.TB, cfg Config, sync bool) *env {
	t.Helper()
	e := &env{store: memblob.New(), dir: t.TempDir(), sync: sync}
	e.open(t, cfg, e.store)
	if err := e.s.CreateBucket(context.Background(), "bkt", CreateBucketInput{Region: ""}); err != nil {
		t.Fatal(err)
	}
	return e
}

// open (re)opens the metadata database and the service over store.
func (e *env) open(t testing.TB, cfg Config, store blob.Store) {
	t.Helper()
	db, err := meta.Open(meta.Config{Dir: e.dir, Sync: e.sync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	s, err := New(cfg, db, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.s, e.db = s, db
}

// randBytes returns n deterministic pseudo-random bytes.
func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func md5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

func md5B64(b []byte) string {
	s := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(s[:])
}

func (e *env) put(t testing.TB, key string, data []byte) ObjectInfo {
	t.Helper()
	info, err := e.s.PutObject(context.Background(), "bkt", key, PutInput{Size: int64(len(data))}, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("PutObject(%q): %v", key, err)
	}
	return info
}

// get reads bucket/key whole.
func (e *env) get(t testing.TB, key string, opt GetOptions) (*Object, []byte) {
	t.Helper()
	o, err := e.s.GetObject(context.Background(), "bkt", key, opt)
	if err != nil {
		t.Fatalf("GetObject(%q): %v", key, err)
	}
	defer o.Body.Close()
	b, err := io.ReadAll(o.Body)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	if int64(len(b)) != o.Length {
		t.Fatalf("read %d bytes of %q, Length says %d", len(b), key, o.Length)
	}
	return o, b
}

// blobs lists the block store.
func (e *env) blobs(t testing.TB) []string {
	t.Helper()
	var keys []string
	if err := e.store.List(context.Background(), "", func(k string) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// liveBlocks returns the blob keys the visible state references: blocks of
// every object of every bucket and of every part of every open upload.
func (e *env) liveBlocks(t testing.TB) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	bs, err := e.db.Buckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		es, _, err := e.db.ListObjects(ctx, b.Name, meta.ListOptions{Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range es {
			o, err := e.db.Object(ctx, b.Name, en.Key)
			if err != nil {
				t.Fatal(err)
			}
			for _, bl := range o.Blocks {
				keys = append(keys, bl.Key)
			}
		}
		us, _, err := e.db.ListUploads(ctx, b.Name, meta.UploadListOptions{Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			ps, _, err := e.db.Parts(ctx, u.Upload.ID, 0, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				for _, bl := range p.Blocks {
					keys = append(keys, bl.Key)
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// wantCode fails unless err carries code ("" for success).
func wantCode(t testing.TB, what string, err error, code s3err.Code) {
	t.Helper()
	if got := s3err.CodeOf(err); got != code {
		t.Fatalf("%s: error %v (code %q), want code %q", what, err, got, code)
	}
}

// count returns the number of versions with open readers.
func (t *readerTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.n)
}

// refs returns refs to the latest versions of keys.
func refs(keys ...string) []ObjectRef {
	out := make([]ObjectRef, len(keys))
	for i, k := range keys {
		out[i].Key = k
	}
	return out
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// snapshot returns a copy of the set, for tests that check it is empty.
func (f *inflightSet) snapshot() map[string]struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]struct{}, len(f.keys))
	for k := range f.keys {
		m[k] = struct{}{}
	}
	return m
}
