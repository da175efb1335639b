package s3api

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/lifecycle"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// lcDoc wraps rules in a LifecycleConfiguration document.
func lcDoc(rules ...string) string {
	return `<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + strings.Join(rules, "") + `</LifecycleConfiguration>`
}

// parseLifecycleCases is shared by TestParseLifecycle and the seeds of
// FuzzParseLifecycle: documents as clients send them, and S3's answer.
var parseLifecycleCases = []struct {
	name, body, minSize string
	wantErr             s3err.Code
	wantMsg             string
}{
	{name: "legacy prefix", body: lcDoc(`<Rule><ID>r</ID><Prefix>a/</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`)},
	{name: "filter and", body: lcDoc(`<Rule><Filter><And><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><ObjectSizeLessThan>9</ObjectSizeLessThan></And></Filter>` +
		`<Status>Disabled</Status><NoncurrentVersionExpiration><NoncurrentDays>3</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`)},
	{name: "date", body: lcDoc(`<Rule><Filter><Prefix></Prefix></Filter><Status>Enabled</Status><Expiration><Date>2027-01-01T00:00:00.000Z</Date></Expiration></Rule>`)},
	{name: "abort and marker", body: lcDoc(`<Rule><Filter/><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>` +
		`<AbortIncompleteMultipartUpload><DaysAfterInitiation>7</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`)},
	{name: "minimum size", body: lcDoc(`<Rule><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`), minSize: "varies_by_storage_class"},

	{name: "not xml", body: `lifecycle`, wantErr: s3err.MalformedXML},
	{name: "empty body", body: ``, wantErr: s3err.MissingRequestBodyError},
	{name: "status lower case", body: lcDoc(`<Rule><Prefix>a</Prefix><Status>enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`), wantErr: s3err.MalformedXML},
	{name: "filter of prefix and tag", body: lcDoc(`<Rule><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`),
		wantErr: s3err.MalformedXML},
	{name: "date not iso", body: lcDoc(`<Rule><Prefix>a</Prefix><Status>Enabled</Status><Expiration><Date>20200101</Date></Expiration></Rule>`), wantErr: s3err.MalformedXML},
	{name: "date not midnight", body: lcDoc(`<Rule><Prefix>a</Prefix><Status>Enabled</Status><Expiration><Date>1970-08-23T03:28:21Z</Date></Expiration></Rule>`),
		wantErr: s3err.InvalidArgument, wantMsg: "'Date' must be at midnight GMT"},
	{name: "days 0", body: lcDoc(`<Rule><Prefix>a</Prefix><Status>Enabled</Status><Expiration><Days>0</Days></Expiration></Rule>`),
		wantErr: s3err.InvalidArgument, wantMsg: "'Days' for Expiration action must be a positive integer"},
	{name: "id too long", body: lcDoc(`<Rule><ID>` + strings.Repeat("a", 256) + `</ID><Prefix>a</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`),
		wantErr: s3err.InvalidArgument},
	{name: "no rules", body: lcDoc(), wantErr: s3err.InvalidRequest},
	{name: "no action", body: lcDoc(`<Rule><Prefix>a</Prefix><Status>Enabled</Status></Rule>`), wantErr: s3err.InvalidRequest},
	{name: "transition", body: lcDoc(`<Rule><Filter/><Status>Enabled</Status><Transition><Days>30</Days><StorageClass>STANDARD_IA</StorageClass></Transition></Rule>`),
		wantErr: s3err.NotImplemented},
	{name: "transition date not iso", body: lcDoc(`<Rule><Filter/><Status>Enabled</Status><Transition><Date>20220927</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>`),
		wantErr: s3err.MalformedXML},
	{name: "bad minimum size", body: lcDoc(`<Rule><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`), minSize: "big",
		wantErr: s3err.InvalidRequest},
}

func TestParseLifecycle(t *testing.T) {
	for _, tc := range parseLifecycleCases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseLifecycle([]byte(tc.body), tc.minSize, s3xml.MaxLifecycleBody)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseLifecycle = %v, want code %q", err, tc.wantErr)
			}
			if tc.wantMsg != "" {
				if e, _ := err.(*s3err.Error); e == nil || e.Msg() != tc.wantMsg {
					t.Errorf("message %q, want %q", err, tc.wantMsg)
				}
			}
			if err == nil && c.MinimumSize == "" {
				t.Errorf("MinimumSize not defaulted")
			}
		})
	}
}

// FuzzParseLifecycle checks that any body is either refused with an S3
// client error (never an internal one, never a panic) or accepted, and
// that an accepted configuration reads back from the document
// GetBucketLifecycleConfiguration returns as the same configuration.
func FuzzParseLifecycle(f *testing.F) {
	for _, tc := range parseLifecycleCases {
		if len(tc.body) < 4<<10 {
			f.Add([]byte(tc.body), tc.minSize)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, minSize string) {
		if len(body) > 64<<10 {
			return
		}
		c, err := parseLifecycle(body, minSize, 64<<10)
		if err != nil {
			if code := s3err.CodeOf(err); code == s3err.InternalError || !s3err.Known(code) {
				t.Fatalf("parseLifecycle(%q) = %v, want a client error", body, err)
			}
			return
		}
		n := 0
		c.AssignIDs(func() string { n++; return strings.Repeat("x", n) })
		var buf bytes.Buffer
		if err := s3xml.Encode(&buf, lifecycleXML(c)); err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := parseLifecycle(buf.Bytes(), c.MinimumSize, 1<<30)
		if err != nil {
			t.Fatalf("the returned document %s does not parse: %v", buf.Bytes(), err)
		}
		if diff := cmp.Diff(c, again); diff != "" {
			t.Fatalf("configuration does not round-trip (-put +got):\n%s\n%s", diff, buf.Bytes())
		}
	})
}

// putLifecycle sends a PutBucketLifecycleConfiguration with Content-MD5.
func (hs *harness) putLifecycle(bucket, doc string, kv ...string) reply {
	hs.t.Helper()
	b := []byte(doc)
	return hs.do(call{method: "PUT", path: "/" + bucket + "?lifecycle", body: b, header: header(append([]string{"Content-MD5", contentMD5(b)}, kv...)...)})
}

func TestLifecycleConfigurationHandlers(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	doc := lcDoc(
		`<Rule><ID>logs</ID><Filter><And><Prefix>logs/</Prefix><Tag><Key>tier</Key><Value>cold</Value></Tag><ObjectSizeGreaterThan>100</ObjectSizeGreaterThan></And></Filter>`+
			`<Status>Enabled</Status><Expiration><Days>30</Days></Expiration>`+
			`<NoncurrentVersionExpiration><NoncurrentDays>7</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`,
		`<Rule><ID>dated</ID><Filter><Prefix></Prefix></Filter><Status>Disabled</Status><Expiration><Date>2027-01-01T00:00:00Z</Date></Expiration>`+
			`<AbortIncompleteMultipartUpload><DaysAfterInitiation>3</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`,
		`<Rule><ID>markers</ID><Filter/><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`,
	)

	// Without a configuration.
	rp := hs.do(call{method: "GET", path: "/bkt?lifecycle"})
	goldenError(t, rp, "GetBucketLifecycleConfiguration_NoSuchLifecycleConfiguration", http.StatusNotFound, s3err.NoSuchLifecycleConfiguration)
	hs.do(call{method: "DELETE", path: "/bkt?lifecycle"}).mustStatus(t, http.StatusNoContent)

	// Put needs an integrity check, and checks it.
	rp = hs.do(call{method: "PUT", path: "/bkt?lifecycle", body: []byte(doc)})
	goldenError(t, rp, "PutBucketLifecycleConfiguration_InvalidRequest", http.StatusBadRequest, s3err.InvalidRequest)
	hs.do(call{method: "PUT", path: "/bkt?lifecycle", body: []byte(doc), header: header("Content-MD5", contentMD5([]byte("other")))}).
		want(t, http.StatusBadRequest, s3err.BadDigest)
	rp = hs.do(call{method: "PUT", path: "/bkt?lifecycle", body: []byte(doc), header: header("x-amz-checksum-crc32", crc32Of([]byte(doc)))}).mustStatus(t, http.StatusOK)
	if got := rp.header.Get(minimumSizeHeader); got != lifecycle.MinimumSizeAll {
		t.Errorf("%s = %q, want the default %q", minimumSizeHeader, got, lifecycle.MinimumSizeAll)
	}

	rp = hs.do(call{method: "GET", path: "/bkt?lifecycle"}).mustStatus(t, http.StatusOK)
	golden(t, "GetBucketLifecycleConfiguration", rp.body)
	if got := rp.header.Get(minimumSizeHeader); got != lifecycle.MinimumSizeAll {
		t.Errorf("GET %s = %q", minimumSizeHeader, got)
	}

	// Bad configurations change nothing.
	for _, tc := range []struct {
		name, doc string
		status    int
		code      s3err.Code
	}{
		{"PutBucketLifecycleConfiguration_MalformedXML", lcDoc(`<Rule><Prefix>a</Prefix><Status>enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`),
			http.StatusBadRequest, s3err.MalformedXML},
		{"PutBucketLifecycleConfiguration_InvalidArgument", lcDoc(`<Rule><ID>r</ID><Prefix>a</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`,
			`<Rule><ID>r</ID><Prefix>b</Prefix><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>`), http.StatusBadRequest, s3err.InvalidArgument},
		{"PutBucketLifecycleConfiguration_InvalidRequest_overlap", lcDoc(`<Rule><Prefix>a</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`,
			`<Rule><Prefix>ab</Prefix><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>`), http.StatusBadRequest, s3err.InvalidRequest},
		{"PutBucketLifecycleConfiguration_NotImplemented", lcDoc(`<Rule><Filter/><Status>Enabled</Status><Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>`),
			http.StatusNotImplemented, s3err.NotImplemented},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goldenError(t, hs.putLifecycle("bkt", tc.doc), tc.name, tc.status, tc.code)
		})
	}
	rp = hs.do(call{method: "GET", path: "/bkt?lifecycle"}).mustStatus(t, http.StatusOK)
	golden(t, "GetBucketLifecycleConfiguration", rp.body)

	// Rules without IDs get one; the minimum-size header is kept.
	hs.putLifecycle("bkt", lcDoc(`<Rule><Prefix>x/</Prefix><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`),
		minimumSizeHeader, lifecycle.MinimumSizeByClass).mustStatus(t, http.StatusOK)
	rp = hs.do(call{method: "GET", path: "/bkt?lifecycle"}).mustStatus(t, http.StatusOK)
	got, err := s3xml.DecodeLifecycleConfiguration(bytes.NewReader(rp.body), 1<<20)
	if err != nil || len(got.Rules) != 1 || len(got.Rules[0].ID) != 1 || len(got.Rules[0].ID[0]) != 48 {
		t.Fatalf("GET after a rule without ID = %s, %v; want one rule with a generated ID", rp.body, err)
	}
	if h := rp.header.Get(minimumSizeHeader); h != lifecycle.MinimumSizeByClass {
		t.Errorf("%s = %q, want %q", minimumSizeHeader, h, lifecycle.MinimumSizeByClass)
	}

	hs.do(call{method: "DELETE", path: "/bkt?lifecycle"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "GET", path: "/bkt?lifecycle"}).want(t, http.StatusNotFound, s3err.NoSuchLifecycleConfiguration)

	// A missing bucket, for each operation.
	hs.do(call{method: "GET", path: "/nope?lifecycle"}).want(t, http.StatusNotFound, s3err.NoSuchBucket)
	hs.do(call{method: "DELETE", path: "/nope?lifecycle"}).want(t, http.StatusNotFound, s3err.NoSuchBucket)
	hs.putLifecycle("nope", doc).want(t, http.StatusNotFound, s3err.NoSuchBucket)

	// A user needs s3:PutLifecycleConfiguration to put or delete, and
	// s3:GetLifecycleConfiguration to read.
	reader := hs.user("reader", "readonly")
	hs.do(call{method: "GET", path: "/bkt?lifecycle", cred: reader}).want(t, http.StatusForbidden, s3err.AccessDenied)
	hs.do(call{method: "DELETE", path: "/bkt?lifecycle", cred: reader}).want(t, http.StatusForbidden, s3err.AccessDenied)
	b := []byte(doc)
	hs.do(call{method: "PUT", path: "/bkt?lifecycle", body: b, cred: reader, header: header("Content-MD5", contentMD5(b))}).
		want(t, http.StatusForbidden, s3err.AccessDenied)
	for _, op := range []string{"GetBucketLifecycleConfiguration", "PutBucketLifecycleConfiguration", "DeleteBucketLifecycle"} {
		o := opByName(t, op)
		want := iam.PutLifecycleConfiguration
		if op == "GetBucketLifecycleConfiguration" {
			want = iam.GetLifecycleConfiguration
		}
		if o.action != want {
			t.Errorf("%s needs %s, want %s", op, o.action, want)
		}
	}
}

// uploadIDOf returns the UploadId of a CreateMultipartUpload reply.
func uploadIDOf(t *testing.T, body []byte) string {
	t.Helper()
	m := uploadIDRE.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no UploadId in %s", body)
	}
	return string(m[1])
}

// opByName returns the op row called name.
func opByName(t *testing.T, name string) *op {
	t.Helper()
	for i := range ops {
		if ops[i].name == name {
			return &ops[i]
		}
	}
	t.Fatalf("no op %s", name)
	return nil
}

func TestExpirationHeaders(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	// testNow is 2024-05-01 12:00 UTC: one day later, rounded up to
	// midnight, is 3 May; a tagged object's rule of 10 days, 12 May.
	hs.putLifecycle("bkt", lcDoc(
		`<Rule><ID>logs rule</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`,
		`<Rule><ID>tmp</ID><Filter><Tag><Key>tmp</Key><Value>yes</Value></Tag></Filter><Status>Enabled</Status><Expiration><Days>10</Days></Expiration></Rule>`,
		`<Rule><ID>off</ID><Filter/><Status>Disabled</Status><Expiration><Days>1</Days></Expiration></Rule>`,
		`<Rule><ID>uploads</ID><Filter><Prefix>up/</Prefix></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`,
	)).mustStatus(t, http.StatusOK)
	logs := `expiry-date="Fri, 03 May 2024 00:00:00 GMT", rule-id="logs rule"`
	tmp := `expiry-date="Sun, 12 May 2024 00:00:00 GMT", rule-id="tmp"`
	check := func(what string, rp reply, want string) {
		t.Helper()
		if got := rp.header.Get("x-amz-expiration"); got != want {
			t.Errorf("%s: x-amz-expiration = %q, want %q", what, got, want)
		}
	}
	check("PUT of a matching key", hs.put("bkt", "logs/a", []byte("data")), logs)
	check("PUT of another key", hs.put("bkt", "other", []byte("data")), "")
	check("PUT with a matching tag", hs.put("bkt", "tagged", []byte("data"), "x-amz-tagging", "tmp=yes"), tmp)
	check("PUT with another tag value", hs.put("bkt", "tagged2", []byte("data"), "x-amz-tagging", "tmp=no"), "")
	check("HEAD", hs.do(call{method: "HEAD", path: "/bkt/logs/a"}).mustStatus(t, http.StatusOK), logs)
	check("GET", hs.do(call{method: "GET", path: "/bkt/logs/a"}).mustStatus(t, http.StatusOK), logs)
	check("GET of a tagged object", hs.do(call{method: "GET", path: "/bkt/tagged"}).mustStatus(t, http.StatusOK), tmp)
	check("GET by version ID", hs.do(call{method: "GET", path: "/bkt/logs/a?versionId=null"}).mustStatus(t, http.StatusOK), "")
	rp := hs.do(call{method: "PUT", path: "/bkt/logs/copy", header: header("x-amz-copy-source", "/bkt/other")}).mustStatus(t, http.StatusOK)
	check("CopyObject", rp, logs)

	// Multipart: the abort date on create and ListParts, the expiration on
	// complete.
	rp = hs.do(call{method: "POST", path: "/bkt/up/big?uploads"}).mustStatus(t, http.StatusOK)
	if d, id := rp.header.Get("x-amz-abort-date"), rp.header.Get("x-amz-abort-rule-id"); d != "Sat, 04 May 2024 00:00:00 GMT" || id != "uploads" {
		t.Errorf("CreateMultipartUpload abort headers = %q, %q", d, id)
	}
	uploadID := uploadIDOf(t, rp.body)
	rp = hs.do(call{method: "GET", path: "/bkt/up/big?uploadId=" + uploadID}).mustStatus(t, http.StatusOK)
	if d := rp.header.Get("x-amz-abort-date"); d != "Sat, 04 May 2024 00:00:00 GMT" {
		t.Errorf("ListParts x-amz-abort-date = %q", d)
	}
	rp = hs.do(call{method: "POST", path: "/bkt/logs/mp?uploads"}).mustStatus(t, http.StatusOK)
	if d := rp.header.Get("x-amz-abort-date"); d != "" {
		t.Errorf("abort date %q for an upload no rule aborts", d)
	}
	mpID := uploadIDOf(t, rp.body)
	part := []byte("part")
	rp = hs.do(call{method: "PUT", path: "/bkt/logs/mp?partNumber=1&uploadId=" + mpID, body: part}).mustStatus(t, http.StatusOK)
	complete := xmlBody(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + rp.header.Get("ETag") + `</ETag></Part></CompleteMultipartUpload>`)
	check("CompleteMultipartUpload", hs.do(call{method: "POST", path: "/bkt/logs/mp?uploadId=" + mpID, body: complete}).mustStatus(t, http.StatusOK), logs)

	// Replacing or deleting the configuration is seen at once.
	hs.putLifecycle("bkt", lcDoc(`<Rule><ID>all</ID><Filter/><Status>Enabled</Status><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>`)).mustStatus(t, http.StatusOK)
	check("HEAD after the rules changed", hs.do(call{method: "HEAD", path: "/bkt/logs/a"}).mustStatus(t, http.StatusOK),
		`expiry-date="Tue, 01 Jan 2030 00:00:00 GMT", rule-id="all"`)
	hs.do(call{method: "DELETE", path: "/bkt?lifecycle"}).mustStatus(t, http.StatusNoContent)
	check("HEAD after the rules went", hs.do(call{method: "HEAD", path: "/bkt/logs/a"}).mustStatus(t, http.StatusOK), "")
	// A bucket deleted and made again starts without rules.
	hs.putLifecycle("bkt", lcDoc(`<Rule><ID>all</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`)).mustStatus(t, http.StatusOK)
	hs.mkBucket("ckt")
	hs.putLifecycle("ckt", lcDoc(`<Rule><ID>all</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`)).mustStatus(t, http.StatusOK)
	check("PUT into c", hs.put("ckt", "k", []byte("x")), `expiry-date="Fri, 03 May 2024 00:00:00 GMT", rule-id="all"`)
	hs.do(call{method: "DELETE", path: "/ckt/k"}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "DELETE", path: "/ckt"}).mustStatus(t, http.StatusNoContent)
	hs.mkBucket("ckt")
	check("PUT into the new c", hs.put("ckt", "k", []byte("x")), "")
}
