package loadgen

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// ResultsVersion is the schema version of results.json.
const ResultsVersion = 1

// Results is one benchmark run, as saved in results.json.
type Results struct {
	Version  int          `json:"version"`
	Workload string       `json:"workload"`
	Started  time.Time    `json:"started"`
	Config   RunConfig    `json:"config"`
	Targets  []TargetStat `json:"targets"`
	// Failed lists the cases of a cases run that failed; the results of
	// the others are in Targets. A case that is both here and in
	// Config.Cases ran, but cleaning up after it failed.
	Failed []CaseFailure `json:"failed,omitempty"`
	// Skipped lists the cases of a cases run that did not run against a
	// target, and why (a console case against a target without a
	// console).
	Skipped []CaseSkip `json:"skipped,omitempty"`
}

// CaseSkip is a case of a cases run that a target skipped, and why.
type CaseSkip struct {
	Case   string `json:"case"`
	Target string `json:"target"`
	Reason string `json:"reason"`
}

// CaseFailure is a case of a cases run that failed, and why.
type CaseFailure struct {
	Case  string `json:"case"`
	Error string `json:"error"`
}

// RunConfig records the settings of a run.
type RunConfig struct {
	SizeBytes       int64          `json:"size_bytes"`
	Workers         int            `json:"workers"`
	DurationSeconds float64        `json:"duration_seconds"`
	Objects         int            `json:"objects"`
	Rounds          int            `json:"rounds"`
	Weights         map[string]int `json:"weights,omitempty"`
	Cases           []string       `json:"cases,omitempty"`
	// Payload is how uploads were signed (a Payload); "" in runs from
	// before the setting, which sent UNSIGNED-PAYLOAD.
	Payload string `json:"payload,omitempty"`
	// SettleSeconds is the pause between cases (CasesConfig.Settle).
	SettleSeconds float64 `json:"settle_seconds,omitempty"`
}

func runConfig(c MixedConfig) RunConfig {
	return RunConfig{
		SizeBytes: c.Size, Workers: c.Workers, DurationSeconds: c.Duration.Seconds(),
		Objects: c.Objects, Rounds: c.Rounds,
		Weights: weightMap(c.weights()), Payload: string(c.Payload),
	}
}

// weightMap names the positive weights.
func weightMap(w [numOps]int) map[string]int {
	m := map[string]int{}
	for op, n := range w {
		if n > 0 {
			m[opNames[op]] = n
		}
	}
	return m
}

