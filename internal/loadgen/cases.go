package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// benchCase is one case of `coffer bench cases`: a single operation on objects
// of one size.
type benchCase struct {
	Name    string // report name, e.g. put-1KiB
	Op      string // operation for RunSingle
	Size    int64
	Objects int    // objects prepared; at least one per worker is added
	Flood   *Flood // hostile connections held open while it measures
	// Workers, if not 0, caps the run's workers for this case.
	Workers int
	// Console cases run only against the targets with a console (see
	// Target.ConsoleURL); the others are skipped, and say so.
	Console bool
}

// allCases are the cases of `coffer bench cases`, in run order.
var allCases = []benchCase{
	{Name: "put-1KiB", Op: "put", Size: 1 << 10, Objects: 1},
	{Name: "put-1MiB", Op: "put", Size: 1 << 20, Objects: 1},
	{Name: "put-10MiB", Op: "put", Size: 10 << 20, Objects: 1},
	{Name: "put-64MiB", Op: "put", Size: 64 << 20, Objects: 1},
	{Name: "get-1KiB", Op: "get", Size: 1 << 10, Objects: 1000},
	{Name: "get-1MiB", Op: "get", Size: 1 << 20, Objects: 100},
	{Name: "get-10MiB", Op: "get", Size: 10 << 20, Objects: 1},
	{Name: "get-64MiB", Op: "get", Size: 64 << 20, Objects: 1},
	{Name: "head", Op: "stat", Size: 1 << 10, Objects: 1000},
	{Name: "list-1000", Op: "list", Size: 1 << 10, Objects: 1000},
	{Name: "delete", Op: "delete", Size: 1 << 10, Objects: 1000},
	{Name: "multipart-256MiB", Op: "multipart", Size: 256 << 20, Objects: 1},
	{Name: "presigned-get", Op: "presigned-get", Size: 1 << 10, Objects: 1000},
	{Name: "bad-signature", Op: "bad-signature", Size: 1 << 10, Objects: 1},
	// GETs of 1 KiB objects under 3,000 hostile connections, more than the
	// server's default connection limit: compare with get-1KiB.
	{Name: "get-1KiB-slowloris", Op: "get", Size: 1 << 10, Objects: 1000, Flood: &Flood{Kind: "slowloris", Conns: 3000}},
	{Name: "get-1KiB-bad-signature-flood", Op: "get", Size: 1 << 10, Objects: 1000, Flood: &Flood{Kind: "bad-signature", Conns: 3000}},
	// The web console (console.go). Sign-in is argon2id-bound by design,
	// and the console's limiter counts sign-ins in flight from one
	// address as possible failures (10 per address), so it runs with at
	// most 4 workers, all signing in as the target's console user.
	{Name: "console-sign-in", Op: "console-sign-in", Size: 1 << 10, Objects: 1, Workers: 4, Console: true},
	{Name: "console-buckets", Op: "console-buckets", Size: 1 << 10, Objects: 1, Console: true},
	{Name: "console-objects-1000", Op: "console-objects", Size: 1 << 10, Objects: 1000, Console: true},
	{Name: "console-download-1KiB", Op: "console-download", Size: 1 << 10, Objects: 1000, Console: true},
}

// noConsole is why a console case skips a target.
const noConsole = "no web console given for this target (console_url, console_user and console_password in the targets file)"

