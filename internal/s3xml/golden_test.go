package s3xml_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.xml from the current output")

// Fixed values shared by the golden documents and the SDK round-trip tests.
var (
	t0 = time.Date(2009, 10, 12, 17, 50, 30, 0, time.UTC)
	t1 = time.Date(2019, 12, 11, 23, 32, 47, 0, time.UTC)

	ownerID = "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a"
	owner   = s3xml.Owner{ID: ownerID, DisplayName: "webfile"}
)

const (
	etag1    = `"fba9dede5f27731c9771645a39863328"`
	etag2    = `"0c78aef83f66abc1fa1e8477f296d394"`
	etagMPU  = `"3858f62230ac3c915f300c664312c11f-9"`
	uploadID = "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA"
	crc32    = "i9aeUg=="
	crc64    = "AAAAAAAAAAA="
	reqID    = "4442587FB7D0A2F9"
	hostID   = "ZRzGY6f3nTtBpDvjyu3mqIzbPs5TTrfdpCn2xNgrVSH4w3mnnuKzaS8oB2Q2ZAYd6mSHYlDUoHQ="
)

// corsConfig is the example of the PutBucketCors reference, with an ID
// and a header wildcard added.
var corsConfig = s3xml.CORSConfiguration{Rules: []s3xml.CORSRule{
	{
		AllowedHeaders: []string{"*"},
		AllowedMethods: []string{"PUT", "POST", "DELETE"},
		AllowedOrigins: []string{"http://www.example.com"},
		ExposeHeaders:  []string{"x-amz-server-side-encryption"},
		ID:             "writers",
		MaxAgeSeconds:  maxAge3000(),
	},
	{
		AllowedMethods: []string{"GET"},
		AllowedOrigins: []string{"*"},
	},
}}

func maxAge3000() *int { n := 3000; return &n }

// xml11 names the golden documents that list keys XML 1.0 cannot carry,
// which S3 writes as character references a strict XML 1.0 parser refuses.
var xml11 = map[string]bool{"ListBucketResultV2-control-keys": true}

