package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// multipartETag returns S3's ETag of a multipart object made of parts:
// the hex MD5 of the concatenated binary part MD5s, then "-N".
func multipartETag(parts ...[]byte) string {
	var cat []byte
	for _, p := range parts {
		s := md5.Sum(p)
		cat = append(cat, s[:]...)
	}
	s := md5.Sum(cat)
	return fmt.Sprintf("%s-%d", hex.EncodeToString(s[:]), len(parts))
}

// upload is a multipart upload in progress, driven through the SDK.
type upload struct {
	t               *testing.T
	c               *s3.Client
	bucket, key, id string
}

func createUpload(t *testing.T, c *s3.Client, bucket, key string, opts ...func(*s3.CreateMultipartUploadInput)) *upload {
	t.Helper()
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	for _, f := range opts {
		f(in)
	}
	out, err := c.CreateMultipartUpload(t.Context(), in)
	if err != nil {
		t.Fatalf("CreateMultipartUpload(%s/%s): %v", bucket, key, err)
	}
	if aws.ToString(out.UploadId) == "" || aws.ToString(out.Bucket) != bucket || aws.ToString(out.Key) != key {
		t.Fatalf("CreateMultipartUpload: UploadId %q Bucket %q Key %q", aws.ToString(out.UploadId), aws.ToString(out.Bucket), aws.ToString(out.Key))
	}
	return &upload{t: t, c: c, bucket: bucket, key: key, id: *out.UploadId}
}

// part uploads body as part n and returns the completed part, checking the
// part ETag is the quoted MD5.
func (u *upload) part(n int32, body []byte, opts ...func(*s3.UploadPartInput)) types.CompletedPart {
	u.t.Helper()
	in := &s3.UploadPartInput{Bucket: aws.String(u.bucket), Key: aws.String(u.key), UploadId: aws.String(u.id), PartNumber: aws.Int32(n), Body: bytes.NewReader(body)}
	for _, f := range opts {
		f(in)
	}
	out, err := u.c.UploadPart(u.t.Context(), in)
	if err != nil {
		u.t.Fatalf("UploadPart %d (%d bytes): %v", n, len(body), err)
	}
	if aws.ToString(out.ETag) != quoted(md5Hex(body)) {
		u.t.Errorf("UploadPart %d: ETag %s, want %s", n, aws.ToString(out.ETag), quoted(md5Hex(body)))
	}
	cp := types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag}
	for _, alg := range allAlgorithms {
		if v := outputChecksum(alg, out); v != "" {
			setChecksum(&cp, alg, v)
		}
	}
	return cp
}

