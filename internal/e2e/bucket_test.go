package e2e

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestBuckets(t *testing.T) {
	t.Parallel()
	testBuckets(t, startServer(t))
}

// testBuckets expects ts to have no bucket when it starts (ListBucketsEmpty,
// and CreateListHeadDelete lists exactly its own): TestCluster runs it
// before anything else.
func testBuckets(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()

	t.Run("ListBucketsEmpty", func(t *testing.T) {
		out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Fatalf("ListBuckets: %v", err)
		}
		if len(out.Buckets) != 0 {
			t.Errorf("ListBuckets on a fresh server: %d buckets, want 0", len(out.Buckets))
		}
		if out.Owner == nil || aws.ToString(out.Owner.ID) == "" {
			t.Errorf("ListBuckets: Owner %+v, want an owner with an ID", out.Owner)
		}
	})

	t.Run("CreateListHeadDelete", func(t *testing.T) {
		before := time.Now().Add(-2 * time.Second)
		names := []string{"zz-last-bucket", "aa-first-bucket", "mm.dotted.bucket", "123"}
		for _, n := range names {
			if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(n)}); err != nil {
				t.Fatalf("CreateBucket(%q): %v", n, err)
			}
		}
		out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Fatalf("ListBuckets: %v", err)
		}
		var got []string
		for _, b := range out.Buckets {
			got = append(got, aws.ToString(b.Name))
			if b.CreationDate == nil || b.CreationDate.Before(before) || b.CreationDate.After(time.Now().Add(2*time.Second)) {
				t.Errorf("bucket %s: CreationDate %v, want about now", aws.ToString(b.Name), b.CreationDate)
			}
		}
		want := slices.Clone(names)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("ListBuckets = %q, want %q (name order)", got, want)
		}
		for _, n := range names {
			if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(n)}); err != nil {
				t.Errorf("HeadBucket(%q): %v", n, err)
			}
			if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(n)}); err != nil {
				t.Errorf("DeleteBucket(%q): %v", n, err)
			}
			_, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(n)})
			wantErr(t, "HeadBucket after delete", err, "NotFound", 404)
		}
	})

	t.Run("InvalidNames", func(t *testing.T) {
		for _, n := range []string{
			"ab",                     // too short
			strings.Repeat("a", 64),  // too long
			"UpperCase",              // upper case
			"under_score",            // underscore
			"-leading-hyphen",        // must start with a letter or digit
			"trailing-hyphen-",       // must end with a letter or digit
			"double..dot",            // adjacent periods
			"192.168.5.4",            // IP address
			"xn--punycode-prefix",    // reserved prefix
			"bucket-alias-s3alias",   // reserved suffix
			"with space",             // space
			".leading-dot",           // leading period
			"sthree-reserved-prefix", // reserved prefix
		} {
			_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(n)})
			wantErr(t, "CreateBucket("+n+")", err, "InvalidBucketName", 400)
		}
		for _, n := range []string{"abc", strings.Repeat("a", 63), "a.b-c.d9", "0-0"} {
			if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(n)}); err != nil {
				t.Errorf("CreateBucket(%q) of a valid name: %v", n, err)
			}
		}
	})

	t.Run("RecreateOwned", func(t *testing.T) {
		// us-east-1: re-creating one's own bucket is 200 OK and keeps its
		// objects, as in S3 (other regions answer BucketAlreadyOwnedByYou).
		b := mkBucket(t, c, "owned")
		put(t, c, b, "k", []byte("kept"))
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatalf("second CreateBucket in us-east-1: %v", err)
		}
		checkBody(t, "object after re-creating its bucket", get(t, c, b, "k"), []byte("kept"))
	})

	t.Run("NotEmpty", func(t *testing.T) {
		b := mkBucket(t, c, "notempty")
		put(t, c, b, "k", []byte("x"))
		_, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
		wantErr(t, "DeleteBucket with an object", err, "BucketNotEmpty", 409)
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k")}); err != nil {
			t.Fatalf("DeleteObject: %v", err)
		}
		// An upload in progress does not keep the bucket, as in S3: it is
		// aborted with it (so `aws s3 rb --force` works after an
		// interrupted upload).
		mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("mp")})
		if err != nil {
			t.Fatalf("CreateMultipartUpload: %v", err)
		}
		if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("mp"), UploadId: mp.UploadId,
			PartNumber: aws.Int32(1), Body: bytes.NewReader(bytes.Repeat([]byte("p"), 1<<20))}); err != nil {
			t.Fatalf("UploadPart: %v", err)
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatalf("DeleteBucket with an upload in progress: %v", err)
		}
		_, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String("mp"), UploadId: mp.UploadId})
		wantErr(t, "ListParts after DeleteBucket", err, "NoSuchBucket", 404)
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
		wantErr(t, "DeleteBucket of a deleted bucket", err, "NoSuchBucket", 404)
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k"), Body: bytes.NewReader(nil)})
		wantErr(t, "PutObject into a deleted bucket", err, "NoSuchBucket", 404)
	})

	t.Run("MissingBucket", func(t *testing.T) {
		const b = "no-such-bucket-here"
		_, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)})
		wantErr(t, "HeadBucket", err, "NotFound", 404)
		_, err = c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(b)})
		wantErr(t, "GetBucketLocation", err, "NoSuchBucket", 404)
		_, err = c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(b)})
		wantErr(t, "GetBucketVersioning", err, "NoSuchBucket", 404)
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
		wantErr(t, "ListObjectsV2", err, "NoSuchBucket", 404)
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
		wantErr(t, "GetObject", err, "NoSuchBucket", 404)
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
		wantErr(t, "DeleteObject", err, "NoSuchBucket", 404)
	})

	t.Run("LocationAndVersioning", func(t *testing.T) {
		b := mkBucket(t, c, "loc")
		loc, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(b)})
		if err != nil {
			t.Fatalf("GetBucketLocation: %v", err)
		}
		// S3 reports us-east-1 as the empty constraint.
		if loc.LocationConstraint != "" {
			t.Errorf("GetBucketLocation of a bucket made without constraint on a us-east-1 server = %q, want \"\"", loc.LocationConstraint)
		}
		v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(b)})
		if err != nil {
			t.Fatalf("GetBucketVersioning: %v", err)
		}
		if v.Status != "" || v.MFADelete != "" {
			t.Errorf("GetBucketVersioning of a new bucket = Status %q MFADelete %q, want both empty (never enabled)", v.Status, v.MFADelete)
		}
	})
}

