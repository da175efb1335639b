package e2e

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

// listAllV2 pages through ListObjectsV2 with in as the first request and
// returns keys and common prefixes in the order received. It checks the
// per-page invariants: KeyCount, MaxKeys and continuation tokens.
func listAllV2(t *testing.T, c *s3.Client, in s3.ListObjectsV2Input) (keys, prefixes []string) {
	t.Helper()
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatalf("ListObjectsV2 did not terminate")
		}
		out, err := c.ListObjectsV2(t.Context(), &in)
		if err != nil {
			t.Fatalf("ListObjectsV2(%+v): %v", in, err)
		}
		n := len(out.Contents) + len(out.CommonPrefixes)
		if aws.ToInt32(out.KeyCount) != int32(n) {
			t.Errorf("page %d: KeyCount %d, want %d (%d keys + %d prefixes)", page, aws.ToInt32(out.KeyCount), n, len(out.Contents), len(out.CommonPrefixes))
		}
		if in.MaxKeys != nil && int32(n) > *in.MaxKeys {
			t.Errorf("page %d: %d entries, more than max-keys %d", page, n, *in.MaxKeys)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		for _, p := range out.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(p.Prefix))
		}
		if !aws.ToBool(out.IsTruncated) {
			if out.NextContinuationToken != nil {
				t.Errorf("page %d: NextContinuationToken %q on the last page", page, *out.NextContinuationToken)
			}
			return keys, prefixes
		}
		if aws.ToString(out.NextContinuationToken) == "" {
			t.Fatalf("page %d: truncated without NextContinuationToken", page)
		}
		if in.ContinuationToken != nil && aws.ToString(out.ContinuationToken) != *in.ContinuationToken {
			t.Errorf("page %d: ContinuationToken echoed as %q, want %q", page, aws.ToString(out.ContinuationToken), *in.ContinuationToken)
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// listAllV1 pages through ListObjects (v1) with marker.
func listAllV1(t *testing.T, c *s3.Client, in s3.ListObjectsInput) (keys, prefixes []string) {
	t.Helper()
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatalf("ListObjects did not terminate")
		}
		out, err := c.ListObjects(t.Context(), &in)
		if err != nil {
			t.Fatalf("ListObjects(%+v): %v", in, err)
		}
		if in.MaxKeys != nil && int32(len(out.Contents)+len(out.CommonPrefixes)) > *in.MaxKeys {
			t.Errorf("page %d: %d entries, more than max-keys %d", page, len(out.Contents)+len(out.CommonPrefixes), *in.MaxKeys)
		}
		if aws.ToString(out.Marker) != aws.ToString(in.Marker) {
			t.Errorf("page %d: Marker echoed as %q, want %q", page, aws.ToString(out.Marker), aws.ToString(in.Marker))
		}
		last := ""
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
			last = max(last, aws.ToString(o.Key))
		}
		for _, p := range out.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(p.Prefix))
			last = max(last, aws.ToString(p.Prefix))
		}
		if !aws.ToBool(out.IsTruncated) {
			return keys, prefixes
		}
		next := aws.ToString(out.NextMarker)
		if in.Delimiter != nil && next == "" {
			t.Errorf("page %d: truncated with a delimiter but no NextMarker", page)
		}
		if next == "" {
			next = last
		}
		if next != last {
			t.Errorf("page %d: NextMarker %q, want the last key or prefix returned %q", page, next, last)
		}
		in.Marker = aws.String(next)
	}
}

func TestListing(t *testing.T) {
	t.Parallel()
	testListing(t, startServer(t))
}

