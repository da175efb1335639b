package s3api

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

func TestParseListObjects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		q       string
		v2      bool
		want    listQuery
		wantErr s3err.Code
		argName string
	}{
		{name: "v1 defaults", want: listQuery{in: objects.ListInput{MaxKeys: 1000, Owners: true}}},
		{name: "v1 all", q: "prefix=photos/&delimiter=/&marker=photos/a&max-keys=40&encoding-type=url",
			want: listQuery{in: objects.ListInput{Prefix: "photos/", Delimiter: "/", StartAfter: "photos/a", MaxKeys: 40, Owners: true}, encodeURL: true, marker: "photos/a"}},
		{name: "v1 ignores v2 params", q: "start-after=x&continuation-token=!!&fetch-owner=true",
			want: listQuery{in: objects.ListInput{MaxKeys: 1000, Owners: true}}},
		{name: "max-keys zero", q: "max-keys=0", want: listQuery{in: objects.ListInput{MaxKeys: 0, Owners: true}}},
		{name: "max-keys capped", q: "max-keys=5000", want: listQuery{in: objects.ListInput{MaxKeys: 1000, Owners: true}}},
		{name: "max-keys negative", q: "max-keys=-1", wantErr: s3err.InvalidArgument, argName: "max-keys"},
		{name: "max-keys junk", q: "max-keys=ten", wantErr: s3err.InvalidArgument, argName: "max-keys"},
		{name: "max-keys overflow", q: "max-keys=99999999999999999999", wantErr: s3err.InvalidArgument, argName: "max-keys"},
		{name: "encoding-type other", q: "encoding-type=base64", wantErr: s3err.InvalidArgument, argName: "encoding-type"},
		{name: "encoding-type upper", q: "encoding-type=URL", wantErr: s3err.InvalidArgument, argName: "encoding-type"},
		{name: "v2 start-after", v2: true, q: "list-type=2&start-after=ExampleGuide.pdf&max-keys=2&fetch-owner=true",
			want: listQuery{in: objects.ListInput{StartAfter: "ExampleGuide.pdf", MaxKeys: 2, Owners: true}, marker: "ExampleGuide.pdf"}},
		{name: "v2 token wins", v2: true, q: "list-type=2&start-after=a&continuation-token=" + encodeToken("photos/z"),
			want: listQuery{in: objects.ListInput{StartAfter: "photos/z", MaxKeys: 1000}, marker: "a", token: encodeToken("photos/z")}},
		{name: "v2 bad token", v2: true, q: "continuation-token=!!!", wantErr: s3err.InvalidArgument, argName: "continuation-token"},
		{name: "v2 empty token", v2: true, q: "continuation-token=", wantErr: s3err.InvalidArgument, argName: "continuation-token"},
		{name: "v2 fetch-owner false", v2: true, q: "fetch-owner=false", want: listQuery{in: objects.ListInput{MaxKeys: 1000}}},
		{name: "delimiter not UTF-8", q: "delimiter=%97", wantErr: s3err.InvalidArgument, argName: "delimiter"},
		{name: "prefix not UTF-8", q: "prefix=a%FF", wantErr: s3err.InvalidArgument, argName: "prefix"},
		{name: "marker not UTF-8", q: "marker=%E6%97", wantErr: s3err.InvalidArgument, argName: "marker"},
		{name: "v2 start-after not UTF-8", v2: true, q: "start-after=%C0", wantErr: s3err.InvalidArgument, argName: "start-after"},
		{name: "v1 ignores a v2 parameter not UTF-8", q: "start-after=%C0", want: listQuery{in: objects.ListInput{MaxKeys: 1000, Owners: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseListObjects(q, tc.v2, 1000)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseListObjects(%q) error = %v, want code %q", tc.q, err, tc.wantErr)
			}
			if tc.argName != "" {
				if name, _ := extra(err.(*s3err.Error), "ArgumentName"); name != tc.argName {
					t.Errorf("parseListObjects(%q) ArgumentName = %q, want %q", tc.q, name, tc.argName)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(listQuery{})); diff != "" {
				t.Errorf("parseListObjects(%q) mismatch (-want +got):\n%s", tc.q, diff)
			}
		})
	}
}

func TestContinuationToken(t *testing.T) {
	for _, key := range []string{"a", "photos/2024/", "caf\u00e9 +/?&=", "\x00\xff"} {
		got, err := decodeToken(encodeToken(key))
		if err != nil || got != key {
			t.Errorf("decodeToken(encodeToken(%q)) = %q, %v", key, got, err)
		}
	}
}

