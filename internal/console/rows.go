package console

import (
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/bytesize"
)

// The rows of the object list and the bucket list are written here, in
// Go, and handed to their templates as one template.HTML each.
//
// As template actions, each of a row's eight or so values went through
// one to three of html/template's escapers, each called by reflection:
// about 85 % of the CPU of a 100-row object list page. The functions
// below escape every value for the context it lands in exactly as
// html/template would for a plain string (the same bytes out, for any
// bytes in, valid UTF-8 or not): rowWriter.html as its htmlEscaper
// (text) and attrEscaper (a quoted attribute value), rowWriter.url as
// its urlEscaper (a query value) and urlNormalizer (a path), each
// followed by its attrEscaper. TestRowsMatchTemplate
// and FuzzRowsMatchTemplate check that against html/template itself, on
// the row markup the templates had; the golden pages check the whole
// page.
//
// Markup that is not per row stays in the templates.

// minuteLayout is how the console shows a time (the template function
// "time").
const minuteLayout = "2006-01-02 15:04 UTC"

// objectRows returns the rows of the object list's table of bucket:
// the folders, then the objects. Each is what objects.html's rows were:
//
//	<tr class="folder" data-prefix="{{.Prefix}}">
//	  <td></td>
//	  <td><a href="/objects/{{$b}}?prefix={{.Prefix}}">{{.Name}}</a></td>
//	  <td class="num">—</td><td></td><td></td>
//	</tr>
//	<tr data-key="{{.Key}}">
//	  <td><input type="checkbox" name="key" value="{{.Key}}" aria-label="Select {{.Name}}"></td>
//	  <td><a href="/objects/{{$b}}/object?key={{.Key}}">{{.Name}}</a></td>
//	  <td class="num" title="{{.Size}} bytes">{{bytes .Size}}</td>
//	  <td>{{time .Modified}}</td>
//	  <td class="actions"><a href="/objects/{{$b}}/download?key={{.Key}}" class="download" download>Download</a></td>
//	</tr>
//
// each row after a newline and four spaces, as the template's trimmed
// range left them.
func objectRows(bucket string, folders []folderRow, objs []objectRow) template.HTML {
	var w rowWriter
	n := 0
	for _, f := range folders {
		n += 200 + 2*len(bucket) + 4*len(f.Prefix) + len(f.Name)
	}
	for _, o := range objs {
		n += 400 + 2*len(bucket) + 8*len(o.Key) + 2*len(o.Name)
	}
	// The bucket's path segment is the same in every link: escaped once.
	var bw rowWriter
	bw.url(bucket, true)
	b := bw.String()
	w.Grow(n)
	for _, f := range folders {
		w.WriteString("\n    <tr class=\"folder\" data-prefix=\"")
		w.html(f.Prefix)
		w.WriteString("\">\n      <td></td>\n      <td><a href=\"/objects/")
		w.WriteString(b)
		w.WriteString("?prefix=")
		w.url(f.Prefix, false)
		w.WriteString("\">")
		w.html(f.Name)
		w.WriteString("</a></td>\n      <td class=\"num\">—</td><td></td><td></td>\n    </tr>")
	}
	for _, o := range objs {
		w.WriteString("\n    <tr data-key=\"")
		w.html(o.Key)
		w.WriteString("\">\n      <td><input type=\"checkbox\" name=\"key\" value=\"")
		w.html(o.Key)
		w.WriteString("\" aria-label=\"Select ")
		w.html(o.Name)
		w.WriteString("\"></td>\n      <td><a href=\"/objects/")
		w.WriteString(b)
		w.WriteString("/object?key=")
		w.url(o.Key, false)
		w.WriteString("\">")
		w.html(o.Name)
		w.WriteString("</a></td>\n      <td class=\"num\" title=\"")
		w.int(o.Size)
		w.WriteString(" bytes\">")
		w.html(bytesize.Format(o.Size))
		w.WriteString("</td>\n      <td>")
		w.time(o.Modified)
		w.WriteString("</td>\n      <td class=\"actions\"><a href=\"/objects/")
		w.WriteString(b)
		w.WriteString("/download?key=")
		w.url(o.Key, false)
		w.WriteString("\" class=\"download\" download>Download</a></td>\n    </tr>")
	}
	return template.HTML(w.String())
}

