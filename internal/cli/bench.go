package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/bytesize"
	"github.com/coffer-s3/coffer/internal/loadgen"
	"github.com/coffer-s3/coffer/internal/secretfile"
)

const benchUsage = `Usage: coffer bench <workload> [flags]

Benchmarks S3 endpoints side by side; see docs/performance.md.

Workloads:
  mixed     warp-style mixed load: GET, PUT, DELETE and STAT of prepared objects
  cases     one case at a time: PUT of 1 KiB, 1, 10 and 64 MiB, GET of 1 KiB,
            1 MiB and 64 MiB, HEAD, LIST
            of 1000 keys, DELETE, multipart 256 MiB, presigned GET, rejected
            bad signature, GET under floods; and the web console's sign-in,
            Buckets page, object list of 1000 keys and 1 KiB download, for
            targets with console_url, console_user and console_password in
            the --targets file (skipped for the others)
  get       GET of prepared objects only
  put       PUT of new objects only
  stat      HEAD of prepared objects only
  delete    DELETE of prepared objects only (PUT again when a worker runs out)
  list      ListObjectsV2 of up to 1000 keys of the prepared objects
  presigned-get, bad-signature
            GET through presigned URLs; GET with a wrong signature (must fail)
  multipart multipart uploads of --size objects in parts of 16 MiB (or half
            the object, at least 5 MiB)
  sys       local limits: loopback TCP, disk write + fsync, disk read, fsync/s
  report    re-render or merge saved runs: coffer bench report [flags] DIR|FILE...

Run 'coffer bench <workload> -h' for its flags.
`

func bench(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return exitUsage
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "mixed", "cases", "get", "put", "stat", "delete", "list", "presigned-get", "bad-signature", "multipart":
		return benchLoad(ctx, cmd, rest, stdout, stderr, getenv)
	case "report":
		return benchReport(rest, stdout, stderr)
	case "sys":
		return benchSys(ctx, rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, benchUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "coffer bench: unknown workload %q\n\n%s", cmd, benchUsage)
		return exitUsage
	}
}

// targetList is a repeatable --target NAME=URL flag. Set only collects
// the values, which are parsed after the flags: the flag package quotes a
// value that Set rejects in its error, and a URL may hold a password.
type targetList []string

func (l *targetList) String() string { return "" }