func TestS3URLEncode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"photos/2006/January/sample.jpg", "photos/2006/January/sample.jpg"},
		{"a b", "a%20b"},
		{"a+b", "a%2Bb"},
		{"caf\u00e9", "caf%C3%A9"},
		{"x~y*z-_.", "x%7Ey*z-_."},
		{"\x01\x7f", "%01%7F"},
		{"%2F", "%252F"},
		{"?&=#", "%3F%26%3D%23"},
	} {
		if got := s3URLEncode(tc.in); got != tc.want {
			t.Errorf("s3URLEncode(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got, err := url.QueryUnescape(s3URLEncode(tc.in)); err != nil || got != tc.in {
			t.Errorf("QueryUnescape(s3URLEncode(%q)) = %q, %v", tc.in, got, err)
		}
	}
}

func TestParseListUploads(t *testing.T) {
	for _, tc := range []struct {
		name    string
		q       string
		want    listUploadsQuery
		wantErr s3err.Code
	}{
		{name: "defaults", want: listUploadsQuery{in: objects.ListUploadsInput{MaxUploads: 1000}}},
		{name: "all", q: "uploads&prefix=p&delimiter=/&key-marker=k&upload-id-marker=u&max-uploads=3&encoding-type=url",
			want: listUploadsQuery{in: objects.ListUploadsInput{Prefix: "p", Delimiter: "/", KeyMarker: "k", UploadIDMarker: "u", MaxUploads: 3}, encodeURL: true}},
		{name: "upload-id-marker alone ignored", q: "upload-id-marker=u", want: listUploadsQuery{in: objects.ListUploadsInput{MaxUploads: 1000}}},
		{name: "bad max", q: "max-uploads=x", wantErr: s3err.InvalidArgument},
		{name: "zero max", q: "max-uploads=0", want: listUploadsQuery{in: objects.ListUploadsInput{MaxUploads: 0}}},
		{name: "negative max", q: "max-uploads=-1", wantErr: s3err.InvalidArgument},
		{name: "max past int32", q: "max-uploads=2147483648", wantErr: s3err.InvalidArgument},
		{name: "bad encoding", q: "encoding-type=xml", wantErr: s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.q)
			got, err := parseListUploads(q, 1000)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseListUploads(%q) error = %v, want code %q", tc.q, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(listUploadsQuery{})); diff != "" {
				t.Errorf("parseListUploads(%q) mismatch (-want +got):\n%s", tc.q, diff)
			}
		})
	}
}

func TestParseListBuckets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		q       string
		want    bucketsQuery
		wantErr s3err.Code
	}{
		{name: "none"},
		{name: "all", q: "prefix=a&max-buckets=10&continuation-token=" + encodeToken("abc"), want: bucketsQuery{prefix: "a", max: 10, startAfter: "abc"}},
		{name: "max zero", q: "max-buckets=0", wantErr: s3err.InvalidArgument},
		{name: "max too big", q: "max-buckets=10001", wantErr: s3err.InvalidArgument},
		{name: "bad token", q: "continuation-token=%25", wantErr: s3err.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.q)
			got, err := parseListBuckets(q)
			if code := s3err.CodeOf(err); code != tc.wantErr {
				t.Fatalf("parseListBuckets(%q) error = %v, want code %q", tc.q, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(bucketsQuery{})); diff != "" {
				t.Errorf("parseListBuckets(%q) mismatch (-want +got):\n%s", tc.q, diff)
			}
		})
	}
}

