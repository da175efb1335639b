package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// filterEvents is the data set of TestQueryFilters; event i is at t0+i s.
var filterEvents = []Event{
	0:  {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "photos", Key: "2024/a.jpg", User: "alice", AccessKey: "AKALICE", SourceIP: "10.0.0.1"},
	1:  {Source: SourceS3, Op: "GetObject", Status: 403, Code: "AccessDenied", Bucket: "photos", Key: "2024/b.jpg", AccessKey: "AKBAD", SourceIP: "10.0.0.2"},
	2:  {Source: SourceS3, Op: "DeleteObject", Status: 204, Bucket: "photos", Key: "2025/c.jpg", User: "bob", AccessKey: "AKBOB", SourceIP: "10.0.0.1"},
	3:  {Source: SourceS3, Op: "PutObject", Status: 500, Code: "InternalError", Bucket: "docs", Key: "100%_done", User: "alice", AccessKey: "AKALICE", SourceIP: "10.0.0.3"},
	4:  {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "docs", Key: "100x_done", User: "alice", AccessKey: "AKALICE", SourceIP: "10.0.0.3"},
	5:  {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "docs", Key: "100%done", User: "alice", AccessKey: "AKALICE", SourceIP: "10.0.0.3"},
	6:  {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "docs", Key: `a\b`, User: "bob", AccessKey: "AKBOB", SourceIP: "10.0.0.1"},
	7:  {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "docs", Key: `a\c`, User: "bob", AccessKey: "AKBOB", SourceIP: "10.0.0.1"},
	8:  {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "docs", Key: `A\b`, User: "bob", AccessKey: "AKBOB", SourceIP: "10.0.0.1"},
	9:  {Source: SourceAdmin, Op: "admin:CreateUser", Status: 200, Target: "user/carol", User: "root", AccessKey: "AKROOT", SourceIP: "127.0.0.1"},
	10: {Source: SourceAdmin, Op: "admin:DeleteUser", Status: 404, Code: "NoSuchUser", Target: "user/dave", User: "root", AccessKey: "AKROOT", SourceIP: "127.0.0.1"},
	11: {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "photos", Key: "\xff\xffz", User: "alice", AccessKey: "AKALICE", SourceIP: "10.0.0.1"},
	12: {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "photos", Key: "2024", User: "alice", AccessKey: "AKALICE", SourceIP: "10.0.0.1"},
	13: {Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "photos", Key: "2024%", User: "alice", AccessKey: "AKALICE", SourceIP: "10.0.0.1"},
}

// at returns the time of filterEvents[i].
func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

func TestQueryFilters(t *testing.T) { forEachBackend(t, testQueryFilters) }

