package objects

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
	"github.com/google/go-cmp/cmp"
)

// blobGet is one recorded blob.Store.Get call.
type blobGet struct {
	Key    string
	Off, N int64
}

// countingStore is a blob.Store that delegates to another and records its
// Get calls.
type countingStore struct {
	blob.Store
	mu   sync.Mutex
	gets []blobGet
}

func (s *countingStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	s.mu.Lock()
	s.gets = append(s.gets, blobGet{Key: key, Off: off, N: n})
	s.mu.Unlock()
	return s.Store.Get(ctx, key, off, n)
}

// take returns the recorded Get calls and forgets them.
func (s *countingStore) take() []blobGet {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gets
	s.gets = nil
	return g
}

// newCountingEnv is newEnv over a countingStore wrapping memblob.
func newCountingEnv(t *testing.T) (*env, *countingStore) {
	t.Helper()
	cs := &countingStore{Store: memblob.New()}
	e := &env{store: cs.Store.(*memblob.Store), dir: t.TempDir()}
	e.open(t, Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock}, cs)
	if err := e.s.CreateBucket(context.Background(), "bkt", CreateBucketInput{Region: ""}); err != nil {
		t.Fatal(err)
	}
	return e, cs
}

// TestRangeGetOpensOnlyOverlappingBlocks checks that a ranged read of a
// four-block object asks the blob store only for the blocks the range
// overlaps, and for only the bytes of them it needs.
// wholeBlob is the n of a blob Get that reads a whole block: to the end,
// so that a store keeping a checksum per blob verifies it.
const wholeBlob = -1

func TestRangeGetOpensOnlyOverlappingBlocks(t *testing.T) {
	e, cs := newCountingEnv(t)
	const size = 4 * testBlock
	data := randBytes(size, 42)
	e.put(t, "k", data)

	// A whole read opens every block once, in order: that names them.
	_, got := e.get(t, "k", GetOptions{})
	if !bytes.Equal(got, data) {
		t.Fatalf("whole GetObject returned %d bytes, want the %d put", len(got), len(data))
	}
	whole := cs.take()
	if len(whole) != 4 {
		t.Fatalf("whole GetObject made %d blob Gets %v, want 4 (one per block)", len(whole), whole)
	}
	blocks := make([]string, len(whole))
	for i, g := range whole {
		blocks[i] = g.Key
		if g.Off != 0 || g.N != wholeBlob {
			t.Errorf("whole GetObject, block %d: Get(off %d, n %d), want (0, -1): a whole block is asked for as such", i, g.Off, g.N)
		}
	}
	if blocks[0] == blocks[1] || blocks[1] == blocks[2] || blocks[2] == blocks[3] {
		t.Fatalf("block keys are not distinct: %q", blocks)
	}

	for _, tc := range []struct {
		name       string
		rng        Range
		start, end int64 // the bytes served, end exclusive
		want       []blobGet
	}{
		{
			name: "inside block 2", rng: Range{Start: testBlock + 100, End: testBlock + 199},
			start: testBlock + 100, end: testBlock + 200,
			want: []blobGet{{blocks[1], 100, 100}},
		},
		{
			name: "exactly block 2", rng: Range{Start: testBlock, End: 2*testBlock - 1},
			start: testBlock, end: 2 * testBlock,
			want: []blobGet{{blocks[1], 0, wholeBlob}},
		},
		{
			name: "spanning blocks 2-3", rng: Range{Start: 2*testBlock - 10, End: 2*testBlock + 9},
			start: 2*testBlock - 10, end: 2*testBlock + 10,
			want: []blobGet{{blocks[1], testBlock - 10, 10}, {blocks[2], 0, 10}},
		},
		{
			name: "suffix within last block", rng: Range{Start: -1, Suffix: 150},
			start: size - 150, end: size,
			want: []blobGet{{blocks[3], testBlock - 150, 150}},
		},
		{
			name: "suffix spanning last two blocks", rng: Range{Start: -1, Suffix: testBlock + 1},
			start: size - testBlock - 1, end: size,
			want: []blobGet{{blocks[2], testBlock - 1, 1}, {blocks[3], 0, wholeBlob}},
		},
		{
			name: "open-ended from block 4", rng: Range{Start: 3*testBlock + 1, End: -1},
			start: 3*testBlock + 1, end: size,
			want: []blobGet{{blocks[3], 1, testBlock - 1}},
		},
		{
			name: "whole object as a range", rng: Range{Start: 0, End: size - 1},
			start: 0, end: size,
			want: []blobGet{{blocks[0], 0, wholeBlob}, {blocks[1], 0, wholeBlob}, {blocks[2], 0, wholeBlob}, {blocks[3], 0, wholeBlob}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := tc.rng
			o, got := e.get(t, "k", GetOptions{Range: &rng})
			if o.Start != tc.start || o.Length != tc.end-tc.start {
				t.Errorf("Start %d Length %d, want %d %d", o.Start, o.Length, tc.start, tc.end-tc.start)
			}
			if !bytes.Equal(got, data[tc.start:tc.end]) {
				t.Errorf("got %d bytes, not the %d of data[%d:%d]", len(got), tc.end-tc.start, tc.start, tc.end)
			}
			if diff := cmp.Diff(tc.want, cs.take()); diff != "" {
				t.Errorf("blob Gets (-want +got):\n%s", diff)
			}
		})
	}

	// HEAD opens no block at all.
	o, err := e.s.HeadObject(context.Background(), "bkt", "k", GetOptions{Range: &Range{Start: 0, End: 10}})
	if err != nil {
		t.Fatal(err)
	}
	o.Body.Close()
	if g := cs.take(); len(g) != 0 {
		t.Errorf("HeadObject made blob Gets %v, want none", g)
	}
}