// bucketRows returns the rows of the Buckets page's table. Each is what
// buckets.html's rows were:
//
//	<tr data-bucket="{{.Name}}">
//	  <td><a href="/objects/{{.Name}}">{{.Name}}</a></td>
//	  {{if .UsageCorrupt}}<td class="num corrupt" colspan="2" title="…">usage unknown</td>{{else}}<td class="num">{{.Objects}}</td>
//	  <td class="num" title="{{.Bytes}} bytes">{{bytes .Bytes}}</td>{{end}}
//	  <td>{{time .Created}}</td>
//	  <td class="actions">{{if .CanDelete}}<a class="danger" href="/buckets/{{.Name}}/delete">Delete</a>{{end}}</td>
//	</tr>
//
// each after a newline and two spaces.
func bucketRows(rows []bucketRow) template.HTML {
	var w rowWriter
	n := 0
	for _, r := range rows {
		n += 400 + 10*len(r.Name)
	}
	w.Grow(n)
	for _, r := range rows {
		w.WriteString("\n  <tr data-bucket=\"")
		w.html(r.Name)
		w.WriteString("\">\n    <td><a href=\"/objects/")
		w.url(r.Name, true)
		w.WriteString("\">")
		w.html(r.Name)
		w.WriteString("</a></td>\n    ")
		switch {
		case r.UsageHidden:
			w.WriteString(hiddenUsageCell)
		case r.UsageCorrupt:
			w.WriteString(corruptUsageCell)
		default:
			w.WriteString("<td class=\"num\">")
			w.int(r.Objects)
			w.WriteString("</td>\n    <td class=\"num\" title=\"")
			w.int(r.Bytes)
			w.WriteString(" bytes\">")
			w.html(bytesize.Format(r.Bytes))
			w.WriteString("</td>")
		}
		w.WriteString("\n    <td>")
		w.time(r.Created)
		w.WriteString("</td>\n    <td class=\"actions\">")
		if r.CanDelete {
			w.WriteString("<a class=\"danger\" href=\"/buckets/")
			w.url(r.Name, true)
			w.WriteString("/delete\">Delete</a>")
		}
		w.WriteString("</td>\n  </tr>")
	}
	return template.HTML(w.String())
}

// hiddenUsageCell stands for the Objects and Size cells of a bucket the
// viewer may not list whole.
const hiddenUsageCell = `<td class="num hidden-usage" colspan="2" title="You may not list this whole bucket, so its totals are not shown.">–</td>`

// corruptUsageCell stands for the Objects and Size cells of a bucket whose
// stored usage does not decode.
const corruptUsageCell = `<td class="num corrupt" colspan="2" title="The stored usage of this bucket is corrupt: coffer admin usage check --repair resets it.">usage unknown</td>`

// rowWriter builds rows, escaping each value for its context.
type rowWriter struct{ strings.Builder }

// int writes n in decimal.
func (w *rowWriter) int(n int64) {
	var buf [20]byte
	w.Write(strconv.AppendInt(buf[:0], n, 10))
}

// time writes t as the template function "time" shows it, for HTML
// text.
func (w *rowWriter) time(t time.Time) {
	var buf [32]byte
	w.html(string(t.UTC().AppendFormat(buf[:0], minuteLayout)))
}

// htmlEscapes are the replacements of html/template's htmlEscaper and
// attrEscaper for a plain string, in HTML text and in a quoted
// attribute value alike; every other byte is copied. They are all ASCII,
// and an ASCII byte is never part of a multi-byte UTF-8 sequence (nor
// swallowed by an invalid one, which html/template decodes one byte at
// a time), so going byte by byte gives what its rune by rune loop gives.
var htmlEscapes = [256]string{
	0:    "\uFFFD", // as HTML's parser would read a NUL in an attribute
	'"':  "&#34;",
	'&':  "&amp;",
	'\'': "&#39;",
	'+':  "&#43;",
	'<':  "&lt;",
	'>':  "&gt;",
}

// html writes s escaped for HTML text or a quoted attribute value.
func (w *rowWriter) html(s string) {
	last := 0
	for i := 0; i < len(s); i++ {
		if r := htmlEscapes[s[i]]; r != "" {
			w.WriteString(s[last:i])
			w.WriteString(r)
			last = i + 1
		}
	}
	w.WriteString(s[last:])
}

// urlKeep classifies the bytes html/template's URL escapers leave as
// they are: the unreserved characters of RFC 3986 (urlUnreserved) always,
// the reserved ones (urlReserved) only when normalizing a URL's path.
const (
	urlUnreserved = 1 + iota
	urlReserved
)

var urlKeep = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			t[c] = urlUnreserved
		case strings.IndexByte("!#$&*+,/:;=?@[]", byte(c)) >= 0:
			t[c] = urlReserved
		}
	}
	return t
}()

// url writes s as part of a URL in a quoted attribute value, as
// html/template does for a plain string: in the query (norm false)
// every byte but the unreserved ones is percent-encoded, as its
// urlEscaper does (lowercase hex; a space is %20, not +); in the path
// (norm true) reserved characters and percent-escapes are kept too, as
// its urlNormalizer does. Its attrEscaper then changes only the "&" and
// "+" a path keeps.
func (w *rowWriter) url(s string, norm bool) {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch k := urlKeep[c]; {
		case k == urlUnreserved:
			w.WriteByte(c)
			continue
		case norm && k == urlReserved:
			w.html(s[i : i+1])
			continue
		case norm && c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			// html/template's check, i+2 < len(s), leaves an escape at
			// the very end to be encoded again; so does this.
			w.WriteByte(c)
			continue
		}
		w.WriteByte('%')
		w.WriteByte(hex[c>>4])
		w.WriteByte(hex[c&15])
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