// CasesConfig configures RunCases.
type CasesConfig struct {
	Workers  int           // concurrent requests per target; default 16
	Duration time.Duration // per case and target; default 15 s
	Rounds   int           // interleaved rounds per case; default 1
	Cases    []string      // names from CaseNames; empty means all
	Payload  Payload       // how uploads are signed; default DefaultPayload
	Keep     bool
	Progress MixedConfig // only its Progress and TTY are used

	// Settle is a pause before every case but the first, after the
	// previous one has cleaned up. A server may do the work of that
	// clean-up later, in the background: Coffer frees deleted blobs
	// seconds after the DELETEs, and on a filesystem mounted with
	// "discard" each freed extent is trimmed then. Without a pause that
	// work lands in the next case's first round, on that server alone,
	// while a server that frees during its DELETEs pays in the clean-up,
	// which is not measured.
	Settle time.Duration

	// Profile, if set, profiles every case as RunMixed does, into a
	// directory of its own named after the case, below Profile.Dir.
	Profile *Profiler
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
//
// A case that fails does not end the run: its error is recorded in the
// results' Failed list and the next case runs. RunCases returns the
// results of the cases that ran (nil if none did) together with an error
// joining every failure. It stops early when ctx ends or a target cannot
// be used at all (unreachable, or rejecting the credentials). Unknown case
// names, and a profiler whose listener does not answer, fail before any
// request is sent to a target.
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
	if cfg.Payload == "" {
		cfg.Payload = DefaultPayload
	}
	selected := allCases
	if len(cfg.Cases) > 0 {
		selected = nil
		for _, name := range cfg.Cases {
			i := slices.IndexFunc(allCases, func(c benchCase) bool { return c.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("unknown case %q (cases: %s)", name, strings.Join(CaseNames(), ", "))
			}
			selected = append(selected, allCases[i])
		}
	}
	if cfg.Profile != nil {
		if err := cfg.Profile.check(ctx); err != nil {
			return nil, err // each case would fail the same way
		}
	}
	out := &Results{
		Version: ResultsVersion, Workload: "cases", Started: time.Now().UTC(),
		Config: RunConfig{
			Workers: cfg.Workers, DurationSeconds: cfg.Duration.Seconds(), Rounds: cfg.Rounds,
			Payload: string(cfg.Payload), SettleSeconds: cfg.Settle.Seconds(),
		},
	}
	var errs []error
	fail := func(name string, err error) {
		out.Failed = append(out.Failed, CaseFailure{Case: name, Error: err.Error()})
		errs = append(errs, fmt.Errorf("case %s: %w", name, err))
	}
	cpu := map[string]float64{} // CPU µs summed over ops, by target
	ran := false                // a case has run: the next one settles first
	for _, c := range selected {
		workers := cfg.Workers
		if c.Workers > 0 {
			workers = min(workers, c.Workers)
		}
		mc := MixedConfig{
			Size: c.Size, Workers: workers, Duration: cfg.Duration, Rounds: cfg.Rounds,
			Objects: max(c.Objects, workers), Keep: cfg.Keep, Label: c.Name, Payload: cfg.Payload,
			Progress: cfg.Progress.Progress, TTY: cfg.Progress.TTY, Flood: c.Flood,
		}
		if cfg.Profile != nil {
			p := *cfg.Profile
			p.Dir = filepath.Join(p.Dir, c.Name)
			mc.Profile = &p
		}
		ts := targets
		if c.Console {
			ts = nil
			for _, t := range targets {
				if t.ConsoleURL != "" {
					ts = append(ts, t)
					continue
				}
				out.Skipped = append(out.Skipped, CaseSkip{Case: c.Name, Target: t.Name, Reason: noConsole})
				if cfg.Progress.Progress != nil {
					fmt.Fprintf(cfg.Progress.Progress, "%s: skipped on %s: %s\n", c.Name, t.Name, noConsole)
				}
			}
			if len(ts) == 0 {
				continue
			}
		}
		if ran && !settle(ctx, cfg.Settle, c.Name, cfg.Progress.Progress) {
			fail(c.Name, fmt.Errorf("settling before the case: %w", ctx.Err()))
			break
		}
		ran = true
		res, err := RunSingle(ctx, c.Op, mc, ts)
		if err != nil {
			fail(c.Name, err) // with res set, the case ran but its clean-up failed
		}
		if res == nil {
			if ctx.Err() != nil || errors.Is(err, errUnusable) {
				break // every further case would fail the same way
			}
			continue
		}
		out.Config.Cases = append(out.Config.Cases, c.Name)
		for _, t := range res.Targets {
			i := slices.IndexFunc(out.Targets, func(o TargetStat) bool { return o.Name == t.Name })
			if i < 0 {
				out.Targets = append(out.Targets, TargetStat{Name: t.Name, URL: t.URL})
				i = len(out.Targets) - 1
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
				cpu[t.Name] += t.ClientCPUPerOpMicros * float64(o.Ops)
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
			out.Targets[i].ClientCPUPerOpMicros = cpu[out.Targets[i].Name] / float64(ops)
		}
	}
	if len(out.Config.Cases) == 0 {
		return nil, errors.Join(errs...)
	}
	return out, errors.Join(errs...)
}

// settle waits d before case name (see CasesConfig.Settle), saying so on
// progress if that is set. It reports false if ctx ended first.
func settle(ctx context.Context, d time.Duration, name string, progress io.Writer) bool {
	if d <= 0 {
		return true
	}
	if progress != nil {
		fmt.Fprintf(progress, "%s: settling %v after the previous case\n", name, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
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
	case "console-sign-in":
		return opConsoleSignIn
	case "console-buckets":
		return opConsoleBuckets
	case "console-objects":
		return opConsoleObjects
	case "console-download":
		return opConsoleDownload
	}
	return opGet
}
