package loadgen

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// row is one target's line in an operation's ranking.
type row struct {
	rank   int
	target string
	s      Summary
	ops    float64 // ranked figure: median ops/s, or the mean without windows
	ratio  float64 // ops / reference ops; 0 when undefined
	errors int64
}

// rankedOp is the ranking of the targets for one operation.
type rankedOp struct {
	op   string
	rows []row
}

// rank orders the targets by ops/s for each operation. Ratios are relative
// to baseline when it names a target, otherwise to the best target.
func rank(res *Results, baseline string) ([]rankedOp, error) {
	if baseline != "" && !slices.ContainsFunc(res.Targets, func(t TargetStat) bool { return t.Name == baseline }) {
		return nil, fmt.Errorf("baseline %q is not one of the targets", baseline)
	}
	var out []rankedOp
	var order []string
	for _, t := range res.Targets {
		for _, o := range t.Ops {
			if !slices.Contains(order, o.Op) {
				order = append(order, o.Op)
			}
		}
	}
	for _, op := range order {
		r := rankedOp{op: op}
		for _, t := range res.Targets {
			for _, o := range t.Ops {
				if o.Op != op {
					continue
				}
				v := o.Summary.OpsPerSecMedian
				if len(o.PerSecond) == 0 {
					v = o.Summary.OpsPerSecMean
				}
				r.rows = append(r.rows, row{target: t.Name, s: o.Summary, ops: v, errors: o.Errors})
			}
		}
		if len(r.rows) == 0 {
			continue
		}
		slices.SortStableFunc(r.rows, func(a, b row) int { return cmp.Compare(b.ops, a.ops) })
		ref := r.rows[0].ops
		for i := range r.rows {
			if r.rows[i].target == baseline {
				ref = r.rows[i].ops
			}
		}
		for i := range r.rows {
			r.rows[i].rank = i + 1
			if ref > 0 {
				r.rows[i].ratio = r.rows[i].ops / ref
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// fmtMs formats milliseconds with three significant digits or so.
func fmtMs(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.3f ms", v)
	case v < 10:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// fmtSize formats a byte count in binary units.
func fmtSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func fmtRatio(r float64) string {
	if r == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r)
}

// WriteMarkdown writes the report: the run's settings, one ranking table
// per operation (linking the SVG chart of the same name when charts is
// true) and a details table.
func WriteMarkdown(w io.Writer, res *Results, baseline string, charts bool) error {
	ranked, err := rank(res, baseline)
	if err != nil {
		return err
	}
	c := res.Config
	ref := "the best target"
	if baseline != "" {
		ref = baseline
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# coffer bench %s\n\n", res.Workload)
	var weights []string
	for _, op := range opNames {
		if w := c.Weights[op]; w > 0 {
			weights = append(weights, fmt.Sprintf("%s %d", op, w))
		}
	}
	if res.Workload == "cases" {
		fmt.Fprintf(&b, "Started %s. %d workers, %gs measured per case and target in %d round(s); cases %s. ops/s is the median of per-second windows; ratio is ops/s relative to %s.\n",
			res.Started.Format("2006-01-02 15:04:05 MST"), c.Workers, c.DurationSeconds, c.Rounds, strings.Join(c.Cases, ", "), ref)
		if c.SettleSeconds > 0 {
			fmt.Fprintf(&b, "Each case after the first started %gs after the previous one's clean-up (--settle).\n", c.SettleSeconds)
		}
	} else {
		fmt.Fprintf(&b, "Started %s. %s objects, %d workers, %gs measured per target in %d round(s), %d prepared objects; weights %s. ops/s is the median of per-second windows; ratio is ops/s relative to %s.\n",
			res.Started.Format("2006-01-02 15:04:05 MST"), fmtSize(c.SizeBytes), c.Workers, c.DurationSeconds, c.Rounds, c.Objects,
			strings.Join(weights, " / "), ref)
	}
	if c.Payload != "" {
		fmt.Fprintf(&b, "\nUploads signed as: %s (%s).\n", c.Payload, payloadNote(Payload(c.Payload)))
	}
	if len(res.Failed) > 0 {
		b.WriteString("\n## Failed cases\n\nThese cases have no results (or, where they have, cleaning up after them failed):\n\n")
		for _, f := range res.Failed {
			fmt.Fprintf(&b, "- **%s**: %s\n", mdEscape(f.Case), mdEscape(strings.ReplaceAll(f.Error, "\n", "; ")))
		}
	}
	if len(res.Skipped) > 0 {
		b.WriteString("\n## Skipped\n\n")
		for _, s := range res.Skipped {
			fmt.Fprintf(&b, "- **%s** on %s: %s\n", mdEscape(s.Case), mdEscape(s.Target), mdEscape(s.Reason))
		}
	}
	for _, r := range ranked {
		fmt.Fprintf(&b, "\n## %s\n\n", r.op)
		b.WriteString("| Rank | Target | ops/s | MiB/s | p50 | p99 | ratio |\n|---:|---|---:|---:|---:|---:|---:|\n")
		for _, x := range r.rows {
			fmt.Fprintf(&b, "| %d | %s | %.1f | %.2f | %s | %s | %s |\n",
				x.rank, mdEscape(x.target), x.ops, x.s.MiBPerSec, fmtMs(x.s.P50Ms), fmtMs(x.s.P99Ms), fmtRatio(x.ratio))
		}
		if charts {
			fmt.Fprintf(&b, "\n![%s ops/s](%s)\n", r.op, chartName(r.op))
		}
	}
	b.WriteString("\n## Details\n\n| Target | Op | ops | ops/s mean | p90 | max | errors |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, t := range res.Targets {
		for _, o := range t.Ops {
			errs := "0"
			if o.Errors > 0 {
				var parts []string
				for _, k := range sortedKeys(o.ErrorCodes) {
					parts = append(parts, fmt.Sprintf("%s ×%d", k, o.ErrorCodes[k]))
				}
				errs = fmt.Sprintf("%d (%s)", o.Errors, strings.Join(parts, ", "))
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %s | %s | %s |\n",
				mdEscape(t.Name), o.Op, o.Ops, o.Summary.OpsPerSecMean, fmtMs(o.Summary.P90Ms), fmtMs(o.Summary.MaxMs), errs)
		}
	}
	b.WriteString("\nGenerator CPU per operation (the whole bench process, user + system):\n\n")
	for _, t := range res.Targets {
		fmt.Fprintf(&b, "- %s: %.1f µs\n", mdEscape(t.Name), t.ClientCPUPerOpMicros)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// chartName is the file name of op's chart: lowercase letters, digits and
// dashes.
func chartName(op string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, op) + ".svg"
}

// WriteSVG writes a horizontal bar chart of ops/s for one ranked operation.
func writeSVG(w io.Writer, r rankedOp) error {
	const (
		width  = 640
		labelW = 150
		barMax = 380
		rowH   = 28
		top    = 40
	)
	height := top + rowH*len(r.rows) + 10
	best := 0.0
	for _, x := range r.rows {
		best = max(best, x.ops)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="24" font-size="16" font-weight="bold">%s ops/s (median of 1 s windows)</text>`+"\n", html.EscapeString(r.op))
	for i, x := range r.rows {
		y := top + i*rowH
		bw := 0
		if best > 0 {
			bw = int(x.ops / best * barMax)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-8, y+17, html.EscapeString(x.target))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#4878a8"/>`+"\n", labelW, y+3, bw, rowH-8)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%.1f</text>`+"\n", labelW+bw+6, y+17, x.ops)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteGobench writes one benchmark line per target and operation in the
// format of `go test -bench`, for benchstat: N is the number of operations,
// ns/op the inverse of the target's throughput for that operation and MB/s
// the data rate (10⁶ bytes per second, as the testing package reports it).
func WriteGobench(w io.Writer, res *Results) error {
	name := strings.ToUpper(res.Workload[:1]) + res.Workload[1:]
	var b strings.Builder
	for i := range res.Targets {
		t := &res.Targets[i]
		tn := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '/' {
				return '_'
			}
			return r
		}, t.Name)
		for _, o := range t.Ops {
			if o.Ops == 0 {
				continue
			}
			el := o.elapsed(t)
			fmt.Fprintf(&b, "Benchmark%s/target=%s/op=%s\t%d\t%.0f ns/op", name, tn, o.Op, o.Ops, el*1e9/float64(o.Ops))
			if o.Bytes > 0 {
				fmt.Fprintf(&b, "\t%.2f MB/s", float64(o.Bytes)/1e6/el)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteReport writes results.json, report.md and one SVG chart per
// operation into dir, creating it if needed.
func WriteReport(dir string, res *Results, baseline string) error {
	ranked, err := rank(res, baseline)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := WriteJSON(filepath.Join(dir, "results.json"), res); err != nil {
		return err
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, res, baseline, true); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	for _, r := range ranked {
		var svg strings.Builder
		if err := writeSVG(&svg, r); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, chartName(r.op)), []byte(svg.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
