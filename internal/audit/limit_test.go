package audit

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{name: "empty"},
		{name: "short", in: "photos/a.jpg", want: "photos/a.jpg"},
		{name: "exactly the limit", in: strings.Repeat("k", MaxFieldBytes), want: strings.Repeat("k", MaxFieldBytes)},
		{name: "one over", in: strings.Repeat("k", MaxFieldBytes+1), want: strings.Repeat("k", MaxFieldBytes-3) + "…"},
		{name: "1000 bytes", in: strings.Repeat("k", 1000), want: strings.Repeat("k", MaxFieldBytes-3) + "…"},
		// 2 + 41×3 = 125 bytes of whole runes; the cut at 125 falls on a
		// rune's start, one byte later would split "é".
		{name: "cut at a rune boundary", in: "ab" + strings.Repeat("日", 50), want: "ab" + strings.Repeat("日", 41) + "…"},
		{name: "cut backs up over a split rune", in: "a" + strings.Repeat("日", 50), want: "a" + strings.Repeat("日", 41) + "…"},
		{name: "invalid UTF-8 is cut where it is", in: strings.Repeat("\xff", 200), want: strings.Repeat("\xff", MaxFieldBytes-3) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := truncate(tc.in)
			if got != tc.want {
				t.Errorf("truncate(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if len(got) > MaxFieldBytes {
				t.Errorf("truncate(%q) has %d bytes, more than %d", tc.in, len(got), MaxFieldBytes)
			}
			if utf8.ValidString(tc.in) && !utf8.ValidString(got) {
				t.Errorf("truncate(%q) = %q split a rune", tc.in, got)
			}
		})
	}
}

func TestGroupDigits(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 4213: "4,213",
		1234567: "1,234,567", -4213: "-4,213"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}

// boundedLog opens a log with the given limits whose minute windows end
// only when the returned function is called (with the fake clock a minute
// on), and which writes only on Flush.
func boundedLog(t *testing.T, perSource, perMinute int) (*Log, *fakeClock, func()) {
	t.Helper()
	clock := newFakeClock(t0.Truncate(time.Minute))
	tick := make(chan time.Time)
	l := openTest(t, Config{PerSource: perSource, PerMinute: perMinute, Clock: clock.Now, FlushInterval: time.Hour,
		QueueSize: 100000}, hooks{tick: tick})
	nextMinute := func() {
		t.Helper()
		clock.Advance(time.Minute)
		tick <- clock.Now()
		if err := l.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return l, clock, nextMinute
}

// denied is an anonymous GetObject refused with AccessDenied from ip.
func denied(ip string, i int) Event {
	return Event{Time: t0.Add(time.Duration(i)), Source: SourceS3, Op: "GetObject", Status: 403, Code: "AccessDenied",
		Bucket: "photos", Key: fmt.Sprint("k", i), SourceIP: ip, RequestID: fmt.Sprint("R", i), BytesOut: 10}
}

func TestRecordBounded(t *testing.T) {
	t.Parallel()
	l, _, nextMinute := boundedLog(t, 3, 1000)
	for i := range 10 {
		if !l.RecordBounded(denied("203.0.113.9", i)) {
			t.Fatalf("RecordBounded %d refused", i)
		}
	}
	// A bad signature from another address is another source.
	sig := denied("198.51.100.7", 100)
	sig.AccessKey, sig.Code, sig.Op = "AKCLAIMED", "SignatureDoesNotMatch", "PutObject"
	for range 4 {
		l.RecordBounded(sig)
	}
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Until the minute ends, only the events kept in full are there.
	if got := len(queryAll(t, l, Filter{})); got != 6 {
		t.Errorf("before the minute ends: %d events, want 3 + 3 in full", got)
	}
	want := Stats{Recorded: 6, Aggregated: 8, Written: 6, Stored: 6, Untrusted: 6}
	if diff := cmp.Diff(want, l.Stats(), ignoreDisk); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}

	nextMinute()
	got := queryAll(t, l, Filter{})
	if len(got) != 8 {
		t.Fatalf("after the minute: %d events, want 6 in full and 2 summaries: %+v", len(got), got)
	}
	// A summary's time is its last request's, its duration the time from
	// its first to its last (events 3 to 9 of the first source).
	wantSummaries := []Event{
		{Time: t0.Add(9), Source: SourceS3, Op: "GetObject", Status: 403, Code: "AccessDenied",
			Bucket: "photos", SourceIP: "203.0.113.9", BytesOut: 70, Duration: 6, Count: 7, Untrusted: true,
			Target: "… and 7 more AccessDenied from 203.0.113.9 in this minute"},
		{Time: t0.Add(100), Source: SourceS3, Op: "PutObject", Status: 403, Code: "SignatureDoesNotMatch",
			Bucket: "photos", SourceIP: "198.51.100.7", AccessKey: "AKCLAIMED", BytesOut: 10, Count: 1, Untrusted: true,
			Target: "… and 1 more SignatureDoesNotMatch from 198.51.100.7 in this minute"},
	}
	var summaries []Event
	var requests int64
	for _, e := range got {
		requests += max(e.Count, 1)
		if e.Count > 0 {
			summaries = append(summaries, e)
		} else if e.Key == "" || e.RequestID == "" {
			t.Errorf("event in full lost its key or request ID: %+v", e)
		}
	}
	sortEvents := cmpopts.SortSlices(func(a, b Event) bool { return a.Code < b.Code })
	if diff := cmp.Diff(wantSummaries, summaries, cmpopts.IgnoreFields(Event{}, "ID"), sortEvents); diff != "" {
		t.Errorf("summaries mismatch (-want +got):\n%s", diff)
	}
	if requests != 14 {
		t.Errorf("the events stand for %d requests, want the 14 recorded", requests)
	}
	want = Stats{Recorded: 6, Aggregated: 8, Summaries: 2, Written: 8, Stored: 8, Untrusted: 8}
	if diff := cmp.Diff(want, l.Stats(), ignoreDisk); diff != "" {
		t.Errorf("Stats mismatch (-want +got):\n%s", diff)
	}

	// A new minute starts afresh: the source gets its full events again,
	// and a minute that counted nothing writes no summary.
	for i := range 3 {
		l.RecordBounded(denied("203.0.113.9", i))
	}
	nextMinute()
	if got := len(queryAll(t, l, Filter{})); got != 11 {
		t.Errorf("after a second minute with 3 events: %d events, want 11", got)
	}
}

