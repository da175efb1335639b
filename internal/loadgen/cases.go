package loadgen

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// benchCase is one case of `coffer bench cases`: a single operation on objects
// of one size.
type benchCase struct {
	Name    string // report name, e.g. put-1KiB
	Op      string // operation for RunSingle
	Size    int64
	Objects int // objects prepared; at least one per worker is added
}

// allCases are the cases of `coffer bench cases`, in run order.
var allCases = []benchCase{
	{Name: "put-1KiB", Op: "put", Size: 1 << 10, Objects: 1},
	{Name: "put-1MiB", Op: "put", Size: 1 << 20, Objects: 1},
	{Name: "put-64MiB", Op: "put", Size: 64 << 20, Objects: 1},
	{Name: "get-1KiB", Op: "get", Size: 1 << 10, Objects: 1000},
	{Name: "get-1MiB", Op: "get", Size: 1 << 20, Objects: 100},
	{Name: "get-64MiB", Op: "get", Size: 64 << 20, Objects: 1},
	{Name: "head", Op: "stat", Size: 1 << 10, Objects: 1000},
	{Name: "list-1000", Op: "list", Size: 1 << 10, Objects: 1000},
	{Name: "delete", Op: "delete", Size: 1 << 10, Objects: 1000},
	{Name: "multipart-256MiB", Op: "multipart", Size: 256 << 20, Objects: 1},
	{Name: "presigned-get", Op: "presigned-get", Size: 1 << 10, Objects: 1000},
	{Name: "bad-signature", Op: "bad-signature", Size: 1 << 10, Objects: 1},
}

// CasesConfig configures RunCases.
type CasesConfig struct {
	Workers  int           // concurrent requests per target; default 16
	Duration time.Duration // per case and target; default 15 s
	Rounds   int           // interleaved rounds per case; default 1
	Cases    []string      // names from CaseNames; empty means all
	Keep     bool
	Progress MixedConfig // only its Progress and TTY are used
}

// CaseNames returns the names of the cases of `coffer bench cases`, in run order.
func CaseNames() []string {
	var names []string
	for _, c := range allCases {
		names = append(names, c.Name)
	}
	return names
}

// RunCases runs the selected cases one after the other, each with its own
// bucket per target, and returns them as one result whose operations are
// the cases. Operations a case needed besides its own (PUTs refilling a
// delete case) are reported as "<case>:<OP>".
func RunCases(ctx context.Context, cfg CasesConfig, targets []Target) (*Results, error) {
	if cfg.Workers == 0 {
		cfg.Workers = 16
	}
	if cfg.Duration == 0 {
		cfg.Duration = 15 * time.Second
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 1
	}
	selected := allCases
	if len(cfg.Cases) > 0 {
		selected = nil
		for _, name := range cfg.Cases {
			i := slices.IndexFunc(allCases, func(c benchCase) bool { return c.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("unknown case %q (cases: %v)", name, CaseNames())
			}
			selected = append(selected, allCases[i])
		}
	}
	out := &Results{
		Version: ResultsVersion, Workload: "cases", Started: time.Now().UTC(),
		Config: RunConfig{Workers: cfg.Workers, DurationSeconds: cfg.Duration.Seconds(), Rounds: cfg.Rounds},
	}
	cpu := make([]float64, len(targets)) // CPU µs summed over ops
	for _, c := range selected {
		mc := MixedConfig{
			Size: c.Size, Workers: cfg.Workers, Duration: cfg.Duration, Rounds: cfg.Rounds,
			Objects: max(c.Objects, cfg.Workers), Keep: cfg.Keep,
			Progress: cfg.Progress.Progress, TTY: cfg.Progress.TTY,
		}
		res, err := RunSingle(ctx, c.Op, mc, targets)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
		out.Config.Cases = append(out.Config.Cases, c.Name)
		for i, t := range res.Targets {
			if len(out.Targets) <= i {
				out.Targets = append(out.Targets, TargetStat{Name: t.Name, URL: t.URL})
			}
			ot := &out.Targets[i]
			ot.ElapsedSeconds += t.ElapsedSeconds
			for _, o := range t.Ops {
				if o.Op == opNames[opOf(c.Op)] {
					o.Op = c.Name
				} else {
					o.Op = c.Name + ":" + o.Op
				}
				o.ElapsedSeconds = t.ElapsedSeconds
				o.SizeBytes = c.Size
				cpu[i] += t.ClientCPUPerOpMicros * float64(o.Ops)
				ot.Ops = append(ot.Ops, o)
			}
		}
	}
	for i := range out.Targets {
		var ops int64
		for _, o := range out.Targets[i].Ops {
			ops += o.Ops
		}
		if ops > 0 {
			out.Targets[i].ClientCPUPerOpMicros = cpu[i] / float64(ops)
		}
	}
	return out, nil
}

// opOf maps a RunSingle operation name to its op.
func opOf(name string) int {
	switch name {
	case "put":
		return opPut
	case "delete":
		return opDelete
	case "stat":
		return opStat
	case "list":
		return opList
	case "presigned-get":
		return opPresign
	case "bad-signature":
		return opBadSig
	case "multipart":
		return opMultipart
	}
	return opGet
}