func (l *targetList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// warnExposedTargets warns on stderr when the --targets file at path,
// which gave ts, holds a secret (a secret_key or console_password) and
// group or others may read it. It warns where --secret-key-file refuses:
// that file is one key, often root's, of the Coffer under test, as the
// server's own credential files are (refused too); a targets file is the
// settings of several servers, other products' among them, and is often
// shared with the scripts that run it, so it is treated as the files that
// hold another system's secret are (admin migrate's
// --to-s3-secret-key-file, meta.postgres.password-file): read, with a
// warning.
func warnExposedTargets(cmd, path string, ts []loadgen.Target, stderr io.Writer) {
	if !slices.ContainsFunc(ts, func(t loadgen.Target) bool { return t.SecretKey != "" || t.ConsolePassword != "" }) {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		return // it was read a moment ago; a file that went tells nothing
	}
	if e := secretfile.Check(path, fi); e != nil {
		fmt.Fprintf(stderr, "%s: warning: --targets %v, and it holds secret keys or passwords: run chmod 600 %s\n", cmd, e, e.Path)
	}
}

// maxBenchSize bounds --size: larger objects are no benchmark a run of
// seconds can finish.
const maxBenchSize = 1 << 40

// sizeFlag is a --size flag; its usage text states the default.
type sizeFlag struct{ n *int64 }

func (s sizeFlag) String() string { return "" }

func (s sizeFlag) Set(v string) error {
	n, err := bytesize.Parse(v)
	if err != nil {
		return err
	}
	if n > maxBenchSize {
		return fmt.Errorf("size %s is larger than %s", v, bytesize.Format(maxBenchSize))
	}
	*s.n = n
	return nil
}

// benchLoad runs workload: mixed, or a single operation.
func benchLoad(ctx context.Context, workload string, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd := "coffer bench " + workload
	cfg := loadgen.DefaultMixed()
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		targetArgs     targetList
		targetsFile    string
		ak, sk, region string
		out, baseline  string
		gobench        bool
	)
	fs.Var(&targetArgs, "target", "endpoint to benchmark as NAME=URL; repeat for several")
	fs.StringVar(&targetsFile, "targets", "", "TOML file of [[target]] tables (name, url, optional access_key, secret_key, region; console_url, console_user, console_password for the console cases); a warning when it holds a secret and group or others may read it (chmod 600)")
	// The environment is read after the flags, not given as the flags'
	// defaults, which -h prints.
	fs.StringVar(&ak, "access-key", "", "access key for every target (default $COFFER_ACCESS_KEY)")
	var skf secretKeyFlags
	skf.register(fs, "secret key for every target (default $COFFER_SECRET_KEY)")
	fs.StringVar(&region, "region", "us-east-1", "signing region")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "concurrent requests per target")
	var cases string
	var settle time.Duration
	if workload == "cases" {
		cfg.Duration = 15 * time.Second
		fs.StringVar(&cases, "cases", "", "comma-separated subset of: "+strings.Join(loadgen.CaseNames(), ", "))
		fs.DurationVar(&settle, "settle", 0, "pause before each case after the first, so that work a server does in the background after the previous case's clean-up (freeing and trimming deleted data) is not measured in the next case")
	} else {
		fs.Var(sizeFlag{&cfg.Size}, "size", "object size, e.g. 100KiB, 1MiB (default 100KiB)")
		fs.IntVar(&cfg.Objects, "objects", cfg.Objects, "objects prepared before measuring")
	}
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured time per target (per case for cases), split over the rounds")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds per target, interleaved A B A B …")
	if workload == "mixed" {
		fs.IntVar(&cfg.Get, "get", cfg.Get, "weight of GET")
		fs.IntVar(&cfg.Put, "put", cfg.Put, "weight of PUT")
		fs.IntVar(&cfg.Delete, "delete", cfg.Delete, "weight of DELETE")
		fs.IntVar(&cfg.Stat, "stat", cfg.Stat, "weight of STAT (HEAD)")
		fs.IntVar(&cfg.List, "list", cfg.List, "weight of LIST (ListObjectsV2 of up to 1000 keys)")
	}
	payload := string(loadgen.DefaultPayload)
	fs.StringVar(&payload, "payload", payload, "how uploads are signed: signed (SHA-256 in the header, aws-sdk-go-v2 over HTTP), unsigned (UNSIGNED-PAYLOAD), streaming (aws-chunked with chunk signatures, minio-go/mc/warp over HTTP) or streaming-trailer (unsigned aws-chunked with a CRC32 trailer, boto3/Go SDK over HTTPS)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the benchmark buckets and objects")
	fs.StringVar(&out, "out", "", "write results.json, report.md and SVG charts into this directory")
	fs.StringVar(&baseline, "baseline", "", "target that ratios are relative to (default: the best)")
	fs.BoolVar(&gobench, "gobench", false, "also print benchstat-readable Benchmark lines")
	var profile bool
	var pprofURL, profileTarget string
	profileUsage := "capture CPU, allocation, heap and goroutine profiles from --pprof into --out and print the top functions"
	if workload == "cases" {
		profileUsage = "capture CPU, allocation, heap and goroutine profiles of each case from --pprof into --out/CASE and print the top functions"
	}
	fs.BoolVar(&profile, "profile", false, profileUsage)
	fs.StringVar(&pprofURL, "pprof", "http://127.0.0.1:6060", "pprof listener of the profiled target (coffer serve --pprof)")
	fs.StringVar(&profileTarget, "profile-target", "", "target the --pprof listener belongs to (default: the first target)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage: %s --target NAME=URL [--target …] [flags]\n\nFlags:\n", cmd)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK
	} else if err != nil {
		fmt.Fprintf(stderr, "%s: %v\nRun '%s -h' for usage.\n", cmd, err, cmd)
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s: %s\nRun '%s -h' for usage.\n", cmd, fmt.Sprintf(format, a...), cmd)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	ak = firstNonEmpty(ak, getenv("COFFER_ACCESS_KEY"))
	sk, err := skf.resolve(cmd, stderr)
	if err != nil {
		return usageErr("%v", err)
	}
	sk = firstNonEmpty(sk, getenv("COFFER_SECRET_KEY"))
	if settle < 0 {
		return usageErr("--settle: negative duration %v", settle)
	}
	if cfg.Payload, err = loadgen.ParsePayload(payload); err != nil {
		return usageErr("--payload: %v", err)
	}
	var targets []loadgen.Target
	for _, s := range targetArgs {
		t, err := loadgen.ParseTarget(s)
		if err != nil {
			return usageErr("--target: %v", err)
		}
		targets = append(targets, t)
	}
	if targetsFile != "" {
		ts, err := loadgen.LoadTargets(targetsFile)
		if err != nil {
			return usageErr("%v", err)
		}
		warnExposedTargets(cmd, targetsFile, ts, stderr)
		targets = append(ts, targets...)
	}
	if len(targets) == 0 {
		return usageErr("no target: give --target NAME=URL or --targets FILE")
	}
	names := map[string]bool{}
	for i := range targets {
		t := &targets[i]
		if t.AccessKey == "" {
			if ak == "" || sk == "" {
				return usageErr("no credentials for target %s: set COFFER_ACCESS_KEY and COFFER_SECRET_KEY, or give --access-key and --secret-key-file", t.Name)
			}
			t.AccessKey, t.SecretKey = ak, sk
		}
		if t.Region == "" {
			t.Region = region
		}
		names[t.Name] = true
	}
	if baseline != "" && !names[baseline] {
		return usageErr("--baseline %q is not one of the targets", baseline)
	}
	if profile {
		if out == "" {
			return usageErr("--profile needs --out")
		}
		if profileTarget == "" {
			profileTarget = targets[0].Name
		} else if !names[profileTarget] {
			return usageErr("--profile-target %q is not one of the targets", profileTarget)
		}
		cfg.Profile = &loadgen.Profiler{URL: pprofURL, Dir: out, Target: profileTarget}
	} else if profileTarget != "" {
		return usageErr("--profile-target needs --profile")
	}
	var caseNames []string
	if cases != "" {
		caseNames = strings.Split(cases, ",")
		for _, c := range caseNames {
			if !slices.Contains(loadgen.CaseNames(), c) {
				return usageErr("unknown case %q; cases are: %s", c, strings.Join(loadgen.CaseNames(), ", "))
			}
		}
	}
	cfg.Progress = stdout
	if f, ok := stdout.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			cfg.TTY = true
		}
	}
	var res *loadgen.Results
	switch workload {
	case "mixed":
		res, err = loadgen.RunMixed(ctx, cfg, targets)
	case "cases":
		cc := loadgen.CasesConfig{
			Workers: cfg.Workers, Duration: cfg.Duration, Rounds: cfg.Rounds, Keep: cfg.Keep,
			Progress: cfg, Cases: caseNames, Profile: cfg.Profile, Payload: cfg.Payload, Settle: settle,
		}
		res, err = loadgen.RunCases(ctx, cc, targets)
	default:
		res, err = loadgen.RunSingle(ctx, workload, cfg, targets)
	}
	if res == nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "%s: interrupted: %v\n", cmd, err)
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		}
		return exitError
	}
	code := writeBench(res, out, baseline, gobench, stdout, stderr, cmd)
	if code == exitOK && cfg.Profile != nil {
		if workload == "cases" {
			for _, c := range res.Config.Cases {
				fmt.Fprintf(stdout, "\nProfiles of case %s:\n", c)
				if code = writeProfileTops(filepath.Join(out, c), profileTopFuncsCase, stdout, stderr, cmd); code != exitOK {
					break
				}
			}
		} else {
			code = writeProfileTops(out, profileTopFuncs, stdout, stderr, cmd)
		}
	}
	if err != nil { // some cases failed, or cleaning up failed
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitError
	}
	return code
}

