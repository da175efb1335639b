package objects

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestCheckTags(t *testing.T) {
	many := func(n int) []Tag {
		ts := make([]Tag, n)
		for i := range ts {
			ts[i] = Tag{Key: strings.Repeat("k", i+1)}
		}
		return ts
	}
	for _, tc := range []struct {
		name   string
		tags   []Tag
		bucket bool
		want   s3err.Code
	}{
		{name: "none", tags: nil},
		{name: "ten", tags: many(10)},
		{name: "eleven", tags: many(11), want: s3err.InvalidTag},
		{name: "eleven on a bucket", tags: many(11), bucket: true},
		{name: "fifty-one on a bucket", tags: many(51), bucket: true, want: s3err.InvalidTag},
		{name: "longest", tags: []Tag{{Key: strings.Repeat("é", 128), Value: strings.Repeat("v", 256)}}},
		{name: "key too long", tags: []Tag{{Key: strings.Repeat("k", 129)}}, want: s3err.InvalidTag},
		{name: "value too long", tags: []Tag{{Key: "k", Value: strings.Repeat("v", 257)}}, want: s3err.InvalidTag},
		{name: "empty key", tags: []Tag{{Key: ""}}, want: s3err.InvalidTag},
		{name: "duplicate", tags: []Tag{{Key: "a"}, {Key: "a", Value: "2"}}, want: s3err.InvalidTag},
		{name: "reserved prefix", tags: []Tag{{Key: "AWS:cloudformation"}}, want: s3err.InvalidTag},
		{name: "allowed punctuation", tags: []Tag{{Key: "a+b-c=d.e_f:g/h@i j", Value: "日本 語"}}},
		{name: "forbidden character", tags: []Tag{{Key: "a", Value: "x<y"}}, want: s3err.InvalidTag},
		{name: "invalid utf-8", tags: []Tag{{Key: "\xff"}}, want: s3err.InvalidTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, "CheckTags", CheckTags(tc.tags, tc.bucket), tc.want)
		})
	}
}

