package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestConditionalWrites(t *testing.T) {
	t.Parallel()
	testConditionalWrites(t, startServer(t))
}

// testConditionalWrites is TestConditionalWrites's body, which TestCluster runs against three nodes.
func testConditionalWrites(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "cw")

	t.Run("IfNoneMatch", func(t *testing.T) {
		for _, size := range []int{10, 2 * mib} {
			key := fmt.Sprintf("inm-%d", size)
			first := randBytes(size)
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(first), IfNoneMatch: aws.String("*")})
			if err != nil {
				t.Fatalf("PutObject If-None-Match:* of a new key: %v", err)
			}
			_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(randBytes(size)), IfNoneMatch: aws.String("*")})
			wantErr(t, "second PutObject If-None-Match:*", err, "PreconditionFailed", 412)
			checkBody(t, "object after refused overwrite", get(t, c, b, key), first)
			// With an ETag: refused while the object has it, allowed once
			// it has another.
			_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(randBytes(size)),
				IfNoneMatch: aws.String(quoted(md5Hex(first)))})
			wantErr(t, "PutObject If-None-Match with the current ETag", err, "PreconditionFailed", 412)
			second := randBytes(size)
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(second),
				IfNoneMatch: aws.String(quoted(md5Hex([]byte("another"))))}); err != nil {
				t.Fatalf("PutObject If-None-Match with another ETag: %v", err)
			}
			checkBody(t, "object after If-None-Match with another ETag", get(t, c, b, key), second)
		}
	})

	t.Run("IfMatch", func(t *testing.T) {
		for _, size := range []int{10, 2 * mib} {
			key := fmt.Sprintf("im-%d", size)
			v1 := randBytes(size)
			out := put(t, c, b, key, v1)
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(randBytes(size)),
				IfMatch: aws.String(quoted(md5Hex([]byte("not it"))))})
			wantErr(t, "PutObject If-Match with a wrong ETag", err, "PreconditionFailed", 412)
			checkBody(t, "object after refused If-Match", get(t, c, b, key), v1)
			v2 := randBytes(size)
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(v2), IfMatch: out.ETag}); err != nil {
				t.Fatalf("PutObject If-Match with the current ETag: %v", err)
			}
			checkBody(t, "object after If-Match overwrite", get(t, c, b, key), v2)
		}
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("im-absent"), Body: strings.NewReader("x"), IfMatch: aws.String(`"0123"`)})
		wantErr(t, "PutObject If-Match of an absent key", err, "NoSuchKey", 404)
	})

	// race starts n writers at once and returns how many succeeded and the
	// body of the one that did.
	race := func(t *testing.T, key string, size, n int, cond func(*s3.PutObjectInput)) (wins int, winner []byte) {
		t.Helper()
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			mu    sync.Mutex
		)
		for i := 0; i < n; i++ {
			body := randBytes(size)
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)}
				cond(in)
				<-start
				_, err := c.PutObject(ctx, in)
				mu.Lock()
				defer mu.Unlock()
				switch code := errCode(err); code {
				case "":
					wins++
					winner = body
				case "PreconditionFailed", "ConditionalRequestConflict":
				default:
					t.Errorf("concurrent conditional PutObject: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		return wins, winner
	}

	t.Run("ConcurrentIfNoneMatch", func(t *testing.T) {
		for round, size := range []int{100, 100, 300 * kib, 2*mib + 1} {
			key := fmt.Sprintf("race-inm-%d", round)
			wins, winner := race(t, key, size, 16, func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
			if wins != 1 {
				t.Errorf("round %d (%d bytes): %d of 16 If-None-Match:* writers succeeded, want exactly 1", round, size, wins)
				continue
			}
			checkBody(t, "object after the race", get(t, c, b, key), winner)
		}
	})

	t.Run("ConcurrentIfMatch", func(t *testing.T) {
		for round, size := range []int{100, 2 * mib} {
			key := fmt.Sprintf("race-im-%d", round)
			out := put(t, c, b, key, randBytes(size))
			wins, winner := race(t, key, size, 16, func(in *s3.PutObjectInput) { in.IfMatch = out.ETag })
			if wins != 1 {
				t.Errorf("round %d (%d bytes): %d of 16 If-Match writers succeeded, want exactly 1", round, size, wins)
				continue
			}
			checkBody(t, "object after the race", get(t, c, b, key), winner)
		}
	})

	// Conditional deletes: If-Match against the current object, atomic
	// with the delete. Of 16 deleters holding the same ETag while one
	// writer replaces the object, those that see the old ETag delete it
	// (or find nothing, which succeeds) and none deletes the new one.
	t.Run("ConditionalDelete", func(t *testing.T) {
		key := "cond-delete"
		old := put(t, c, b, key, randBytes(1000))
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(key), IfMatch: aws.String(quoted(md5Hex([]byte("not it"))))})
		wantErr(t, "DeleteObject If-Match with a wrong ETag", err, "PreconditionFailed", 412)
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)}); err != nil {
			t.Fatalf("object gone after a refused conditional delete: %v", err)
		}
		for round := range 3 {
			var wg sync.WaitGroup
			start := make(chan struct{})
			newer := randBytes(2000 + round)
			for range 16 {
				wg.Go(func() {
					<-start
					_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(key), IfMatch: old.ETag})
					if err != nil {
						wantErr(t, "racing DeleteObject If-Match", err, "PreconditionFailed", 412)
					}
				})
			}
			wg.Go(func() {
				<-start
				if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(newer)}); err != nil {
					t.Errorf("racing PutObject: %v", err)
				}
			})
			close(start)
			wg.Wait()
			// Whatever the order, the new object survives: a deleter
			// that comes after the writer holds an ETag it no longer has.
			checkBody(t, "object written during the conditional deletes", get(t, c, b, key), newer)
			old = put(t, c, b, key, randBytes(1000+round))
		}
	})

	t.Run("CompleteMultipart", func(t *testing.T) {
		put(t, c, b, "mp-exists", []byte("old"))
		u := createUpload(t, c, b, "mp-exists")
		p := u.part(1, []byte("new"))
		_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{p}}, IfNoneMatch: aws.String("*")})
		wantErr(t, "Complete If-None-Match:* onto an existing key", err, "PreconditionFailed", 412)
		_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{p}}, IfMatch: aws.String(`"0123"`)})
		wantErr(t, "Complete If-Match with a wrong ETag", err, "PreconditionFailed", 412)
		checkBody(t, "object after refused Completes", get(t, c, b, u.key), []byte("old"))
		_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(u.key), UploadId: aws.String(u.id),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{p}}, IfMatch: aws.String(quoted(md5Hex([]byte("old"))))})
		if err != nil {
			t.Fatalf("Complete If-Match with the current ETag: %v", err)
		}
		checkBody(t, "object after Complete", get(t, c, b, u.key), []byte("new"))
	})
}