// goldenCases returns every document s3xml writes, by golden file name.
// Each renders itself to w.
func goldenCases() []struct {
	name   string
	render func(w io.Writer) error
} {
	enc := func(v any) func(io.Writer) error {
		return func(w io.Writer) error { return s3xml.Encode(w, v) }
	}
	encErr := func(e *s3err.Error, requestID, hostID string) func(io.Writer) error {
		return func(w io.Writer) error { return s3xml.EncodeError(w, e, requestID, hostID) }
	}
	return []struct {
		name   string
		render func(w io.Writer) error
	}{
		{"ListAllMyBucketsResult", enc(s3xml.ListAllMyBucketsResult{
			Owner: owner,
			Buckets: []s3xml.Bucket{
				{Name: "amzn-s3-demo-bucket", CreationDate: s3xml.Time(t1), BucketRegion: "us-east-1"},
				{Name: "examplebucket", CreationDate: s3xml.Time(t0), BucketRegion: "eu-west-1"},
			},
		})},
		{"ListAllMyBucketsResult-empty", enc(s3xml.ListAllMyBucketsResult{Owner: s3xml.Owner{ID: ownerID}})},
		{"ListAllMyBucketsResult-paged", enc(&s3xml.ListAllMyBucketsResult{
			Owner:             owner,
			Buckets:           []s3xml.Bucket{{Name: "photos-2019", CreationDate: s3xml.Time(t1), BucketRegion: "us-east-1"}},
			ContinuationToken: "cGhvdG9zLTIwMTk=",
			Prefix:            "photos-",
		})},
		{"ListBucketResult", enc(s3xml.ListBucketResult{
			Name:        "example-bucket",
			Prefix:      "photos/2006/",
			Marker:      "photos/2006/",
			NextMarker:  "photos/2006/February/",
			MaxKeys:     2,
			Delimiter:   "/",
			IsTruncated: true,
			Contents: []s3xml.Object{{
				Key: "photos/2006/index.html", LastModified: s3xml.Time(t0), ETag: etag1,
				Size: 434234, Owner: &owner, StorageClass: "STANDARD",
			}},
			CommonPrefixes: []s3xml.CommonPrefix{{Prefix: "photos/2006/February/"}},
		})},
		{"ListBucketResult-empty", enc(s3xml.ListBucketResult{Name: "example-bucket", MaxKeys: 1000})},
		{"ListBucketResult-url", enc(s3xml.ListBucketResult{
			Name:         "example-bucket",
			Prefix:       "a%20b%2F",
			MaxKeys:      1000,
			EncodingType: "url",
			Contents: []s3xml.Object{{
				Key: "a%20b%2Fc%01d", LastModified: s3xml.Time(t0), ETag: etag1,
				Size: 1, Owner: &owner, StorageClass: "STANDARD",
			}},
		})},
		{"ListBucketResultV2", enc(s3xml.ListBucketResultV2{
			Name:                  "example-bucket",
			Prefix:                "photos/",
			ContinuationToken:     "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=",
			NextContinuationToken: "2ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=",
			KeyCount:              3,
			MaxKeys:               3,
			Delimiter:             "/",
			IsTruncated:           true,
			Contents: []s3xml.Object{
				{Key: "photos/a.jpg", LastModified: s3xml.Time(t0), ETag: etag1, Size: 434234, StorageClass: "STANDARD"},
				{
					Key: "photos/b.jpg", LastModified: s3xml.Time(t1), ETag: etagMPU,
					ChecksumAlgorithm: "CRC64NVME", ChecksumType: "FULL_OBJECT", Size: 47185920, StorageClass: "STANDARD",
				},
			},
			CommonPrefixes: []s3xml.CommonPrefix{{Prefix: "photos/2006/"}},
		})},
		{"ListBucketResultV2-fetch-owner", enc(s3xml.ListBucketResultV2{
			Name:       "quotes",
			Prefix:     "E",
			StartAfter: "ExampleGuide.pdf",
			KeyCount:   1,
			MaxKeys:    3,
			Contents: []s3xml.Object{{
				Key: "ExampleObject.txt", LastModified: s3xml.Time(t1), ETag: etag2,
				Size: 857, Owner: &owner, StorageClass: "REDUCED_REDUNDANCY",
			}},
		})},
		{"ListBucketResultV2-odd-keys", enc(s3xml.ListBucketResultV2{
			Name:     "odd",
			KeyCount: 5,
			MaxKeys:  1000,
			Contents: []s3xml.Object{
				{Key: `<a>&"b'`, LastModified: s3xml.Time(t0), ETag: etag1, StorageClass: "STANDARD"},
				{Key: "tab\tnl\ncr\r", LastModified: s3xml.Time(t0), ETag: etag1, StorageClass: "STANDARD"},
				{Key: "bad\xff\xfeutf8", LastModified: s3xml.Time(t0), ETag: etag1, StorageClass: "STANDARD"},
				{Key: "é 😀 \uFFFD", LastModified: s3xml.Time(t0), ETag: etag1, StorageClass: "STANDARD"},
			},
		})},
		{"ListBucketResultV2-control-keys", enc(s3xml.ListBucketResultV2{
			Name:           "odd",
			KeyCount:       2,
			MaxKeys:        1000,
			Contents:       []s3xml.Object{{Key: "ctl\x01\x1f", LastModified: s3xml.Time(t0), ETag: etag1, StorageClass: "STANDARD"}},
			CommonPrefixes: []s3xml.CommonPrefix{{Prefix: "nonchar\uFFFE/"}},
		})},
		{"LocationConstraint", enc(s3xml.LocationConstraint{Region: "eu-west-1"})},
		{"LocationConstraint-us-east-1", enc(s3xml.LocationConstraint{})},
		{"VersioningConfiguration", enc(s3xml.VersioningConfiguration{Status: "Enabled", MFADelete: "Disabled"})},
		{"VersioningConfiguration-never", enc(s3xml.VersioningConfiguration{})},
		{"CORSConfiguration", enc(corsConfig)},
		{"LifecycleConfiguration", enc(lifecycleDoc())},
		{"InitiateMultipartUploadResult", enc(s3xml.InitiateMultipartUploadResult{
			Bucket: "example-bucket", Key: "example-object", UploadID: uploadID,
		})},
		{"CompleteMultipartUploadResult", enc(s3xml.CompleteMultipartUploadResult{
			Location: "http://example-bucket.s3.localhost/example-object",
			Bucket:   "example-bucket",
			Key:      "example-object",
			ETag:     etagMPU,
		})},
		{"CompleteMultipartUploadResult-checksum", enc(s3xml.CompleteMultipartUploadResult{
			Location:     "http://127.0.0.1:6789/example-bucket/example-object",
			Bucket:       "example-bucket",
			Key:          "example-object",
			ETag:         etagMPU,
			Checksums:    s3xml.Checksums{ChecksumCRC64NVME: crc64},
			ChecksumType: "FULL_OBJECT",
		})},
		{"ListPartsResult", enc(s3xml.ListPartsResult{
			Bucket:               "example-bucket",
			Key:                  "example-object",
			UploadID:             uploadID,
			Initiator:            owner,
			Owner:                owner,
			StorageClass:         "STANDARD",
			ChecksumAlgorithm:    "CRC32",
			ChecksumType:         "COMPOSITE",
			PartNumberMarker:     1,
			NextPartNumberMarker: 3,
			MaxParts:             2,
			IsTruncated:          true,
			Parts: []s3xml.Part{
				{PartNumber: 2, LastModified: s3xml.Time(t0), ETag: etag2, Size: 10485760, Checksums: s3xml.Checksums{ChecksumCRC32: crc32}},
				{PartNumber: 3, LastModified: s3xml.Time(t1), ETag: etag1, Size: 10485760, Checksums: s3xml.Checksums{ChecksumCRC32: crc32}},
			},
		})},
		{"ListVersionsResult", enc(func() s3xml.ListVersionsResult {
			v1 := s3xml.NewVersion("my-image.jpg", "3/L4kqtJl40Nr8X8gdRQBpUMLUo", true, s3xml.Time(t0), etag1, 434234)
			v1.Owner = &owner
			m := s3xml.NewDeleteMarker("my-second-image.jpg", "03jpff543dhffds434rfdsFDN943fdsFkdmqnh892", true, s3xml.Time(t1))
			m.Owner = &owner
			v2 := s3xml.NewVersion("my-second-image.jpg", "QUpfdndhfd8438MNFDN93jdnJFkdmqnh893", false, s3xml.Time(t0), etag2, 166434)
			v2.Owner = &owner
			v2.ChecksumAlgorithm, v2.ChecksumType = "CRC32", "FULL_OBJECT"
			return s3xml.ListVersionsResult{
				Name: "bucket", KeyMarker: "my-image.jpg", VersionIDMarker: "null",
				NextKeyMarker: "my-second-image.jpg", NextVersionIDMarker: "QUpfdndhfd8438MNFDN93jdnJFkdmqnh893",
				MaxKeys: 3, IsTruncated: true, Versions: []s3xml.ObjectVersion{v1, m, v2},
			}
		}())},
		{"ListVersionsResult-delimiter", enc(s3xml.ListVersionsResult{
			Name: "bucket", Prefix: "photos/", MaxKeys: 1000, Delimiter: "/", EncodingType: "url",
			CommonPrefixes: []s3xml.CommonPrefix{{Prefix: "photos/2006/"}, {Prefix: "photos/2007/"}},
		})},
		{"ListMultipartUploadsResult", enc(s3xml.ListMultipartUploadsResult{
			Bucket:             "bucket",
			NextKeyMarker:      "my-movie.m2ts",
			NextUploadIDMarker: "YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ",
			MaxUploads:         3,
			IsTruncated:        true,
			Uploads: []s3xml.Upload{
				{Key: "my-divisor", UploadID: "XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5nIG11Y2ggbHVjaw", Initiator: owner, Owner: owner, StorageClass: "STANDARD", Initiated: s3xml.Time(t0)},
				{Key: "my-movie.m2ts", UploadID: "YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ", Initiator: owner, Owner: owner, StorageClass: "STANDARD", Initiated: s3xml.Time(t1), ChecksumAlgorithm: "CRC32", ChecksumType: "COMPOSITE"},
			},
		})},
		{"ListMultipartUploadsResult-delimiter", enc(s3xml.ListMultipartUploadsResult{
			Bucket:         "example-bucket",
			Delimiter:      "/",
			Prefix:         "photos/2006/",
			MaxUploads:     1000,
			CommonPrefixes: []s3xml.CommonPrefix{{Prefix: "photos/2006/feb/"}, {Prefix: "photos/2006/jan/"}},
		})},
		{"CopyObjectResult", enc(s3xml.CopyObjectResult{LastModified: s3xml.Time(t0), ETag: etag1})},
		{"CopyObjectResult-checksum", enc(s3xml.CopyObjectResult{
			LastModified: s3xml.Time(t0), ETag: etag1,
			Checksums: s3xml.Checksums{ChecksumCRC32: crc32}, ChecksumType: "FULL_OBJECT",
		})},
		{"CopyPartResult", enc(s3xml.CopyPartResult{LastModified: s3xml.Time(t1), ETag: etag2})},
		{"GetObjectAttributesResponse", enc(func() s3xml.GetObjectAttributesResponse {
			size := int64(10485760)
			return s3xml.GetObjectAttributesResponse{
				ETag:     "3858f62230ac3c915f300c664312c11f-2",
				Checksum: &s3xml.ObjectChecksum{Checksums: s3xml.Checksums{ChecksumCRC32: crc32}, ChecksumType: "COMPOSITE"},
				ObjectParts: &s3xml.ObjectPartsPage{IsTruncated: true, MaxParts: 1, NextPartNumberMarker: 1, PartsCount: 2,
					Parts: []s3xml.ObjectPart{{Checksums: s3xml.Checksums{ChecksumCRC32: crc32}, PartNumber: 1, Size: 5242880}}},
				StorageClass: "STANDARD",
				ObjectSize:   &size,
			}
		}())},
		{"GetObjectAttributesResponse-etag-only", enc(s3xml.GetObjectAttributesResponse{ETag: "fba9dede5f27731c9771645a39863328"})},
		{"DeleteResult", enc(s3xml.DeleteResult{
			Deleted: []s3xml.DeletedObject{
				{Key: "sample1.txt"},
				{Key: "sample3.txt", DeleteMarker: true, DeleteMarkerVersionID: "NeQt5xeFTfgPJD8B4CGWnkSLtluMr11s"},
			},
			Errors: []s3xml.DeleteError{
				{Key: "sample2.txt", Code: s3err.AccessDenied, Message: "Access Denied."},
			},
		})},
		{"DeleteResult-quiet", enc(s3xml.DeleteResult{})},
		{"AccessControlPolicy", enc(s3xml.OwnerFullControl(owner))},
		{"AccessControlPolicy-grants", enc(s3xml.AccessControlPolicy{
			Owner: owner,
			Grants: []s3xml.Grant{
				{Grantee: s3xml.Grantee{Type: s3xml.GranteeCanonicalUser, ID: ownerID, DisplayName: "webfile"}, Permission: s3xml.PermissionFullControl},
				{Grantee: s3xml.Grantee{Type: s3xml.GranteeGroup, URI: "http://acs.amazonaws.com/groups/global/AllUsers"}, Permission: s3xml.PermissionRead},
				{Grantee: s3xml.Grantee{Type: s3xml.GranteeByEmail, EmailAddress: "xyz@amazon.com"}, Permission: s3xml.PermissionWriteACP},
			},
		})},
		{"Error", encErr(s3err.New(s3err.NoSuchKey, "/mybucket/myfoto.jpg").With("Key", "myfoto.jpg"), reqID, hostID)},
		{"Error-extra", encErr(s3err.Newf(s3err.InvalidArgument, "", "Argument max-keys must be an integer between 0 and 2147483647").
			With("ArgumentName", "max-keys").With("ArgumentValue", "<-1>"), reqID, hostID)},
		{"Error-minimal", encErr(s3err.New(s3err.InternalError, ""), reqID, "")},
	}
}