func testQueryFilters(t *testing.T, b backend) {
	l := b.open(t, Config{}, hooks{})
	events := slices.Clone(filterEvents)
	for i := range events {
		events[i].Time = at(i)
	}
	recordAll(t, l, events...)

	for _, tc := range []struct {
		name string
		f    Filter
		want []int // indexes into filterEvents, in any order
	}{
		{name: "all", f: Filter{}, want: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
		{name: "since, inclusive", f: Filter{Since: at(11)}, want: []int{11, 12, 13}},
		{name: "since, one ns later", f: Filter{Since: at(11).Add(1)}, want: []int{12, 13}},
		{name: "until, exclusive", f: Filter{Until: at(2)}, want: []int{0, 1}},
		{name: "since and until", f: Filter{Since: at(2), Until: at(5)}, want: []int{2, 3, 4}},
		{name: "empty range", f: Filter{Since: at(5), Until: at(5)}, want: nil},
		{name: "source", f: Filter{Source: SourceAdmin}, want: []int{9, 10}},
		{name: "op", f: Filter{Op: "DeleteObject"}, want: []int{2}},
		{name: "bucket", f: Filter{Bucket: "photos"}, want: []int{0, 1, 2, 11, 12, 13}},
		{name: "user", f: Filter{User: "bob"}, want: []int{2, 6, 7, 8}},
		{name: "access key of a failed request", f: Filter{AccessKey: "AKBAD"}, want: []int{1}},
		{name: "source IP", f: Filter{SourceIP: "10.0.0.3"}, want: []int{3, 4, 5}},
		{name: "failed", f: Filter{Failed: true}, want: []int{1, 3, 10}},
		{name: "failed s3", f: Filter{Failed: true, Source: SourceS3}, want: []int{1, 3}},
		{name: "succeeded", f: Filter{Succeeded: true, Source: SourceS3, Bucket: "photos"}, want: []int{0, 2, 11, 12, 13}},
		{name: "succeeded and failed", f: Filter{Succeeded: true, Failed: true}, want: nil},
		{name: "key prefix in bucket", f: Filter{Bucket: "photos", KeyPrefix: "2024/"}, want: []int{0, 1}},
		{name: "key prefix is a whole key", f: Filter{Bucket: "photos", KeyPrefix: "2024"}, want: []int{0, 1, 12, 13}},
		{name: "percent is literal", f: Filter{KeyPrefix: "100%"}, want: []int{3, 5}},
		{name: "underscore is literal", f: Filter{KeyPrefix: "100%_"}, want: []int{3}},
		{name: "backslash is literal and case counts", f: Filter{KeyPrefix: `a\`}, want: []int{6, 7}},
		{name: "prefix of 0xFF bytes", f: Filter{KeyPrefix: "\xff\xff"}, want: []int{11}},
		{name: "prefix matching nothing", f: Filter{Bucket: "docs", KeyPrefix: "2024"}, want: nil},
		{name: "combination", f: Filter{Source: SourceS3, Op: "PutObject", Bucket: "docs", User: "alice", AccessKey: "AKALICE",
			SourceIP: "10.0.0.3", KeyPrefix: "100", Since: at(4), Until: at(6)}, want: []int{4, 5}},
		{name: "combination with failed", f: Filter{User: "alice", Failed: true, Until: at(20)}, want: []int{3}},
		{name: "no such user", f: Filter{User: "nobody"}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := queryAll(t, l, tc.f)
			var gotIdx []int
			for i, e := range got {
				if i > 0 && e.ID >= got[i-1].ID {
					t.Errorf("not newest first: ID %d after %d", e.ID, got[i-1].ID)
				}
				gotIdx = append(gotIdx, int(e.ID-1)) // IDs start at 1 in recording order
			}
			slices.Sort(gotIdx)
			if diff := cmp.Diff(tc.want, gotIdx); diff != "" {
				t.Errorf("Query(%+v) mismatch (-want +got):\n%s", tc.f, diff)
			}
			// Export selects the same events, oldest first.
			var buf bytes.Buffer
			n, err := l.Export(t.Context(), tc.f, &buf)
			if err != nil {
				t.Fatalf("Export: %v", err)
			}
			exported := parseJSONL(t, &buf)
			slices.Reverse(exported)
			got = slices.Clone(got)
			for i := range got { // JSON strings are UTF-8
				got[i].Key = viaJSON(t, got[i].Key)
			}
			if diff := cmp.Diff(got, exported); diff != "" || n != int64(len(got)) {
				t.Errorf("Export returned %d events, differing from Query (-query +export):\n%s", n, diff)
			}
		})
	}
}

// viaJSON returns s after a JSON round trip, with invalid UTF-8 replaced.
func viaJSON(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// parseJSONL parses one Event per line.
func parseJSONL(t *testing.T, r *bytes.Buffer) []Event {
	t.Helper()
	var events []Event
	s := bufio.NewScanner(r)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		var e Event
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("line %d: %v: %s", len(events)+1, err, s.Bytes())
		}
		events = append(events, e)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func TestQueryLimits(t *testing.T) { forEachBackend(t, testQueryLimits) }

func testQueryLimits(t *testing.T, b backend) {
	l := b.open(t, Config{}, hooks{})
	var events []Event
	for i := range 150 {
		events = append(events, Event{Time: at(i), Source: SourceS3, Op: "PutObject"})
	}
	recordAll(t, l, events...)
	for _, tc := range []struct {
		name     string
		f        Filter
		wantLen  int
		wantNext int64
		wantErr  string
	}{
		{name: "default limit", f: Filter{}, wantLen: DefaultLimit, wantNext: 51},
		{name: "limit", f: Filter{Limit: 10}, wantLen: 10, wantNext: 141},
		{name: "limit covering all", f: Filter{Limit: 150}, wantLen: 150},
		{name: "max limit", f: Filter{Limit: MaxLimit}, wantLen: 150},
		{name: "cursor", f: Filter{Before: 11, Limit: 5}, wantLen: 5, wantNext: 6},
		{name: "cursor near the end", f: Filter{Before: 6, Limit: 5}, wantLen: 5},
		{name: "cursor at the start", f: Filter{Before: 1}, wantLen: 0},
		{name: "limit too large", f: Filter{Limit: MaxLimit + 1}, wantErr: "limit 1001"},
		{name: "negative limit", f: Filter{Limit: -1}, wantErr: "limit -1"},
		{name: "negative cursor", f: Filter{Before: -1}, wantErr: "cursor -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := l.Query(t.Context(), tc.f)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Query(%+v) error = %v, want one containing %q", tc.f, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Events) != tc.wantLen || p.Next != tc.wantNext {
				t.Errorf("Query(%+v) = %d events, Next %d; want %d, %d", tc.f, len(p.Events), p.Next, tc.wantLen, tc.wantNext)
			}
		})
	}
}

func TestPagingWhileRecording(t *testing.T) { forEachBackend(t, testPagingWhileRecording) }

func testPagingWhileRecording(t *testing.T, b backend) {
	l := b.open(t, Config{}, hooks{})
	next := 0
	recordSome := func(n int) {
		var events []Event
		for range n {
			events = append(events, Event{Time: at(next), Source: SourceS3, Op: "PutObject", Bucket: fmt.Sprint("b", next%2)})
			next++
		}
		recordAll(t, l, events...)
	}
	recordSome(50)

	for _, tc := range []struct {
		name string
		f    Filter
	}{
		{name: "one bucket", f: Filter{Bucket: "b0", Limit: 7}},
		{name: "everything, one at a time", f: Filter{Limit: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not parallel: the subtests record.
			f := tc.f
			var ids []int64
			var newest int64
			for pages := 0; ; pages++ {
				p, err := l.Query(t.Context(), f)
				if err != nil {
					t.Fatal(err)
				}
				if pages == 0 && len(p.Events) > 0 {
					newest = p.Events[0].ID
				}
				if len(p.Events) > f.Limit {
					t.Fatalf("page of %d events, limit %d", len(p.Events), f.Limit)
				}
				for _, e := range p.Events {
					ids = append(ids, e.ID)
				}
				recordSome(3) // newer events arrive between pages
				if p.Next == 0 {
					break
				}
				f.Before = p.Next
			}
			// Every matching event up to the newest at the first page,
			// once each, newest first. Event i has ID i+1 and bucket
			// b(i%2).
			var want []int64
			for id := newest; id >= 1; id-- {
				if tc.f.Bucket == "" || fmt.Sprint("b", (id-1)%2) == tc.f.Bucket {
					want = append(want, id)
				}
			}
			if diff := cmp.Diff(want, ids); diff != "" {
				t.Errorf("paged IDs mismatch (-want +got):\n%s", diff)
			}
			if newest < 49 { // the newest of the 50 first events in b0
				t.Errorf("first page's newest ID %d, want at least 49", newest)
			}
			for i := 1; i < len(ids); i++ {
				if ids[i] >= ids[i-1] {
					t.Fatalf("IDs not strictly descending: %d after %d", ids[i], ids[i-1])
				}
			}
		})
	}
}

func TestExport(t *testing.T) { forEachBackend(t, testExport) }

func testExport(t *testing.T, b backend) {
	l := b.open(t, Config{}, hooks{})
	// Twice the export chunk, so that the last chunk is empty, and a
	// third of them with another op.
	var events []Event
	for i := range 2 * exportChunk {
		op := "PutObject"
		if i%3 == 0 {
			op = "DeleteObject"
		}
		events = append(events, Event{Time: at(i), Source: SourceS3, Op: op, Key: fmt.Sprint("k\n", i),
			Duration: time.Duration(i) * time.Microsecond})
	}
	recordAll(t, l, events...)

	for _, tc := range []struct {
		name   string
		f      Filter
		wantOp string // "" for any
		want   int
	}{
		{name: "everything, limit and cursor ignored", f: Filter{Limit: 5, Before: 10}, want: 2 * exportChunk},
		{name: "filtered", f: Filter{Op: "DeleteObject"}, wantOp: "DeleteObject", want: (2*exportChunk + 2) / 3},
		{name: "nothing", f: Filter{Op: "GetObject"}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			n, err := l.Export(t.Context(), tc.f, &buf)
			if err != nil {
				t.Fatal(err)
			}
			got := parseJSONL(t, &buf)
			if n != int64(tc.want) || len(got) != tc.want {
				t.Fatalf("Export = %d, %d lines; want %d", n, len(got), tc.want)
			}
			for i, e := range got {
				if i > 0 && e.ID <= got[i-1].ID {
					t.Fatalf("not oldest first: ID %d after %d", e.ID, got[i-1].ID)
				}
				want := events[e.ID-1]
				want.ID = e.ID
				if diff := cmp.Diff(want, e); diff != "" {
					t.Fatalf("line %d mismatch (-want +got):\n%s", i+1, diff)
				}
				if tc.wantOp != "" && e.Op != tc.wantOp {
					t.Fatalf("line %d has op %q, want %q", i+1, e.Op, tc.wantOp)
				}
			}
		})
	}
}

// failingWriter fails once more than limit bytes have been written.
type failingWriter struct{ limit, n int }

var errWriter = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n > w.limit {
		return 0, errWriter
	}
	return len(p), nil
}

func TestExportWriteError(t *testing.T) {
	t.Parallel()
	l := openTest(t, Config{}, hooks{})
	var events []Event
	for i := range 2000 {
		events = append(events, Event{Time: at(i), Source: SourceS3, Op: "PutObject", Key: strings.Repeat("k", 100)})
	}
	recordAll(t, l, events...)
	n, err := l.Export(t.Context(), Filter{}, &failingWriter{limit: 100 << 10})
	if !errors.Is(err, errWriter) {
		t.Errorf("Export to a failing writer = %d, %v; want %v", n, err, errWriter)
	}
	if n <= 0 || n >= 2000 {
		t.Errorf("Export to a failing writer reported %d events, want some but not all", n)
	}
}

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p, want string
		ok      bool
	}{
		{"a", "b", true},
		{"ab", "ac", true},
		{"a\xff", "b", true},
		{"a\xff\xff", "b", true},
		{"\xff", "", false},
		{"é", "\xc3\xaa", true},
	} {
		got, ok := prefixEnd(tc.p)
		if got != tc.want || ok != tc.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", tc.p, got, ok, tc.want, tc.ok)
		}
	}
}
