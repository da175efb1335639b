package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/coffer-s3/coffer/internal/redact"
)

// Profiler captures pprof profiles from one target's pprof listener (coffer
// serve --pprof, or any server exposing net/http/pprof) while a benchmark
// runs.
//
// During every round of that target it records a CPU profile and the
// allocations made (a delta of the allocs profile) over the round, so that
// with several targets interleaved the profiles cover this target's load
// alone. The rounds are merged into Dir/cpu.pprof and Dir/allocs.pprof.
// After the last round it saves the live heap (Dir/heap.pprof) and the
// goroutines (Dir/goroutine.pprof).
type Profiler struct {
	URL    string // pprof listener, e.g. http://127.0.0.1:6060
	Dir    string // where the profiles are written
	Target string // name of the target URL belongs to; "" means the first
}

// The files a Profiler writes.
const (
	CPUProfile       = "cpu.pprof"
	AllocsProfile    = "allocs.pprof"
	HeapProfile      = "heap.pprof"
	GoroutineProfile = "goroutine.pprof"
)

// check fails unless the pprof listener answers, so that a run with a
// wrong --pprof fails before it prepares any objects.
func (p *Profiler) check(ctx context.Context) error {
	_, err := p.get(ctx, "/debug/pprof/", "pprof index", 10*time.Second)
	return err
}

// profiling is the state of a Profiler during one run.
type profiling struct {
	p           *Profiler
	cpu, allocs []*profile.Profile // one per round
}

// roundCapture is the capture of one round, in flight.
type roundCapture struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	cpu    *profile.Profile
	allocs *profile.Profile
	errs   [2]error
}

// start begins capturing profiles over d (whole seconds, at least 1).
func (ps *profiling) start(ctx context.Context, d time.Duration) *roundCapture {
	secs := strconv.Itoa(max(int(d/time.Second), 1))
	ctx, cancel := context.WithCancel(ctx)
	c := &roundCapture{cancel: cancel}
	timeout := d + 30*time.Second
	c.wg.Go(func() {
		c.cpu, c.errs[0] = ps.p.fetchProfile(ctx, "/debug/pprof/profile?seconds="+secs, CPUProfile, timeout)
	})
	c.wg.Go(func() {
		c.allocs, c.errs[1] = ps.p.fetchProfile(ctx, "/debug/pprof/allocs?seconds="+secs, AllocsProfile, timeout)
	})
	return c
}

// abort ends c and waits for it; its profiles are dropped.
func (c *roundCapture) abort() {
	c.cancel()
	c.wg.Wait()
}

// finish waits for c and keeps its profiles.
func (ps *profiling) finish(c *roundCapture) error {
	c.wg.Wait()
	c.cancel()
	if err := errors.Join(c.errs[:]...); err != nil {
		return err
	}
	ps.cpu = append(ps.cpu, c.cpu)
	ps.allocs = append(ps.allocs, c.allocs)
	return nil
}

// write merges the rounds' profiles into Dir and fetches the heap and
// goroutine profiles.
func (ps *profiling) write(ctx context.Context) error {
	if err := os.MkdirAll(ps.p.Dir, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		ps   []*profile.Profile
	}{{CPUProfile, ps.cpu}, {AllocsProfile, ps.allocs}} {
		merged, err := profile.Merge(f.ps)
		if err != nil {
			return fmt.Errorf("profile %s: merge rounds: %w", f.name, err)
		}
		if err := writeProfile(filepath.Join(ps.p.Dir, f.name), merged); err != nil {
			return fmt.Errorf("profile %s: %w", f.name, err)
		}
	}
	for _, f := range []struct{ path, name string }{
		{"/debug/pprof/heap", HeapProfile},
		{"/debug/pprof/goroutine", GoroutineProfile},
	} {
		data, err := ps.p.get(ctx, f.path, f.name, 30*time.Second)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ps.p.Dir, f.name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func writeProfile(path string, p *profile.Profile) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fetchProfile GETs and parses a profile.
func (p *Profiler) fetchProfile(ctx context.Context, path, name string, timeout time.Duration) (*profile.Profile, error) {
	data, err := p.get(ctx, path, name, timeout)
	if err != nil {
		return nil, err
	}
	prof, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("profile %s: parse the answer of %s: %w", name, p.shown(path), err)
	}
	return prof, nil
}

func (p *Profiler) endpoint(path string) string {
	return strings.TrimSuffix(p.URL, "/") + path
}

// shown is the URL of path on the pprof listener as messages quote it:
// --pprof may carry credentials for a proxy in front of the listener, and
// the user name may be a token, so the user information is masked whole.
func (p *Profiler) shown(path string) string {
	u, err := url.Parse(p.endpoint(path))
	if err != nil {
		return "the pprof URL (not shown: it does not parse, and may hold credentials)"
	}
	return redact.URL(u)
}

// get GETs path from the pprof listener.
func (p *Profiler) get(ctx context.Context, path, name string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.endpoint(path), nil)
	if err != nil {
		// Not err, which quotes the URL whole.
		return nil, fmt.Errorf("profile %s: %s: not a valid pprof URL", name, p.shown(path))
	}
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
	resp, err := hc.Do(req)
	if err != nil {
		// net/http's *url.Error masks only the password.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			ue.URL = p.shown(path)
		}
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("profile %s: GET %s: %s: %s", name, p.shown(path), resp.Status, strings.TrimSpace(string(msg)))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("profile %s: GET %s: %w", name, p.shown(path), err)
	}
	return data, nil
}

