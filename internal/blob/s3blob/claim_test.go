package s3blob_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/s3blob"
)

// Store IDs of two metadata stores.
const (
	storeA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	storeB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// TestClaim claims prefixes for two metadata stores, on an upstream with
// conditional writes and on one that answers them 501 NotImplemented: the
// first claim of a prefix wins, claiming it again for the same store
// succeeds (a restart, another node of a cluster), and a claim for
// another store fails with ErrClaimed, naming the bucket, the prefix and
// both stores, and leaves the claim as it was. List never returns the
// claim object.
func TestClaim(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	for _, tc := range []struct {
		name        string
		conditional bool
	}{
		{"conditional writes", true},
		{"no conditional writes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			p := startProxy(t, u)
			var refused atomic.Int64
			if !tc.conditional {
				p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
					if r.Method == http.MethodPut && r.Header.Get("If-None-Match") != "" {
						refused.Add(1)
						writeS3Error(w, http.StatusNotImplemented, "NotImplemented", "conditional writes are not implemented")
						return true
					}
					return false
				})
			}
			bucket, prefix := u.newBucket(t), u.prefix()
			cfg := u.config(bucket, prefix)
			cfg.Endpoint = p.endpoint
			a, b := newStore(t, cfg), newStore(t, cfg)

			claimed := time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)
			got, err := a.Claim(ctx, blob.Owner{StoreID: storeA, Claimed: claimed, Version: "v9.9.9"}, blob.Local{HasBuckets: true})
			if err != nil {
				t.Fatalf("first Claim: %v", err)
			}
			if got.StoreID != storeA || !got.Claimed.Equal(claimed) || got.Version != "v9.9.9" {
				t.Errorf("first Claim = %+v, want store %s claimed %v by v9.9.9", got, storeA, claimed)
			}
			if !tc.conditional && refused.Load() == 0 {
				t.Error("the claim was not tried as a conditional write first")
			}
			if _, err := a.Claim(ctx, blob.Owner{StoreID: storeA, Claimed: claimed.Add(time.Hour)}, blob.Local{HasBuckets: true}); err != nil {
				t.Errorf("Claim again for the same store: %v", err)
			}
			_, err = b.Claim(ctx, blob.Owner{StoreID: storeB, Claimed: claimed}, blob.Local{})
			if !errors.Is(err, blob.ErrClaimed) {
				t.Fatalf("Claim for another store = %v, want ErrClaimed", err)
			}
			for _, want := range []string{bucket, prefix, storeA, storeB, "--blob.s3.prefix", prefix + s3blob.ClaimName, "v9.9.9"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Claim error %q does not name %q", err, want)
				}
			}
			if o := readClaim(t, u, bucket, prefix); o.StoreID != storeA || !o.Claimed.Equal(claimed) {
				t.Errorf("claim after the refused one = %+v, want the first", o)
			}
			if err := a.Put(ctx, "b/blk", strings.NewReader("x"), 1); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"b/blk"}, listAll(t, a, "")); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClaimRace claims one new prefix for two stores at once, many times
// over: the upstream's conditional write lets exactly one of them win.
func TestClaimRace(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket := u.newBucket(t)
	for range 10 {
		cfg := u.config(bucket, u.prefix())
		stores := []*s3blob.Store{newStore(t, cfg), newStore(t, cfg)}
		ids := []string{storeA, storeB}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range stores {
			wg.Go(func() {
				_, errs[i] = stores[i].Claim(t.Context(), blob.Owner{StoreID: ids[i]}, blob.Local{HasBuckets: true})
			})
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
				if o := readClaim(t, u, bucket, cfg.Prefix); o.StoreID != ids[i] {
					t.Errorf("store %s won, but the claim is %s's", ids[i], o.StoreID)
				}
			case !errors.Is(err, blob.ErrClaimed):
				t.Fatalf("Claim(%s): %v", ids[i], err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of two racing claims won (%v), want exactly one", won, errs)
		}
	}
}

// TestClaimForeignObject: an object at the claim's name that Claim did not
// write is neither taken as a claim nor overwritten.
func TestClaimForeignObject(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket, prefix := u.newBucket(t), u.prefix()
	key := prefix + s3blob.ClaimName
	if _, err := u.admin.PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("not json"),
	}); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, u.config(bucket, prefix))
	_, err := s.Claim(t.Context(), blob.Owner{StoreID: storeA}, blob.Local{HasBuckets: true})
	if err == nil || errors.Is(err, blob.ErrClaimed) || !strings.Contains(err.Error(), "not a claim") {
		t.Errorf("Claim over a foreign object = %v, want an error saying it is not a claim", err)
	}
	out, err := u.admin.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	if b, _ := io.ReadAll(out.Body); string(b) != "not json" {
		t.Errorf("the foreign object now holds %q", b)
	}
}

