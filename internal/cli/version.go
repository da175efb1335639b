package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/coffer-s3/coffer/internal/version"
)

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
	fmt.Fprintln(stdout, version.String())
	return exitOK
}
