package objects

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// multipart uploads parts as one object with the given checksum algorithm
// and type and completes it; it returns the upload ID.
func (e *env) multipart(t testing.TB, key string, alg checksum.Algorithm, typ string, parts ...[]byte) string {
	t.Helper()
	ctx := context.Background()
	u, err := e.s.CreateMultipartUpload(ctx, "bkt", key, CreateUploadInput{ChecksumAlgorithm: alg, ChecksumType: typ})
	if err != nil {
		t.Fatal(err)
	}
	var cps []CompletePart
	for i, p := range parts {
		part, err := e.s.UploadPart(ctx, "bkt", key, u.UploadID, i+1, PartInput{Size: int64(len(p))}, bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, CompletePart{Number: i + 1, ETag: `"` + part.ETag + `"`, Checksum: part.Checksum.Value})
	}
	if _, err := e.s.CompleteMultipartUpload(ctx, "bkt", key, u.UploadID, CompleteInput{Parts: cps}); err != nil {
		t.Fatal(err)
	}
	return u.UploadID
}

// multipartETag is S3's ETag of a multipart object.
func wantMultipartETag(parts ...[]byte) string {
	var cat []byte
	for _, p := range parts {
		s := md5.Sum(p)
		cat = append(cat, s[:]...)
	}
	s := md5.Sum(cat)
	return hex.EncodeToString(s[:]) + "-" + strconv.Itoa(len(parts))
}

func sum(alg checksum.Algorithm, b []byte) []byte {
	h := alg.New()
	h.Write(b)
	return h.Sum(nil)
}

