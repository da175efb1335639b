package objects

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestResolveRange(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       Range
		size    int64
		want    span
		wantErr s3err.Code
	}{
		{name: "first bytes", r: Range{Start: 0, End: 4}, size: 10, want: span{0, 5, true}},
		{name: "open ended", r: Range{Start: 3, End: -1}, size: 10, want: span{3, 7, true}},
		{name: "end clamped", r: Range{Start: 8, End: 100}, size: 10, want: span{8, 2, true}},
		{name: "last byte", r: Range{Start: 9, End: 9}, size: 10, want: span{9, 1, true}},
		{name: "whole as range", r: Range{Start: 0, End: -1}, size: 10, want: span{0, 10, true}},
		{name: "suffix", r: Range{Start: -1, Suffix: 3}, size: 10, want: span{7, 3, true}},
		{name: "suffix longer", r: Range{Start: -1, Suffix: 30}, size: 10, want: span{0, 10, true}},
		{name: "start at size", r: Range{Start: 10, End: -1}, size: 10, wantErr: s3err.InvalidRange},
		{name: "start beyond", r: Range{Start: 11, End: 20}, size: 10, wantErr: s3err.InvalidRange},
		{name: "empty object", r: Range{Start: 0, End: -1}, size: 0, wantErr: s3err.InvalidRange},
		{name: "suffix of empty", r: Range{Start: -1, Suffix: 1}, size: 0, wantErr: s3err.InvalidRange},
		{name: "zero suffix", r: Range{Start: -1, Suffix: 0}, size: 10, wantErr: s3err.InvalidRange},
		{name: "inverted ignored", r: Range{Start: 5, End: 2}, size: 10, want: span{0, 10, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveRange(&tc.r, tc.size, "b/k")
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("resolveRange(%+v, %d) error = %v, want code %q", tc.r, tc.size, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(span{})); diff != "" {
				t.Errorf("resolveRange(%+v, %d) mismatch (-want +got):\n%s", tc.r, tc.size, diff)
			}
		})
	}
}

