package objects

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// versions returns bkt's versions of key, newest first, as "v" (an
// object version) or "m" (a delete marker) per entry.
func (e *env) versions(t testing.TB, key string) string {
	t.Helper()
	res, err := e.s.ListObjectVersions(context.Background(), "bkt", ListVersionsInput{Prefix: key, MaxKeys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, v := range res.Versions {
		if v.Key != key {
			continue
		}
		if v.DeleteMarker {
			s += "m"
		} else {
			s += "v"
		}
	}
	return s
}

// failedCondition returns the Condition field of a PreconditionFailed.
func failedCondition(err error) string {
	if e, ok := errors.AsType[*s3err.Error](err); ok {
		for _, f := range e.Extra {
			if f.Name == "Condition" {
				return f.Value
			}
		}
	}
	return ""
}

func TestConditionalDeleteUnversioned(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	info := e.put(t, "k", []byte("hello"))
	size, wrongSize := int64(5), int64(6)

	for _, tc := range []struct {
		name string
		c    DeleteConditions
		cond string // the failed condition, "" for none
	}{
		{"wrong etag", DeleteConditions{IfMatch: `"0123"`}, "If-Match"},
		{"one of two etags wrong", DeleteConditions{IfMatch: `"0123"`, IfMatchSize: &size}, "If-Match"},
		{"wrong size", DeleteConditions{IfMatchSize: &wrongSize}, "x-amz-if-match-size"},
		{"wrong time", DeleteConditions{IfMatchLastModified: ptr(info.LastModified.Add(-time.Hour))}, "x-amz-if-match-last-modified-time"},
		{"right etag, wrong time", DeleteConditions{IfMatch: info.ETag, IfMatchLastModified: ptr(info.LastModified.Add(time.Second))}, "x-amz-if-match-last-modified-time"},
		{"zero time", DeleteConditions{IfMatchLastModified: &time.Time{}}, "x-amz-if-match-last-modified-time"},
	} {
		_, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: tc.c})
		wantCode(t, tc.name, err, s3err.PreconditionFailed)
		if got := failedCondition(err); got != tc.cond {
			t.Errorf("%s: Condition %q, want %q", tc.name, got, tc.cond)
		}
		if _, err := e.s.HeadObject(ctx, "bkt", "k", GetOptions{}); err != nil {
			t.Fatalf("%s: object gone after a failed conditional delete: %v", tc.name, err)
		}
	}

	// Every condition holds: the object goes. An HTTP date has whole
	// seconds, so a time within the object's second matches.
	_, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{
		IfMatch: `"` + info.ETag + `", "other"`, IfMatchSize: &size,
		IfMatchLastModified: ptr(info.LastModified.Truncate(time.Second)),
	}})
	if err != nil {
		t.Fatalf("conditional delete whose conditions hold: %v", err)
	}
	if _, err := e.s.HeadObject(ctx, "bkt", "k", GetOptions{}); s3err.CodeOf(err) != s3err.NoSuchKey {
		t.Fatalf("HeadObject after the delete: %v, want NoSuchKey", err)
	}
	// An absent key: nothing to match, nothing to do, success.
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatch: "nope"}}); err != nil {
		t.Fatalf("conditional delete of an absent key: %v", err)
	}

	e.put(t, "k", []byte("again"))
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatch: "*"}}); err != nil {
		t.Fatalf("If-Match * on an existing object: %v", err)
	}
	if _, err := e.s.HeadObject(ctx, "bkt", "k", GetOptions{}); s3err.CodeOf(err) != s3err.NoSuchKey {
		t.Fatalf("HeadObject after If-Match * delete: %v, want NoSuchKey", err)
	}
}