func TestMultipartRoundTrip(t *testing.T) {
	p1, p2, p3 := randBytes(2*testBlock+1, 1), randBytes(3*testBlock, 2), randBytes(100, 3)
	whole := slices.Concat(p1, p2, p3)
	composite := func(alg checksum.Algorithm) string {
		var cat []byte
		for _, p := range [][]byte{p1, p2, p3} {
			cat = append(cat, sum(alg, p)...)
		}
		return checksum.Encode(sum(alg, cat)) + "-3"
	}
	for _, tc := range []struct {
		name string
		alg  checksum.Algorithm
		typ  string
		want ChecksumValue
	}{
		{name: "no checksum"},
		{name: "crc32 composite", alg: checksum.CRC32, want: ChecksumValue{checksum.CRC32, composite(checksum.CRC32), "COMPOSITE"}},
		{name: "sha256 composite", alg: checksum.SHA256, typ: "COMPOSITE", want: ChecksumValue{checksum.SHA256, composite(checksum.SHA256), "COMPOSITE"}},
		{name: "crc32c full object", alg: checksum.CRC32C, typ: "FULL_OBJECT", want: ChecksumValue{checksum.CRC32C, checksum.Encode(sum(checksum.CRC32C, whole)), "FULL_OBJECT"}},
		{name: "crc64nvme default full", alg: checksum.CRC64NVME, want: ChecksumValue{checksum.CRC64NVME, checksum.Encode(sum(checksum.CRC64NVME, whole)), "FULL_OBJECT"}},
		{name: "sha512 composite", alg: checksum.SHA512, want: ChecksumValue{checksum.SHA512, composite(checksum.SHA512), "COMPOSITE"}},
		{name: "md5 composite", alg: checksum.MD5, typ: "COMPOSITE", want: ChecksumValue{checksum.MD5, composite(checksum.MD5), "COMPOSITE"}},
		{name: "xxhash64 composite", alg: checksum.XXHASH64, want: ChecksumValue{checksum.XXHASH64, composite(checksum.XXHASH64), "COMPOSITE"}},
		{name: "xxhash3 composite", alg: checksum.XXHASH3, want: ChecksumValue{checksum.XXHASH3, composite(checksum.XXHASH3), "COMPOSITE"}},
		{name: "xxhash128 composite", alg: checksum.XXHASH128, want: ChecksumValue{checksum.XXHASH128, composite(checksum.XXHASH128), "COMPOSITE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.multipart(t, "mp", tc.alg, tc.typ, p1, p2, p3)
			o, got := e.get(t, "mp", GetOptions{})
			if !bytes.Equal(got, whole) {
				t.Error("multipart object data differs")
			}
			want := ObjectInfo{Bucket: "bkt", Key: "mp", Size: int64(len(whole)), ETag: wantMultipartETag(p1, p2, p3),
				LastModified: o.Info.LastModified, Checksum: tc.want, PartSizes: []int64{int64(len(p1)), int64(len(p2)), int64(len(p3))}}
			if diff := cmp.Diff(want, o.Info); diff != "" {
				t.Errorf("info mismatch (-want +got):\n%s", diff)
			}
			for n, p := range [][]byte{p1, p2, p3} {
				po, got := e.get(t, "mp", GetOptions{PartNumber: n + 1})
				if !bytes.Equal(got, p) || !po.Partial || po.Info.PartCount() != 3 {
					t.Errorf("part %d: %d bytes (equal %v), partial %v", n+1, len(got), bytes.Equal(got, p), po.Partial)
				}
			}
			_, err := e.s.GetObject(context.Background(), "bkt", "mp", GetOptions{PartNumber: 4})
			wantCode(t, "part 4", err, s3err.InvalidPartNumber)
			// Parts were linked, not copied: the store holds exactly the
			// object's blocks.
			if diff := cmp.Diff(e.liveBlocks(t), e.blobs(t)); diff != "" {
				t.Errorf("store vs object blocks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMultipartErrors(t *testing.T) {
	ctx := context.Background()
	big1, big2, small := randBytes(2*testBlock, 1), randBytes(2*testBlock, 2), randBytes(10, 3)
	type step func(e *env, id string, parts []Part) error
	complete := func(cps ...CompletePart) step {
		return func(e *env, id string, _ []Part) error {
			_, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", id, CompleteInput{Parts: cps})
			return err
		}
	}
	cp := func(n int, etag string) CompletePart { return CompletePart{Number: n, ETag: etag} }
	e1, e2, e3 := md5Hex(big1), md5Hex(big2), md5Hex(small)
	for _, tc := range []struct {
		name string
		do   step
		want s3err.Code
	}{
		{"no parts", complete(), s3err.MalformedXML},
		{"order", complete(cp(2, e2), cp(1, e1)), s3err.InvalidPartOrder},
		{"duplicate", complete(cp(1, e1), cp(1, e1)), s3err.InvalidPartOrder},
		{"missing part", complete(cp(1, e1), cp(4, e1)), s3err.InvalidPart},
		{"wrong etag", complete(cp(1, e2)), s3err.InvalidPart},
		{"too small", complete(cp(3, e3), cp(4, "x")), s3err.InvalidPart},
		{"small not last", complete(cp(1, e1), cp(3, e3), cp(2, e2)), s3err.InvalidPartOrder},
		{"entity too small", complete(cp(1, e1), cp(3, e3), cp(5, e3)), s3err.EntityTooSmall},
		{"small last ok", complete(cp(1, `"`+e1+`"`), cp(3, e3)), ""},
		{"unknown upload", func(e *env, _ string, _ []Part) error {
			_, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", "0123456789abcdef0123456789abcdef", CompleteInput{Parts: []CompletePart{cp(1, e1)}})
			return err
		}, s3err.NoSuchUpload},
		{"upload of other key", func(e *env, id string, _ []Part) error {
			_, err := e.s.CompleteMultipartUpload(ctx, "bkt", "other", id, CompleteInput{Parts: []CompletePart{cp(1, e1)}})
			return err
		}, s3err.NoSuchUpload},
		{"malformed upload id", func(e *env, _ string, _ []Part) error {
			_, err := e.s.UploadPart(ctx, "bkt", "k", "x", 1, PartInput{Size: 1}, bytes.NewReader([]byte("x")))
			return err
		}, s3err.NoSuchUpload},
		{"part number zero", func(e *env, id string, _ []Part) error {
			_, err := e.s.UploadPart(ctx, "bkt", "k", id, 0, PartInput{Size: 1}, bytes.NewReader([]byte("x")))
			return err
		}, s3err.InvalidArgument},
		{"part number 10001", func(e *env, id string, _ []Part) error {
			_, err := e.s.UploadPart(ctx, "bkt", "k", id, 10001, PartInput{Size: 1}, bytes.NewReader([]byte("x")))
			return err
		}, s3err.InvalidArgument},
		{"part too large", func(e *env, id string, _ []Part) error {
			_, err := e.s.UploadPart(ctx, "bkt", "k", id, 7, PartInput{Size: 5<<30 + 1}, bytes.NewReader(nil))
			return err
		}, s3err.EntityTooLarge},
		{"part bad md5", func(e *env, id string, _ []Part) error {
			_, err := e.s.UploadPart(ctx, "bkt", "k", id, 7, PartInput{Size: 10, ContentMD5: md5B64(big1)}, bytes.NewReader(small))
			return err
		}, s3err.BadDigest},
		{"part short body", func(e *env, id string, _ []Part) error {
			_, err := e.s.UploadPart(ctx, "bkt", "k", id, 7, PartInput{Size: 11}, bytes.NewReader(small))
			return err
		}, s3err.IncompleteBody},
		{"part checksum mismatch", func(e *env, id string, _ []Part) error {
			_, err := e.s.UploadPart(ctx, "bkt", "k", id, 7, PartInput{Size: 10,
				Checksum: ChecksumInput{Algorithm: checksum.SHA1, Value: checksum.Encode(sum(checksum.SHA1, big1))}}, bytes.NewReader(small))
			return err
		}, s3err.BadDigest},
		{"abort unknown", func(e *env, _ string, _ []Part) error {
			return e.s.AbortMultipartUpload(ctx, "bkt", "k", "0123456789abcdef0123456789abcdef")
		}, s3err.NoSuchUpload},
		{"abort missing bucket", func(e *env, id string, _ []Part) error {
			return e.s.AbortMultipartUpload(ctx, "nope", "k", id)
		}, s3err.NoSuchBucket},
		{"list parts unknown", func(e *env, _ string, _ []Part) error {
			_, err := e.s.ListParts(ctx, "bkt", "k", "0123456789abcdef0123456789abcdef", ListPartsInput{})
			return err
		}, s3err.NoSuchUpload},
		{"create in missing bucket", func(e *env, _ string, _ []Part) error {
			_, err := e.s.CreateMultipartUpload(ctx, "nope", "k", CreateUploadInput{})
			return err
		}, s3err.NoSuchBucket},
		{"complete retried", func(e *env, id string, _ []Part) error {
			in := CompleteInput{Parts: []CompletePart{cp(1, e1), cp(3, `"`+e3+`"`)}}
			first, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", id, in)
			if err != nil {
				return err
			}
			// The response was lost; the client sends the same request:
			// the same answer, not NoSuchUpload.
			again, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", id, in)
			if err == nil && (again.ETag != first.ETag || again.Size != first.Size) {
				return fmt.Errorf("retry answered ETag %s size %d, first %s %d", again.ETag, again.Size, first.ETag, first.Size)
			}
			return err
		}, ""},
		{"complete retried with other parts", func(e *env, id string, _ []Part) error {
			if _, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", id, CompleteInput{Parts: []CompletePart{cp(1, e1), cp(3, e3)}}); err != nil {
				return err
			}
			_, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", id, CompleteInput{Parts: []CompletePart{cp(1, e1)}})
			return err
		}, s3err.NoSuchUpload},
		{"complete if-none-match", func(e *env, id string, _ []Part) error {
			e.put(t, "k", []byte("exists"))
			_, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", id, CompleteInput{Parts: []CompletePart{cp(1, e1)}, Cond: WriteConditions{IfNoneMatch: "*"}})
			return err
		}, s3err.PreconditionFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			u, err := e.s.CreateMultipartUpload(ctx, "bkt", "k", CreateUploadInput{})
			if err != nil {
				t.Fatal(err)
			}
			var parts []Part
			for n, d := range map[int][]byte{1: big1, 2: big2, 3: small, 5: small} {
				p, err := e.s.UploadPart(ctx, "bkt", "k", u.UploadID, n, PartInput{Size: int64(len(d))}, bytes.NewReader(d))
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, p)
			}
			err = tc.do(e, u.UploadID, parts)
			wantCode(t, tc.name, err, tc.want)
			if tc.want == "" {
				_, got := e.get(t, "k", GetOptions{})
				if !bytes.Equal(got, slices.Concat(big1, small)) {
					t.Error("completed object holds the wrong data")
				}
				if _, err := e.s.ListParts(ctx, "bkt", "k", u.UploadID, ListPartsInput{}); !s3err.Is(err, s3err.NoSuchUpload) {
					t.Errorf("ListParts after complete = %v, want NoSuchUpload", err)
				}
			} else if tc.name != "complete if-none-match" && tc.name != "complete retried with other parts" {
				// A failed step leaves the upload intact.
				r, err := e.s.ListParts(ctx, "bkt", "k", u.UploadID, ListPartsInput{})
				if err != nil || len(r.Parts) != 4 {
					t.Errorf("after failure: ListParts = %d parts, %v", len(r.Parts), err)
				}
			}
		})
	}
}

func TestMultipartChecksumTypes(t *testing.T) {
	for _, tc := range []struct {
		alg  checksum.Algorithm
		typ  string
		want s3err.Code
	}{
		{"", "", ""},
		{"", "COMPOSITE", s3err.InvalidRequest},
		{checksum.SHA1, "FULL_OBJECT", s3err.InvalidRequest},
		{checksum.CRC64NVME, "COMPOSITE", s3err.InvalidRequest},
		{checksum.CRC32, "BOGUS", s3err.InvalidRequest},
		{"BLAKE3", "", s3err.InvalidRequest},
		{checksum.CRC32, "FULL_OBJECT", ""},
		// The newer algorithms' digests cannot be combined: COMPOSITE only.
		{checksum.SHA512, "", ""},
		{checksum.SHA512, "FULL_OBJECT", s3err.InvalidRequest},
		{checksum.MD5, "COMPOSITE", ""},
		{checksum.MD5, "FULL_OBJECT", s3err.InvalidRequest},
		{checksum.XXHASH64, "FULL_OBJECT", s3err.InvalidRequest},
		{checksum.XXHASH3, "FULL_OBJECT", s3err.InvalidRequest},
		{checksum.XXHASH128, "FULL_OBJECT", s3err.InvalidRequest},
		{checksum.XXHASH128, "COMPOSITE", ""},
	} {
		e := newEnv(t)
		_, err := e.s.CreateMultipartUpload(context.Background(), "bkt", "k", CreateUploadInput{ChecksumAlgorithm: tc.alg, ChecksumType: tc.typ})
		wantCode(t, fmt.Sprintf("Create(%s, %s)", tc.alg, tc.typ), err, tc.want)
	}
}

func TestMultipartCompleteChecksums(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p1, p2 := randBytes(2*testBlock, 1), randBytes(5, 2)
	u, err := e.s.CreateMultipartUpload(ctx, "bkt", "k", CreateUploadInput{ChecksumAlgorithm: checksum.CRC32, ChecksumType: "FULL_OBJECT"})
	if err != nil {
		t.Fatal(err)
	}
	// A part checksum of another algorithm is refused; none is computed.
	_, err = e.s.UploadPart(ctx, "bkt", "k", u.UploadID, 1, PartInput{Size: 5, Checksum: ChecksumInput{Algorithm: checksum.SHA1}}, bytes.NewReader(p2))
	wantCode(t, "UploadPart with another algorithm", err, s3err.InvalidRequest)
	var cps []CompletePart
	for i, p := range [][]byte{p1, p2} {
		part, err := e.s.UploadPart(ctx, "bkt", "k", u.UploadID, i+1, PartInput{Size: int64(len(p))}, bytes.NewReader(p))
		if err != nil {
			t.Fatal(err)
		}
		if part.Checksum.Value != checksum.Encode(sum(checksum.CRC32, p)) {
			t.Errorf("part %d checksum = %+v", i+1, part.Checksum)
		}
		cps = append(cps, CompletePart{Number: i + 1, ETag: part.ETag, Checksum: part.Checksum.Value})
	}
	bad := slices.Clone(cps)
	bad[1].Checksum = checksum.Encode(sum(checksum.CRC32, p1))
	_, err = e.s.CompleteMultipartUpload(ctx, "bkt", "k", u.UploadID, CompleteInput{Parts: bad})
	wantCode(t, "Complete with a wrong part checksum", err, s3err.InvalidPart)
	_, err = e.s.CompleteMultipartUpload(ctx, "bkt", "k", u.UploadID, CompleteInput{Parts: cps,
		Checksum: ChecksumInput{Algorithm: checksum.CRC32, Value: checksum.Encode(sum(checksum.CRC32, p1))}})
	wantCode(t, "Complete with a wrong object checksum", err, s3err.BadDigest)
	whole := checksum.Encode(sum(checksum.CRC32, slices.Concat(p1, p2)))
	_, err = e.s.CompleteMultipartUpload(ctx, "bkt", "k", u.UploadID, CompleteInput{Parts: cps,
		Checksum: ChecksumInput{Algorithm: checksum.SHA256, Value: checksum.Encode(sum(checksum.SHA256, p1))}})
	wantCode(t, "Complete with another algorithm's checksum", err, s3err.InvalidRequest)
	_, err = e.s.CompleteMultipartUpload(ctx, "bkt", "k", u.UploadID, CompleteInput{Parts: cps,
		Checksum: ChecksumInput{Algorithm: checksum.CRC32, Value: whole}, ChecksumType: "COMPOSITE"})
	wantCode(t, "Complete asserting another checksum type", err, s3err.BadDigest)
	info, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", u.UploadID, CompleteInput{Parts: cps,
		Checksum: ChecksumInput{Algorithm: checksum.CRC32, Value: whole}, ChecksumType: "FULL_OBJECT"})
	if err != nil {
		t.Fatal(err)
	}
	if info.Checksum.Value != whole || info.Checksum.Type != "FULL_OBJECT" {
		t.Errorf("object checksum = %+v, want %s", info.Checksum, whole)
	}
}

