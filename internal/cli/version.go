package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the release version, set at link time:
//
//	go build -ldflags "-X github.com/coffer-s3/coffer/internal/cli.version=v1.2.3" ./cmd/coffer
//
// It is the one package-level variable that is not a constant, a sentinel
// or a lookup table: the linker's -X can set only a variable. Nothing
// writes it at run time. When empty, the module version from the build
// information is used.
var version string

func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coffer version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "Usage: coffer version\n\nPrints the version of coffer, the Go release that built it and the source revision.")
			return exitOK
		}
		fmt.Fprintf(stderr, "coffer version: %v\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "coffer version: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	fmt.Fprintln(stdout, versionString(version, readBuildInfo()))
	return exitOK
}

func readBuildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// versionString renders "coffer <version> (<go version> <os>/<arch>[, <rev>])",
// preferring the link-time version v, then the module version from bi.
func versionString(v string, bi *debug.BuildInfo) string {
	rev := ""
	if bi != nil {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && modified {
			rev += "-dirty"
		}
	}
	if v == "" {
		v = "devel"
	}
	s := fmt.Sprintf("coffer %s (%s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if rev != "" {
		s += ", " + rev
	}
	return s + ")"
}