// testListing is TestListing's body, which TestCluster runs against three nodes.
func testListing(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()

	b := mkBucket(t, c, "list")
	keys := []string{
		"a/1", "a/2", "a/b/3", "a/b/4", "b", "c/5", "d", "e/f/g",
		"photos/2024/feb.jpg", "photos/2024/jan.jpg", "photos/2025/mar.jpg", "photos/readme",
	}
	for _, k := range keys {
		put(t, c, b, k, []byte("data of "+k))
	}

	cases := []struct {
		name                      string
		prefix, delim, startAfter string
		maxKeys                   int32
		wantKeys, wantPrefixes    []string
	}{
		{name: "all", wantKeys: keys},
		{name: "delimiter", delim: "/", wantKeys: []string{"b", "d"}, wantPrefixes: []string{"a/", "c/", "e/", "photos/"}},
		{name: "prefix+delimiter", prefix: "photos/", delim: "/", wantKeys: []string{"photos/readme"}, wantPrefixes: []string{"photos/2024/", "photos/2025/"}},
		{name: "prefix", prefix: "photos/2024/", wantKeys: []string{"photos/2024/feb.jpg", "photos/2024/jan.jpg"}},
		{name: "prefix no match", prefix: "zzz"},
		{name: "paged by 1", maxKeys: 1, wantKeys: keys},
		{name: "paged by 2 with delimiter", maxKeys: 2, delim: "/", wantKeys: []string{"b", "d"}, wantPrefixes: []string{"a/", "c/", "e/", "photos/"}},
		{name: "paged by 3 prefix+delimiter", maxKeys: 3, prefix: "a/", delim: "/", wantKeys: []string{"a/1", "a/2"}, wantPrefixes: []string{"a/b/"}},
		{name: "start-after", startAfter: "a/b/3", wantKeys: keys[3:]},
		{name: "start-after not a key", startAfter: "c", wantKeys: keys[5:]},
		{name: "start-after paged", startAfter: "b", maxKeys: 2, wantKeys: keys[5:]},
		{name: "start-after past end", startAfter: "zzz"},
		// A marker equal to a common prefix (what NextMarker is when a page
		// ends on one) skips every key under it.
		{name: "start-after a common prefix", startAfter: "a/", delim: "/", maxKeys: 1, wantKeys: []string{"b", "d"}, wantPrefixes: []string{"c/", "e/", "photos/"}},
		{name: "delimiter not slash", delim: "2", prefix: "photos/", wantKeys: []string{"photos/readme"}, wantPrefixes: []string{"photos/2"}},
	}
	for _, tc := range cases {
		t.Run("V2/"+tc.name, func(t *testing.T) {
			in := s3.ListObjectsV2Input{Bucket: aws.String(b)}
			if tc.prefix != "" {
				in.Prefix = aws.String(tc.prefix)
			}
			if tc.delim != "" {
				in.Delimiter = aws.String(tc.delim)
			}
			if tc.startAfter != "" {
				in.StartAfter = aws.String(tc.startAfter)
			}
			if tc.maxKeys > 0 {
				in.MaxKeys = aws.Int32(tc.maxKeys)
			}
			gotKeys, gotPrefixes := listAllV2(t, c, in)
			if !slices.Equal(gotKeys, tc.wantKeys) || !slices.Equal(gotPrefixes, tc.wantPrefixes) {
				t.Errorf("keys %q prefixes %q, want keys %q prefixes %q", gotKeys, gotPrefixes, tc.wantKeys, tc.wantPrefixes)
			}
		})
		t.Run("V1/"+tc.name, func(t *testing.T) {
			in := s3.ListObjectsInput{Bucket: aws.String(b)}
			if tc.prefix != "" {
				in.Prefix = aws.String(tc.prefix)
			}
			if tc.delim != "" {
				in.Delimiter = aws.String(tc.delim)
			}
			if tc.startAfter != "" {
				in.Marker = aws.String(tc.startAfter)
			}
			if tc.maxKeys > 0 {
				in.MaxKeys = aws.Int32(tc.maxKeys)
			}
			gotKeys, gotPrefixes := listAllV1(t, c, in)
			if !slices.Equal(gotKeys, tc.wantKeys) || !slices.Equal(gotPrefixes, tc.wantPrefixes) {
				t.Errorf("keys %q prefixes %q, want keys %q prefixes %q", gotKeys, gotPrefixes, tc.wantKeys, tc.wantPrefixes)
			}
		})
	}

	t.Run("V2/objectFields", func(t *testing.T) {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("a/1")})
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		if len(out.Contents) != 1 {
			t.Fatalf("got %d objects, want 1", len(out.Contents))
		}
		o := out.Contents[0]
		body := "data of a/1"
		if aws.ToInt64(o.Size) != int64(len(body)) {
			t.Errorf("Size %d, want %d", aws.ToInt64(o.Size), len(body))
		}
		if aws.ToString(o.ETag) != quoted(md5Hex([]byte(body))) {
			t.Errorf("ETag %s, want %s", aws.ToString(o.ETag), quoted(md5Hex([]byte(body))))
		}
		if o.LastModified == nil || o.LastModified.IsZero() {
			t.Errorf("LastModified missing")
		}
		if o.StorageClass != types.ObjectStorageClassStandard {
			t.Errorf("StorageClass %q, want STANDARD", o.StorageClass)
		}
		if o.Owner != nil {
			t.Errorf("Owner %+v without fetch-owner, want none", o.Owner)
		}
		if aws.ToString(out.Name) != b || aws.ToString(out.Prefix) != "a/1" || aws.ToInt32(out.MaxKeys) != 1000 {
			t.Errorf("Name %q Prefix %q MaxKeys %d, want %q %q 1000", aws.ToString(out.Name), aws.ToString(out.Prefix), aws.ToInt32(out.MaxKeys), b, "a/1")
		}
	})

	t.Run("V2/fetchOwner", func(t *testing.T) {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), FetchOwner: aws.Bool(true), MaxKeys: aws.Int32(2)})
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		for _, o := range out.Contents {
			if o.Owner == nil || aws.ToString(o.Owner.ID) == "" {
				t.Errorf("object %s: Owner %+v with fetch-owner=true, want an ID", aws.ToString(o.Key), o.Owner)
			}
		}
	})

	t.Run("V1/owner", func(t *testing.T) {
		out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), MaxKeys: aws.Int32(2)})
		if err != nil {
			t.Fatalf("ListObjects: %v", err)
		}
		for _, o := range out.Contents {
			if o.Owner == nil || aws.ToString(o.Owner.ID) == "" {
				t.Errorf("object %s: ListObjects v1 Owner %+v, want an ID (v1 always lists owners)", aws.ToString(o.Key), o.Owner)
			}
		}
	})

	t.Run("V2/continuationTokenWinsOverStartAfter", func(t *testing.T) {
		p1, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), MaxKeys: aws.Int32(3)})
		if err != nil {
			t.Fatalf("ListObjectsV2: %v", err)
		}
		p2, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), MaxKeys: aws.Int32(1),
			ContinuationToken: p1.NextContinuationToken, StartAfter: aws.String("a/1")})
		if err != nil {
			t.Fatalf("ListObjectsV2 page 2: %v", err)
		}
		if len(p2.Contents) != 1 || aws.ToString(p2.Contents[0].Key) != keys[3] {
			t.Errorf("page 2 with token and start-after: %v, want [%s]", p2.Contents, keys[3])
		}
		if aws.ToString(p2.StartAfter) != "a/1" {
			t.Errorf("StartAfter echoed as %q, want a/1", aws.ToString(p2.StartAfter))
		}
	})

	t.Run("V2/badContinuationToken", func(t *testing.T) {
		_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), ContinuationToken: aws.String("!!not-a-token!!")})
		wantErr(t, "ListObjectsV2 with a garbage token", err, "InvalidArgument", 400)
	})
}

