package console

import (
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/objects"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// trickyKeys are object keys with everything HTML and URLs treat
// specially: markup, quotes, ampersands, plus signs and spaces (which
// query strings encode differently), percent signs that look like
// escapes, control characters, NUL, line separators, non-characters,
// non-ASCII text, and folders holding such names.
var trickyKeys = []string{
	`plain-key.txt`,
	`<script>alert(1)</script>`,
	`"double" and 'single' quotes`,
	`a&b=c&amp;d`,
	`x+y z`,
	`100%25 %zz %`,
	"new\nline\r\ttab",
	"ctl\x01\x1b\x1f\x7f",
	"nul\x00byte",
	"line\u2028sep\u2029para",
	"nonchar\ufdd0\uffff",
	`ünïcödé 日本語 🙂`,
	`javascript:alert(1)`,
	`#frag?q=1;x,y@z`,
	"`backtick` ={}[]|\\^",
	`dir"<f>&'+ %/inner.txt`,
	`dir"<f>&'+ %/sub/deeper.txt`,
	"dir\x00\n/x",
}

var (
	csrfValueRE = regexp.MustCompile(`(name="csrf" value|data-csrf)="[^"]*"`)
	minuteRE    = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d UTC`)
)

// TestObjectListGolden renders object list pages of tricky keys and
// compares them byte for byte with testdata/golden (the CSRF token and
// the objects' times masked): the page must not change when its
// rendering does.
func TestObjectListGolden(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}, 1)
	f.bucket(t, "tricky")
	for i, k := range trickyKeys {
		if _, err := f.objects.PutObject(t.Context(), "tricky", k, objects.PutInput{Size: int64(i * 1000)},
			repeatReader(i*1000)); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	id, _ := f.signIn(t, testRootKey, testRootSecret)
	for _, tc := range []struct{ name, path string }{
		{"objects-top.html", "/objects/tricky"},
		{"objects-folder.html", "/objects/tricky?prefix=" + "dir%22%3Cf%3E%26%27%2B+%25%2F"},
		{"objects-search.html", "/objects/tricky?prefix=%22"},
		{"objects-paged.html", "/objects/tricky?after=a"},
		{"buckets.html", "/buckets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.do(t, request{method: "GET", path: tc.path, cookie: id})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", tc.path, resp.StatusCode)
			}
			page := csrfValueRE.ReplaceAllString(body(t, resp), `$1="CSRF"`)
			golden(t, tc.name, []byte(minuteRE.ReplaceAllString(page, "2006-01-02 15:04 UTC")))
		})
	}
}

// repeatReader returns n bytes of "x".
func repeatReader(n int) *fixedReader { return &fixedReader{n: n} }

type fixedReader struct{ n int }

func (r *fixedReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = 'x'
	}
	r.n -= n
	return n, nil
}

// golden compares got with testdata/golden/name, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", name, diff)
	}
}
