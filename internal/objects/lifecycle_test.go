package objects

import (
	"context"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// walk returns every version of bucket in batches of limit.
func walk(t *testing.T, s *Service, bucket string, opt WalkOptions) []Version {
	t.Helper()
	var out []Version
	for range 1000 {
		vs, pos, more, err := s.WalkVersions(context.Background(), bucket, opt)
		if err != nil {
			t.Fatalf("WalkVersions: %v", err)
		}
		out = append(out, vs...)
		if !more {
			return out
		}
		opt.After = pos
	}
	t.Fatal("walk did not end")
	return nil
}

func TestWalkAndExpire(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	s := e.s
	if err := s.PutBucketVersioning(ctx, "bkt", "Enabled", ""); err != nil {
		t.Fatal(err)
	}
	big := randBytes(3*testBlock, 1) // block object: expiry sends its blocks to GC
	e.put(t, "k", big)
	e.put(t, "k", []byte("v2"))
	if _, err := s.PutObjectTagging(ctx, "bkt", "k", "", Pin{}, []Tag{{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteObject(ctx, "bkt", ObjectRef{Key: "gone"}); err != nil { // a lone delete marker
		t.Fatal(err)
	}

	vs := walk(t, s, "bkt", WalkOptions{Noncurrent: true, Tags: true, Limit: 1})
	type row struct {
		Key           string
		Marker        bool
		Latest        bool
		Noncurrent    bool
		Size          int64
		Tags          []Tag
		HasVersionID  bool
		ModifiedIsSet bool
	}
	var got []row
	for _, v := range vs {
		got = append(got, row{v.Key, v.DeleteMarker, v.Latest, v.Noncurrent(), v.Size, v.Tags, len(v.VersionID) == 32, !v.Modified.IsZero()})
	}
	want := []row{
		{Key: "gone", Marker: true, Latest: true, HasVersionID: true, ModifiedIsSet: true},
		{Key: "k", Latest: true, Size: 2, Tags: []Tag{{"a", "b"}}, HasVersionID: true, ModifiedIsSet: true},
		{Key: "k", Noncurrent: true, Size: int64(len(big)), HasVersionID: true, ModifiedIsSet: true},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("walk (-want +got):\n%s", diff)
	}

	var seen []ExpireState
	res, err := s.Expire(ctx, "bkt", []ExpireTarget{
		{Version: vs[2], Kind: ExpireNoncurrent},
		{Version: vs[0], Kind: ExpireDeleteMarker},
		{Version: vs[1], Kind: ExpireCurrent},
	}, 3, func(_ int, st ExpireState) bool {
		seen = append(seen, st)
		return true
	})
	if err != nil {
		t.Fatalf("Expire: %v", err)
	}
	if len(seen) != 3 || !seen[0].NoncurrentSince.Equal(vs[1].Modified) || seen[0].Newer != 0 || len(seen[2].Version.Tags) != 1 {
		t.Errorf("states seen = %+v", seen)
	}
	for i, r := range res {
		if !r.Done || !r.DeleteMarker && i > 0 || r.VersionID == "" {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	left := walk(t, s, "bkt", WalkOptions{Noncurrent: true})
	if len(left) != 2 || !left[0].DeleteMarker || !left[0].Latest || left[1].Size != 2 {
		t.Fatalf("after expiry: %+v, want a delete marker over v2", left)
	}
	// The expired block object's blocks are garbage now: GC removes them.
	if _, err := s.GC(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if b := e.blobs(t); len(b) != 0 {
		t.Errorf("blobs after GC = %v, want none", b)
	}
	u, err := s.BucketUsage(ctx, "bkt")
	if err != nil || u.Usage.Objects != 1 || u.Usage.Bytes != 2 {
		t.Errorf("usage = %+v, %v; want 1 object of 2 bytes", u.Usage, err)
	}
}

func TestExpireLeavesChangedVersions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.put(t, "k", []byte("old"))
	vs := walk(t, e.s, "bkt", WalkOptions{})
	e.put(t, "k", []byte("new")) // overwritten after the walk
	res, err := e.s.Expire(ctx, "bkt", []ExpireTarget{{Version: vs[0], Kind: ExpireCurrent}}, 0,
		func(int, ExpireState) bool { return true })
	if err != nil || res[0].Done {
		t.Fatalf("Expire of an overwritten object = %+v, %v; want left alone", res, err)
	}
	_, b := e.get(t, "k", GetOptions{})
	if string(b) != "new" {
		t.Fatalf("object = %q, want the new one", b)
	}
}

func TestExpireReaderFinishes(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	data := randBytes(3*testBlock, 2)
	e.put(t, "k", data)
	o, err := e.s.GetObject(ctx, "bkt", "k", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Body.Close()
	vs := walk(t, e.s, "bkt", WalkOptions{})
	if res, err := e.s.Expire(ctx, "bkt", []ExpireTarget{{Version: vs[0], Kind: ExpireCurrent}}, 0,
		func(int, ExpireState) bool { return true }); err != nil || !res[0].Done {
		t.Fatalf("Expire = %+v, %v", res, err)
	}
	if _, err := e.s.GC(ctx, 0); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(o.Body)
	if err != nil || string(b) != string(data) {
		t.Fatalf("read of the expired object after GC: %d bytes, %v; want it whole", len(b), err)
	}
}

func TestLifecycleErrors(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	_, _, _, err := e.s.WalkVersions(ctx, "nope", WalkOptions{})
	wantCode(t, "WalkVersions of a missing bucket", err, s3err.NoSuchBucket)
	_, err = e.s.Expire(ctx, "nope", nil, 0, func(int, ExpireState) bool { return true })
	wantCode(t, "Expire in a missing bucket", err, s3err.NoSuchBucket)
	vs, _, more, err := e.s.WalkVersions(ctx, "bkt", WalkOptions{})
	if err != nil || len(vs) != 0 || more {
		t.Fatalf("walk of an empty bucket = %v, %v, %v", vs, more, err)
	}
}

func TestConfigGeneration(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	g := e.s.ConfigGeneration()
	changed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := e.s.ConfigGeneration(); n == g {
			t.Errorf("%s did not change the configuration generation", what)
		} else {
			g = n
		}
	}
	changed("PutBucketConfig", e.s.PutBucketConfig(ctx, "bkt", ConfigLifecycle, []byte("x")))
	changed("delete config", e.s.PutBucketConfig(ctx, "bkt", ConfigLifecycle, nil))
	changed("CreateBucket", e.s.CreateBucket(ctx, "other", CreateBucketInput{}))
	changed("DeleteBucket", e.s.DeleteBucket(ctx, "other"))
	if err := e.s.PutBucketConfig(ctx, "nope", ConfigLifecycle, []byte("x")); err == nil {
		t.Fatal("config of a missing bucket stored")
	}
	if e.s.ConfigGeneration() != g {
		t.Error("a failed PutBucketConfig changed the generation")
	}
	e.put(t, "k", []byte("x"))
	if e.s.ConfigGeneration() != g {
		t.Error("an object write changed the generation")
	}
}