// specialKeys are keys that need escaping in XML or in URLs. Read-only.
var specialKeys = []string{
	"plain",
	"with space",
	"two  spaces/and/slash",
	"plus+sign",
	"per%cent%20literal",
	"unicode-ü-ñ-日本語-🎉",
	"ctl\x01char",
	"new\nline",
	"tab\tkey",
	"cr\rkey",
	"xml<&>'\"chars",
	"query?and#hash",
	"trailing/",
	"~tilde=eq&amp;",
}

func TestListingEncoding(t *testing.T) {
	t.Parallel()
	testListingEncoding(t, startServer(t))
}

func testListingEncoding(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "enc")
	for _, k := range specialKeys {
		put(t, c, b, "p/"+k, []byte(k))
	}
	for _, k := range specialKeys {
		if got := get(t, c, b, "p/"+k); string(got) != k {
			t.Errorf("GetObject(%q) = %q", "p/"+k, got)
		}
	}
	want := make([]string, len(specialKeys))
	for i, k := range specialKeys {
		want[i] = "p/" + k
	}
	slices.Sort(want)

	t.Run("url", func(t *testing.T) {
		var got []string
		in := &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("p/"), EncodingType: types.EncodingTypeUrl, MaxKeys: aws.Int32(5)}
		for {
			out, err := c.ListObjectsV2(ctx, in)
			if err != nil {
				t.Fatalf("ListObjectsV2 encoding-type=url: %v", err)
			}
			if out.EncodingType != types.EncodingTypeUrl {
				t.Errorf("EncodingType %q, want url", out.EncodingType)
			}
			if aws.ToString(out.Prefix) != "p%2F" && aws.ToString(out.Prefix) != "p/" {
				t.Errorf("Prefix %q, want p/ URL-encoded", aws.ToString(out.Prefix))
			}
			for _, o := range out.Contents {
				enc := aws.ToString(o.Key)
				if strings.ContainsAny(enc, " \x01\n\r\t") {
					t.Errorf("key %q not URL-encoded", enc)
				}
				dec, err := url.QueryUnescape(enc)
				if err != nil {
					t.Errorf("key %q: %v", enc, err)
					continue
				}
				got = append(got, dec)
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.ContinuationToken = out.NextContinuationToken
		}
		if !slices.Equal(got, want) {
			t.Errorf("decoded keys\n%q\nwant\n%q", got, want)
		}
	})

	t.Run("urlDelimiterV1", func(t *testing.T) {
		out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), Delimiter: aws.String(" "), EncodingType: types.EncodingTypeUrl})
		if err != nil {
			t.Fatalf("ListObjects: %v", err)
		}
		var prefixes []string
		for _, p := range out.CommonPrefixes {
			dec, err := url.QueryUnescape(aws.ToString(p.Prefix))
			if err != nil {
				t.Fatalf("prefix %q: %v", aws.ToString(p.Prefix), err)
			}
			prefixes = append(prefixes, dec)
		}
		wantPrefixes := []string{"p/two ", "p/with "}
		if !slices.Equal(prefixes, wantPrefixes) {
			t.Errorf("common prefixes %q, want %q", prefixes, wantPrefixes)
		}
		if d, _ := url.QueryUnescape(aws.ToString(out.Delimiter)); d != " " {
			t.Errorf("Delimiter %q, want a space URL-encoded", aws.ToString(out.Delimiter))
		}
	})

	t.Run("prefixInQuery", func(t *testing.T) {
		// Each key as the prefix: the signed query carries every special
		// character.
		for _, k := range specialKeys {
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("p/" + k), EncodingType: types.EncodingTypeUrl})
			if err != nil {
				t.Errorf("ListObjectsV2 prefix %q: %v", "p/"+k, err)
				continue
			}
			var got []string
			for _, o := range out.Contents {
				dec, _ := url.QueryUnescape(aws.ToString(o.Key))
				got = append(got, dec)
			}
			if len(got) == 0 || got[0] != "p/"+k {
				t.Errorf("ListObjectsV2 prefix %q: %q, want the key first", "p/"+k, got)
			}
		}
	})

	t.Run("xml", func(t *testing.T) {
		// Without encoding-type every key XML 1.0 can carry round-trips.
		// The one with a control character is written as a character
		// reference, as S3 writes it: the document names the key, and the
		// SDK's strict parser refuses it, as it refuses S3's.
		for _, k := range specialKeys {
			in := &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("p/" + k)}
			out, err := c.ListObjectsV2(ctx, in)
			if strings.Contains(k, "\x01") {
				if err == nil || !strings.Contains(err.Error(), "illegal character code U+0001") {
					t.Errorf("ListObjectsV2 of %q without encoding-type: %v, want the SDK to refuse the XML", k, err)
				}
				resp, body := raw(t, ts, rawReq{method: "GET", target: "/" + b + "?list-type=2&prefix=" + url.QueryEscape("p/"+k)})
				if resp.StatusCode != 200 || !strings.Contains(string(body), "<Key>p/ctl&#x1;char</Key>") {
					t.Errorf("raw listing of %q: %d\n%s", k, resp.StatusCode, body)
				}
				continue
			}
			if err != nil {
				t.Errorf("ListObjectsV2 of %q: %v", k, err)
				continue
			}
			if len(out.Contents) == 0 || aws.ToString(out.Contents[0].Key) != "p/"+k {
				t.Errorf("ListObjectsV2 of %q without encoding-type: %+v", k, out.Contents)
			}
		}
	})
}