// How many functions --profile prints per profile: of the run, or of each
// case of `coffer bench cases`.
const (
	profileTopFuncs     = 20
	profileTopFuncsCase = 10
)

// writeProfileTops prints the top n functions of the profiles in dir and
// saves them as dir/profile-top.txt.
func writeProfileTops(dir string, n int, stdout, stderr io.Writer, cmd string) int {
	var b strings.Builder
	if err := loadgen.WriteProfileTops(&b, dir, n); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitError
	}
	fmt.Fprintf(stdout, "\n%s", b.String())
	if err := os.WriteFile(filepath.Join(dir, "profile-top.txt"), []byte(b.String()), 0o644); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitError
	}
	return exitOK
}

// writeBench prints the report, the benchmark lines if asked for, and
// writes the report files into out if set.
func writeBench(res *loadgen.Results, out, baseline string, gobench bool, stdout, stderr io.Writer, cmd string) int {
	fmt.Fprintln(stdout)
	if err := loadgen.WriteMarkdown(stdout, res, baseline, false); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitError
	}
	if gobench {
		fmt.Fprintln(stdout)
		if err := loadgen.WriteGobench(stdout, res); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
			return exitError
		}
	}
	if out != "" {
		if err := loadgen.WriteReport(out, res, baseline); err != nil {
			fmt.Fprintf(stderr, "%s: write report: %v\n", cmd, err)
			return exitError
		}
		fmt.Fprintf(stdout, "\nResults written to %s\n", out)
		if _, err := os.Stat(filepath.Join(out, "cpu.pprof")); err == nil {
			fmt.Fprintf(stdout, "Profiles: go tool pprof -http=: %s\n", filepath.Join(out, "cpu.pprof"))
		}
	}
	return exitOK
}

func benchReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coffer bench report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var out, baseline string
	var gobench bool
	fs.StringVar(&out, "out", "", "write the merged results.json, report.md and SVG charts into this directory")
	fs.StringVar(&baseline, "baseline", "", "target that ratios are relative to (default: the best)")
	fs.BoolVar(&gobench, "gobench", false, "also print benchstat-readable Benchmark lines")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, "Usage: coffer bench report [flags] DIR|FILE...\n\nRe-renders the results.json of one or more runs; several runs are merged,\ntheir targets side by side (repeated names get #2, #3 …).\n\nFlags:\n")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK
	} else if err != nil {
		fmt.Fprintf(stderr, "coffer bench report: %v\n", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "coffer bench report: no results given: name result directories or results.json files")
		return exitUsage
	}
	var runs []*loadgen.Results
	for _, p := range fs.Args() {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			p = filepath.Join(p, "results.json")
		}
		res, err := loadgen.ReadJSON(p)
		if err != nil {
			fmt.Fprintf(stderr, "coffer bench report: %v\n", err)
			return exitError
		}
		runs = append(runs, res)
	}
	merged := loadgen.Merge(runs)
	for _, r := range runs[1:] {
		if r.Workload != merged.Workload {
			fmt.Fprintf(stderr, "coffer bench report: cannot merge workloads %s and %s\n", merged.Workload, r.Workload)
			return exitError
		}
	}
	return writeBench(merged, out, baseline, gobench, stdout, stderr, "coffer bench report")
}

func benchSys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coffer bench sys", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg loadgen.SysConfig
	cfg.FileSize = 256 << 20
	fs.StringVar(&cfg.Dir, "dir", os.TempDir(), "directory for the disk tests (use the storage path's file system)")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Second, "time per timed test")
	fs.Var(sizeFlag{&cfg.FileSize}, "size", "size of the sequential write and read (default 256MiB)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, "Usage: coffer bench sys [flags]\n\nMeasures the local limits S3 results are judged against.\n\nFlags:\n")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK
	} else if err != nil {
		fmt.Fprintf(stderr, "coffer bench sys: %v\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "coffer bench sys: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	rs, err := loadgen.RunSys(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "coffer bench sys: %v\n", err)
		return exitError
	}
	if err := loadgen.WriteSys(stdout, rs); err != nil {
		fmt.Fprintf(stderr, "coffer bench sys: %v\n", err)
		return exitError
	}
	return exitOK
}