// Top is the functions of a profile with the largest flat values of one
// sample type, as `go tool pprof -top` lists them.
type Top struct {
	SampleType string        // e.g. cpu, alloc_space
	Unit       string        // e.g. nanoseconds, bytes
	Total      int64         // sum of the sample type over all samples
	Duration   time.Duration // time the profile covers; 0 if not recorded
	Funcs      []FuncStat    // by flat value, largest first
}

// FuncStat is one function's share of a profile: Flat counts the samples
// in which it was the innermost frame, Cum those in which it was anywhere
// on the stack (once per sample, however often it recurs). Inlined calls
// count as frames of their own.
type FuncStat struct {
	Name      string
	Flat, Cum int64
}

// ReadTop reads the profile at path and returns its n functions with the
// largest flat values of sampleType, or of the profile's default sample
// type if sampleType is "".
func ReadTop(path, sampleType string, n int) (*Top, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t, err := topOf(p, sampleType, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// topOf computes the top n functions of p by flat value of sampleType.
func topOf(p *profile.Profile, sampleType string, n int) (*Top, error) {
	if len(p.SampleType) == 0 {
		return nil, errors.New("profile has no sample types")
	}
	if sampleType == "" {
		sampleType = p.DefaultSampleType
	}
	idx := len(p.SampleType) - 1 // pprof's default: the last type
	if sampleType != "" {
		idx = slices.IndexFunc(p.SampleType, func(st *profile.ValueType) bool { return st.Type == sampleType })
		if idx < 0 {
			var have []string
			for _, st := range p.SampleType {
				have = append(have, st.Type)
			}
			return nil, fmt.Errorf("no sample type %q (have %s)", sampleType, strings.Join(have, ", "))
		}
	}
	t := &Top{SampleType: p.SampleType[idx].Type, Unit: p.SampleType[idx].Unit, Duration: time.Duration(p.DurationNanos)}
	flat := map[string]int64{}
	cum := map[string]int64{}
	seen := map[string]bool{}
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v == 0 {
			continue
		}
		t.Total += v
		clear(seen)
		leaf := true
		for _, loc := range s.Location {
			// Line[0] is the innermost of the functions inlined here.
			names := make([]string, 0, max(len(loc.Line), 1))
			for _, ln := range loc.Line {
				if ln.Function != nil && ln.Function.Name != "" {
					names = append(names, ln.Function.Name)
				}
			}
			if len(names) == 0 {
				names = append(names, fmt.Sprintf("0x%x", loc.Address))
			}
			for _, name := range names {
				if leaf {
					flat[name] += v
					leaf = false
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += v
				}
			}
		}
	}
	for name, c := range cum {
		t.Funcs = append(t.Funcs, FuncStat{Name: name, Flat: flat[name], Cum: c})
	}
	slices.SortFunc(t.Funcs, func(a, b FuncStat) int {
		return cmp.Or(cmp.Compare(b.Flat, a.Flat), cmp.Compare(b.Cum, a.Cum), strings.Compare(a.Name, b.Name))
	})
	if len(t.Funcs) > n {
		t.Funcs = t.Funcs[:n]
	}
	return t, nil
}

// formatValue formats v of unit for a top table.
func formatValue(v int64, unit string) string {
	switch unit {
	case "nanoseconds":
		return fmt.Sprintf("%.2fs", float64(v)/1e9)
	case "bytes":
		f := float64(v)
		for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
			if f < 1024 || u == "GiB" {
				if u == "B" {
					return fmt.Sprintf("%dB", v)
				}
				return fmt.Sprintf("%.1f%s", f, u)
			}
			f /= 1024
		}
	}
	return strconv.FormatInt(v, 10)
}

// WriteTop writes t as a table under title: flat, flat %, cum, cum % and
// the function, as `go tool pprof -top` does.
func WriteTop(w io.Writer, title string, t *Top) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s: %s %s", title, formatValue(t.Total, t.Unit), t.SampleType)
	if t.Duration > 0 {
		fmt.Fprintf(&b, " in %s", t.Duration.Round(100*time.Millisecond))
		if t.Unit == "nanoseconds" {
			fmt.Fprintf(&b, " (%.0f%% of one core)", float64(t.Total)/float64(t.Duration)*100)
		}
	}
	b.WriteString("\n")
	pct := func(v int64) float64 {
		if t.Total == 0 {
			return 0
		}
		return float64(v) / float64(t.Total) * 100
	}
	fmt.Fprintf(&b, "%10s %6s %10s %6s  %s\n", "flat", "flat%", "cum", "cum%", "function")
	for _, f := range t.Funcs {
		fmt.Fprintf(&b, "%10s %5.1f%% %10s %5.1f%%  %s\n", formatValue(f.Flat, t.Unit), pct(f.Flat), formatValue(f.Cum, t.Unit), pct(f.Cum), f.Name)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteProfileTops writes the top n functions of the CPU profile and of
// the allocation profile (by alloc_space) in dir, for those of the two
// that exist. It writes nothing if neither does.
func WriteProfileTops(w io.Writer, dir string, n int) error {
	wrote := false
	for _, f := range []struct{ name, sampleType, title string }{
		{CPUProfile, "cpu", "CPU"},
		{AllocsProfile, "alloc_space", "Allocations"},
	} {
		path := filepath.Join(dir, f.name)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		t, err := ReadTop(path, f.sampleType, n)
		if err != nil {
			return err
		}
		if wrote {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := WriteTop(w, f.title+" ("+path+")", t); err != nil {
			return err
		}
		wrote = true
	}
	return nil
}