// TestGolden renders every document and compares it byte for byte with
// testdata/golden/<name>.xml; -update rewrites the files. Every document
// must also be well-formed for a strict parser, but for those that list
// keys XML 1.0 cannot carry, which S3 writes as character references.
func TestGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.render(&buf); err != nil {
				t.Fatalf("render: %v", err)
			}
			got := buf.Bytes()
			if err := wellFormed(got); err != nil && !xml11[tc.name] {
				t.Errorf("output is not well-formed XML: %v\n%s", err, got)
			}
			path := filepath.Join("testdata", "golden", tc.name+".xml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (run with -update to accept)\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

// wellFormed parses doc to the end with encoding/xml's strict decoder,
// which rejects characters outside XML 1.0's Char production, and checks
// that it has exactly one root element.
func wellFormed(doc []byte) error {
	d := xml.NewDecoder(bytes.NewReader(doc))
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if roots != 1 {
		return fmt.Errorf("%d root elements", roots)
	}
	return nil
}

// lifecycleDoc is a lifecycle configuration with every kind of rule, for
// the golden document and the SDK round trip.
func lifecycleDoc() s3xml.LifecycleConfiguration {
	key1, key2 := "key1", "key2"
	return s3xml.LifecycleConfiguration{Rules: []s3xml.LifecycleRule{
		{
			ID: []string{"archive"}, Status: []string{"Enabled"},
			Filter: []s3xml.LifecycleFilter{{And: []s3xml.LifecycleAnd{{
				Prefix: []string{"documents/"}, ObjectSizeGreaterThan: []int64{1024},
				Tags: []s3xml.Tag{{Key: &key1, Value: "value1"}, {Key: &key2}},
			}}}},
			Expiration: []s3xml.LifecycleExpiration{{Days: []int32{3650}}},
		},
		{
			ID: []string{"logs"}, Status: []string{"Disabled"},
			Filter:                         []s3xml.LifecycleFilter{{Prefix: []string{"logs/"}}},
			Expiration:                     []s3xml.LifecycleExpiration{{Date: []string{"2027-01-01T00:00:00.000Z"}}},
			NoncurrentVersionExpiration:    []s3xml.NoncurrentVersionExpiration{{NoncurrentDays: []int32{30}, NewerNoncurrentVersions: []int32{3}}},
			AbortIncompleteMultipartUpload: []s3xml.AbortIncompleteMultipartUpload{{DaysAfterInitiation: []int32{7}}},
		},
		{
			ID: []string{"markers"}, Prefix: []string{""}, Status: []string{"Enabled"},
			Expiration: []s3xml.LifecycleExpiration{{ExpiredObjectDeleteMarker: []bool{true}}},
		},
		{ID: []string{"all"}, Filter: []s3xml.LifecycleFilter{{}}, Status: []string{"Enabled"}, Expiration: []s3xml.LifecycleExpiration{{Days: []int32{1}}}},
	}}
}