func TestRecordBoundedLimits(t *testing.T) {
	t.Parallel()
	const perSource, perMinute = 2, 10
	for _, tc := range []struct {
		name    string
		sources int // distinct source IPs, events sent round-robin
		events  int
		// What the minute must hold.
		wantFull, wantSummaries int
		wantOther               int64 // Count of the catch-all summary, 0 for none
	}{
		{name: "one source", sources: 1, events: 1000, wantFull: 2, wantSummaries: 1},
		{name: "sources within the limit", sources: 5, events: 50, wantFull: 10, wantSummaries: 5},
		// 10 sources are tracked: 2 full each would be 20, but only 10
		// full events a minute are allowed.
		{name: "full events over all sources", sources: 10, events: 100, wantFull: 10, wantSummaries: 10},
		// Sources past the 10th share one count: 90 sources × 10 events.
		{name: "sources past the limit", sources: 100, events: 1000, wantFull: 10, wantSummaries: 11, wantOther: 900},
		{name: "a source per event", sources: 5000, events: 5000, wantFull: 10, wantSummaries: 1, wantOther: 4990},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, _, nextMinute := boundedLog(t, perSource, perMinute)
			for i := range tc.events {
				l.RecordBounded(denied(fmt.Sprintf("10.0.%d.%d", i%tc.sources/256, i%tc.sources%256), i))
			}
			if n := len(l.limit.sources); n > perMinute {
				t.Errorf("%d sources tracked, more than %d", n, perMinute)
			}
			nextMinute()
			var full, summaries int
			var requests, other int64
			for _, e := range queryAll(t, l, Filter{}) {
				requests += max(e.Count, 1)
				switch {
				case e.Count == 0:
					full++
				case e.SourceIP == "" && tc.sources > 1:
					other = e.Count
					summaries++
					if !strings.Contains(e.Target, "more AccessDenied from sources past the 10 counted one by one") {
						t.Errorf("catch-all summary target %q", e.Target)
					}
				default:
					summaries++
				}
			}
			if full != tc.wantFull || summaries != tc.wantSummaries || other != tc.wantOther {
				t.Errorf("%d in full, %d summaries, catch-all count %d; want %d, %d, %d",
					full, summaries, other, tc.wantFull, tc.wantSummaries, tc.wantOther)
			}
			if requests != int64(tc.events) {
				t.Errorf("the events stand for %d requests, want %d", requests, tc.events)
			}
			if rows := full + summaries; rows > 2*perMinute+1 {
				t.Errorf("%d events in a minute, more than 2×%d+1", rows, perMinute)
			}
		})
	}
}

