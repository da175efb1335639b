package objects

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// TestOverwriteAtomicity overwrites one key while readers read it and GC
// runs with no grace: every read must return exactly one of the bodies
// written, whole, with that body's ETag. With multi-block bodies (and one
// inline) readers race GC for the blocks; with inline bodies of several
// sizes they race the overwrite between reading the record and its data.
func TestOverwriteAtomicity(t *testing.T) {
	for _, tc := range []struct {
		name string
		size func(i int) int
	}{
		{"blocks", func(i int) int {
			if i == 0 {
				return 300 // one inline body among the block ones
			}
			return 5*testBlock + i*777
		}},
		{"inline", func(i int) int { return 1 + i*testInline/8 }},
	} {
		t.Run(tc.name, func(t *testing.T) { testOverwriteAtomicity(t, tc.size) })
	}
}

func testOverwriteAtomicity(t *testing.T, size func(int) int) {
	e := newEnv(t)
	const nBodies, writers, readers, rounds = 6, 3, 4, 25
	bodies := make(map[string][]byte) // ETag → body
	var list [][]byte
	for i := range nBodies {
		b := randBytes(size(i), uint64(100+i))
		bodies[md5Hex(b)] = b
		list = append(list, b)
	}
	e.put(t, "hot", list[1])

	ctx := context.Background()
	var done atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			// Writers go on past rounds until readers have read a few
			// times while they write (bounded): on a loaded machine the
			// readers may not be scheduled before the rounds are over.
			for r := 0; r < rounds || reads.Load() < readers && r < 100*rounds; r++ {
				b := list[(w+r)%nBodies]
				if _, err := e.s.PutObject(ctx, "bkt", "hot", PutInput{Size: int64(len(b))}, bytes.NewReader(b)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var rg sync.WaitGroup
	for range readers {
		rg.Go(func() {
			for !done.Load() {
				o, err := e.s.GetObject(ctx, "bkt", "hot", GetOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				got, err := io.ReadAll(o.Body)
				o.Body.Close()
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				want, ok := bodies[o.Info.ETag]
				if !ok || !bytes.Equal(got, want) {
					t.Errorf("read %d bytes with ETag %s: not the body with that ETag (known %v)", len(got), o.Info.ETag, ok)
					return
				}
				reads.Add(1)
			}
		})
	}
	rg.Go(func() {
		for !done.Load() {
			if _, err := e.s.GC(ctx, 0); err != nil {
				t.Errorf("GC: %v", err)
				return
			}
		}
	})
	wg.Wait()
	done.Store(true)
	rg.Wait()
	if reads.Load() == 0 {
		t.Error("no read completed")
	}
	if _, err := e.s.GC(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e.liveBlocks(t), e.blobs(t)); diff != "" {
		t.Errorf("after the storm, store vs referenced (-want +got):\n%s", diff)
	}
}

// TestConditionalCreateRace: of 16 concurrent If-None-Match: * writes of
// one key exactly one wins, and the object is the winner's body. Several
// rounds, each on a fresh key, with writers released at once.
func TestConditionalCreateRace(t *testing.T) {
	e := newEnvSync(t, Config{InlineThreshold: testInline, BlockSize: testBlock}, true)
	ctx := context.Background()
	const rounds, n = 10, 16
	for round := range rounds {
		key := fmt.Sprint("once-", round)
		start := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []string
		codes := map[s3err.Code]int{}
		for i := range n {
			wg.Go(func() {
				size := 100 + i
				if i%4 == 0 {
					size = 2*testBlock + i // some block bodies too
				}
				b := randBytes(size, uint64(round*n+i))
				<-start
				info, err := e.s.PutObject(ctx, "bkt", key, PutInput{Size: int64(len(b)), Cond: WriteConditions{IfNoneMatch: "*"}}, bytes.NewReader(b))
				mu.Lock()
				defer mu.Unlock()
				codes[s3err.CodeOf(err)]++
				if err == nil {
					winners = append(winners, info.ETag)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 || codes[s3err.PreconditionFailed] != n-1 {
			t.Fatalf("round %d: winners %v, codes %v; want exactly one winner and %d PreconditionFailed", round, winners, codes, n-1)
		}
		o, got := e.get(t, key, GetOptions{})
		if o.Info.ETag != winners[0] || md5Hex(got) != winners[0] {
			t.Errorf("round %d: stored ETag %s (data %s), winner %s", round, o.Info.ETag, md5Hex(got), winners[0])
		}
	}
	if diff := cmp.Diff(e.liveBlocks(t), e.blobs(t)); diff != "" {
		t.Errorf("losers left blobs (-want +got):\n%s", diff)
	}
}

// TestConcurrentDistinctKeys writes and reads many keys at once.
func TestConcurrentDistinctKeys(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			key := fmt.Sprintf("k/%02d", i)
			b := randBytes(i*testBlock/3, uint64(i))
			if _, err := e.s.PutObject(ctx, "bkt", key, PutInput{Size: int64(len(b))}, bytes.NewReader(b)); err != nil {
				t.Error(err)
				return
			}
			o, err := e.s.GetObject(ctx, "bkt", key, GetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			defer o.Body.Close()
			got, err := io.ReadAll(o.Body)
			if err != nil || !bytes.Equal(got, b) {
				t.Errorf("%s: read back %d bytes, %v", key, len(got), err)
			}
		})
	}
	wg.Wait()
	r, err := e.s.ListObjects(ctx, "bkt", ListInput{Prefix: "k/", MaxKeys: 1000})
	if err != nil || len(r.Objects) != 32 {
		t.Errorf("listed %d objects, %v", len(r.Objects), err)
	}
}