func TestConditionalDeleteVersioned(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.s.PutBucketVersioning(ctx, "bkt", "Enabled", ""); err != nil {
		t.Fatal(err)
	}
	// No version at all: a conditional delete writes no delete marker.
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatch: "*"}}); err != nil {
		t.Fatalf("conditional delete of an absent key: %v", err)
	}
	if got := e.versions(t, "k"); got != "" {
		t.Fatalf("versions after a conditional delete of an absent key: %q, want none", got)
	}

	info := e.put(t, "k", []byte("hello"))
	_, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatch: "bad"}})
	wantCode(t, "current, wrong etag", err, s3err.PreconditionFailed)
	res, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatch: info.ETag}})
	if err != nil || !res.DeleteMarker {
		t.Fatalf("current, right etag: %+v, %v; want a delete marker", res, err)
	}
	// The latest version is now the marker: it has no ETag, size 0 and
	// its own time; only * matches it by ETag.
	zero := int64(0)
	_, err = e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatch: info.ETag}})
	wantCode(t, "marker, an etag", err, s3err.PreconditionFailed)
	for _, empty := range []string{`""`, ",", ` "" , `} {
		_, err = e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatch: empty}})
		wantCode(t, "marker, If-Match "+empty, err, s3err.PreconditionFailed)
	}
	_, err = e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatchLastModified: ptr(time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC))}})
	wantCode(t, "marker, wrong time", err, s3err.PreconditionFailed)
	if got := e.versions(t, "k"); got != "mv" {
		t.Fatalf("versions after failed deletes: %q, want mv", got)
	}
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", If: DeleteConditions{IfMatch: "*", IfMatchSize: &zero}}); err != nil {
		t.Fatalf("marker, * and size 0: %v", err)
	}
	if got := e.versions(t, "k"); got != "mmv" {
		t.Fatalf("versions after a second marker: %q, want mmv", got)
	}

	// A version named: its own ETag and size decide, whether it is the
	// latest or not; a version that is gone is success, as unconditionally.
	_, err = e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", VersionID: info.VersionID, If: DeleteConditions{IfMatch: "bad"}})
	wantCode(t, "version, wrong etag", err, s3err.PreconditionFailed)
	wrong := int64(4)
	_, err = e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", VersionID: info.VersionID, If: DeleteConditions{IfMatchSize: &wrong}})
	wantCode(t, "version, wrong size", err, s3err.PreconditionFailed)
	res, err = e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", VersionID: info.VersionID, If: DeleteConditions{IfMatch: info.ETag}})
	if err != nil || res.DeleteMarker {
		t.Fatalf("version, right etag: %+v, %v", res, err)
	}
	if got := e.versions(t, "k"); got != "mm" {
		t.Fatalf("versions after deleting the object version: %q, want mm", got)
	}
	if _, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k", VersionID: info.VersionID, If: DeleteConditions{IfMatch: "bad"}}); err != nil {
		t.Fatalf("a gone version, wrong etag: %v, want success", err)
	}
}

func TestConditionalDeleteObjects(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.put(t, "a", []byte("aaa"))
	e.put(t, "b", []byte("bbb"))
	e.put(t, "c", []byte("ccc"))
	res, err := e.s.DeleteObjects(ctx, "bkt", []ObjectRef{
		{Key: "a", If: DeleteConditions{IfMatch: a.ETag}},
		{Key: "b", If: DeleteConditions{IfMatch: a.ETag}}, // a's ETag: fails alone
		{Key: "c"},
		{Key: "a", If: DeleteConditions{IfMatch: "*"}}, // a is gone by then: success
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []s3err.Code{"", s3err.PreconditionFailed, "", ""} {
		if got := s3err.CodeOf(res[i].Err); got != want {
			t.Errorf("result %d (%s): %v, want %q", i, res[i].Key, res[i].Err, want)
		}
	}
	for key, want := range map[string]s3err.Code{"a": s3err.NoSuchKey, "b": "", "c": s3err.NoSuchKey} {
		if _, err := e.s.HeadObject(ctx, "bkt", key, GetOptions{}); s3err.CodeOf(err) != want {
			t.Errorf("HeadObject(%s) after DeleteObjects: %v, want %q", key, err, want)
		}
	}
}