// TestClaimUnclaimedBlocks: a prefix that holds blocks but no claim (a
// deployment from before claims, not restarted since) is claimed only by
// a metadata store with records: an empty one (a new test instance given
// production's prefix) would otherwise claim it, and its garbage
// collection delete every block there.
func TestClaimUnclaimedBlocks(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket, prefix := u.newBucket(t), u.prefix()
	if _, err := u.admin.PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(prefix + "b/00/block"), Body: strings.NewReader("data"),
	}); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, u.config(bucket, prefix))
	_, err := s.Claim(t.Context(), blob.Owner{StoreID: storeB}, blob.Local{Blocks: "b/"})
	if !errors.Is(err, blob.ErrUnclaimedBlocks) || !strings.Contains(err.Error(), "b/00/block") {
		t.Fatalf("an empty store's claim of a prefix with blocks = %v, want ErrUnclaimedBlocks naming a block", err)
	}
	if _, err := u.admin.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + s3blob.ClaimName)}); err == nil {
		t.Error("the refused claim was written")
	}
	// The deployment that has used the prefix, with its records, claims it.
	if _, err := s.Claim(t.Context(), blob.Owner{StoreID: storeA}, blob.Local{HasBuckets: true, Blocks: "b/"}); err != nil {
		t.Fatalf("claim by a store with records: %v", err)
	}
	// And the empty store is now told whose it is, and to take another.
	_, err = s.Claim(t.Context(), blob.Owner{StoreID: storeB}, blob.Local{Blocks: "b/"})
	if !errors.Is(err, blob.ErrClaimed) || !strings.Contains(err.Error(), "prefix of its own") {
		t.Errorf("empty store's claim after the owner's = %v, want ErrClaimed advising a prefix of its own", err)
	}
	// A store with records is not advised to move away from its blocks.
	_, err = s.Claim(t.Context(), blob.Owner{StoreID: storeB}, blob.Local{HasBuckets: true, Blocks: "b/"})
	if !errors.Is(err, blob.ErrClaimed) || !strings.Contains(err.Error(), "do not change its prefix") {
		t.Errorf("claim by another store with records = %v, want ErrClaimed advising not to move", err)
	}
}

// readClaim returns the claim of prefix in bucket, read behind the store's
// back.
func readClaim(t *testing.T, u *upstream, bucket, prefix string) blob.Owner {
	t.Helper()
	out, err := u.admin.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + s3blob.ClaimName)})
	if err != nil {
		t.Fatalf("get the claim: %v", err)
	}
	defer out.Body.Close()
	var o blob.Owner
	if err := json.NewDecoder(out.Body).Decode(&o); err != nil {
		t.Fatalf("decode the claim: %v", err)
	}
	return o
}

// The claim's name is no blob key: no Put, Get or Delete can replace,
// read or remove the claim.
func TestClaimNotABlob(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket, prefix := u.newBucket(t), u.prefix()
	s := newStore(t, u.config(bucket, prefix))
	if _, err := s.Claim(t.Context(), blob.Owner{StoreID: storeA}, blob.Local{HasBuckets: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), s3blob.ClaimName, strings.NewReader("x"), 1); err == nil {
		t.Error("Put of the claim's name succeeded")
	}
	if err := s.Delete(t.Context(), s3blob.ClaimName); err == nil {
		t.Error("Delete of the claim's name succeeded")
	}
	if rc, err := s.Get(t.Context(), s3blob.ClaimName, 0, -1); err == nil {
		rc.Close()
		t.Error("Get of the claim's name succeeded")
	}
	if o := readClaim(t, u, bucket, prefix); o.StoreID != storeA {
		t.Errorf("claim now %+v", o)
	}
}

// TestCheckClaim: CheckClaim, which GC asks before every orphan sweep,
// fails once the claim names another store, and writes a deleted claim
// again.
func TestCheckClaim(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	bucket, prefix := u.newBucket(t), u.prefix()
	s := newStore(t, u.config(bucket, prefix))
	if err := s.CheckClaim(t.Context()); err != nil {
		t.Fatalf("CheckClaim before any claim: %v", err)
	}
	if _, err := s.Claim(t.Context(), blob.Owner{StoreID: storeA}, blob.Local{HasBuckets: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckClaim(t.Context()); err != nil {
		t.Fatalf("CheckClaim under its own claim: %v", err)
	}
	key := prefix + s3blob.ClaimName
	if _, err := u.admin.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Body: strings.NewReader(`{"store_id":"` + storeB + `"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckClaim(t.Context()); !errors.Is(err, blob.ErrClaimed) {
		t.Errorf("CheckClaim after another store's claim replaced it = %v, want ErrClaimed", err)
	}
	if _, err := u.admin.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckClaim(t.Context()); err != nil {
		t.Fatalf("CheckClaim after the claim was deleted: %v", err)
	}
	if o := readClaim(t, u, bucket, prefix); o.StoreID != storeA {
		t.Errorf("claim after CheckClaim = %+v, want store A's again", o)
	}
}

// TestClaimConflictThenVisible: two nodes of one cluster claim at once; one
// gets 409 (AWS's ConditionalRequestConflict while the other's conditional
// write is under way) and the other's claim becomes readable only a moment
// later. The node waits for it instead of failing its start.
func TestClaimConflictThenVisible(t *testing.T) {
	t.Parallel()
	u := startUpstream(t)
	p := startProxy(t, u)
	bucket, prefix := u.newBucket(t), u.prefix()
	cfg := u.config(bucket, prefix)
	cfg.Endpoint = p.endpoint
	s := newStore(t, cfg)
	key := prefix + s3blob.ClaimName
	var once sync.Once
	p.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPut || r.Header.Get("If-None-Match") == "" {
			return false
		}
		once.Do(func() {
			go func() { // the other node's write lands later
				time.Sleep(300 * time.Millisecond)
				_, _ = u.admin.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
					Body: strings.NewReader(`{"store_id":"` + storeA + `"}`)})
			}()
		})
		writeS3Error(w, http.StatusConflict, "ConditionalRequestConflict", "A conflicting conditional operation is in progress")
		return true
	})
	if _, err := s.Claim(t.Context(), blob.Owner{StoreID: storeA}, blob.Local{HasBuckets: true}); err != nil {
		t.Fatalf("Claim while the cluster's other node claims: %v", err)
	}
}
