package migrate

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/meta/pgtest"
)

var testPG pgtest.Lazy

func TestMain(m *testing.M) {
	code := m.Run()
	testPG.Stop()
	os.Exit(code)
}

var testTime = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func md5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

func sum(alg checksum.Algorithm, b []byte) []byte {
	h := alg.New()
	h.Write(b)
	return h.Sum(nil)
}

// source is a single node's store: Pebble and a block store.
type source struct {
	db    *meta.DB
	blobs *memblob.Store
	data  map[string][]byte // blob key → bytes, for corrupting
}

func openPebble(t *testing.T) *meta.DB {
	t.Helper()
	db, err := meta.Open(meta.Config{Dir: t.TempDir(), Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// newSource fills a store with what a migration must carry and verify:
// an inline object, an object of two blocks with a CRC32C checksum, a
// multipart object with a composite SHA256 checksum, a noncurrent version
// and a delete marker, and a part of an upload in progress.
func newSource(t *testing.T) *source {
	t.Helper()
	ctx := t.Context()
	s := &source{db: openPebble(t), blobs: memblob.New(), data: map[string][]byte{}}
	put := func(bucket, key string, o meta.Object) {
		t.Helper()
		if err := s.db.UpdateObject(ctx, bucket, key, testTime, func(*meta.Object) (*meta.Object, error) { return &o, nil }); err != nil {
			t.Fatal(err)
		}
	}
	blocks := func(name string, data []byte, sizes ...int) []meta.Block {
		t.Helper()
		var bs []meta.Block
		for i, n := range sizes {
			k := fmt.Sprintf("b/%02x/%s%d", len(name), name, i)
			if err := s.blobs.Put(ctx, k, bytes.NewReader(data[:n]), int64(n)); err != nil {
				t.Fatal(err)
			}
			s.data[k] = data[:n]
			bs = append(bs, meta.Block{Key: k, Size: int64(n)})
			data = data[n:]
		}
		return bs
	}
	for _, b := range []string{"plain", "versioned"} {
		if err := s.db.CreateBucket(ctx, meta.Bucket{Name: b, Created: testTime}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.SetVersioning(ctx, "versioned", meta.VersioningEnabled); err != nil {
		t.Fatal(err)
	}
	small := []byte("hello")
	put("plain", "small", meta.Object{Size: 5, ETag: md5Hex(small), Inline: small})
	big := bytes.Repeat([]byte("0123456789"), 30)
	put("plain", "big", meta.Object{Size: 300, ETag: md5Hex(big), Blocks: blocks("big", big, 200, 100),
		Checksum: meta.Checksum{Algorithm: "CRC32C", Value: checksum.Encode(sum(checksum.CRC32C, big)), Type: "FULL_OBJECT"}})
	p1, p2 := bytes.Repeat([]byte("a"), 120), bytes.Repeat([]byte("b"), 30)
	s1, s2 := sum(checksum.SHA256, p1), sum(checksum.SHA256, p2)
	m1, m2 := md5.Sum(p1), md5.Sum(p2)
	mp := append(append([]byte{}, p1...), p2...)
	put("plain", "multipart", meta.Object{Size: 150, ETag: md5Hex(append(m1[:], m2[:]...)) + "-2",
		Blocks: blocks("mp", mp, 100, 20, 30), PartSizes: []int64{120, 30},
		Checksum:      meta.Checksum{Algorithm: "SHA256", Value: checksum.Composite(checksum.SHA256, [][]byte{s1, s2}), Type: "COMPOSITE"},
		PartChecksums: []string{checksum.Encode(s1), checksum.Encode(s2)}})
	old := []byte("the old version")
	put("versioned", "doc", meta.Object{Size: int64(len(old)), ETag: md5Hex(old), Blocks: blocks("old", old, len(old))})
	put("versioned", "doc", meta.Object{Size: 3, ETag: md5Hex([]byte("new")), Inline: []byte("new")})
	put("versioned", "doc", meta.Object{DeleteMarker: true})
	id := "0123456789abcdef0123456789abcdef"
	if err := s.db.CreateUpload(ctx, meta.Upload{Bucket: "plain", Key: "pending", ID: id, Initiated: testTime}); err != nil {
		t.Fatal(err)
	}
	part := []byte("a part in progress")
	p := meta.Part{Number: 1, Size: int64(len(part)), ETag: md5Hex(part), Modified: testTime, Blocks: blocks("part", part, len(part))}
	if err := s.db.PutPart(ctx, "plain", "pending", id, p, testTime); err != nil {
		t.Fatal(err)
	}
	if err := s.db.PutIAMState(ctx, []byte(`{"sealed":"state"}`)); err != nil {
		t.Fatal(err)
	}
	return s
}

// failingStore fails every Put after the first after of them.
type failingStore struct {
	blob.Store
	after int64
	puts  atomic.Int64
}

var errInjected = errors.New("injected failure")

func (f *failingStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if f.puts.Add(1) > f.after {
		return errInjected
	}
	return f.Store.Put(ctx, key, r, size)
}

func blobKeys(t *testing.T, s blob.Store) []string {
	t.Helper()
	var keys []string
	if err := s.List(t.Context(), "", func(k string) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// targets are the engines a migration writes into: PostgreSQL, as
// coffer admin migrate does, and Pebble, which CopyFrom serves as well.
var targets = []struct {
	name string
	open func(t *testing.T) *meta.DB
}{
	{"postgres", func(t *testing.T) *meta.DB {
		db, err := meta.Open(meta.Config{Kind: meta.EnginePostgres, Sync: true,
			Postgres: meta.PostgresConfig{URL: testPG.Get(t).NewSchema(t), MaxConns: 4}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}},
	{"pebble", openPebble},
}

func TestRun(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx := t.Context()
			src := newSource(t)
			want := blobKeys(t, src.blobs)

			// Interrupted twice: after a few block copies, then after a
			// few more. Each run resumes from the stored progress.
			dst, dstBlobs := tg.open(t), memblob.New()
			cfg := Config{Source: src.db, SourceBlobs: src.blobs, Target: dst, SourceID: "/data", TargetID: "blocks/c1/",
				Limits: meta.CopyLimits{Keys: 2}, Workers: 2}
			for _, after := range []int64{1, 2} {
				// Through a proxy at first: the endpoint may change.
				cfg.TargetEndpoint = fmt.Sprintf("http://proxy%d:8080", after)
				cfg.TargetBlobs = &failingStore{Store: dstBlobs, after: after}
				if _, err := Run(ctx, cfg); !errors.Is(err, errInjected) {
					t.Fatalf("Run with a failing target after %d puts: %v, want the injected failure", after, err)
				}
				m, err := dst.Migration(ctx)
				if err != nil || m.Phase != meta.MigrationCopying {
					t.Fatalf("after the failure: %+v, %v; want phase copying", m, err)
				}
			}
			moved := cfg
			moved.TargetBlobs, moved.TargetID = memblob.New(), "blocks/c2/"
			if _, err := Run(ctx, moved); err == nil || !strings.Contains(err.Error(), "not to blocks/c2/") {
				t.Fatalf("Run resumed into another prefix: %v, want a refusal", err)
			}
			if keys := blobKeys(t, moved.TargetBlobs); len(keys) != 0 {
				t.Errorf("blocks written to another prefix: %q", keys)
			}
			// The source is marked from the start: no server opens it.
			if mk, err := src.db.MigrationMark(ctx); err != nil || mk.Done || mk.Target != "http://proxy2:8080/blocks/c1/" {
				t.Errorf("source mark during the migration = %+v, %v; want one in progress to http://proxy2:8080/blocks/c1/", mk, err)
			}
			cfg.TargetBlobs, cfg.TargetEndpoint = dstBlobs, "https://s3.example.com"
			m, err := Run(ctx, cfg)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if m.Target != "blocks/c1/" || m.TargetEndpoint != "https://s3.example.com" {
				t.Errorf("target recorded as %q at %q, want blocks/c1/ at the last endpoint", m.Target, m.TargetEndpoint)
			}
			if mk, err := src.db.MigrationMark(ctx); err != nil || !mk.Done || mk.Target != "https://s3.example.com/blocks/c1/" {
				t.Errorf("source mark after the migration = %+v, %v; want done, to https://s3.example.com/blocks/c1/", mk, err)
			}
			// Verified: 2 of versioned/doc (the marker is a record too), 3 of
			// plain, 1 part.
			if m.Phase != meta.MigrationDone || m.Verified != 7 || m.Mismatched != 0 {
				t.Errorf("migration = %+v, want done with 7 records verified", m)
			}
			if diff := cmp.Diff(want, blobKeys(t, dstBlobs)); diff != "" {
				t.Errorf("target blocks (-want +got):\n%s", diff)
			}
			doc, err := dst.IAMState(ctx)
			if err != nil || string(doc) != `{"sealed":"state"}` {
				t.Errorf("IAM state on the target = %q, %v", doc, err)
			}

			// Done is done: another run changes nothing.
			again, err := Run(ctx, cfg)
			if err != nil || !cmp.Equal(again, m) {
				t.Errorf("Run after done = %+v, %v; want %+v", again, err, m)
			}
			// Another source is refused.
			other := cfg
			other.SourceID = "/elsewhere"
			if _, err := Run(ctx, other); err == nil || !strings.Contains(err.Error(), "from /data") {
				t.Errorf("Run from another source: %v, want a refusal naming /data", err)
			}
			// Another target bucket or prefix too, at any phase.
			other = cfg
			other.TargetID = "blocks/c2/"
			if _, err := Run(ctx, other); err == nil || !strings.Contains(err.Error(), "go to blocks/c1/, not to blocks/c2/") {
				t.Errorf("Run into another prefix after done: %v, want a refusal naming both", err)
			}
		})
	}
}

// TestRunNotEmpty: a target with buckets no migration wrote is refused.
func TestRunNotEmpty(t *testing.T) {
	ctx := t.Context()
	src := newSource(t)
	dst := openPebble(t)
	if err := dst.CreateBucket(ctx, meta.Bucket{Name: "mine", Created: testTime}); err != nil {
		t.Fatal(err)
	}
	claimed := false
	_, err := Run(ctx, Config{Source: src.db, SourceBlobs: src.blobs, Target: dst, TargetBlobs: memblob.New(), SourceID: "/data",
		Claim: func(context.Context) error { claimed = true; return nil }})
	if err == nil || !strings.Contains(err.Error(), "empty database") {
		t.Fatalf("Run into a store with a bucket: %v, want a refusal", err)
	}
	if _, err := dst.Migration(ctx); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("migration state written into a refused target: %v", err)
	}
	if claimed {
		t.Error("the refused target's prefix was claimed")
	}
}

// TestRunClaimRefused: a migration whose target prefix cannot be claimed
// (another deployment's) is refused before it marks the source or writes
// its state into the target.
func TestRunClaimRefused(t *testing.T) {
	ctx := t.Context()
	src := newSource(t)
	dst := openPebble(t)
	refused := errors.New("prefix claimed by another metadata store")
	_, err := Run(ctx, Config{Source: src.db, SourceBlobs: src.blobs, Target: dst, TargetBlobs: memblob.New(), SourceID: "/data",
		Claim: func(context.Context) error { return refused }})
	if !errors.Is(err, refused) {
		t.Fatalf("Run with a refused claim: %v, want the claim's error", err)
	}
	if _, err := dst.Migration(ctx); !errors.Is(err, meta.ErrNotFound) {
		t.Errorf("migration state written despite the refused claim: %v", err)
	}
	if mk, err := src.db.MigrationMark(ctx); err == nil {
		t.Errorf("source marked despite the refused claim: %+v", mk)
	}
}

// TestRunCorrupt: blocks damaged in the source (same size, other bytes;
// one missing) are copied as they are and found by the verification,
// which names each record; once the source is repaired, a new run copies
// those blocks again and succeeds.
func TestRunCorrupt(t *testing.T) {
	ctx := t.Context()
	src := newSource(t)
	var damaged []string
	for _, k := range []string{"b/03/big1", "b/02/mp1", "b/04/part0"} {
		bad := bytes.Clone(src.data[k])
		bad[len(bad)/2] ^= 0x20
		if err := src.blobs.Put(ctx, k, bytes.NewReader(bad), int64(len(bad))); err != nil {
			t.Fatal(err)
		}
		damaged = append(damaged, k)
	}
	if err := src.blobs.Delete(ctx, "b/03/old0"); err != nil {
		t.Fatal(err)
	}
	dst, dstBlobs := openPebble(t), memblob.New()
	cfg := Config{Source: src.db, SourceBlobs: src.blobs, Target: dst, TargetBlobs: dstBlobs, SourceID: "/data"}
	m, err := Run(ctx, cfg)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Run over damaged blocks: %v, want ErrMismatch", err)
	}
	for _, want := range []string{
		"4 of 7 records",
		"plain/big version null: ETag ", "CRC32C checksum ",
		"plain/multipart version null: ETag ", "SHA256 checksum ", "part 1: SHA256 checksum",
		"part 1 of upload 0123456789abcdef0123456789abcdef: ETag ",
		"(noncurrent): block b/03/old0 is missing from the target",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if m.Phase != meta.MigrationFailed || m.Mismatched != 4 || len(m.Mismatches) != 4 {
		t.Errorf("migration = %+v, want failed with 4 mismatches", m)
	}
	// Still failed when run again without a repair.
	if _, err := Run(ctx, cfg); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Run again over the damaged source: %v, want ErrMismatch", err)
	}
	for _, k := range append(damaged, "b/03/old0") {
		if err := src.blobs.Put(ctx, k, bytes.NewReader(src.data[k]), int64(len(src.data[k]))); err != nil {
			t.Fatal(err)
		}
	}
	m, err = Run(ctx, cfg)
	if err != nil || m.Phase != meta.MigrationDone || m.Verified != 7 {
		t.Fatalf("Run after the repair = %+v, %v; want done, 7 verified", m, err)
	}
}

// TestRunShortBlock: a block shorter in the source than its record says
// (a truncated file) is not copied, as if missing, and the verification
// names the record; it stopped every run at the copy of its batch.
func TestRunShortBlock(t *testing.T) {
	ctx := t.Context()
	src := newSource(t)
	k := "b/03/big0"
	short := src.data[k][:150]
	if err := src.blobs.Put(ctx, k, bytes.NewReader(short), int64(len(short))); err != nil {
		t.Fatal(err)
	}
	dst, dstBlobs := openPebble(t), memblob.New()
	cfg := Config{Source: src.db, SourceBlobs: src.blobs, Target: dst, TargetBlobs: dstBlobs, SourceID: "/data"}
	for run := 1; run <= 2; run++ {
		m, err := Run(ctx, cfg)
		if !errors.Is(err, ErrMismatch) {
			t.Fatalf("run %d over a short block: %v, want ErrMismatch", run, err)
		}
		if want := "1 of 7 records\n  plain/big version null: block " + k + " is missing from the target"; !strings.Contains(err.Error(), want) {
			t.Errorf("run %d: error does not say %q:\n%v", run, want, err)
		}
		if m.Phase != meta.MigrationFailed || m.Verified != 6 {
			t.Errorf("run %d: migration = %+v, want failed with 6 verified", run, m)
		}
	}
	if err := src.blobs.Put(ctx, k, bytes.NewReader(src.data[k]), int64(len(src.data[k]))); err != nil {
		t.Fatal(err)
	}
	if m, err := Run(ctx, cfg); err != nil || m.Phase != meta.MigrationDone || m.Verified != 7 {
		t.Fatalf("Run after the repair = %+v, %v; want done, 7 verified", m, err)
	}
}

// TestRunManyMismatches: more records than meta.MaxMismatches do not
// match (their blocks missing from the source); once the source is
// repaired, a new run copies every one of them again, not only those the
// state lists, and succeeds.
func TestRunManyMismatches(t *testing.T) {
	ctx := t.Context()
	db, err := meta.Open(meta.Config{Dir: t.TempDir()}) // unsynced: many records
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	srcBlobs := memblob.New()
	if err := db.CreateBucket(ctx, meta.Bucket{Name: "many", Created: testTime}); err != nil {
		t.Fatal(err)
	}
	n := meta.MaxMismatches + 20
	data := map[string][]byte{}
	for i := range n {
		b := []byte(fmt.Sprintf("object %d", i))
		k := fmt.Sprintf("b/00/many%d", i)
		data[k] = b
		o := meta.Object{Size: int64(len(b)), ETag: md5Hex(b), Blocks: []meta.Block{{Key: k, Size: int64(len(b))}}}
		if err := db.UpdateObject(ctx, "many", fmt.Sprint(i), testTime, func(*meta.Object) (*meta.Object, error) { return &o, nil }); err != nil {
			t.Fatal(err)
		}
	}
	dst := openPebble(t)
	cfg := Config{Source: db, SourceBlobs: srcBlobs, Target: dst, TargetBlobs: memblob.New(), SourceID: "/data", Workers: 8}
	m, err := Run(ctx, cfg)
	if !errors.Is(err, ErrMismatch) || m.Mismatched != int64(n) || len(m.Mismatches) != meta.MaxMismatches {
		t.Fatalf("Run without the blocks = %d mismatched, %d listed, %v; want %d, %d listed, ErrMismatch", m.Mismatched, len(m.Mismatches), err, n, meta.MaxMismatches)
	}
	for k, b := range data {
		if err := srcBlobs.Put(ctx, k, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
	m, err = Run(ctx, cfg)
	if err != nil || m.Phase != meta.MigrationDone || m.Verified != int64(n) {
		t.Fatalf("Run after the repair = %s, %d verified, %d mismatched, %v; want done, %d verified", m.Phase, m.Verified, m.Mismatched, err, n)
	}
}

// TestRunSourceChanged: a source written to between two runs (a node
// started on it again) is refused, with the migration left as it was;
// the run resumed and ended done without the new object (and an inline
// object's data left behind failed the verification for good).
func TestRunSourceChanged(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, db *meta.DB)
	}{
		{name: "new inline object", write: func(t *testing.T, db *meta.DB) {
			o := meta.Object{Size: 3, ETag: md5Hex([]byte("new")), Inline: []byte("new")}
			if err := db.UpdateObject(ctx, "plain", "new", testTime, func(*meta.Object) (*meta.Object, error) { return &o, nil }); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a value changed, no key added", write: func(t *testing.T, db *meta.DB) {
			if err := db.SetVersioning(ctx, "plain", meta.VersioningEnabled); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newSource(t)
			dst, dstBlobs := openPebble(t), memblob.New()
			cfg := Config{Source: src.db, SourceBlobs: src.blobs, Target: dst, SourceID: "/data", Limits: meta.CopyLimits{Keys: 2},
				TargetBlobs: &failingStore{Store: dstBlobs, after: 2}}
			if _, err := Run(ctx, cfg); !errors.Is(err, errInjected) {
				t.Fatalf("Run with a failing target: %v, want the injected failure", err)
			}
			before, err := dst.Migration(ctx)
			if err != nil || before.Phase != meta.MigrationCopying || before.Cursor == nil {
				t.Fatalf("after the failure: %+v, %v; want a copy under way", before, err)
			}
			tc.write(t, src.db)
			cfg.TargetBlobs = dstBlobs
			for run := 1; run <= 2; run++ {
				m, err := Run(ctx, cfg)
				if !errors.Is(err, ErrSourceChanged) || !strings.Contains(err.Error(), "start over into an empty database") {
					t.Fatalf("run %d after a write to the source: %+v, %v; want ErrSourceChanged", run, m, err)
				}
			}
			after, err := dst.Migration(ctx)
			if err != nil || !cmp.Equal(before, after) {
				t.Errorf("migration after the refusals = %+v, %v; want it unchanged, %+v", after, err, before)
			}
		})
	}
}

// TestRunIncomplete: a target written to by something else than the
// migration (a node started on it) is not a copy of the source: the
// migration does not end done, whatever the verification of its records
// found.
func TestRunIncomplete(t *testing.T) {
	ctx := t.Context()
	src := newSource(t)
	k := "b/03/big1"
	if err := src.blobs.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	dst := openPebble(t)
	cfg := Config{Source: src.db, SourceBlobs: src.blobs, Target: dst, TargetBlobs: memblob.New(), SourceID: "/data"}
	if _, err := Run(ctx, cfg); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Run without a block: %v, want ErrMismatch", err)
	}
	if err := dst.CreateBucket(ctx, meta.Bucket{Name: "extra", Created: testTime}); err != nil {
		t.Fatal(err)
	}
	if err := src.blobs.Put(ctx, k, bytes.NewReader(src.data[k]), int64(len(src.data[k]))); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		m, err := Run(ctx, cfg)
		if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "table b: 3 keys, the source 2") || m.Phase == meta.MigrationDone {
			t.Fatalf("run %d over a target with a bucket of its own = %+v, %v; want ErrIncomplete naming table b", run, m, err)
		}
	}
	if m, err := dst.Migration(ctx); err != nil || m.Phase == meta.MigrationDone {
		t.Errorf("stored migration = %+v, %v; want it not done", m, err)
	}
}

// TestRunAcceptMismatches: with AcceptMismatches a verification that
// finds damage that cannot be repaired ends done, the damage counted (a
// target whose migration is not done is refused by servers, so without
// it such a source could never move).
func TestRunAcceptMismatches(t *testing.T) {
	ctx := t.Context()
	src := newSource(t)
	if err := src.blobs.Delete(ctx, "b/03/old0"); err != nil {
		t.Fatal(err)
	}
	dst := openPebble(t)
	cfg := Config{Source: src.db, SourceBlobs: src.blobs, Target: dst, TargetBlobs: memblob.New(), SourceID: "/data"}
	if m, err := Run(ctx, cfg); !errors.Is(err, ErrMismatch) || m.Phase != meta.MigrationFailed {
		t.Fatalf("Run without a block = %s, %v; want failed, ErrMismatch", m.Phase, err)
	}
	cfg.AcceptMismatches = true
	m, err := Run(ctx, cfg)
	if err != nil || m.Phase != meta.MigrationDone || m.Mismatched != 1 || m.Verified != 6 {
		t.Fatalf("Run accepting mismatches = %+v, %v; want done, 6 verified, 1 mismatched", m, err)
	}
	if stored, err := dst.Migration(ctx); err != nil || stored.Phase != meta.MigrationDone {
		t.Errorf("stored migration = %s, %v; want done", stored.Phase, err)
	}
	if mk, err := src.db.MigrationMark(ctx); err != nil || !mk.Done {
		t.Errorf("source mark = %+v, %v; want done", mk, err)
	}
}

func TestVerifier(t *testing.T) {
	data := []byte("abcdefghij")
	crc := checksum.Encode(sum(checksum.CRC32, data))
	pa, pb := data[:4], data[4:]
	ma, mb := md5.Sum(pa), md5.Sum(pb)
	mpETag := md5Hex(append(ma[:], mb[:]...)) + "-2"
	comp := checksum.Composite(checksum.CRC32, [][]byte{sum(checksum.CRC32, pa), sum(checksum.CRC32, pb)})
	for _, tc := range []struct {
		name     string
		want     expected
		partSums []string
		data     []byte
		problem  string // substring; "" for a match
	}{
		{name: "plain", want: expected{size: 10, etag: md5Hex(data)}, data: data},
		{name: "upper-case ETag", want: expected{size: 10, etag: strings.ToUpper(md5Hex(data))}, data: data},
		{name: "short", want: expected{size: 10, etag: md5Hex(data)}, data: data[:9], problem: "read 9 bytes, the record says 10"},
		{name: "other bytes", want: expected{size: 10, etag: md5Hex(data)}, data: []byte("abcdefghiJ"), problem: "ETag "},
		{name: "full checksum", want: expected{size: 10, etag: md5Hex(data), checksum: meta.Checksum{Algorithm: "CRC32", Value: crc, Type: "FULL_OBJECT"}}, data: data},
		{name: "full checksum differs", want: expected{size: 10, etag: md5Hex(data), checksum: meta.Checksum{Algorithm: "CRC32", Value: "AAAAAA==", Type: "FULL_OBJECT"}}, data: data, problem: "CRC32 checksum " + crc},
		{name: "multipart", want: expected{size: 10, etag: mpETag, parts: []int64{4, 6}}, data: data},
		{name: "multipart with an empty part", want: expected{size: 10, etag: md5Hex(append(append(ma[:], mb[:]...), md5.New().Sum(nil)...)) + "-3", parts: []int64{4, 6, 0}}, data: data},
		{name: "multipart split elsewhere", want: expected{size: 10, etag: mpETag, parts: []int64{5, 5}}, data: data, problem: "ETag "},
		{name: "composite", want: expected{size: 10, etag: mpETag, parts: []int64{4, 6}, checksum: meta.Checksum{Algorithm: "CRC32", Value: comp, Type: "COMPOSITE"}},
			partSums: []string{checksum.Encode(sum(checksum.CRC32, pa)), checksum.Encode(sum(checksum.CRC32, pb))}, data: data},
		{name: "composite, a part's checksum differs", want: expected{size: 10, etag: mpETag, parts: []int64{4, 6}, checksum: meta.Checksum{Algorithm: "CRC32", Value: comp, Type: "COMPOSITE"}},
			partSums: []string{checksum.Encode(sum(checksum.CRC32, pa)), "AAAAAA=="}, data: data, problem: "part 2: CRC32 checksum"},
		{name: "multipart, full-object CRC", want: expected{size: 10, etag: mpETag, parts: []int64{4, 6}, checksum: meta.Checksum{Algorithm: "CRC32", Value: crc, Type: "FULL_OBJECT"}}, data: data},
		{name: "multipart ETag without part sizes: size only", want: expected{size: 10, etag: "0123-2"}, data: data},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := newVerifier(tc.want, tc.partSums)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range tc.data { // byte at a time: parts split anywhere
				v.Write([]byte{b})
			}
			got := v.check()
			if tc.problem == "" && got != "" || tc.problem != "" && !strings.Contains(got, tc.problem) {
				t.Errorf("check() = %q, want %q", got, tc.problem)
			}
		})
	}
}