func TestMultipartPartsLifecycle(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	u, err := e.s.CreateMultipartUpload(ctx, "bkt", "k", CreateUploadInput{Meta: Metadata{ContentType: "a/b"}})
	if err != nil {
		t.Fatal(err)
	}
	up := func(n int, d []byte) Part {
		t.Helper()
		p, err := e.s.UploadPart(ctx, "bkt", "k", u.UploadID, n, PartInput{Size: int64(len(d))}, bytes.NewReader(d))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := randBytes(3*testBlock, 1)
	up(1, first)
	final1 := randBytes(2*testBlock, 2)
	p1 := up(1, final1) // replaces part 1
	p2 := up(2, randBytes(2*testBlock, 3))
	up(3, randBytes(testBlock, 4)) // never listed: discarded
	// Replaced part 1's three blocks are garbage; GC removes them.
	st, err := e.s.GC(ctx, 0)
	if err != nil || st.Deleted != 3 {
		t.Errorf("GC after part replace = %+v, %v; want 3 deleted", st, err)
	}
	for _, tc := range []struct {
		marker, max int
		want        []int
		truncated   bool
		next        int
	}{
		{0, 0, []int{1, 2, 3}, false, 3},
		{0, 2, []int{1, 2}, true, 2},
		{2, 2, []int{3}, false, 3},
		{3, 2, nil, false, 0},
	} {
		r, err := e.s.ListParts(ctx, "bkt", "k", u.UploadID, ListPartsInput{PartNumberMarker: tc.marker, MaxParts: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		var nums []int
		for _, p := range r.Parts {
			nums = append(nums, p.Number)
		}
		if !slices.Equal(nums, tc.want) || r.IsTruncated != tc.truncated || r.NextPartNumberMarker != tc.next || r.Upload.Meta.ContentType != "a/b" {
			t.Errorf("ListParts(marker %d, max %d) = %v, truncated %v, next %d", tc.marker, tc.max, nums, r.IsTruncated, r.NextPartNumberMarker)
		}
		if len(r.Parts) > 0 && r.Parts[0].Number == 1 && r.Parts[0].ETag != p1.ETag {
			t.Errorf("part 1 ETag %s, want the replacement's %s", r.Parts[0].ETag, p1.ETag)
		}
	}
	// UploadPartCopy: a range of an existing object becomes part 4.
	src := randBytes(5*testBlock, 9)
	e.put(t, "src", src)
	_, err = e.s.UploadPartCopy(ctx, "bkt", "k", u.UploadID, 4, PartCopyInput{SrcBucket: "bkt", SrcKey: "src", SrcRange: &Range{Start: 10, End: 5*testBlock - 1}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.s.UploadPartCopy(ctx, "bkt", "k", u.UploadID, 5, PartCopyInput{SrcBucket: "bkt", SrcKey: "src", SrcRange: &Range{Start: 10, End: 5 * testBlock}})
	wantCode(t, "UploadPartCopy range past end", err, s3err.InvalidArgument)
	_, err = e.s.UploadPartCopy(ctx, "bkt", "k", u.UploadID, 5, PartCopyInput{SrcBucket: "bkt", SrcKey: "src", SrcCond: ReadConditions{IfMatch: "x"}})
	wantCode(t, "UploadPartCopy source condition", err, s3err.PreconditionFailed)
	_, err = e.s.UploadPartCopy(ctx, "bkt", "k", u.UploadID, 5, PartCopyInput{SrcBucket: "bkt", SrcKey: "nope"})
	wantCode(t, "UploadPartCopy missing source", err, s3err.NoSuchKey)
	pc, err := e.s.UploadPartCopy(ctx, "bkt", "k", u.UploadID, 6, PartCopyInput{SrcBucket: "bkt", SrcKey: "src"})
	if err != nil || pc.Size != int64(len(src)) || pc.ETag != md5Hex(src) {
		t.Errorf("UploadPartCopy whole = %+v, %v", pc, err)
	}

	info, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", u.UploadID, CompleteInput{Parts: []CompletePart{
		{Number: 1, ETag: p1.ETag}, {Number: 2, ETag: p2.ETag}, {Number: 4, ETag: md5Hex(src[10:])},
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, got := e.get(t, "k", GetOptions{})
	p2data := randBytes(2*testBlock, 3)
	if !bytes.Equal(got, slices.Concat(final1, p2data, src[10:])) || info.Meta.ContentType != "a/b" {
		t.Error("completed object differs from parts 1, 2 and 4")
	}
	if _, err := e.s.GC(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e.liveBlocks(t), e.blobs(t)); diff != "" {
		t.Errorf("after complete and GC, store vs referenced (-want +got):\n%s", diff)
	}
}

func TestListMultipartUploads(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var ids []string
	for _, k := range []string{"a/1", "a/1", "a/2", "b", "c"} {
		u, err := e.s.CreateMultipartUpload(ctx, "bkt", k, CreateUploadInput{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.UploadID)
	}
	if ids[0] >= ids[1] {
		t.Errorf("upload IDs of one key do not sort by initiation: %s, %s", ids[0], ids[1])
	}
	r, err := e.s.ListMultipartUploads(ctx, "bkt", ListUploadsInput{MaxUploads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Uploads) != 2 || r.Uploads[0].UploadID != ids[0] || r.Uploads[1].UploadID != ids[1] || !r.IsTruncated ||
		r.NextKeyMarker != "a/1" || r.NextUploadIDMarker != ids[1] {
		t.Errorf("page 1 = %+v", r)
	}
	r, err = e.s.ListMultipartUploads(ctx, "bkt", ListUploadsInput{KeyMarker: r.NextKeyMarker, UploadIDMarker: r.NextUploadIDMarker, Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range r.Uploads {
		got = append(got, u.Key)
	}
	if diff := cmp.Diff([]string{"b", "c"}, got); diff != "" || r.IsTruncated || len(r.CommonPrefixes) != 0 {
		// a/ was the marker's prefix: already listed.
		t.Errorf("page 2 uploads %v prefixes %v truncated %v: %s", got, r.CommonPrefixes, r.IsTruncated, diff)
	}
	r, err = e.s.ListMultipartUploads(ctx, "bkt", ListUploadsInput{Delimiter: "/", MaxUploads: 1})
	if err != nil || len(r.CommonPrefixes) != 1 || r.CommonPrefixes[0] != "a/" || r.NextKeyMarker != "a/" || r.NextUploadIDMarker != "" {
		t.Errorf("prefix page = %+v, %v", r, err)
	}
	_, err = e.s.ListMultipartUploads(ctx, "nope", ListUploadsInput{})
	wantCode(t, "ListMultipartUploads(missing bucket)", err, s3err.NoSuchBucket)
}

// TestPartChecksum: a read with a PartNumber reports the part's checksum
// (with the object's algorithm and type), as S3 does with checksum mode;
// an object not made of parts reports its own for part 1; an upload
// without checksums reports none.
func TestPartChecksum(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	p1, p2 := randBytes(2*testBlock, 1), randBytes(5, 2)
	for _, typ := range []string{"FULL_OBJECT", "COMPOSITE"} {
		e.multipart(t, "k", checksum.CRC32C, typ, p1, p2)
		for n, p := range [][]byte{p1, p2} {
			obj, err := e.s.HeadObject(ctx, "bkt", "k", GetOptions{PartNumber: n + 1})
			if err != nil {
				t.Fatal(err)
			}
			want := ChecksumValue{Algorithm: checksum.CRC32C, Value: checksum.Encode(sum(checksum.CRC32C, p)), Type: typ}
			if obj.PartChecksum != want {
				t.Errorf("%s part %d: checksum %+v, want %+v", typ, n+1, obj.PartChecksum, want)
			}
		}
		whole, err := e.s.HeadObject(ctx, "bkt", "k", GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if whole.PartChecksum != (ChecksumValue{}) || whole.Info.Checksum.Type != typ {
			t.Errorf("%s whole read: part checksum %+v, object checksum %+v", typ, whole.PartChecksum, whole.Info.Checksum)
		}
	}
	e.multipart(t, "plain", "", "", p1, p2)
	if obj, err := e.s.HeadObject(ctx, "bkt", "plain", GetOptions{PartNumber: 1}); err != nil || obj.PartChecksum != (ChecksumValue{}) {
		t.Errorf("upload without checksums, part 1: %+v, %v", obj, err)
	}
	info, err := e.s.PutObject(ctx, "bkt", "single", PutInput{Size: 5, Checksum: ChecksumInput{Algorithm: checksum.SHA256}}, bytes.NewReader(p2))
	if err != nil {
		t.Fatal(err)
	}
	if obj, err := e.s.HeadObject(ctx, "bkt", "single", GetOptions{PartNumber: 1}); err != nil || obj.PartChecksum != info.Checksum || info.Checksum.Value == "" {
		t.Errorf("single-part object, part 1: %+v, %v; want %+v", obj, err, info.Checksum)
	}
}

// TestCompleteAssertedComposite: CompleteMultipartUpload may assert a
// COMPOSITE checksum with its part count (as GetObject returns it) or
// without; a wrong count, or a count on a FULL_OBJECT checksum, is
// BadDigest.
func TestCompleteAssertedComposite(t *testing.T) {
	ctx := context.Background()
	p1, p2 := randBytes(2*testBlock, 1), randBytes(5, 2)
	alg := checksum.CRC32
	whole := checksum.Encode(sum(alg, slices.Concat(p1, p2)))
	composite := checksum.Encode(sum(alg, slices.Concat(sum(alg, p1), sum(alg, p2))))
	for _, tc := range []struct {
		typ, good string
		bad       []string
	}{
		{"COMPOSITE", composite + "-2", []string{composite + "-3", composite + "-1"}},
		{"COMPOSITE", composite, []string{whole}},
		{"FULL_OBJECT", whole, []string{whole + "-2", composite}},
	} {
		e := newEnv(t)
		u, err := e.s.CreateMultipartUpload(ctx, "bkt", "k", CreateUploadInput{ChecksumAlgorithm: alg, ChecksumType: tc.typ})
		if err != nil {
			t.Fatal(err)
		}
		var cps []CompletePart
		for i, p := range [][]byte{p1, p2} {
			part, err := e.s.UploadPart(ctx, "bkt", "k", u.UploadID, i+1, PartInput{Size: int64(len(p))}, bytes.NewReader(p))
			if err != nil {
				t.Fatal(err)
			}
			cps = append(cps, CompletePart{Number: i + 1, ETag: part.ETag, Checksum: part.Checksum.Value})
		}
		complete := func(v string) error {
			_, err := e.s.CompleteMultipartUpload(ctx, "bkt", "k", u.UploadID, CompleteInput{Parts: cps, Checksum: ChecksumInput{Algorithm: alg, Value: v}})
			return err
		}
		for _, v := range tc.bad {
			wantCode(t, tc.typ+" asserting "+v, complete(v), s3err.BadDigest)
		}
		if err := complete(tc.good); err != nil {
			t.Fatalf("%s asserting %s: %v", tc.typ, tc.good, err)
		}
	}
}

// TestMultipartSizeLimit: parts that add up to more than 5 TiB make no
// object (EntityTooLarge, with the sizes); up to 5 TiB they may.
func TestMultipartSizeLimit(t *testing.T) {
	parts := func(n int, size int64) []*meta.Part {
		ps := make([]*meta.Part, n)
		for i := range ps {
			ps[i] = &meta.Part{Number: i + 1, Size: size}
		}
		return ps
	}
	if err := checkMultipartSize(parts(1024, 5<<30), "b/k"); err != nil {
		t.Errorf("1024 parts of 5 GiB (5 TiB): %v", err)
	}
	err := checkMultipartSize(parts(1025, 5<<30), "b/k")
	if !s3err.Is(err, s3err.EntityTooLarge) {
		t.Fatalf("1025 parts of 5 GiB: %v, want EntityTooLarge", err)
	}
	var e *s3err.Error
	if errors.As(err, &e) {
		got := map[string]string{}
		for _, f := range e.Extra {
			got[f.Name] = f.Value
		}
		if got["ProposedSize"] != "5502926848000" || got["MaxSizeAllowed"] != "5497558138880" {
			t.Errorf("EntityTooLarge fields = %v", got)
		}
	}
}