// TestRecordBoundedFlood sends random refused and unauthenticated events
// over several minutes: each minute adds at most 2×PerMinute+2 events,
// all of at most MaxFieldBytes per field, and every event is accounted
// for.
func TestRecordBoundedFlood(t *testing.T) {
	t.Parallel()
	const perSource, perMinute, minutes = 3, 50, 4
	l, clock, nextMinute := boundedLog(t, perSource, perMinute)
	r := rand.New(rand.NewPCG(1, 2))
	long := strings.Repeat("x", 4000)
	sent := 0
	for m := range minutes {
		for range 5000 {
			e := denied(fmt.Sprint("198.51.100.", r.IntN(80)), sent)
			e.Key = long[:r.IntN(len(long))]
			switch r.IntN(3) {
			case 0:
				e.AccessKey, e.Code = long[:r.IntN(300)], "InvalidAccessKeyId" // claimed keys of any length
			case 1:
				e.Status, e.Code = 200, "" // anonymous, allowed
			}
			e.Time = clock.Now()
			l.RecordBounded(e)
			sent++
		}
		before := l.Stats().Written
		nextMinute()
		// The sources past the limit are counted per outcome, of which
		// this flood has two (refused, served).
		if added := l.Stats().Written - before; added > 2*perMinute+2 {
			t.Errorf("minute %d added %d events, more than 2×%d+2", m, added, perMinute)
		}
	}
	var requests int64
	for _, e := range queryAll(t, l, Filter{}) {
		requests += max(e.Count, 1)
		for _, f := range []string{e.Source, e.Op, e.Code, e.Bucket, e.Key, e.Target, e.User, e.AccessKey, e.SourceIP, e.RequestID} {
			if len(f) > MaxFieldBytes {
				t.Fatalf("event %d has a field of %d bytes: %.40q…", e.ID, len(f), f)
			}
		}
	}
	if st := l.Stats(); requests != int64(sent) || st.Dropped != 0 || st.Recorded+st.Aggregated != uint64(sent) {
		t.Errorf("%d requests accounted for in the log, Stats %+v; want all %d", requests, st, sent)
	}
}

func TestRecordBoundedMixedSummary(t *testing.T) {
	t.Parallel()
	l, _, nextMinute := boundedLog(t, 1, 1)
	// One source tracked; the others go to the catch-all, whose summary
	// keeps only what they share.
	l.RecordBounded(denied("192.0.2.1", 0))
	a := denied("192.0.2.2", 1)
	b := denied("192.0.2.3", 2)
	b.Op, b.Status, b.Code, b.Bucket = "PutObject", 401, "", "other"
	l.RecordBounded(a)
	l.RecordBounded(b)
	nextMinute()
	page := queryAll(t, l, Filter{})
	if len(page) != 2 || page[0].Count != 2 {
		t.Fatalf("events %+v, want the one in full and a summary of 2", page)
	}
	s := page[0]
	// The two differ in status (401, 403): the summary has 403, a status
	// of the class both are in, so that --failed finds it.
	want := Event{ID: s.ID, Time: t0.Add(2), Source: SourceS3, Status: 403, BytesOut: 20, Duration: 1, Count: 2, Untrusted: true,
		Target: "… and 2 more refused requests from sources past the 1 counted one by one, in this minute"}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("catch-all summary mismatch (-want +got):\n%s", diff)
	}
}