func TestListObjectsHandler(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("list")
	for _, k := range []string{"a.txt", "photos/2024/jan.jpg", "photos/2024/feb.jpg", "photos/2025/mar.jpg", "photos/cover.jpg", "sp ace+plus", "z~tilde"} {
		hs.put("list", url.PathEscape(k), []byte(k))
	}
	hs.put("list", "sum", []byte("hello"), "X-Amz-Checksum-Crc32", helloCRC32)

	for _, tc := range []struct {
		golden string
		query  string
	}{
		{"ListObjects", ""},
		{"ListObjects_delimiter", "?delimiter=/&max-keys=2"},
		{"ListObjects_marker", "?delimiter=/&marker=photos/"},
		{"ListObjects_prefix", "?prefix=photos/&delimiter=/"},
		{"ListObjects_url", "?encoding-type=url&prefix=s&delimiter=%20"},
		{"ListObjectsV2", "?list-type=2"},
		{"ListObjectsV2_fetch_owner", "?list-type=2&fetch-owner=true&max-keys=1"},
		{"ListObjectsV2_delimiter", "?list-type=2&delimiter=/&prefix=photos/&max-keys=2"},
		{"ListObjectsV2_start_after", "?list-type=2&start-after=photos/2025/mar.jpg&max-keys=2"},
		{"ListObjectsV2_url", "?list-type=2&encoding-type=url&start-after=s"},
		{"ListObjectsV2_max_keys_0", "?list-type=2&max-keys=0"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			rp := hs.do(call{method: "GET", path: "/list" + tc.query}).mustStatus(t, http.StatusOK)
			golden(t, tc.golden, rp.body)
		})
	}

	// Following continuation tokens visits every key once, in order.
	var keys []string
	token := ""
	for range 20 {
		q := "?list-type=2&max-keys=3"
		if token != "" {
			q += "&continuation-token=" + url.QueryEscape(token)
		}
		rp := hs.do(call{method: "GET", path: "/list" + q}).mustStatus(t, http.StatusOK)
		for _, m := range regexp.MustCompile(`<Key>([^<]*)</Key>`).FindAllSubmatch(rp.body, -1) {
			keys = append(keys, string(m[1]))
		}
		m := regexp.MustCompile(`<NextContinuationToken>([^<]*)</NextContinuationToken>`).FindSubmatch(rp.body)
		if m == nil {
			break
		}
		token = string(m[1])
	}
	want := []string{"a.txt", "photos/2024/feb.jpg", "photos/2024/jan.jpg", "photos/2025/mar.jpg", "photos/cover.jpg", "sp ace+plus", "sum", "z~tilde"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("paged listing mismatch (-want +got):\n%s", diff)
	}

	goldenError(t, hs.do(call{method: "GET", path: "/list?list-type=2&continuation-token=garbage!"}),
		"ListObjectsV2_InvalidArgument", http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "GET", path: "/list?max-keys=-1"}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
	hs.do(call{method: "GET", path: "/list?encoding-type=xml"}).want(t, http.StatusBadRequest, s3err.InvalidArgument)
	goldenError(t, hs.do(call{method: "GET", path: "/nope?list-type=2"}), "ListObjectsV2_NoSuchBucket", http.StatusNotFound, s3err.NoSuchBucket)
}

// TestListControlCharacterKeys checks that keys holding characters XML 1.0
// cannot carry are listed as S3 lists them: as character references
// without encoding-type (naming the key exactly, where U+FFFD would name a
// key that does not exist), percent-encoded with encoding-type=url.
func TestListControlCharacterKeys(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	hs.mkBucket("ctl")
	key := "dir\x01/a\x1fb\uFFFF"
	hs.put("ctl", url.PathEscape(key), []byte("x"))
	id := hs.createUpload("ctl", url.PathEscape(key))
	const refs, pct = "dir&#x1;/a&#x1F;b&#xFFFF;", "dir%01/a%1Fb%EF%BF%BF"
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?list-type=2", []string{"<Key>" + refs + "</Key>"}},
		{"?list-type=2&encoding-type=url", []string{"<Key>" + pct + "</Key>"}},
		{"?list-type=2&delimiter=/", []string{"<Prefix>dir&#x1;/</Prefix>"}},
		{"?marker=dir%01", []string{"<Marker>dir&#x1;</Marker>", "<Key>" + refs + "</Key>"}},
		{"?versions&key-marker=d", []string{"<KeyMarker>d</KeyMarker>", "<Key>" + refs + "</Key>"}},
		{"?versions&encoding-type=url", []string{"<Key>" + pct + "</Key>"}},
		{"?uploads", []string{"<Key>" + refs + "</Key>"}},
		{"?uploads&encoding-type=url", []string{"<Key>" + pct + "</Key>"}},
	} {
		body := string(hs.do(call{method: "GET", path: "/ctl" + tc.query}).mustStatus(t, http.StatusOK).body)
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET /ctl%s: %s not in\n%s", tc.query, w, body)
			}
		}
		if strings.Contains(body, "\uFFFD") {
			t.Errorf("GET /ctl%s: U+FFFD in\n%s", tc.query, body)
		}
	}
	body := string(hs.do(call{method: "GET", path: "/ctl/" + url.PathEscape(key) + "?uploadId=" + id}).mustStatus(t, http.StatusOK).body)
	if !strings.Contains(body, "<Key>"+refs+"</Key>") {
		t.Errorf("ListParts: key not written as character references:\n%s", body)
	}
}

