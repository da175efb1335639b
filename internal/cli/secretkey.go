package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/coffer-s3/coffer/internal/secretfile"
)

// secretKeyFlags are the --secret-key and --secret-key-file flags of
// coffer admin and coffer bench. A secret in an argument is visible to
// every user of the machine (ps, /proc/PID/cmdline), as it is not in the
// environment or a file: --secret-key still works, with a warning, and
// --secret-key-file is the way to pass it explicitly. The environment
// variables are read by the caller, after the flags: a flag's default is
// printed by -h.
type secretKeyFlags struct{ key, file string }

// register defines the flags on fs; what is the key's description, with
// its environment default.
func (f *secretKeyFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&f.key, "secret-key", "", what+"; other users of this machine can read it in the process list: prefer the environment or --secret-key-file")
	fs.StringVar(&f.file, "secret-key-file", "", "file whose first line is the secret key; refused when group or others may read it (chmod 600)")
}

// resolve returns the secret key the flags give, "" for none (the caller
// then reads the environment), after warning on stderr when it came as
// --secret-key. Its errors are usage errors, which never hold the secret.
func (f *secretKeyFlags) resolve(cmd string, stderr io.Writer) (string, error) {
	switch {
	case f.key != "" && f.file != "":
		return "", usagef("give --secret-key or --secret-key-file, not both")
	case f.key != "":
		fmt.Fprintf(stderr, "%s: warning: --secret-key shows the secret key to every user of this machine (ps, /proc/PID/cmdline); set COFFER_SECRET_KEY or use --secret-key-file instead\n", cmd)
		return f.key, nil
	case f.file != "":
		line, exposed, err := secretfile.ReadLine(f.file)
		if err != nil {
			return "", usagef("--secret-key-file: %v", err)
		}
		if exposed != nil {
			// As the master-key and credentials files are: someone may
			// already have read it.
			return "", usagef("--secret-key-file %v: refusing to use it; run chmod 600 %s (and consider rotating the key)", exposed, exposed.Path)
		}
		k := strings.TrimSpace(line)
		if k == "" {
			return "", usagef("--secret-key-file %s: the first line is empty", f.file)
		}
		return k, nil
	}
	return "", nil
}