// TestLocationConstraint runs a server in another region: buckets created
// with that region as constraint report it; another region is refused, as a
// regional S3 endpoint does; and a request signed for the wrong region is
// refused.
func TestLocationConstraint(t *testing.T) {
	t.Parallel()
	const region = "eu-west-1"
	ts := startServer(t, "--region", region)
	c := ts.client(t, func(o *s3.Options) { o.Region = region })
	ctx := t.Context()

	b := newBucketName("eu")
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{
		Bucket:                    aws.String(b),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(region)},
	})
	if err != nil {
		t.Fatalf("CreateBucket with LocationConstraint %s: %v", region, err)
	}
	loc, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(b)})
	if err != nil {
		t.Fatalf("GetBucketLocation: %v", err)
	}
	if string(loc.LocationConstraint) != region {
		t.Errorf("GetBucketLocation = %q, want %q", loc.LocationConstraint, region)
	}

	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{
		Bucket:                    aws.String(newBucketName("elsewhere")),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintApSouth1},
	})
	wantErr(t, "CreateBucket with another region's constraint", err, "IllegalLocationConstraintException", 400)

	wrong := ts.client(t) // signs for us-east-1
	_, err = wrong.ListBuckets(ctx, &s3.ListBucketsInput{})
	wantErr(t, "request signed for us-east-1 on an eu-west-1 server", err, "AuthorizationHeaderMalformed", 400)
}