// TestListOwners checks the Owner of each entry of ListObjects,
// ListObjectsV2 with fetch-owner and ListObjectVersions, whoever lists:
// the object's owner, as GetObjectAcl reports it (its writer; the
// bucket's owner for a root write, for bucket-owner-full-control under
// BucketOwnerPreferred, and for every object once ACLs are off under
// BucketOwnerEnforced), and for a delete marker the bucket's owner
// (Coffer records no deleter). ListObjectsV2 without fetch-owner lists
// none. See https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html
func TestListOwners(t *testing.T) {
	t.Parallel()
	hs := newHarness(t, Config{})
	alice := hs.user("alice", "readwrite")
	root := s3xml.Owner{ID: iam.RootCanonicalID(), DisplayName: "root"}
	aliceOwner := s3xml.Owner{ID: hs.canonicalID("alice"), DisplayName: "alice"}

	hs.mkBucket("bkt")
	hs.do(call{method: "PUT", path: "/bkt?versioning", body: xmlBody(`
<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`)}).mustStatus(t, http.StatusOK)
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: xmlBody(`
<OwnershipControls><Rule><ObjectOwnership>BucketOwnerPreferred</ObjectOwnership></Rule></OwnershipControls>`)}).mustStatus(t, http.StatusOK)
	for _, w := range []struct {
		key  string
		cred *sigv4.Credentials
		kv   []string
	}{
		{"by-alice", alice, nil},
		{"by-alice-for-owner", alice, []string{"X-Amz-Acl", "bucket-owner-full-control"}},
		{"by-root", nil, nil},
		{"deleted-by-alice", nil, nil},
		{"deleted-by-root", alice, nil},
	} {
		hs.do(call{method: "PUT", path: "/bkt/" + w.key, cred: w.cred, header: header(w.kv...), body: []byte(w.key)}).mustStatus(t, http.StatusOK)
	}
	hs.do(call{method: "DELETE", path: "/bkt/deleted-by-alice", cred: alice}).mustStatus(t, http.StatusNoContent)
	hs.do(call{method: "DELETE", path: "/bkt/deleted-by-root"}).mustStatus(t, http.StatusNoContent)
	// A bucket of alice's: root's write is hers, stored without an ACL.
	hs.do(call{method: "PUT", path: "/alices", cred: alice}).mustStatus(t, http.StatusOK)
	hs.put("alices", "by-root", []byte("x"))

	objectOwners := map[string]s3xml.Owner{
		"by-alice": aliceOwner, "by-alice-for-owner": root, "by-root": root,
	}
	versionOwners := map[string]s3xml.Owner{ // key and "marker" or "version" → owner
		"by-alice version": aliceOwner, "by-alice-for-owner version": root, "by-root version": root,
		"deleted-by-alice marker": root, "deleted-by-alice version": root,
		"deleted-by-root marker": root, "deleted-by-root version": aliceOwner,
	}
	allRoot := func(m map[string]s3xml.Owner) map[string]s3xml.Owner {
		out := map[string]s3xml.Owner{}
		for k := range m {
			out[k] = root
		}
		return out
	}
	check := func(t *testing.T, bucket string, objs, versions map[string]s3xml.Owner) {
		t.Helper()
		for _, lister := range []struct {
			name string
			cred *sigv4.Credentials
		}{{"root", nil}, {"alice", alice}} {
			for _, query := range []string{"", "?list-type=2&fetch-owner=true"} {
				got := listOwners(t, hs, call{method: "GET", path: "/" + bucket + query, cred: lister.cred})
				if diff := cmp.Diff(objs, got); diff != "" {
					t.Errorf("GET /%s%s by %s: owners mismatch (-want +got):\n%s", bucket, query, lister.name, diff)
				}
			}
			got := listOwners(t, hs, call{method: "GET", path: "/" + bucket + "?list-type=2", cred: lister.cred})
			if want := map[string]s3xml.Owner{}; !cmp.Equal(want, got) {
				t.Errorf("GET /%s?list-type=2 by %s: owners %v, want none", bucket, lister.name, got)
			}
			got = listOwners(t, hs, call{method: "GET", path: "/" + bucket + "?versions", cred: lister.cred})
			if diff := cmp.Diff(versions, got); diff != "" {
				t.Errorf("GET /%s?versions by %s: owners mismatch (-want +got):\n%s", bucket, lister.name, diff)
			}
		}
		// The same owners as GetObjectAcl's.
		for key, want := range objs {
			var p struct{ Owner s3xml.Owner }
			rp := hs.do(call{method: "GET", path: "/" + bucket + "/" + key + "?acl"}).mustStatus(t, http.StatusOK)
			if err := xml.Unmarshal(rp.body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Owner != want {
				t.Errorf("GetObjectAcl of %s/%s: Owner %+v, listed as %+v", bucket, key, p.Owner, want)
			}
		}
	}
	t.Run("ObjectWriter", func(t *testing.T) {
		check(t, "alices", map[string]s3xml.Owner{"by-root": aliceOwner}, map[string]s3xml.Owner{"by-root version": aliceOwner})
	})
	t.Run("anonymous", func(t *testing.T) {
		// A public bucket lists its owners' IDs to anyone, not their
		// names (IAM user names in Coffer).
		hs.do(call{method: "PUT", path: "/alices?acl", cred: alice, header: header("X-Amz-Acl", "public-read")}).mustStatus(t, http.StatusOK)
		noName := s3xml.Owner{ID: aliceOwner.ID}
		got := listOwners(t, hs, call{method: "GET", path: "/alices", anon: true})
		if want := map[string]s3xml.Owner{"by-root": noName}; !cmp.Equal(want, got) {
			t.Errorf("anonymous ListObjects: owners %v, want %v", got, want)
		}
	})
	t.Run("BucketOwnerPreferred", func(t *testing.T) {
		check(t, "bkt", objectOwners, versionOwners)
	})
	hs.do(call{method: "PUT", path: "/bkt?ownershipControls", body: xmlBody(`
<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule></OwnershipControls>`)}).mustStatus(t, http.StatusOK)
	t.Run("BucketOwnerEnforced", func(t *testing.T) {
		check(t, "bkt", allRoot(objectOwners), allRoot(versionOwners))
	})
}