func TestRecordBoundedTruncates(t *testing.T) {
	t.Parallel()
	l, _, _ := boundedLog(t, 5, 100)
	long := strings.Repeat("k", 1000)
	e := Event{Time: t0, Source: SourceS3, Op: "GetObject", Status: 403, Code: "AccessDenied", Bucket: long, Key: long,
		Target: long, User: long, AccessKey: long, SourceIP: long, RequestID: long}
	l.RecordBounded(e)
	// Record keeps authenticated events as they are.
	e.Status, e.Code = 200, ""
	l.Record(e)
	if err := l.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := queryAll(t, l, Filter{})
	if len(got) != 2 {
		t.Fatalf("%d events, want 2", len(got))
	}
	cut := strings.Repeat("k", MaxFieldBytes-3) + "…"
	if b := got[1]; b.Bucket != cut || b.Key != cut || b.Target != cut || b.User != cut || b.AccessKey != cut ||
		b.SourceIP != cut || b.RequestID != cut {
		t.Errorf("RecordBounded stored %+v, want every long field cut to %d bytes", b, MaxFieldBytes)
	}
	if f := got[0]; f.Key != long || f.AccessKey != long {
		t.Errorf("Record cut its event: key of %d bytes, want %d", len(f.Key), len(long))
	}
}