// TargetStat is the outcome for one target.
type TargetStat struct {
	Name           string  `json:"name"`
	URL            string  `json:"url"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// ClientCPUPerOpMicros is the generator's own CPU time (user+system,
	// the whole process) per operation during the measured rounds.
	ClientCPUPerOpMicros float64  `json:"client_cpu_per_op_us"`
	Ops                  []OpStat `json:"ops"`
}

// OpStat is the outcome of one operation on one target. Only successful
// requests are in Ops, Bytes, PerSecond and Latency.
type OpStat struct {
	Op         string           `json:"op"`
	Ops        int64            `json:"ops"`
	Bytes      int64            `json:"bytes"`
	Errors     int64            `json:"errors"`
	ErrorCodes map[string]int64 `json:"error_codes,omitempty"`
	// PerSecond counts completed operations in each whole second of the
	// measured rounds, rounds concatenated.
	PerSecond []int64  `json:"per_second"`
	Latency   HistJSON `json:"latency"`
	Summary   Summary  `json:"summary"`
	// ElapsedSeconds and SizeBytes, when set, are this operation's own
	// measured time and object size (cases); otherwise the target's and the
	// run's apply.
	ElapsedSeconds float64 `json:"elapsed_seconds,omitempty"`
	SizeBytes      int64   `json:"size_bytes,omitempty"`
}

// elapsed returns the time o was measured over within t.
func (o *OpStat) elapsed(t *TargetStat) float64 {
	if o.ElapsedSeconds > 0 {
		return o.ElapsedSeconds
	}
	return t.ElapsedSeconds
}

// Summary holds the figures derived from an OpStat.
type Summary struct {
	OpsPerSecMedian float64 `json:"ops_per_sec_median"`
	OpsPerSecMean   float64 `json:"ops_per_sec_mean"`
	MiBPerSec       float64 `json:"mib_per_sec"`
	P50Ms           float64 `json:"p50_ms"`
	P90Ms           float64 `json:"p90_ms"`
	P99Ms           float64 `json:"p99_ms"`
	MaxMs           float64 `json:"max_ms"`
}

// summarize computes the summary of an operation measured over elapsed.
func summarize(ops, byts int64, perSecond []int64, h *Histogram, elapsed float64) Summary {
	var s Summary
	xs := make([]float64, len(perSecond))
	for i, n := range perSecond {
		xs[i] = float64(n)
	}
	s.OpsPerSecMedian = median(xs)
	if elapsed > 0 {
		s.OpsPerSecMean = float64(ops) / elapsed
		s.MiBPerSec = float64(byts) / (1 << 20) / elapsed
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	s.P50Ms = ms(h.Quantile(0.50))
	s.P90Ms = ms(h.Quantile(0.90))
	s.P99Ms = ms(h.Quantile(0.99))
	s.MaxMs = ms(h.Max())
	return s
}

// result collects the workers' figures for r: for every operation with a
// weight, or that ran anyway (a PUT replacing a missing object) or failed.
func (r *targetRun) result(weights [numOps]int) TargetStat {
	t := TargetStat{Name: r.c.t.Name, URL: r.c.t.URL, ElapsedSeconds: r.elapsed.Seconds()}
	codes := r.errCounts()
	var total int64
	for op := range numOps {
		var h Histogram
		var byts int64
		for _, w := range r.workers {
			h.Merge(&w.hist[op])
			byts += w.byts[op]
		}
		s := OpStat{Op: opNames[op], Ops: r.ops[op], Bytes: byts, PerSecond: r.series[op], Latency: h.Export()}
		if s.PerSecond == nil {
			s.PerSecond = []int64{}
		}
		for k, n := range codes {
			if o, code, _ := strings.Cut(k, "/"); o == s.Op {
				if s.ErrorCodes == nil {
					s.ErrorCodes = map[string]int64{}
				}
				s.ErrorCodes[code] += n
				s.Errors += n
			}
		}
		if weights[op] == 0 && s.Ops == 0 && s.Errors == 0 {
			continue
		}
		s.Summary = summarize(s.Ops, byts, s.PerSecond, &h, t.ElapsedSeconds)
		total += s.Ops
		t.Ops = append(t.Ops, s)
	}
	if total > 0 {
		t.ClientCPUPerOpMicros = float64(r.cpu) / float64(time.Microsecond) / float64(total)
	}
	return t
}

// WriteJSON writes res to path as indented JSON.
func WriteJSON(path string, res *Results) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadJSON reads a results.json file and recomputes its summaries from the
// raw series and histograms.
func ReadJSON(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res Results
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if res.Version != ResultsVersion {
		return nil, fmt.Errorf("%s: results version %d, want %d", path, res.Version, ResultsVersion)
	}
	for i := range res.Targets {
		t := &res.Targets[i]
		for j := range t.Ops {
			o := &t.Ops[j]
			h, ok := importHist(o.Latency)
			if !ok {
				return nil, fmt.Errorf("%s: target %s op %s: bad latency histogram", path, t.Name, o.Op)
			}
			o.Summary = summarize(o.Ops, o.Bytes, o.PerSecond, h, o.elapsed(t))
		}
	}
	return &res, nil
}

// Merge combines runs into one for a joint report: the targets of all runs
// side by side, renamed NAME#2, NAME#3 … where names repeat. The workload
// and configuration are taken from the first run.
func Merge(runs []*Results) *Results {
	if len(runs) == 0 {
		return nil
	}
	out := *runs[0]
	out.Targets = nil
	out.Failed, out.Skipped = nil, nil
	seen := map[string]int{}
	for _, r := range runs {
		out.Failed = append(out.Failed, r.Failed...)
		out.Skipped = append(out.Skipped, r.Skipped...)
		for _, t := range r.Targets {
			seen[t.Name]++
			if n := seen[t.Name]; n > 1 {
				t.Name = fmt.Sprintf("%s#%d", t.Name, n)
			}
			out.Targets = append(out.Targets, t)
		}
	}
	return &out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