// listOwners sends the listing c and returns the Owner of each entry it
// lists: by key, or for versions by key and "version" or "marker".
func listOwners(t *testing.T, hs *harness, c call) map[string]s3xml.Owner {
	t.Helper()
	type entry struct {
		Key   string
		Owner *s3xml.Owner
	}
	var res struct {
		Contents     []entry
		Version      []entry
		DeleteMarker []entry
	}
	rp := hs.do(c).mustStatus(t, http.StatusOK)
	if err := xml.Unmarshal(rp.body, &res); err != nil {
		t.Fatal(err)
	}
	out := map[string]s3xml.Owner{}
	for _, l := range []struct {
		entries []entry
		suffix  string
	}{{res.Contents, ""}, {res.Version, " version"}, {res.DeleteMarker, " marker"}} {
		for _, e := range l.entries {
			if e.Owner != nil {
				out[e.Key+l.suffix] = *e.Owner
			}
		}
	}
	return out
}

// TestListNotUTF8 lists with a delimiter that ends inside a character of
// a key: the common prefix would not be UTF-8, so an XML listing could
// only name it with U+FFFD (a prefix that does not exist, from which a v1
// client resuming would skip keys). Every listing refuses such parameters.
func TestListNotUTF8(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("odd")
	for _, k := range []string{"日本/1", "\uFF01x"} {
		hs.put("odd", url.PathEscape(k), []byte("x"))
	}
	for _, q := range []string{"delimiter=%97", "list-type=2&delimiter=%97", "versions&delimiter=%97",
		"uploads&delimiter=%97", "prefix=%E6%97", "versions&key-marker=%E6", "uploads&key-marker=%E6"} {
		r := hs.do(call{method: "GET", path: "/odd?" + q}).mustStatus(t, http.StatusBadRequest)
		if body := string(r.body); !strings.Contains(body, "<Code>InvalidArgument</Code>") {
			t.Errorf("GET /odd?%s:\n%s", q, body)
		}
	}
	body := string(hs.do(call{method: "GET", path: "/odd?delimiter=%E6%9C%AC"}).mustStatus(t, http.StatusOK).body) // 本
	if !strings.Contains(body, "<Prefix>日本</Prefix>") || !strings.Contains(body, "<Key>\uFF01x</Key>") {
		t.Errorf("a UTF-8 delimiter lists:\n%s", body)
	}
}