// TestObjectTagging sets tags on writes, copies and uploads, changes them
// on current and noncurrent versions in place, and checks what each
// version keeps.
func TestObjectTagging(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	blue := []Tag{{Key: "project", Value: "blue"}}
	red := []Tag{{Key: "project", Value: "red"}, {Key: "tier", Value: ""}}
	tagsOf := func(key, vid string) []Tag {
		t.Helper()
		ts, _, _, err := e.s.ObjectTagging(ctx, "bkt", key, vid)
		if err != nil {
			t.Fatalf("ObjectTagging(%s, %q): %v", key, vid, err)
		}
		return ts
	}
	check := func(what string, got, want []Tag) {
		t.Helper()
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	if _, err := e.s.PutObject(ctx, "bkt", "k", PutInput{Size: 3, Tags: blue}, bytes.NewReader([]byte("one"))); err != nil {
		t.Fatal(err)
	}
	check("tags of a PUT", tagsOf("k", ""), blue)
	o, err := e.s.HeadObject(ctx, "bkt", "k", GetOptions{})
	if err != nil || o.Info.TagCount != 1 {
		t.Fatalf("HeadObject TagCount = %d, %v", o.Info.TagCount, err)
	}
	// Copies keep the source's tags unless told to replace them.
	if _, err := e.s.CopyObject(ctx, "bkt", "copy", CopyInput{SrcBucket: "bkt", SrcKey: "k"}); err != nil {
		t.Fatal(err)
	}
	check("tags of a copy", tagsOf("copy", ""), blue)
	if _, err := e.s.CopyObject(ctx, "bkt", "copy", CopyInput{SrcBucket: "bkt", SrcKey: "k", ReplaceTags: true, Tags: red}); err != nil {
		t.Fatal(err)
	}
	check("tags of a copy with REPLACE", tagsOf("copy", ""), red)
	// Uploads carry their tags to the object.
	u, err := e.s.CreateMultipartUpload(ctx, "bkt", "mp", CreateUploadInput{Tags: red})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.s.UploadPart(ctx, "bkt", "mp", u.UploadID, 1, PartInput{Size: 2}, bytes.NewReader([]byte("mp")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.CompleteMultipartUpload(ctx, "bkt", "mp", u.UploadID, CompleteInput{Parts: []CompletePart{{Number: 1, ETag: p.ETag}}}); err != nil {
		t.Fatal(err)
	}
	check("tags of a multipart object", tagsOf("mp", ""), red)

	// Versions: tagging changes one version in place.
	if err := e.s.PutBucketVersioning(ctx, "bkt", "Enabled", ""); err != nil {
		t.Fatal(err)
	}
	info, err := e.s.PutObject(ctx, "bkt", "k", PutInput{Size: 3}, bytes.NewReader([]byte("two")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.PutObjectTagging(ctx, "bkt", "k", "null", Pin{}, red); err != nil {
		t.Fatalf("PutObjectTagging of the null version: %v", err)
	}
	check("noncurrent null version", tagsOf("k", "null"), red)
	check("current version", tagsOf("k", info.VersionID), nil)
	if _, got := e.get(t, "k", GetOptions{VersionID: "null"}); string(got) != "one" {
		t.Errorf("data of the retagged version = %q", got)
	}
	if _, err := e.s.DeleteObjectTagging(ctx, "bkt", "k", "null", Pin{}); err != nil {
		t.Fatal(err)
	}
	check("after DeleteObjectTagging", tagsOf("k", "null"), nil)
	dr, err := e.s.DeleteObject(ctx, "bkt", ObjectRef{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.s.PutObjectTagging(ctx, "bkt", "k", "", Pin{}, blue)
	wantCode(t, "PutObjectTagging under a delete marker", err, s3err.NoSuchKey)
	_, err = e.s.PutObjectTagging(ctx, "bkt", "k", dr.DeleteMarkerVersionID, Pin{}, blue)
	wantCode(t, "PutObjectTagging of a delete marker", err, s3err.MethodNotAllowed)
	_, err = e.s.PutObjectTagging(ctx, "bkt", "k", strings.Repeat("0", 32), Pin{}, blue)
	wantCode(t, "PutObjectTagging of a missing version", err, s3err.NoSuchVersion)
	_, err = e.s.PutObjectTagging(ctx, "bkt", "k", "bad", Pin{}, blue)
	wantCode(t, "PutObjectTagging of a malformed version", err, s3err.InvalidArgument)
	_, err = e.s.PutObjectTagging(ctx, "nope", "k", "", Pin{}, blue)
	wantCode(t, "PutObjectTagging in a missing bucket", err, s3err.NoSuchBucket)
}

// TestPinnedChanges: a change of tags or ACL given the Pin of a version
// applies to that version only: after an overwrite (or in an unversioned
// bucket, where the new object is the null version again) it is refused
// with ConditionalRequestConflict and the new object keeps its tags and
// ACL; with the pin of the current version, or none, it applies.
func TestPinnedChanges(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.put(t, "k", []byte("v1"))
	_, _, old, err := e.s.ObjectTagging(ctx, "bkt", "k", "")
	if err != nil {
		t.Fatal(err)
	}
	e.put(t, "k", []byte("v2"))
	tags := []Tag{{"a", "b"}}
	_, err = e.s.PutObjectTagging(ctx, "bkt", "k", "", old, tags)
	wantCode(t, "PutObjectTagging pinned to an overwritten version", err, s3err.ConditionalRequestConflict)
	_, err = e.s.DeleteObjectTagging(ctx, "bkt", "k", "", old)
	wantCode(t, "DeleteObjectTagging pinned to an overwritten version", err, s3err.ConditionalRequestConflict)
	_, err = e.s.PutObjectACL(ctx, "bkt", "k", "null", old, []byte("acl"))
	wantCode(t, "PutObjectACL pinned to an overwritten null version", err, s3err.ConditionalRequestConflict)
	if got, _, _, err := e.s.ObjectTagging(ctx, "bkt", "k", ""); err != nil || len(got) != 0 {
		t.Errorf("tags of the new object = %v, %v; want none", got, err)
	}
	if doc, _, _, err := e.s.ObjectACL(ctx, "bkt", "k", ""); err != nil || doc != nil {
		t.Errorf("ACL of the new object = %q, %v; want none", doc, err)
	}
	_, _, cur, err := e.s.ObjectACL(ctx, "bkt", "k", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.PutObjectTagging(ctx, "bkt", "k", "", cur, tags); err != nil {
		t.Errorf("PutObjectTagging pinned to the current version: %v", err)
	}
	if _, err := e.s.PutObjectACL(ctx, "bkt", "k", "", Pin{}, nil); err != nil {
		t.Errorf("PutObjectACL pinned to nothing: %v", err)
	}
	// The state is pinned too: tags changed since the read.
	_, _, read, err := e.s.ObjectTagging(ctx, "bkt", "k", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.PutObjectTagging(ctx, "bkt", "k", "", Pin{}, []Tag{{"c", "d"}}); err != nil {
		t.Fatal(err)
	}
	_, err = e.s.PutObjectACL(ctx, "bkt", "k", "", read, []byte("acl"))
	wantCode(t, "PutObjectACL pinned to tags changed since", err, s3err.ConditionalRequestConflict)
	// A pin without the tags (what an ACL decision read) holds across a
	// change of the tags; the version alone across both.
	_, _, read, err = e.s.ObjectACL(ctx, "bkt", "k", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.PutObjectTagging(ctx, "bkt", "k", "", Pin{}, []Tag{{"e", "f"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.PutObjectACL(ctx, "bkt", "k", "", read.WithoutTags(), nil); err != nil {
		t.Errorf("PutObjectACL pinned without the tags, after a change of the tags: %v", err)
	}
	if _, err := e.s.PutObjectTagging(ctx, "bkt", "k", "", read.Version(), tags); err != nil {
		t.Errorf("PutObjectTagging pinned to the version alone: %v", err)
	}
	if m, ok := read.WithoutTags().Merge(read.WithoutACL()); !ok || m != read {
		t.Errorf("Merge of the two halves of a pin = %v, %v; want the pin", m, ok)
	}
	if _, ok := read.Merge(NoVersion); ok {
		t.Errorf("Merge of a pin with NoVersion succeeded")
	}
	// NoVersion: the read found nothing, and there is something now.
	_, err = e.s.PutObjectTagging(ctx, "bkt", "k", "", NoVersion, tags)
	wantCode(t, "PutObjectTagging pinned to no version", err, s3err.ConditionalRequestConflict)
}
