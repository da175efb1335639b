package objects

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestListObjects(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	keys := []string{"a\x01b", "a/b", "a/c/d", "a::x::y", "b", "\U0010FFFF", "z\xef\xbf\xbf/1", "日本/1", "日本/2"}
	for _, k := range keys {
		e.put(t, k, []byte(k))
	}
	type page struct {
		Keys, Prefixes []string
		Truncated      bool
		Next           string
	}
	for _, tc := range []struct {
		name string
		in   ListInput
		want page
	}{
		{"all", ListInput{MaxKeys: 100}, page{Keys: []string{"a\x01b", "a/b", "a/c/d", "a::x::y", "b", "z\xef\xbf\xbf/1", "日本/1", "日本/2", "\U0010FFFF"}}},
		{"delimiter", ListInput{Delimiter: "/", MaxKeys: 100}, page{Keys: []string{"a\x01b", "a::x::y", "b", "\U0010FFFF"}, Prefixes: []string{"a/", "z\xef\xbf\xbf/", "日本/"}}},
		{"prefixes count toward max", ListInput{Delimiter: "/", MaxKeys: 2}, page{Keys: []string{"a\x01b"}, Prefixes: []string{"a/"}, Truncated: true, Next: "a/"}},
		{"after prefix marker", ListInput{Delimiter: "/", MaxKeys: 2, StartAfter: "a/"}, page{Keys: []string{"a::x::y", "b"}, Truncated: true, Next: "b"}},
		{"prefix is next marker", ListInput{Delimiter: "/", MaxKeys: 1, StartAfter: "a\x01b"}, page{Prefixes: []string{"a/"}, Truncated: true, Next: "a/"}},
		{"last page", ListInput{Delimiter: "/", MaxKeys: 3, StartAfter: "b"}, page{Keys: []string{"\U0010FFFF"}, Prefixes: []string{"z\xef\xbf\xbf/", "日本/"}}},
		{"multibyte delimiter", ListInput{Prefix: "a", Delimiter: "::", MaxKeys: 100}, page{Keys: []string{"a\x01b", "a/b", "a/c/d"}, Prefixes: []string{"a::"}}},
		{"unicode prefix", ListInput{Prefix: "日本/", MaxKeys: 100}, page{Keys: []string{"日本/1", "日本/2"}}},
		{"max keys zero", ListInput{MaxKeys: 0}, page{}}, // as S3 (and ceph/s3-tests) answer
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := e.s.ListObjects(ctx, "bkt", tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got := page{Prefixes: r.CommonPrefixes, Truncated: r.IsTruncated, Next: r.NextMarker}
			for _, o := range r.Objects {
				got.Keys = append(got.Keys, o.Key)
				if o.ETag != md5Hex([]byte(o.Key)) || o.Size != int64(len(o.Key)) || o.LastModified.IsZero() || o.Bucket != "bkt" {
					t.Errorf("listed %q with ETag %s size %d", o.Key, o.ETag, o.Size)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ListObjects(%+v) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
	_, err := e.s.ListObjects(ctx, "nope", ListInput{MaxKeys: 10})
	wantCode(t, "ListObjects(missing bucket)", err, s3err.NoSuchBucket)
}

// TestACLOwner: a listing's owner function reads the owner of a stored
// ACL, and names none ("", the bucket owner's) for an object stored
// without one and for an ACL that does not decode (a damaged record),
// rather than fail the page.
func TestACLOwner(t *testing.T) {
	e := newEnv(t)
	owner := e.s.aclOwner(context.Background(), "bkt")
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name string
		doc  []byte
		want string
	}{
		{"stored", acl.Encode(acl.Private(id)), id},
		{"none", nil, ""},
		{"damaged", []byte(`{"owner":`), ""},
	} {
		if got := owner(tc.doc); got != tc.want {
			t.Errorf("%s: owner = %q, want %q", tc.name, got, tc.want)
		}
	}
}