func TestGetRangesAndParts(t *testing.T) {
	e := newEnv(t)
	data := randBytes(3*testBlock+100, 11)
	e.put(t, "big", data)
	e.put(t, "small", data[:100])
	e.put(t, "empty", nil)
	e.multipart(t, "empty-upload", "", "", []byte{})
	for _, tc := range []struct {
		name    string
		key     string
		opt     GetOptions
		want    []byte
		partial bool
		wantErr s3err.Code
	}{
		{name: "within a block", key: "big", opt: GetOptions{Range: &Range{Start: 10, End: 20}}, want: data[10:21], partial: true},
		{name: "across blocks", key: "big", opt: GetOptions{Range: &Range{Start: testBlock - 5, End: 2*testBlock + 5}}, want: data[testBlock-5 : 2*testBlock+6], partial: true},
		{name: "block boundary", key: "big", opt: GetOptions{Range: &Range{Start: testBlock, End: 2*testBlock - 1}}, want: data[testBlock : 2*testBlock], partial: true},
		{name: "suffix of tail", key: "big", opt: GetOptions{Range: &Range{Start: -1, Suffix: 150}}, want: data[len(data)-150:], partial: true},
		{name: "open from last block", key: "big", opt: GetOptions{Range: &Range{Start: 3 * testBlock, End: -1}}, want: data[3*testBlock:], partial: true},
		{name: "inline range", key: "small", opt: GetOptions{Range: &Range{Start: 90, End: 200}}, want: data[90:100], partial: true},
		{name: "range past end", key: "small", opt: GetOptions{Range: &Range{Start: 100, End: -1}}, wantErr: s3err.InvalidRange},
		{name: "range of empty", key: "empty", opt: GetOptions{Range: &Range{Start: 0, End: 0}}, wantErr: s3err.InvalidRange},
		{name: "part 1 of single", key: "big", opt: GetOptions{PartNumber: 1}, want: data, partial: true},
		{name: "part 1 of empty", key: "empty", opt: GetOptions{PartNumber: 1}, want: []byte{}},
		{name: "part 1 of an upload of one empty part", key: "empty-upload", opt: GetOptions{PartNumber: 1}, want: []byte{}},
		{name: "part 2 of single", key: "big", opt: GetOptions{PartNumber: 2}, wantErr: s3err.InvalidPartNumber},
		{name: "part 0 invalid", key: "big", opt: GetOptions{PartNumber: -1}, wantErr: s3err.InvalidArgument},
		{name: "part 10001", key: "big", opt: GetOptions{PartNumber: 10001}, wantErr: s3err.InvalidArgument},
		{name: "range and part", key: "big", opt: GetOptions{PartNumber: 1, Range: &Range{}}, wantErr: s3err.InvalidRequest},
		{name: "missing key", key: "nope", wantErr: s3err.NoSuchKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, head := range []bool{false, true} {
				var o *Object
				var err error
				if head {
					o, err = e.s.HeadObject(context.Background(), "bkt", tc.key, tc.opt)
				} else {
					o, err = e.s.GetObject(context.Background(), "bkt", tc.key, tc.opt)
				}
				wantCode(t, "open", err, tc.wantErr)
				if err != nil {
					continue
				}
				got, err := io.ReadAll(o.Body)
				if err != nil {
					t.Fatal(err)
				}
				o.Body.Close()
				if head {
					got = nil
				} else if !bytes.Equal(got, tc.want) {
					t.Errorf("GetObject returned %d bytes, want %d (equal: %v)", len(got), len(tc.want), bytes.Equal(got, tc.want))
				}
				if o.Length != int64(len(tc.want)) || o.Partial != tc.partial {
					t.Errorf("head=%v: Length %d Partial %v, want %d %v", head, o.Length, o.Partial, len(tc.want), tc.partial)
				}
			}
		})
	}
	if _, err := e.s.GetObject(context.Background(), "nope", "k", GetOptions{}); !s3err.Is(err, s3err.NoSuchBucket) {
		t.Errorf("GetObject(missing bucket) = %v, want NoSuchBucket", err)
	}
	if n := e.s.readers.count(); n != 0 {
		t.Errorf("reader table holds %d versions after all bodies closed", n)
	}
}

func TestReadConditions(t *testing.T) {
	mod := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC) // sub-second part ignored
	const etag = "abc"
	before, same, after := mod.Add(-time.Hour).Truncate(time.Second), mod.Truncate(time.Second), mod.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		c       ReadConditions
		get     s3err.Code
		copySrc s3err.Code
	}{
		{"none", ReadConditions{}, "", ""},
		{"if-match ok", ReadConditions{IfMatch: `"abc"`}, "", ""},
		{"if-match star", ReadConditions{IfMatch: "*"}, "", ""},
		{"if-match list", ReadConditions{IfMatch: `"x", "abc"`}, "", ""},
		{"if-match fails", ReadConditions{IfMatch: `"x"`}, s3err.PreconditionFailed, s3err.PreconditionFailed},
		{"unmodified since later", ReadConditions{IfUnmodifiedSince: after}, "", ""},
		{"unmodified since same second", ReadConditions{IfUnmodifiedSince: same}, "", ""},
		{"unmodified since earlier", ReadConditions{IfUnmodifiedSince: before}, s3err.PreconditionFailed, s3err.PreconditionFailed},
		{"if-match true beats unmodified false", ReadConditions{IfMatch: etag, IfUnmodifiedSince: before}, "", ""},
		{"if-none-match matches", ReadConditions{IfNoneMatch: `"abc"`}, s3err.NotModified, s3err.PreconditionFailed},
		{"if-none-match star", ReadConditions{IfNoneMatch: "*"}, s3err.NotModified, s3err.PreconditionFailed},
		{"if-none-match other", ReadConditions{IfNoneMatch: `"x"`}, "", ""},
		{"modified since earlier", ReadConditions{IfModifiedSince: before}, "", ""},
		{"modified since same", ReadConditions{IfModifiedSince: same}, s3err.NotModified, s3err.PreconditionFailed},
		{"modified since later", ReadConditions{IfModifiedSince: after}, s3err.NotModified, s3err.PreconditionFailed},
		{"if-none-match false and modified true", ReadConditions{IfNoneMatch: etag, IfModifiedSince: before}, s3err.NotModified, s3err.PreconditionFailed},
		{"if-none-match true beats modified false", ReadConditions{IfNoneMatch: "x", IfModifiedSince: after}, "", ""},
		{"if-match fails first", ReadConditions{IfMatch: "x", IfNoneMatch: etag}, s3err.PreconditionFailed, s3err.PreconditionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s3err.CodeOf(checkRead(tc.c, "r", etag, mod, false)); got != tc.get {
				t.Errorf("GET: code %q, want %q", got, tc.get)
			}
			if got := s3err.CodeOf(checkRead(tc.c, "r", etag, mod, true)); got != tc.copySrc {
				t.Errorf("copy source: code %q, want %q", got, tc.copySrc)
			}
		})
	}
}

