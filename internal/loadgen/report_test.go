package loadgen

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// fixedResults is a two-target run with made-up, deterministic figures.
func fixedResults() *Results {
	mk := func(name string, scale float64) TargetStat {
		t := TargetStat{Name: name, URL: "http://" + name + ".example:9000", ElapsedSeconds: 4, ClientCPUPerOpMicros: 12.5 * scale}
		for i, op := range []string{"GET", "PUT", "DELETE", "STAT"} {
			var h Histogram
			for j := 1; j <= 200; j++ {
				h.Record(time.Duration(float64(j*(i+1))*scale) * 10 * time.Microsecond)
			}
			per := []int64{int64(100 * float64(i+1) / scale), int64(110 * float64(i+1) / scale), int64(90 * float64(i+1) / scale), int64(105 * float64(i+1) / scale)}
			var n int64
			for _, x := range per {
				n += x
			}
			var byts int64
			if op == "GET" || op == "PUT" {
				byts = n * 100 << 10
			}
			o := OpStat{Op: op, Ops: n, Bytes: byts, PerSecond: per, Latency: h.Export()}
			if op == "DELETE" && name == "other" {
				o.Errors, o.ErrorCodes = 3, map[string]int64{"InternalError": 2, "SlowDown": 1}
			}
			o.Summary = summarize(o.Ops, o.Bytes, o.PerSecond, &h, t.ElapsedSeconds)
			t.Ops = append(t.Ops, o)
		}
		return t
	}
	return &Results{
		Version: ResultsVersion, Workload: "mixed",
		Started: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC),
		Config:  runConfig(MixedConfig{Size: 100 << 10, Workers: 16, Duration: 8 * time.Second, Objects: 200, Rounds: 2, Get: 45, Put: 15, Delete: 10, Stat: 30}),
		Targets: []TargetStat{mk("coffer", 1), mk("other", 2)},
	}
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
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

func TestGoldenReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := WriteReport(dir, fixedResults(), "other"); err != nil {
		t.Fatalf("WriteReport: %v", err)
	}
	for _, name := range []string{"report.md", "results.json", "get.svg", "put.svg", "delete.svg", "stat.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, name, data)
	}
	var b bytes.Buffer
	if err := WriteGobench(&b, fixedResults()); err != nil {
		t.Fatal(err)
	}
	golden(t, "gobench.txt", b.Bytes())
}

func TestReadJSONRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	want := fixedResults()
	if err := WriteJSON(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(path)
	if err != nil {
		t.Fatalf("ReadJSON: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	bad := filepath.Join(dir, "v2.json")
	if err := os.WriteFile(bad, []byte(`{"version":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON(bad); err == nil || !strings.Contains(err.Error(), "results version 2") {
		t.Errorf("ReadJSON of version 2 = %v, want a version error", err)
	}
}

func TestMergeRuns(t *testing.T) {
	t.Parallel()
	m := Merge([]*Results{fixedResults(), fixedResults()})
	var names []string
	for _, tg := range m.Targets {
		names = append(names, tg.Name)
	}
	if diff := cmp.Diff([]string{"coffer", "other", "coffer#2", "other#2"}, names); diff != "" {
		t.Errorf("merged target names (-want +got):\n%s", diff)
	}
}

func TestRankRatios(t *testing.T) {
	t.Parallel()
	res := fixedResults() // coffer has twice other's ops/s
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 0.02 })
	for _, tc := range []struct {
		baseline string
		want     map[string]float64 // GET ratio by target
	}{
		{"", map[string]float64{"coffer": 1, "other": 0.5}},
		{"other", map[string]float64{"coffer": 2, "other": 1}},
		{"coffer", map[string]float64{"coffer": 1, "other": 0.5}},
	} {
		ranked, err := rank(res, tc.baseline)
		if err != nil {
			t.Fatalf("rank(%q): %v", tc.baseline, err)
		}
		if ranked[0].op != "GET" || ranked[0].rows[0].target != "coffer" || ranked[0].rows[0].rank != 1 {
			t.Fatalf("rank(%q): first row %+v of %s, want coffer ranked 1 for GET", tc.baseline, ranked[0].rows[0], ranked[0].op)
		}
		got := map[string]float64{}
		for _, r := range ranked[0].rows {
			got[r.target] = r.ratio
		}
		if diff := cmp.Diff(tc.want, got, approx); diff != "" {
			t.Errorf("rank(%q) GET ratios (-want +got):\n%s", tc.baseline, diff)
		}
	}
	if _, err := rank(res, "nope"); err == nil {
		t.Error(`rank with baseline "nope" succeeded, want an error`)
	}
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Target
		ok   bool
	}{
		{"coffer=http://127.0.0.1:9000", Target{Name: "coffer", URL: "http://127.0.0.1:9000"}, true},
		{"aws=https://s3.example.com/", Target{Name: "aws", URL: "https://s3.example.com"}, true},
		{"http://127.0.0.1:9000", Target{}, false},
		{"=http://x", Target{}, false},
		{"x=", Target{}, false},
		{"x=ftp://host", Target{}, false},
		{"x=127.0.0.1:9000", Target{}, false},
	} {
		got, err := ParseTarget(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestPickOp(t *testing.T) {
	t.Parallel()
	w := [numOps]int{40, 15, 10, 15, 5, 5, 5, 5}
	counts := [numOps]int{}
	for n := range 100 {
		counts[pickOp(n, w)]++
	}
	if counts != w {
		t.Errorf("pickOp over [0, 100) picked %v, want the weights %v", counts, w)
	}
}
