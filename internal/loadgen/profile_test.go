package loadgen

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"
)

// testProfile builds a CPU-style profile whose samples are stacks of
// function names, innermost first; a name "a+b" is a location where a was
// inlined into b, and "" a location without symbols at address 0x10.
func testProfile(stacks [][]string, values []int64) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		DurationNanos: int64(2 * time.Second),
	}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name, SystemName: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	for i, stack := range stacks {
		s := &profile.Sample{Value: []int64{values[i] / 10_000_000, values[i]}}
		for _, frame := range stack {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Address: 0x10}
			if frame != "" {
				for name := range strings.SplitSeq(frame, "+") {
					loc.Line = append(loc.Line, profile.Line{Function: fn(name)})
				}
			}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func TestTopOf(t *testing.T) {
	t.Parallel()
	const ms = int64(time.Millisecond)
	p := testProfile([][]string{
		{"leaf", "mid", "main"},
		{"leaf", "mid", "main"},
		{"mid", "main"},
		{"rec", "rec", "rec", "main"}, // recursion counts once in cum
		{"inl+outer", "main"},         // inl was inlined into outer
		{"", "main"},                  // no symbols
		{"zero", "main"},              // a zero value is skipped
	}, []int64{30 * ms, 20 * ms, 10 * ms, 40 * ms, 5 * ms, 5 * ms, 0})
	got, err := topOf(p, "", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := &Top{
		SampleType: "cpu", Unit: "nanoseconds", Total: 110 * ms, Duration: 2 * time.Second,
		Funcs: []FuncStat{
			{Name: "leaf", Flat: 50 * ms, Cum: 50 * ms},
			{Name: "rec", Flat: 40 * ms, Cum: 40 * ms},
			{Name: "mid", Flat: 10 * ms, Cum: 60 * ms},
			{Name: "0x10", Flat: 5 * ms, Cum: 5 * ms},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("topOf mismatch (-want +got):\n%s", diff)
	}
	// Another sample type of the same profile: 5 ms is no whole sample.
	all, err := topOf(p, "samples", 100)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]FuncStat{}
	for _, f := range all.Funcs {
		byName[f.Name] = f
	}
	if all.Total != 10 || all.Unit != "count" || byName["main"] != (FuncStat{Name: "main", Cum: 10}) ||
		byName["leaf"] != (FuncStat{Name: "leaf", Flat: 5, Cum: 5}) || byName["inl"] != (FuncStat{}) {
		t.Errorf("samples: total %d %s, functions %+v; want 10 count, main 0/10, leaf 5/5, no inl", all.Total, all.Unit, all.Funcs)
	}
	if _, err := topOf(p, "alloc_space", 5); err == nil || !strings.Contains(err.Error(), `no sample type "alloc_space" (have samples, cpu)`) {
		t.Errorf("topOf(alloc_space) error = %v", err)
	}
	if _, err := topOf(&profile.Profile{}, "", 5); err == nil {
		t.Error("topOf of a profile without sample types succeeded")
	}

	// Inlined frames: the innermost function of a location is the flat one.
	p = testProfile([][]string{{"inl+outer", "main"}}, []int64{30 * ms})
	got, err = topOf(p, "cpu", 10)
	if err != nil {
		t.Fatal(err)
	}
	want = &Top{SampleType: "cpu", Unit: "nanoseconds", Total: 30 * ms, Duration: 2 * time.Second, Funcs: []FuncStat{
		{Name: "inl", Flat: 30 * ms, Cum: 30 * ms},
		{Name: "main", Cum: 30 * ms},
		{Name: "outer", Cum: 30 * ms},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("topOf with inlining mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteTop(t *testing.T) {
	t.Parallel()
	top := &Top{SampleType: "cpu", Unit: "nanoseconds", Total: 1500 * int64(time.Millisecond), Duration: 2 * time.Second, Funcs: []FuncStat{
		{Name: "runtime.memmove", Flat: 600 * int64(time.Millisecond), Cum: 600 * int64(time.Millisecond)},
		{Name: "main.run", Flat: 0, Cum: 1500 * int64(time.Millisecond)},
	}}
	var b strings.Builder
	if err := WriteTop(&b, "CPU", top); err != nil {
		t.Fatal(err)
	}
	want := "CPU: 1.50s cpu in 2s (75% of one core)\n" +
		"      flat  flat%        cum   cum%  function\n" +
		"     0.60s  40.0%      0.60s  40.0%  runtime.memmove\n" +
		"     0.00s   0.0%      1.50s 100.0%  main.run\n"
	if b.String() != want {
		t.Errorf("WriteTop =\n%s\nwant\n%s", b.String(), want)
	}
	for _, tc := range []struct {
		v    int64
		unit string
		want string
	}{
		{512, "bytes", "512B"},
		{3 << 19, "bytes", "1.5MiB"},
		{5 << 30, "bytes", "5.0GiB"},
		{7, "count", "7"},
	} {
		if got := formatValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("formatValue(%d, %s) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

// burnCPU spins for d; it shows as the top function of a CPU profile.
//
//go:noinline
func burnCPU(d time.Duration) uint64 {
	x := uint64(88172645463325252)
	for end := time.Now().Add(d); time.Now().Before(end); {
		for range 10000 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	return x
}

// allocChunks allocates n MiB in 1 MiB slices; it shows as the top function
// of an allocation profile.
//
//go:noinline
func allocChunks(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, 1<<20)
	}
	return out
}

// TestReadTopOfRealProfiles captures a CPU and an allocation profile of
// this process and checks that the functions known to dominate them top
// the lists. Not parallel: a CPU profile is process-wide.
func TestReadTopOfRealProfiles(t *testing.T) {
	dir := t.TempDir()
	cpuPath := filepath.Join(dir, CPUProfile)
	f, err := os.Create(cpuPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatalf("StartCPUProfile: %v", err)
	}
	x := burnCPU(time.Second)
	pprof.StopCPUProfile()
	t.Logf("burnCPU: %#x", x) // keeps its result alive
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	chunks := allocChunks(64)
	runtime.GC() // the allocation profile is as of the last GC
	runtime.GC()
	var allocs bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&allocs, 0); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(chunks)
	if err := os.WriteFile(filepath.Join(dir, AllocsProfile), allocs.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	top, err := ReadTop(cpuPath, "cpu", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Funcs) == 0 || !strings.HasSuffix(top.Funcs[0].Name, "loadgen.burnCPU") || top.Funcs[0].Flat < top.Total/2 {
		t.Errorf("CPU top = %+v (total %d), want loadgen.burnCPU first with most of the samples", top.Funcs, top.Total)
	}
	// The profile's own clock starts a moment after ours: allow for it.
	if top.Duration < 900*time.Millisecond || top.Unit != "nanoseconds" {
		t.Errorf("CPU profile duration %v unit %s, want about 1s in nanoseconds", top.Duration, top.Unit)
	}
	// In use, not allocated: alloc_space counts everything this process
	// ever allocated, and the package's other tests (more of them with
	// -count 2) allocate gigabytes before this one; the 64 live chunks
	// are nearly all of what is in use at the last GC.
	top, err = ReadTop(filepath.Join(dir, AllocsProfile), "inuse_space", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Funcs) == 0 || !strings.HasSuffix(top.Funcs[0].Name, "loadgen.allocChunks") || top.Funcs[0].Flat < 32<<20 {
		t.Errorf("inuse_space top = %+v, want loadgen.allocChunks first with about 64 MiB", top.Funcs)
	}
	allocTop, err := ReadTop(filepath.Join(dir, AllocsProfile), "alloc_space", 3)
	if err != nil || len(allocTop.Funcs) == 0 {
		t.Fatalf("alloc_space top = %+v, %v; want some functions", allocTop, err)
	}

	var out strings.Builder
	if err := WriteProfileTops(&out, dir, 3); err != nil {
		t.Fatal(err)
	}
	wants := []string{"CPU (" + cpuPath + "): ", "loadgen.burnCPU\n", "\n\nAllocations (", " alloc_space\n"}
	for _, f := range allocTop.Funcs {
		wants = append(wants, f.Name+"\n") // the same top as ReadTop's
	}
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("WriteProfileTops output lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := ReadTop(filepath.Join(dir, "missing.pprof"), "", 5); err == nil {
		t.Error("ReadTop of a missing file succeeded")
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.pprof"), []byte("not a profile"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTop(filepath.Join(dir, "junk.pprof"), "", 5); err == nil || !strings.Contains(err.Error(), "junk.pprof") {
		t.Errorf("ReadTop of junk = %v, want an error naming the file", err)
	}
	var none strings.Builder
	if err := WriteProfileTops(&none, t.TempDir(), 3); err != nil || none.Len() != 0 {
		t.Errorf("WriteProfileTops of a directory without profiles = %q, %v; want nothing", none.String(), err)
	}
}

// fakePprof serves synthetic profiles as net/http/pprof does and records
// the requests.
type fakePprof struct {
	mu       sync.Mutex // guards requests, progress
	requests []string
	progress []string // the load's progress output when each request came
	cpu      []byte   // served for every CPU profile
	allocs   []byte   // served for every allocs profile
	load     *syncWriter
}

func newFakePprof(t *testing.T) (*fakePprof, string) {
	t.Helper()
	f := &fakePprof{}
	var b bytes.Buffer
	if err := testProfile([][]string{{"srv.handle", "srv.serve"}}, []int64{int64(time.Second)}).Write(&b); err != nil {
		t.Fatal(err)
	}
	f.cpu = bytes.Clone(b.Bytes())
	b.Reset()
	ap := testProfile([][]string{{"srv.alloc", "srv.serve"}}, []int64{1 << 20})
	ap.SampleType = []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}}
	if err := ap.Write(&b); err != nil {
		t.Fatal(err)
	}
	f.allocs = b.Bytes()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakePprof) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.RequestURI())
	if f.load != nil {
		f.progress = append(f.progress, f.load.String())
	}
	f.mu.Unlock()
	switch r.URL.Path {
	case "/debug/pprof/":
		_, _ = w.Write([]byte("<html>profiles</html>"))
	case "/debug/pprof/profile":
		_, _ = w.Write(f.cpu)
	case "/debug/pprof/allocs":
		_, _ = w.Write(f.allocs)
	case "/debug/pprof/heap", "/debug/pprof/goroutine":
		_, _ = w.Write(f.allocs)
	default:
		http.NotFound(w, r)
	}
}

// TestRunMixedProfile checks that the profiles cover every round of the
// profiled target, and only those, merged into one file each.
func TestRunMixedProfile(t *testing.T) {
	t.Parallel()
	fp, pprofURL := newFakePprof(t)
	_, a := newFake(t)
	_, b := newFake(t)
	dir := t.TempDir()
	cfg := quickConfig()
	cfg.Rounds = 2
	cfg.Profile = &Profiler{URL: pprofURL, Dir: dir, Target: "b"}
	progress := &syncWriter{}
	cfg.Progress = progress
	fp.mu.Lock()
	fp.load = progress
	fp.mu.Unlock()
	if _, err := RunMixed(t.Context(), cfg, []Target{target("a", a.URL), target("b", b.URL)}); err != nil {
		t.Fatalf("RunMixed: %v", err)
	}
	fp.mu.Lock()
	got := slices.Clone(fp.requests)
	seen := slices.Clone(fp.progress)
	fp.mu.Unlock()
	// The two fetches of a round run concurrently: sort each pair.
	for i := 1; i+1 < min(5, len(got)); i += 2 {
		if got[i] > got[i+1] {
			got[i], got[i+1] = got[i+1], got[i]
			seen[i], seen[i+1] = seen[i+1], seen[i]
		}
	}
	// Each round's profiles are requested as that round of b starts: after
	// the same round of a, before b's round ends.
	for i, uri := range got {
		if !strings.HasPrefix(uri, "/debug/pprof/profile") {
			continue
		}
		round := 1 + strings.Count(strings.Join(got[:i], " "), "/debug/pprof/profile")
		if done := fmt.Sprintf("a round %d/2: done", round); !strings.Contains(seen[i], done) {
			t.Errorf("CPU profile %d requested before %q; progress so far:\n%s", round, done, seen[i])
		}
		if done := fmt.Sprintf("b round %d/2: done", round); strings.Contains(seen[i], done) {
			t.Errorf("CPU profile %d requested after %q", round, done)
		}
	}
	want := []string{"/debug/pprof/",
		"/debug/pprof/allocs?seconds=1", "/debug/pprof/profile?seconds=1", // round 1 of b
		"/debug/pprof/allocs?seconds=1", "/debug/pprof/profile?seconds=1", // round 2 of b
		"/debug/pprof/heap", "/debug/pprof/goroutine"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pprof requests mismatch (-want +got):\n%s", diff)
	}
	cpu, err := ReadTop(filepath.Join(dir, CPUProfile), "cpu", 5)
	if err != nil {
		t.Fatal(err)
	}
	if cpu.Total != 2*int64(time.Second) || len(cpu.Funcs) == 0 || cpu.Funcs[0].Name != "srv.handle" {
		t.Errorf("merged CPU profile: total %v, top %+v; want 2s (two rounds) in srv.handle", time.Duration(cpu.Total), cpu.Funcs)
	}
	allocs, err := ReadTop(filepath.Join(dir, AllocsProfile), "alloc_space", 5)
	if err != nil {
		t.Fatal(err)
	}
	if allocs.Total != 2<<20 || len(allocs.Funcs) == 0 || allocs.Funcs[0].Name != "srv.alloc" {
		t.Errorf("merged allocs profile: total %d, top %+v; want 2 MiB in srv.alloc", allocs.Total, allocs.Funcs)
	}
	for _, name := range []string{HeapProfile, GoroutineProfile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v, want a non-empty file", name, err)
		}
	}

	// A profiled target that is not among the targets, or a pprof
	// listener that does not answer, fails before any work.
	fa, a2 := newFake(t)
	cfg.Progress = nil
	cfg.Profile = &Profiler{URL: pprofURL, Dir: t.TempDir(), Target: "c"}
	if _, err := RunMixed(t.Context(), cfg, []Target{target("a", a2.URL)}); err == nil || !strings.Contains(err.Error(), `profile: "c" is not one of the targets`) {
		t.Errorf("RunMixed with profile target c: %v", err)
	}
	notPprof := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notPprof.Close)
	cfg.Profile = &Profiler{URL: notPprof.URL, Dir: t.TempDir()}
	if _, err := RunMixed(t.Context(), cfg, []Target{target("a", a2.URL)}); err == nil || !strings.Contains(err.Error(), "profile pprof index: GET "+notPprof.URL+"/debug/pprof/: 404 Not Found") {
		t.Errorf("RunMixed with a pprof listener answering 404: %v", err)
	}
	fa.mu.Lock()
	n := len(fa.requests)
	fa.mu.Unlock()
	if n != 0 {
		t.Errorf("S3 target saw %d requests before the profiler check failed, want 0", n)
	}
}

// TestProfilerErrorsHideCredentials: a --pprof URL with user information
// (credentials of a proxy in front of the listener, whose user name may
// be a token) is quoted in errors with it masked whole; net/http's own
// errors mask only the password.
func TestProfilerErrorsHideCredentials(t *testing.T) {
	t.Parallel()
	const secret = "tok3nSecret"
	notPprof := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notPprof.Close)
	host := strings.TrimPrefix(notPprof.URL, "http://")
	for _, tc := range []struct {
		name, url, want string
	}{
		{name: "answer 404", url: "http://" + secret + "@" + host, want: "GET http://***@" + host + "/debug/pprof/: 404 Not Found"},
		{name: "answer 404, user and password", url: "http://ak:" + secret + "@" + host, want: "GET http://***@" + host + "/debug/pprof/: 404 Not Found"},
		// Port 1 (tcpmux): nothing listens there.
		{name: "no listener", url: "http://" + secret + "@127.0.0.1:1", want: `"http://***@127.0.0.1:1/debug/pprof/"`},
		{name: "unparsable", url: "http://" + secret + "@127.0.0.1:1/%zz", want: "the pprof URL (not shown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &Profiler{URL: tc.url, Dir: t.TempDir()}
			err := p.check(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check() = %v, want an error containing %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("check() = %v: the error shows the secret in the URL", err)
			}
		})
	}
}

// syncWriter is a strings.Builder safe for concurrent writes.
type syncWriter struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
