package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

func bench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coffer bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "Usage: coffer bench [flags]\n\nBenchmarks S3 endpoints. Not yet implemented: see issue 4.")
		return exitOK
	}
	fmt.Fprintln(stderr, "coffer bench: not yet implemented: see issue 4")
	return exitUsage
}