// compositeChecksum returns S3's COMPOSITE checksum of parts: the checksum
// of the concatenated raw part checksums, then "-N".
func compositeChecksum(alg types.ChecksumAlgorithm, parts ...[]byte) string {
	var cat []byte
	for _, p := range parts {
		raw, _ := base64.StdEncoding.DecodeString(checksumOf(alg, p))
		cat = append(cat, raw...)
	}
	return fmt.Sprintf("%s-%d", checksumOf(alg, cat), len(parts))
}

func TestMultipartChecksums(t *testing.T) {
	t.Parallel()
	testMultipartChecksums(t, startServer(t))
}

// testMultipartChecksums is TestMultipartChecksums's body, which TestCluster runs against three nodes.
func testMultipartChecksums(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "mpck")

	cases := []struct {
		alg     types.ChecksumAlgorithm
		typ     types.ChecksumType
		implied bool // CreateMultipartUpload leaves typ, S3's default for alg, unsaid
	}{
		{types.ChecksumAlgorithmCrc32c, types.ChecksumTypeComposite, false},
		{types.ChecksumAlgorithmCrc32c, types.ChecksumTypeComposite, true},
		{types.ChecksumAlgorithmSha256, types.ChecksumTypeComposite, false},
		{types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject, false},
		{types.ChecksumAlgorithmCrc64nvme, types.ChecksumTypeFullObject, false},
		{types.ChecksumAlgorithmCrc64nvme, types.ChecksumTypeFullObject, true},
		// The newer algorithms: COMPOSITE only (see below), the default.
		{types.ChecksumAlgorithmSha512, types.ChecksumTypeComposite, false},
		{types.ChecksumAlgorithmSha512, types.ChecksumTypeComposite, true},
		{types.ChecksumAlgorithmMd5, types.ChecksumTypeComposite, true},
		{types.ChecksumAlgorithmXxhash64, types.ChecksumTypeComposite, true},
		{types.ChecksumAlgorithmXxhash3, types.ChecksumTypeComposite, false},
		{types.ChecksumAlgorithmXxhash128, types.ChecksumTypeComposite, true},
	}
	for _, tc := range cases {
		name := string(tc.alg) + "/" + string(tc.typ)
		if tc.implied {
			name += "/implied"
		}
		t.Run(name, func(t *testing.T) {
			key := "ck-" + name
			in := &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(key), ChecksumAlgorithm: tc.alg}
			if !tc.implied {
				in.ChecksumType = tc.typ
			}
			created, err := c.CreateMultipartUpload(ctx, in)
			if err != nil {
				t.Fatalf("CreateMultipartUpload %s: %v", name, err)
			}
			u := &upload{t: t, c: c, bucket: b, key: key, id: aws.ToString(created.UploadId)}
			if created.ChecksumAlgorithm != tc.alg || created.ChecksumType != tc.typ {
				t.Errorf("CreateMultipartUpload: algorithm %q type %q, want %q %q", created.ChecksumAlgorithm, created.ChecksumType, tc.alg, tc.typ)
			}
			p1, p2 := randBytes(5*mib), randBytes(123*kib)
			bodies := [][]byte{p1, p2}
			cp1 := u.part(1, p1, func(in *s3.UploadPartInput) { clientChecksum(in, tc.alg, p1) })
			cp2 := u.part(2, p2, func(in *s3.UploadPartInput) { clientChecksum(in, tc.alg, p2) })
			for i, cp := range []types.CompletedPart{cp1, cp2} {
				if got, want := outputChecksum(tc.alg, &cp), checksumOf(tc.alg, bodies[i]); got != want {
					t.Errorf("UploadPart %d: checksum %q, want %q", i+1, got, want)
				}
			}
			lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String(key), UploadId: created.UploadId})
			if err != nil {
				t.Fatalf("ListParts: %v", err)
			}
			if lp.ChecksumAlgorithm != tc.alg || lp.ChecksumType != tc.typ || len(lp.Parts) != 2 {
				t.Fatalf("ListParts: algorithm %q type %q, %d parts; want %q %q, 2", lp.ChecksumAlgorithm, lp.ChecksumType, len(lp.Parts), tc.alg, tc.typ)
			}
			for i := range lp.Parts {
				if got, want := outputChecksum(tc.alg, &lp.Parts[i]), checksumOf(tc.alg, bodies[i]); got != want {
					t.Errorf("ListParts part %d: checksum %q, want %q", i+1, got, want)
				}
			}
			// A part checksum that does not match what was stored.
			bad := types.CompletedPart{PartNumber: cp1.PartNumber, ETag: cp1.ETag}
			setChecksum(&bad, tc.alg, checksumOf(tc.alg, []byte("other")))
			_, err = u.complete(bad, cp2)
			wantErr(t, "Complete with a wrong part checksum", err, "InvalidPart", 400)
			// The other checksum type than the upload's.
			other := types.ChecksumTypeFullObject
			if tc.typ == other {
				other = types.ChecksumTypeComposite
			}
			_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(key), UploadId: created.UploadId,
				ChecksumType: other, MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{cp1, cp2}}})
			wantErr(t, "Complete asserting x-amz-checksum-type "+string(other), err, "BadDigest", 400)

			out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(key), UploadId: created.UploadId,
				ChecksumType: tc.typ, MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{cp1, cp2}}})
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			whole := append(append([]byte(nil), p1...), p2...)
			want := checksumOf(tc.alg, whole)
			if tc.typ == types.ChecksumTypeComposite {
				want = compositeChecksum(tc.alg, p1, p2)
			}
			if got := outputChecksum(tc.alg, out); got != want || out.ChecksumType != tc.typ {
				t.Errorf("Complete: checksum %q type %q, want %q %q", got, out.ChecksumType, want, tc.typ)
			}
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatalf("HeadObject: %v", err)
			}
			if got := outputChecksum(tc.alg, h); got != want || h.ChecksumType != tc.typ {
				t.Errorf("HeadObject ChecksumMode=ENABLED: checksum %q type %q, want %q %q", got, h.ChecksumType, want, tc.typ)
			}
			g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatalf("GetObject: %v", err)
			}
			var buf bytes.Buffer
			_, err = buf.ReadFrom(g.Body)
			g.Body.Close()
			if err != nil {
				t.Errorf("GetObject ChecksumMode=ENABLED read: %v", err)
			}
			checkBody(t, "GetObject", buf.Bytes(), whole)
			if got := outputChecksum(tc.alg, g); got != want || g.ChecksumType != tc.typ {
				t.Errorf("GetObject ChecksumMode=ENABLED: checksum %q type %q, want %q %q", got, g.ChecksumType, want, tc.typ)
			}
			attrs, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String(b), Key: aws.String(key),
				ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts}})
			if err != nil {
				t.Fatalf("GetObjectAttributes: %v", err)
			}
			if attrs.Checksum == nil || outputChecksum(tc.alg, attrs.Checksum) != want || attrs.Checksum.ChecksumType != tc.typ {
				t.Errorf("GetObjectAttributes checksum %+v, want %s %q %q", attrs.Checksum, tc.alg, want, tc.typ)
			}
			if attrs.ObjectParts == nil || len(attrs.ObjectParts.Parts) != 2 {
				t.Fatalf("GetObjectAttributes parts %+v, want 2", attrs.ObjectParts)
			}
			for i := range attrs.ObjectParts.Parts {
				if got, want := outputChecksum(tc.alg, &attrs.ObjectParts.Parts[i]), checksumOf(tc.alg, bodies[i]); got != want {
					t.Errorf("GetObjectAttributes part %d: checksum %q, want %q", i+1, got, want)
				}
			}
		})
	}

	// FULL_OBJECT needs a CRC, whose part checksums combine into the
	// object's; COMPOSITE is not for CRC64NVME.
	for _, alg := range allAlgorithms {
		for _, typ := range []types.ChecksumType{types.ChecksumTypeFullObject, types.ChecksumTypeComposite} {
			allowed := typ == types.ChecksumTypeComposite || alg == types.ChecksumAlgorithmCrc32 || alg == types.ChecksumAlgorithmCrc32c || alg == types.ChecksumAlgorithmCrc64nvme
			if alg == types.ChecksumAlgorithmCrc64nvme && typ == types.ChecksumTypeComposite {
				allowed = false
			}
			if allowed {
				continue
			}
			_, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("refused"), ChecksumAlgorithm: alg, ChecksumType: typ})
			wantErr(t, fmt.Sprintf("CreateMultipartUpload %s %s", alg, typ), err, "InvalidRequest", 400)
		}
	}
}