func (u *upload) complete(parts ...types.CompletedPart) (*s3.CompleteMultipartUploadOutput, error) {
	return u.c.CompleteMultipartUpload(u.t.Context(), &s3.CompleteMultipartUploadInput{Bucket: aws.String(u.bucket), Key: aws.String(u.key),
		UploadId: aws.String(u.id), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
}

func (u *upload) abort() error {
	_, err := u.c.AbortMultipartUpload(u.t.Context(), &s3.AbortMultipartUploadInput{Bucket: aws.String(u.bucket), Key: aws.String(u.key), UploadId: aws.String(u.id)})
	return err
}

func TestMultipart(t *testing.T) {
	t.Parallel()
	testMultipart(t, startServer(t))
}

// testMultipart is TestMultipart's body, which TestCluster runs against three nodes.
func testMultipart(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "mp")
	src := randBytes(20 * mib)
	put(t, c, b, "src", src)

	t.Run("full", func(t *testing.T) {
		u := createUpload(t, c, b, "mp/obj", func(in *s3.CreateMultipartUploadInput) {
			in.ContentType = aws.String("application/x-mp")
			in.Metadata = map[string]string{"m": "1"}
		})
		p1, p2, p4 := randBytes(5*mib), randBytes(5*mib+1), randBytes(100*kib)
		p3 := src[1000 : 1000+5*mib+7]
		cp1 := u.part(1, p1)
		cp2 := u.part(2, p2)
		pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id),
			PartNumber: aws.Int32(3), CopySource: copySource(b, "src"), CopySourceRange: aws.String(fmt.Sprintf("bytes=1000-%d", 1000+len(p3)-1))})
		if err != nil {
			t.Fatalf("UploadPartCopy: %v", err)
		}
		if pc.CopyPartResult == nil || aws.ToString(pc.CopyPartResult.ETag) != quoted(md5Hex(p3)) || pc.CopyPartResult.LastModified == nil {
			t.Errorf("CopyPartResult %+v, want ETag %s", pc.CopyPartResult, quoted(md5Hex(p3)))
		}
		cp3 := types.CompletedPart{PartNumber: aws.Int32(3), ETag: pc.CopyPartResult.ETag}
		cp4 := u.part(4, p4)
		parts := [][]byte{p1, p2, p3, p4}

		// ListParts, whole and paged.
		lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id)})
		if err != nil {
			t.Fatalf("ListParts: %v", err)
		}
		if len(lp.Parts) != 4 || aws.ToBool(lp.IsTruncated) {
			t.Fatalf("ListParts: %d parts, truncated %v; want 4", len(lp.Parts), aws.ToBool(lp.IsTruncated))
		}
		for i, p := range lp.Parts {
			if aws.ToInt32(p.PartNumber) != int32(i+1) || aws.ToInt64(p.Size) != int64(len(parts[i])) || aws.ToString(p.ETag) != quoted(md5Hex(parts[i])) || p.LastModified == nil {
				t.Errorf("ListParts part %d: number %d size %d ETag %s", i+1, aws.ToInt32(p.PartNumber), aws.ToInt64(p.Size), aws.ToString(p.ETag))
			}
		}
		var paged []int32
		pp := s3.NewListPartsPaginator(c, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id), MaxParts: aws.Int32(3)})
		for pp.HasMorePages() {
			out, err := pp.NextPage(ctx)
			if err != nil {
				t.Fatalf("ListParts paged: %v", err)
			}
			for _, p := range out.Parts {
				paged = append(paged, aws.ToInt32(p.PartNumber))
			}
		}
		if !slices.Equal(paged, []int32{1, 2, 3, 4}) {
			t.Errorf("ListParts paged by 3: %v, want [1 2 3 4]", paged)
		}

		lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b), Prefix: aws.String("mp/")})
		if err != nil {
			t.Fatalf("ListMultipartUploads: %v", err)
		}
		if len(lu.Uploads) != 1 || aws.ToString(lu.Uploads[0].UploadId) != u.id || aws.ToString(lu.Uploads[0].Key) != u.key || lu.Uploads[0].Initiated == nil {
			t.Errorf("ListMultipartUploads: %+v, want the one upload %s", lu.Uploads, u.id)
		}

		out, err := u.complete(cp1, cp2, cp3, cp4)
		if err != nil {
			t.Fatalf("CompleteMultipartUpload: %v", err)
		}
		wantETag := quoted(multipartETag(parts...))
		if aws.ToString(out.ETag) != wantETag || aws.ToString(out.Key) != u.key || aws.ToString(out.Bucket) != b {
			t.Errorf("Complete: ETag %s Bucket %q Key %q, want %s %q %q", aws.ToString(out.ETag), aws.ToString(out.Bucket), aws.ToString(out.Key), wantETag, b, u.key)
		}
		whole := bytes.Join(parts, nil)
		checkBody(t, "multipart object", get(t, c, b, u.key), whole)
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(u.key)})
		if err != nil {
			t.Fatalf("HeadObject: %v", err)
		}
		if aws.ToString(h.ETag) != wantETag || aws.ToInt64(h.ContentLength) != int64(len(whole)) ||
			aws.ToString(h.ContentType) != "application/x-mp" || !maps.Equal(h.Metadata, map[string]string{"m": "1"}) {
			t.Errorf("HeadObject: ETag %s size %d type %q meta %q", aws.ToString(h.ETag), aws.ToInt64(h.ContentLength), aws.ToString(h.ContentType), h.Metadata)
		}

		// Each part by partNumber, through GET and HEAD.
		off := 0
		for i, p := range parts {
			n := int32(i + 1)
			g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(u.key), PartNumber: aws.Int32(n)})
			if err != nil {
				t.Fatalf("GetObject partNumber=%d: %v", n, err)
			}
			got, _ := io.ReadAll(g.Body)
			g.Body.Close()
			checkBody(t, fmt.Sprintf("part %d", n), got, p)
			wantCR := fmt.Sprintf("bytes %d-%d/%d", off, off+len(p)-1, len(whole))
			if aws.ToInt64(g.ContentLength) != int64(len(p)) || aws.ToInt32(g.PartsCount) != 4 || aws.ToString(g.ContentRange) != wantCR {
				t.Errorf("GetObject partNumber=%d: Content-Length %d parts-count %d Content-Range %q; want %d 4 %q",
					n, aws.ToInt64(g.ContentLength), aws.ToInt32(g.PartsCount), aws.ToString(g.ContentRange), len(p), wantCR)
			}
			hp, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(u.key), PartNumber: aws.Int32(n)})
			if err != nil {
				t.Fatalf("HeadObject partNumber=%d: %v", n, err)
			}
			if aws.ToInt64(hp.ContentLength) != int64(len(p)) || aws.ToInt32(hp.PartsCount) != 4 {
				t.Errorf("HeadObject partNumber=%d: Content-Length %d parts-count %d", n, aws.ToInt64(hp.ContentLength), aws.ToInt32(hp.PartsCount))
			}
			off += len(p)
		}
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(u.key), PartNumber: aws.Int32(5)})
		wantErr(t, "GetObject partNumber=5 of a 4-part object", err, "InvalidPartNumber", 416)

		// A range across the part boundary.
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(u.key), Range: aws.String(fmt.Sprintf("bytes=%d-%d", 5*mib-10, 5*mib+10))})
		if err != nil {
			t.Fatalf("GetObject range: %v", err)
		}
		got, _ := io.ReadAll(g.Body)
		g.Body.Close()
		checkBody(t, "range across parts", got, whole[5*mib-10:5*mib+11])

		_, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id)})
		wantErr(t, "ListParts after Complete", err, "NoSuchUpload", 404)
		lu, err = c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b)})
		if err != nil || len(lu.Uploads) != 0 {
			t.Errorf("ListMultipartUploads after Complete: %v, %d uploads; want none", err, len(lu.Uploads))
		}

		// A copy of the multipart object is whole.
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("mp-copy"), CopySource: copySource(b, u.key)}); err != nil {
			t.Fatalf("CopyObject of a multipart object: %v", err)
		}
		checkBody(t, "copy of multipart object", get(t, c, b, "mp-copy"), whole)
	})

	t.Run("subsetAndReupload", func(t *testing.T) {
		u := createUpload(t, c, b, "subset")
		p1, p3 := randBytes(5*mib), randBytes(10)
		u.part(1, randBytes(5*mib)) // replaced below
		cp1 := u.part(1, p1)
		u.part(2, randBytes(5*mib)) // left out of Complete
		cp3 := u.part(3, p3)
		out, err := u.complete(cp1, cp3)
		if err != nil {
			t.Fatalf("Complete with parts 1 and 3: %v", err)
		}
		if aws.ToString(out.ETag) != quoted(multipartETag(p1, p3)) {
			t.Errorf("ETag %s, want %s", aws.ToString(out.ETag), quoted(multipartETag(p1, p3)))
		}
		checkBody(t, "object of parts 1 and 3", get(t, c, b, "subset"), append(slices.Clone(p1), p3...))
	})

	t.Run("errors", func(t *testing.T) {
		bogus := &upload{t: t, c: c, bucket: b, key: "k", id: "0123456789abcdef0123456789abcdef"}
		_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("k"), UploadId: aws.String(bogus.id), PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("x"))})
		wantErr(t, "UploadPart to an unknown upload", err, "NoSuchUpload", 404)
		_, err = bogus.complete(types.CompletedPart{PartNumber: aws.Int32(1), ETag: aws.String(`"00"`)})
		wantErr(t, "Complete of an unknown upload", err, "NoSuchUpload", 404)
		wantErr(t, "Abort of an unknown upload", bogus.abort(), "NoSuchUpload", 404)

		u := createUpload(t, c, b, "errs")
		small1, small2 := randBytes(mib), randBytes(kib)
		cp1 := u.part(1, small1)
		cp2 := u.part(2, small2)
		_, err = u.complete(cp1, cp2)
		wantErr(t, "Complete with a 1 MiB first part", err, "EntityTooSmall", 400)
		_, err = u.complete(cp2, cp1)
		wantErr(t, "Complete with parts out of order", err, "InvalidPartOrder", 400)
		_, err = u.complete(cp1, cp1)
		wantErr(t, "Complete with a repeated part", err, "InvalidPartOrder", 400)
		_, err = u.complete(types.CompletedPart{PartNumber: aws.Int32(1), ETag: aws.String(quoted(md5Hex([]byte("other"))))})
		wantErr(t, "Complete with a wrong ETag", err, "InvalidPart", 400)
		_, err = u.complete(cp1, types.CompletedPart{PartNumber: aws.Int32(7), ETag: cp2.ETag})
		wantErr(t, "Complete with a part never uploaded", err, "InvalidPart", 400)
		_, err = u.complete()
		wantErr(t, "Complete with no parts", err, "MalformedXML", 400)
		for _, n := range []int32{0, 10001} {
			_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id), PartNumber: aws.Int32(n), Body: bytes.NewReader([]byte("x"))})
			wantErr(t, fmt.Sprintf("UploadPart number %d", n), err, "InvalidArgument", 400)
		}
		_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id), PartNumber: aws.Int32(3),
			Body: bytes.NewReader([]byte("x")), ContentMD5: aws.String("1B2M2Y8AsgTpgAmY7PhCfg==")})
		wantErr(t, "UploadPart with a wrong Content-MD5", err, "BadDigest", 400)

		_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id),
			PartNumber: aws.Int32(4), CopySource: copySource(b, "src"), CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", len(src)-10, len(src)+10))})
		wantErr(t, "UploadPartCopy with a range past the source's end", err, "InvalidArgument", 400)
		_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id),
			PartNumber: aws.Int32(4), CopySource: copySource(b, "src"), CopySourceIfMatch: aws.String(`"00"`)})
		wantErr(t, "UploadPartCopy with a failing x-amz-copy-source-if-match", err, "PreconditionFailed", 412)

		// A single small part is fine: the last part has no minimum.
		if _, err := u.complete(cp2); err != nil {
			t.Errorf("Complete with one 1 KiB part: %v", err)
		}
		checkBody(t, "single small part", get(t, c, b, "errs"), small2)

		// Abort.
		a := createUpload(t, c, b, "aborted")
		cpa := a.part(1, randBytes(5*mib))
		if err := a.abort(); err != nil {
			t.Fatalf("AbortMultipartUpload: %v", err)
		}
		_, err = a.complete(cpa)
		wantErr(t, "Complete after Abort", err, "NoSuchUpload", 404)
		_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String(a.key), UploadId: aws.String(a.id), PartNumber: aws.Int32(2), Body: bytes.NewReader([]byte("x"))})
		wantErr(t, "UploadPart after Abort", err, "NoSuchUpload", 404)
		wantErr(t, "second Abort", a.abort(), "NoSuchUpload", 404)
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(a.key)})
		wantErr(t, "HeadObject of an aborted upload's key", err, "NotFound", 404)
	})

	t.Run("listUploads", func(t *testing.T) {
		lb := mkBucket(t, c, "mplist")
		var ids []string
		for _, k := range []string{"u/a", "u/b", "u/b", "u/c/d", "v"} {
			ids = append(ids, createUpload(t, c, lb, k).id)
		}
		type kv struct{ key, id string }
		var got []kv
		in := &s3.ListMultipartUploadsInput{Bucket: aws.String(lb), Prefix: aws.String("u/"), MaxUploads: aws.Int32(1)}
		for i := 0; ; i++ {
			if i > 10 {
				t.Fatalf("ListMultipartUploads paging does not end")
			}
			out, err := c.ListMultipartUploads(ctx, in)
			if err != nil {
				t.Fatalf("ListMultipartUploads: %v", err)
			}
			for _, u := range out.Uploads {
				got = append(got, kv{aws.ToString(u.Key), aws.ToString(u.UploadId)})
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
		}
		if len(got) != 4 || got[0] != (kv{"u/a", ids[0]}) || got[1].key != "u/b" || got[2].key != "u/b" || got[3] != (kv{"u/c/d", ids[3]}) ||
			!(got[1].id == ids[1] && got[2].id == ids[2] || got[1].id == ids[2] && got[2].id == ids[1]) {
			t.Errorf("ListMultipartUploads paged: %v; want u/a, u/b ×2, u/c/d with ids %v", got, ids[:4])
		}
		out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(lb), Prefix: aws.String("u/"), Delimiter: aws.String("/")})
		if err != nil {
			t.Fatalf("ListMultipartUploads with delimiter: %v", err)
		}
		var prefixes []string
		for _, p := range out.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(p.Prefix))
		}
		if len(out.Uploads) != 3 || !slices.Equal(prefixes, []string{"u/c/"}) {
			t.Errorf("ListMultipartUploads delimiter '/': %d uploads, prefixes %q; want 3 and [u/c/]", len(out.Uploads), prefixes)
		}
	})
}