// TestManyKeys lists 2500 keys with the SDK paginator and with v1 markers,
// then deletes them with DeleteObjects, quiet and not.
func TestManyKeys(t *testing.T) {
	t.Parallel()
	testManyKeys(t, startServer(t))
}

func testManyKeys(t *testing.T, ts s3Target) {
	c := ts.client(t, whenRequired)
	ctx := t.Context()
	b := mkBucket(t, c, "many")
	const n = 2500
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k/%05d", i)
	}
	var g errgroup.Group
	g.SetLimit(8)
	for _, k := range keys {
		g.Go(func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader(k)})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("PutObject: %v", err)
	}

	var got []string
	pages := 0
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("paginator page %d: %v", pages, err)
		}
		pages++
		for _, o := range out.Contents {
			got = append(got, aws.ToString(o.Key))
		}
	}
	if pages != 3 || !slices.Equal(got, keys) {
		t.Errorf("paginator: %d pages, %d keys (equal: %v); want 3 pages of the %d keys in order", pages, len(got), slices.Equal(got, keys), n)
	}
	gotV1, _ := listAllV1(t, c, s3.ListObjectsInput{Bucket: aws.String(b), MaxKeys: aws.Int32(700)})
	if !slices.Equal(gotV1, keys) {
		t.Errorf("ListObjects v1 paging: %d keys, want the %d keys in order", len(gotV1), n)
	}

	del := func(keys []string, quiet bool) *s3.DeleteObjectsOutput {
		t.Helper()
		ids := make([]types.ObjectIdentifier, len(keys))
		for i, k := range keys {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(quiet)}})
		if err != nil {
			t.Fatalf("DeleteObjects(%d keys, quiet=%v): %v", len(keys), quiet, err)
		}
		if len(out.Errors) != 0 {
			t.Errorf("DeleteObjects: errors %+v", out.Errors)
		}
		return out
	}
	out := del(keys[:1000], false)
	var deleted []string
	for _, d := range out.Deleted {
		deleted = append(deleted, aws.ToString(d.Key))
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, keys[:1000]) {
		t.Errorf("DeleteObjects (verbose) reported %d deleted keys, want the 1000 requested", len(deleted))
	}
	if out := del(keys[1000:2000], true); len(out.Deleted) != 0 {
		t.Errorf("DeleteObjects (quiet) reported %d deleted keys, want none", len(out.Deleted))
	}
	// Absent keys are reported as deleted too.
	rest := append(slices.Clone(keys[2000:]), "k/absent-1", "k/absent-2")
	out = del(rest, false)
	if len(out.Deleted) != len(rest) {
		t.Errorf("DeleteObjects with absent keys: %d deleted, want %d", len(out.Deleted), len(rest))
	}
	left, _ := listAllV2(t, c, s3.ListObjectsV2Input{Bucket: aws.String(b)})
	if len(left) != 0 {
		t.Errorf("after deleting every key, %d keys remain: %q…", len(left), left[:min(5, len(left))])
	}

	tooMany := make([]types.ObjectIdentifier, 1001)
	for i := range tooMany {
		tooMany[i] = types.ObjectIdentifier{Key: aws.String(fmt.Sprint(i))}
	}
	_, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &types.Delete{Objects: tooMany}})
	wantErr(t, "DeleteObjects of 1001 keys", err, "MalformedXML", 400)
}