func TestCloseWritesSummaries(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/audit.db"
	l, err := Open(Config{Path: path, PerSource: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		l.RecordBounded(denied("203.0.113.9", i))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Recorded != 1 || st.Aggregated != 49 || st.Summaries != 1 || st.Written != 2 {
		t.Errorf("Stats after Close = %+v, want 1 recorded, 49 aggregated into 1 summary, 2 written", st)
	}
	// Counted events after Close are dropped, not counted into a window
	// that will never be written.
	if l.RecordBounded(denied("203.0.113.9", 99)) {
		t.Error("RecordBounded on a closed log accepted")
	}
	l = openTest(t, Config{Path: path}, hooks{})
	got := queryAll(t, l, Filter{})
	if len(got) != 2 || got[0].Count != 49 {
		t.Errorf("after reopening: %+v, want the event in full and a summary of 49", got)
	}
}

// Not parallel: AllocsPerRun counts the allocations of the whole process.
func TestRecordBoundedAllocations(t *testing.T) {
	const runs = 100
	l := openHeld(t, runs+1)
	l.limit.perSource = runs + 2 // every call records in full, on a held queue
	l.limit.perMinute = 1000
	e := denied("203.0.113.9", 0)
	l.RecordBounded(e) // the source's first event makes its tally
	if n := testing.AllocsPerRun(runs, func() { l.RecordBounded(e) }); n != 0 {
		t.Errorf("RecordBounded of a known source allocates %v times per call, want 0", n)
	}
	l.limit.perSource = 0 // from now on counted
	if n := testing.AllocsPerRun(runs, func() { l.RecordBounded(e) }); n != 0 {
		t.Errorf("RecordBounded of a counted event allocates %v times per call, want 0", n)
	}
	if st := l.Stats(); st.Aggregated < runs {
		t.Errorf("Stats = %+v: want the last %d counted", st, runs)
	}
}

// TestSummaryFilters: the filters an operator uses (coffer admin audit ls
// --failed, --source, --since) find the summaries with the requests they
// stand for. A shared tally used to blank what differed (status 0 for a
// mix of 401 and 403, source "" for a mix of S3 and admin) and date a
// summary at its minute's start, before a --since within the minute.
func TestSummaryFilters(t *testing.T) {
	t.Parallel()
	l, clock, nextMinute := boundedLog(t, 1, 1)
	start := clock.Now()
	l.RecordBounded(denied("192.0.2.1", 0)) // the one source counted by itself
	// Sources past the limit: refused S3 requests (401 and 403),
	// refused admin requests, and anonymous S3 reads that were served.
	var sent []Event
	for i := range 4 {
		e := denied(fmt.Sprint("192.0.2.", 10+i), i)
		e.Time = start.Add(time.Duration(40+i) * time.Second)
		if i%2 == 1 {
			e.Status, e.Code = 401, ""
		}
		sent = append(sent, e)
		a := e
		a.Source, a.Op = SourceAdmin, "admin:CreateUser"
		sent = append(sent, a)
		ok := e
		ok.Status, ok.Code = 200, ""
		sent = append(sent, ok)
	}
	for _, e := range sent {
		l.RecordBounded(e)
	}
	nextMinute()
	requests := func(f Filter) int64 {
		t.Helper()
		var n int64
		for _, e := range queryAll(t, l, f) {
			n += max(e.Count, 1)
		}
		return n
	}
	since := start.Add(30 * time.Second) // within the minute, before its last requests
	for _, tc := range []struct {
		name string
		f    Filter
		want int64
	}{
		{"all", Filter{}, 13},
		{"failed", Filter{Failed: true}, 9},
		{"succeeded", Filter{Succeeded: true}, 4},
		{"source s3", Filter{Source: SourceS3}, 9},
		{"source admin", Filter{Source: SourceAdmin}, 4},
		{"failed admin", Filter{Source: SourceAdmin, Failed: true}, 4},
		{"since the middle of the minute", Filter{Since: since}, 12},
		{"until the middle of the minute", Filter{Until: since}, 1},
	} {
		if got := requests(tc.f); got != tc.want {
			t.Errorf("%s: the events found stand for %d requests, want %d", tc.name, got, tc.want)
		}
	}
}

// TestRecordBoundedByNetwork: a source is a client's address (an IPv6
// address's /64), not what the client claims. One address cycling
// through made-up access key IDs used to be a new source with each key:
// 1,000 keys a minute made 2,001 events a minute from one address.
func TestRecordBoundedByNetwork(t *testing.T) {
	t.Parallel()
	const perSource, perMinute = 5, 1000
	l, _, nextMinute := boundedLog(t, perSource, perMinute)
	send := func(ip string, n int) {
		for i := range n {
			e := denied(ip, i)
			e.AccessKey, e.Code = fmt.Sprintf("AKFAKE%06d", i), "InvalidAccessKeyId"
			l.RecordBounded(e)
		}
	}
	send("203.0.113.9", 1000)
	for i := range 100 { // 100 addresses of one /64
		send(fmt.Sprintf("2001:db8:1:2::%x", i+1), 10)
	}
	send("2001:db8:1:3::1", 10)    // another /64
	send("::ffff:203.0.113.9", 10) // the first address, IPv4-mapped
	nextMinute()
	got := queryAll(t, l, Filter{})
	type source struct {
		ip          string
		full, count int64
	}
	bySource := map[string]*source{}
	for _, e := range got {
		ip := e.SourceIP // an address, or a summary's /64
		if a, err := netip.ParseAddr(ip); err == nil {
			switch {
			case a.Is4In6():
				ip = a.Unmap().String()
			case a.Is6():
				p, _ := a.Prefix(64)
				ip = p.String()
			}
		}
		s := bySource[ip]
		if s == nil {
			s = &source{ip: ip}
			bySource[ip] = s
		}
		if e.Count == 0 {
			s.full++
		} else {
			s.count += e.Count
			if e.AccessKey != "" || e.Code != "InvalidAccessKeyId" || e.Status != 403 {
				t.Errorf("summary %+v: want the code and status, and no access key (they differ)", e)
			}
		}
	}
	want := map[string]source{
		"203.0.113.9":       {"203.0.113.9", perSource, 1010 - perSource},
		"2001:db8:1:2::/64": {"2001:db8:1:2::/64", perSource, 1000 - perSource},
		"2001:db8:1:3::/64": {"2001:db8:1:3::1", perSource, 10 - perSource},
	}
	if len(bySource) != len(want) {
		t.Errorf("%d sources, want %d: %d events", len(bySource), len(want), len(got))
	}
	for k, w := range want {
		g := bySource[k]
		if g == nil {
			t.Errorf("no events of source %s", k)
			continue
		}
		if g.full != w.full || g.count != w.count {
			t.Errorf("source %s: %d in full and %d counted, want %d and %d", k, g.full, g.count, w.full, w.count)
		}
	}
	// The summary of one address names it; that of several addresses of
	// a /64 names the network, as does its Target.
	for _, e := range got {
		if e.Count > 0 && strings.HasPrefix(e.SourceIP, "2001:db8:1:2:") {
			if e.SourceIP != "2001:db8:1:2::/64" || !strings.Contains(e.Target, "from 2001:db8:1:2::/64 in this minute") {
				t.Errorf("summary of a /64: source IP %q, target %q", e.SourceIP, e.Target)
			}
		}
	}
	if n := len(got); n > 3*(perSource+1) {
		t.Errorf("%d events for 3 sources, more than %d", n, 3*(perSource+1))
	}
}