func TestGetNotModifiedReturnsInfo(t *testing.T) {
	e := newEnv(t)
	info := e.put(t, "k", []byte("data"))
	o, err := e.s.GetObject(context.Background(), "bkt", "k", GetOptions{Cond: ReadConditions{IfNoneMatch: `"` + info.ETag + `"`}})
	wantCode(t, "GetObject", err, s3err.NotModified)
	if o == nil || o.Info.ETag != info.ETag {
		t.Fatalf("NotModified returned object %+v, want its info", o)
	}
	if n, _ := o.Body.Read(make([]byte, 4)); n != 0 {
		t.Error("NotModified body is not empty")
	}
	_, err = e.s.GetObject(context.Background(), "bkt", "k", GetOptions{Cond: ReadConditions{IfMatch: "nope"}})
	wantCode(t, "GetObject If-Match", err, s3err.PreconditionFailed)
}

func TestBlockReaderReleasesOnContextEnd(t *testing.T) {
	e := newEnv(t)
	e.put(t, "k", randBytes(3*testBlock, 5))
	ctx, cancel := context.WithCancel(context.Background())
	o, err := e.s.GetObject(ctx, "bkt", "k", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Body.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if n := e.s.readers.count(); n != 1 {
		t.Fatalf("%d versions registered, want 1", n)
	}
	cancel() // the client went away without Close
	deadline := time.Now().Add(5 * time.Second)
	for {
		if e.s.readers.count() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("registration not released after the context ended")
		}
		time.Sleep(time.Millisecond)
	}
	if err := o.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Body.Read(make([]byte, 1)); err == nil {
		t.Error("Read after Close succeeded")
	}
}

func TestBlockReaderWriteTo(t *testing.T) {
	e := newEnv(t)
	data := randBytes(5*testBlock+3, 9)
	e.put(t, "k", data)
	o, err := e.s.GetObject(context.Background(), "bkt", "k", GetOptions{Range: &Range{Start: 7, End: int64(len(data)) - 2}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, o.Body) // uses WriteTo
	if err != nil || n != o.Length || !bytes.Equal(buf.Bytes(), data[7:len(data)-1]) {
		t.Errorf("io.Copy = %d, %v; equal %v", n, err, bytes.Equal(buf.Bytes(), data[7:len(data)-1]))
	}
	if err := o.Body.Close(); err != nil {
		t.Fatal(err)
	}
	// A missing block is an error, not a short read.
	rec, _ := e.db.Object(context.Background(), "bkt", "k")
	if err := e.store.Delete(context.Background(), rec.Blocks[2].Key); err != nil {
		t.Fatal(err)
	}
	o, err = e.s.GetObject(context.Background(), "bkt", "k", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Body.Close()
	if _, err := io.Copy(io.Discard, o.Body); err == nil {
		t.Error("reading an object with a missing block succeeded")
	}
}
