package console

import (
	"flag"
	"html/template"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

// templateRows are the rows of objects.html and buckets.html as they
// were as template actions, before rows.go wrote them: html/template's
// escaping of them is what objectRows and bucketRows must reproduce.
const templateRows = `{{define "objects"}}{{$b := .Bucket}}
    {{- range .Folders}}
    <tr class="folder" data-prefix="{{.Prefix}}">
      <td></td>
      <td><a href="/objects/{{$b}}?prefix={{.Prefix}}">{{.Name}}</a></td>
      <td class="num">—</td><td></td><td></td>
    </tr>
    {{- end}}
    {{- range .Objects}}
    <tr data-key="{{.Key}}">
      <td><input type="checkbox" name="key" value="{{.Key}}" aria-label="Select {{.Name}}"></td>
      <td><a href="/objects/{{$b}}/object?key={{.Key}}">{{.Name}}</a></td>
      <td class="num" title="{{.Size}} bytes">{{bytes .Size}}</td>
      <td>{{time .Modified}}</td>
      <td class="actions"><a href="/objects/{{$b}}/download?key={{.Key}}" class="download" download>Download</a></td>
    </tr>
    {{- end}}
{{- end}}
{{- define "buckets"}}
  {{- range .}}
  <tr data-bucket="{{.Name}}">
    <td><a href="/objects/{{.Name}}">{{.Name}}</a></td>
    {{if .UsageCorrupt}}<td class="num corrupt" colspan="2" title="The stored usage of this bucket is corrupt: coffer admin usage check --repair resets it.">usage unknown</td>{{else}}<td class="num">{{.Objects}}</td>
    <td class="num" title="{{.Bytes}} bytes">{{bytes .Bytes}}</td>{{end}}
    <td>{{time .Created}}</td>
    <td class="actions">{{if .CanDelete}}<a class="danger" href="/buckets/{{.Name}}/delete">Delete</a>{{end}}</td>
  </tr>
  {{- end}}
{{- end}}`

var rowsTemplate = template.Must(template.New("rows").Funcs(funcs).Parse(templateRows))

// checkRows compares objectRows and bucketRows for rows made of s with
// html/template's rendering of the same rows.
func checkRows(t *testing.T, s string, size int64, when time.Time) {
	t.Helper()
	folders := []folderRow{{Name: s, Prefix: s}, {Name: "f/", Prefix: "p/" + s + "/"}}
	objs := []objectRow{{Name: s, Key: s, Size: size, Modified: when}, {Name: "n", Key: "k/" + s, Size: -size, Modified: when}}
	for _, bucket := range []string{"bucket-1", s} {
		var want strings.Builder
		if err := rowsTemplate.ExecuteTemplate(&want, "objects", struct {
			Bucket  string
			Folders []folderRow
			Objects []objectRow
		}{bucket, folders, objs}); err != nil {
			t.Fatal(err)
		}
		if got := objectRows(bucket, folders, objs); string(got) != want.String() {
			t.Errorf("objectRows(%q, rows of %q):\n got %q\nwant %q", bucket, s, got, want.String())
		}
	}
	buckets := []bucketRow{{Name: s, Objects: size, Bytes: size, Created: when, CanDelete: true}, {Name: s, Objects: -1, Bytes: 1 << 40, Created: when},
		{Name: s, UsageCorrupt: true, Created: when, CanDelete: true}}
	var want strings.Builder
	if err := rowsTemplate.ExecuteTemplate(&want, "buckets", buckets); err != nil {
		t.Fatal(err)
	}
	if got := bucketRows(buckets); string(got) != want.String() {
		t.Errorf("bucketRows(rows of %q):\n got %q\nwant %q", s, got, want.String())
	}
}

// rowStrings are the names, keys and prefixes of TestRowsMatchTemplate
// and the seeds of FuzzRowsMatchTemplate: the tricky keys, every single
// byte, invalid UTF-8, and percent-escapes where html/template's URL
// normalizer treats them specially (valid, invalid, at the very end).
func rowStrings() []string {
	s := append([]string{"", "bucket-1", "a.b-c", "Upper_Case"}, trickyKeys...)
	for c := range 256 {
		s = append(s, "x"+string([]byte{byte(c)})+"y")
	}
	return append(s,
		"\xff\xfe", "bad\xc3(utf8", "\xe2\x82", "trunc\xf0\x9f\x99", "\xed\xa0\x80 surrogate", "\xc0\xaf overlong",
		"%41", "%4", "%", "a%2", "a%2F", "%2Fb", "%zz", "%%41", "/%41/", "a+b&c", "?x=1#f",
		"\"><script>alert(1)</script>", "' onmouseover='x", "javascript:alert(1)", " leading and trailing ",
	)
}

// TestRowsMatchTemplate proves the rows written in Go are, byte for
// byte, what html/template makes of the same markup, for any bytes in
// a key, a folder or a bucket name.
func TestRowsMatchTemplate(t *testing.T) {
	t.Parallel()
	when := time.Date(2026, 11, 26, 6, 30, 59, 0, time.FixedZone("CET", 3600))
	for _, s := range rowStrings() {
		checkRows(t, s, 123456789, when)
	}
	checkRows(t, "k", 0, time.Time{})
	checkRows(t, "k", 5<<30, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC))
	checkRows(t, "k", 1<<62, time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC))
}

func FuzzRowsMatchTemplate(f *testing.F) {
	for _, s := range rowStrings() {
		f.Add(s, int64(len(s)*1000), int64(1700000000))
	}
	f.Fuzz(func(t *testing.T, s string, size, unix int64) {
		checkRows(t, s, size, time.Unix(unix, 0))
	})
}
