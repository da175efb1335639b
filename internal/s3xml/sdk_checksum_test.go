package s3xml_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/coffer-s3/coffer/internal/s3xml"
)

// TestSDKChecksumElements checks every element of s3xml.Checksums, one at a
// time, against aws-sdk-go-v2's parser and serializer, the reference for
// their names (ChecksumCRC32 … ChecksumXXHASH128): each response that
// carries checksums must land in the SDK field of the same name, and each
// checksum of a CompletedPart the SDK sends must be decoded.
func TestSDKChecksumElements(t *testing.T) {
	fields := reflect.VisibleFields(reflect.TypeFor[s3xml.Checksums]())
	if len(fields) < 10 {
		t.Fatalf("s3xml.Checksums has %d fields, want one per algorithm (10)", len(fields))
	}
	for _, f := range fields {
		t.Run(f.Name, func(t *testing.T) {
			v := "value-of-" + f.Name
			var c s3xml.Checksums
			reflect.ValueOf(&c).Elem().FieldByIndex(f.Index).SetString(v)
			// sdkField returns the field named f.Name of the SDK struct
			// *p points to.
			sdkField := func(p any) string {
				fv := reflect.ValueOf(p).Elem().FieldByName(f.Name)
				if !fv.IsValid() {
					t.Fatalf("%T has no field %s", p, f.Name)
				}
				return aws.ToString(fv.Interface().(*string))
			}
			for _, tc := range []struct {
				name string
				doc  any
				call func(context.Context, *s3.Client) ([]any, error) // the SDK structs to look in
			}{
				{"CompleteMultipartUpload", s3xml.CompleteMultipartUploadResult{Bucket: "b", Key: "k", Checksums: c, ChecksumType: "COMPOSITE"},
					func(ctx context.Context, cl *s3.Client) ([]any, error) {
						out, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("b"), Key: aws.String("k"), UploadId: aws.String("u"),
							MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(`"e"`)}}}})
						return []any{out}, err
					}},
				{"ListParts", s3xml.ListPartsResult{Bucket: "b", Key: "k", UploadID: "u", Parts: []s3xml.Part{{PartNumber: 1, LastModified: "2026-01-02T03:04:05.000Z", ETag: `"e"`, Size: 1, Checksums: c}}},
					func(ctx context.Context, cl *s3.Client) ([]any, error) {
						out, err := cl.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("b"), Key: aws.String("k"), UploadId: aws.String("u")})
						if err != nil || len(out.Parts) != 1 {
							return nil, err
						}
						return []any{&out.Parts[0]}, nil
					}},
				{"CopyObject", s3xml.CopyObjectResult{LastModified: "2026-01-02T03:04:05.000Z", ETag: `"e"`, Checksums: c},
					func(ctx context.Context, cl *s3.Client) ([]any, error) {
						out, err := cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("b"), Key: aws.String("k"), CopySource: aws.String("s/o")})
						if err != nil {
							return nil, err
						}
						return []any{out.CopyObjectResult}, nil
					}},
				{"UploadPartCopy", s3xml.CopyPartResult{LastModified: "2026-01-02T03:04:05.000Z", ETag: `"e"`, Checksums: c},
					func(ctx context.Context, cl *s3.Client) ([]any, error) {
						out, err := cl.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("b"), Key: aws.String("k"), CopySource: aws.String("s/o"),
							UploadId: aws.String("u"), PartNumber: aws.Int32(1)})
						if err != nil {
							return nil, err
						}
						return []any{out.CopyPartResult}, nil
					}},
				{"GetObjectAttributes", s3xml.GetObjectAttributesResponse{
					Checksum:    &s3xml.ObjectChecksum{Checksums: c, ChecksumType: "COMPOSITE"},
					ObjectParts: &s3xml.ObjectPartsPage{PartsCount: 1, Parts: []s3xml.ObjectPart{{Checksums: c, PartNumber: 1, Size: 1}}},
				}, func(ctx context.Context, cl *s3.Client) ([]any, error) {
					out, err := cl.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("b"), Key: aws.String("k"),
						ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesChecksum, types.ObjectAttributesObjectParts}})
					if err != nil || out.Checksum == nil || out.ObjectParts == nil || len(out.ObjectParts.Parts) != 1 {
						return nil, err
					}
					return []any{out.Checksum, &out.ObjectParts.Parts[0]}, nil
				}},
			} {
				body, err := xml.Marshal(tc.doc)
				if err != nil {
					t.Fatal(err)
				}
				rec := &recorder{status: http.StatusOK, body: append([]byte(xml.Header), body...)}
				srv := httptest.NewServer(rec)
				got, err := tc.call(t.Context(), newClient(srv))
				srv.Close()
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if len(got) == 0 {
					t.Fatalf("%s: the SDK parsed nothing from %s", tc.name, body)
				}
				for _, p := range got {
					if s := sdkField(p); s != v {
						t.Errorf("%s: SDK %T.%s = %q, want %q, from %s", tc.name, p, f.Name, s, v, body)
					}
				}
			}

			// The request: a CompletedPart carrying this checksum.
			rec := &recorder{status: http.StatusOK, body: []byte(xml.Header + `<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>`)}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			part := types.CompletedPart{PartNumber: aws.Int32(1), ETag: aws.String(`"e"`)}
			reflect.ValueOf(&part).Elem().FieldByName(f.Name).Set(reflect.ValueOf(aws.String(v)))
			if _, err := newClient(srv).CompleteMultipartUpload(t.Context(), &s3.CompleteMultipartUploadInput{Bucket: aws.String("b"), Key: aws.String("k"),
				UploadId: aws.String("u"), MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{part}}}); err != nil {
				t.Fatalf("CompleteMultipartUpload: %v", err)
			}
			doc, err := s3xml.DecodeCompleteMultipartUpload(bytes.NewReader(rec.lastRequest()), 1<<20)
			if err != nil {
				t.Fatalf("decode the SDK's CompleteMultipartUpload: %v", err)
			}
			if len(doc.Parts) != 1 || doc.Parts[0].Checksums != c {
				t.Errorf("decoded CompleteMultipartUpload parts %+v, want one with %s %q; the SDK sent %s", doc.Parts, f.Name, v, rec.lastRequest())
			}
		})
	}
}
