package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// Defaults of the flags every admin command has.
const (
	defaultAdminEndpoint = "http://127.0.0.1:6789"
	defaultAdminRegion   = "us-east-1"
	defaultAdminTimeout  = 30 * time.Second
)

// adminCmd is one `coffer admin` command: its words, arguments and help,
// and what runs it.
type adminCmd struct {
	name     string // words after "coffer admin", e.g. "user add"
	args     string // positional arguments for the usage line, e.g. "NAME FILE"
	flagHint string // the command's own flags for the summary, e.g. "--user NAME"
	summary  string // one line for the command list
	about    string // paragraph for -h
	min, max int    // number of positional arguments
	// timeout is the default of --timeout; 0 means adminTimeout.
	timeout time.Duration
	// setup registers the command's own flags on fs and returns what runs
	// the command once they are parsed.
	setup func(fs *flag.FlagSet) adminRun
}

// adminRun runs a command with its positional arguments.
type adminRun func(ctx context.Context, s *adminSession, args []string) error

// noTimeout is an adminCmd.timeout meaning no limit by default.
const noTimeout = -1

// adminCommands returns the table of admin commands, in the order of the
// usage text.
func adminCommands() []adminCmd {
	return slices.Concat(adminIAMCommands(), adminBucketCommands(), adminS3Commands(), adminServerCommands(), adminLifecycleCommands(), adminUsageCommands(), adminAuditCommands(), adminMigrateCommands())
}

// adminGroups returns the command groups: every proper prefix of a
// command's words ("user", "bucket", "bucket policy").
func adminGroups(cmds []adminCmd) map[string]bool {
	g := map[string]bool{}
	for _, c := range cmds {
		w := strings.Fields(c.name)
		for i := 1; i < len(w); i++ {
			g[strings.Join(w[:i], " ")] = true
		}
	}
	return g
}

// adminGlobalHelp documents the flags every command has.
const adminGlobalHelp = `Flags of every command (before or after the arguments):
  --endpoint URL     the server (default $COFFER_ENDPOINT, else ` + defaultAdminEndpoint + `)
  --access-key KEY   default $COFFER_ACCESS_KEY, else $COFFER_ROOT_ACCESS_KEY
  --secret-key KEY   default $COFFER_SECRET_KEY, else $COFFER_ROOT_SECRET_KEY; other users
                     can read it in the process list: prefer those or --secret-key-file
  --secret-key-file FILE
                     the secret key in FILE's first line (refused unless mode 0600 or stricter)
  --region REGION    signing region (default $COFFER_REGION, else ` + defaultAdminRegion + `)
  --json             print JSON, as the admin API returns it
  --timeout D        give up after D (default 30s; 0 means no limit)
`

// adminUsage returns the usage text of the commands whose name starts
// with prefix ("" for all).
func adminUsage(cmds []adminCmd, prefix string) string {
	var b strings.Builder
	if prefix == "" {
		b.WriteString("Usage: coffer admin <command> [arguments] [flags]\n\n" +
			"Administers a running Coffer server through its admin API: users, access\n" +
			"keys, groups, policies, buckets and their usage, bucket policies,\n" +
			"presigned URLs, garbage collection and lifecycle passes. Requests are\n" +
			"signed with an access key whose policies allow the admin actions (root\n" +
			"may do everything).\n\nCommands:\n")
	} else {
		fmt.Fprintf(&b, "Usage: coffer admin %s <command> [arguments] [flags]\n\nCommands:\n", prefix)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range cmds {
		if prefix != "" && !strings.HasPrefix(c.name, prefix+" ") {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\n", joinWords(c.name, c.args, c.flagHint), c.summary)
	}
	_ = tw.Flush() // writes to a strings.Builder cannot fail
	b.WriteString("\n" + adminGlobalHelp + "\nRun 'coffer admin <command> -h' for the flags of a command.\n")
	return b.String()
}

func admin(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runAdmin(ctx, args, os.Stdin, stdout, stderr, getenv)
}

// runAdmin is admin with standard input as a parameter, for tests.
func runAdmin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	cmds := adminCommands()
	if len(args) == 0 {
		fmt.Fprint(stderr, adminUsage(cmds, ""))
		return exitUsage
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, adminUsage(cmds, ""))
		return exitOK
	}
	var cmd *adminCmd
	for i := range cmds {
		w := strings.Fields(cmds[i].name)
		if len(args) >= len(w) && slices.Equal(args[:len(w)], w) {
			cmd = &cmds[i]
			args = args[len(w):]
			break
		}
	}
	if cmd == nil {
		return adminNoCommand(cmds, args, stdout, stderr)
	}
	return runAdminCmd(ctx, cmd, args, stdin, stdout, stderr, getenv)
}

func isHelp(s string) bool {
	return s == "help" || s == "-h" || s == "-help" || s == "--help"
}

// adminNoCommand reports args that name no command: an unknown word, or a
// group without its subcommand.
func adminNoCommand(cmds []adminCmd, args []string, stdout, stderr io.Writer) int {
	groups := adminGroups(cmds)
	group := ""
	for i := 1; i <= len(args); i++ {
		if g := strings.Join(args[:i], " "); groups[g] {
			group = g
		}
	}
	if group == "" {
		fmt.Fprintf(stderr, "coffer admin: unknown command %q\n\n%s", args[0], adminUsage(cmds, ""))
		return exitUsage
	}
	rest := args[len(strings.Fields(group)):]
	switch {
	case len(rest) == 0:
		fmt.Fprintf(stderr, "coffer admin %s: missing command\n\n%s", group, adminUsage(cmds, group))
	case isHelp(rest[0]):
		fmt.Fprint(stdout, adminUsage(cmds, group))
		return exitOK
	default:
		fmt.Fprintf(stderr, "coffer admin %s: unknown command %q\n\n%s", group, rest[0], adminUsage(cmds, group))
	}
	return exitUsage
}

// adminGlobals are the settings every command has, resolved from flags
// and the environment.
type adminGlobals struct {
	endpoint, accessKey, secretKey, region string
	json                                   bool
	timeout                                time.Duration
}

// adminSession is what a running command works with.
type adminSession struct {
	cmd    string // "coffer admin user add"
	g      adminGlobals
	stdin  io.Reader
	out    *stickyWriter
	stderr io.Writer
	getenv func(string) string
}

// stickyWriter remembers the first write error, so that commands can
// print freely and the failure is reported once at the end.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

// usageError is a mistake of the caller: exit status 2 with a hint to -h.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// exitStatus ends a command with an exit status and no further message:
// the command has printed its answer (a simulation that was denied).
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// runAdminCmd parses the flags and arguments of cmd, runs it and reports
// the outcome.
func runAdminCmd(ctx context.Context, cmd *adminCmd, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	name := "coffer admin " + cmd.name
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var g adminGlobals
	timeout := defaultAdminTimeout
	switch cmd.timeout {
	case noTimeout:
		timeout = 0
	case 0:
	default:
		timeout = cmd.timeout
	}
	fs.StringVar(&g.endpoint, "endpoint", "", "server URL (default $COFFER_ENDPOINT, else "+defaultAdminEndpoint+")")
	fs.StringVar(&g.accessKey, "access-key", "", "access key (default $COFFER_ACCESS_KEY, else $COFFER_ROOT_ACCESS_KEY)")
	var sk secretKeyFlags
	sk.register(fs, "secret key (default $COFFER_SECRET_KEY, else $COFFER_ROOT_SECRET_KEY)")
	fs.StringVar(&g.region, "region", "", "signing region (default $COFFER_REGION, else "+defaultAdminRegion+")")
	fs.BoolVar(&g.json, "json", false, "print JSON, as the admin API returns it")
	fs.DurationVar(&g.timeout, "timeout", timeout, "give up after this long; 0 means no limit")
	run := cmd.setup(fs)
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage: %s\n\n%s\n\nFlags:\n", joinWords(name, cmd.args, cmd.flagHint, "[flags]"), cmd.about)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "%s: %s\nRun '%s -h' for usage.\n", name, msg, name)
		return exitUsage
	}
	if err != nil {
		return usage(err.Error())
	}
	if len(pos) < cmd.min {
		return usage("missing " + strings.Fields(cmd.args)[len(pos)])
	}
	if len(pos) > cmd.max {
		return usage(fmt.Sprintf("unexpected argument %q", pos[cmd.max]))
	}
	if g.timeout < 0 {
		return usage("--timeout must not be negative")
	}
	g.endpoint = firstNonEmpty(g.endpoint, getenv("COFFER_ENDPOINT"), defaultAdminEndpoint)
	g.accessKey = firstNonEmpty(g.accessKey, getenv("COFFER_ACCESS_KEY"), getenv("COFFER_ROOT_ACCESS_KEY"))
	secretKey, err := sk.resolve(name, stderr)
	if err != nil {
		return usage(err.Error())
	}
	g.secretKey = firstNonEmpty(secretKey, getenv("COFFER_SECRET_KEY"), getenv("COFFER_ROOT_SECRET_KEY"))
	g.region = firstNonEmpty(g.region, getenv("COFFER_REGION"), defaultAdminRegion)
	if g.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	s := &adminSession{cmd: name, g: g, stdin: stdin, out: &stickyWriter{w: stdout}, stderr: stderr, getenv: getenv}
	err = run(ctx, s, pos)
	if s.out.err != nil && (err == nil || errors.Is(err, s.out.err)) {
		err = fmt.Errorf("write output: %w", s.out.err)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return usage(ue.msg)
	}
	var xe *exitStatus
	if errors.As(err, &xe) {
		return xe.code
	}
	if err != nil {
		fmt.Fprintln(stderr, s.describe(ctx, err))
		return exitError
	}
	return exitOK
}

// describe turns a failure of a command into the message for the user.
func (s *adminSession) describe(ctx context.Context, err error) string {
	var ae *adminapi.Error
	if errors.As(err, &ae) {
		msg := "coffer admin: " + ae.Code
		if ae.Message != "" {
			msg += ": " + ae.Message
		}
		if ae.RequestID != "" {
			msg += " (request id " + ae.RequestID + ")"
		}
		switch ae.Code {
		case "InvalidAccessKeyId", "SignatureDoesNotMatch":
			msg += "\nCheck the credentials: --access-key and --secret-key, or COFFER_ACCESS_KEY and COFFER_SECRET_KEY."
		case "RequestTimeTooSkewed":
			msg += "\nThis machine's clock and the server's disagree by more than 15 minutes."
		case "AuthorizationHeaderMalformed":
			msg += "\nCheck --region (COFFER_REGION): it must be the server's region."
		case "NoSuchRoute":
			msg += "\nThe server at " + s.g.endpoint + " may be an older Coffer without this command."
		}
		return msg
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Sprintf("coffer admin: no answer from %s within %s; raise --timeout", s.g.endpoint, s.g.timeout)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return "coffer admin: interrupted"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		cause := oe.Err.Error()
		if errors.Is(err, syscall.ECONNREFUSED) {
			cause = "connection refused"
		}
		return fmt.Sprintf("coffer admin: cannot reach the server at %s: %s\nIs it running? Start it with 'coffer serve', or point --endpoint (COFFER_ENDPOINT) at it.", s.g.endpoint, cause)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("coffer admin: request to %s failed: %v", s.g.endpoint, ue.Err)
	}
	return s.cmd + ": " + err.Error()
}

// parseInterleaved parses flags that may come before, between or after
// the positional arguments, which the flag package alone stops at, and
// returns the positional arguments. "--" ends the flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// joinWords joins the non-empty parts with spaces.
func joinWords(parts ...string) string {
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " ")
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// client returns a client of the admin API for the session's endpoint and
// credentials.
func (s *adminSession) client() (*adminapi.Client, error) {
	switch {
	case s.g.accessKey == "" && s.g.secretKey == "":
		return nil, usagef("no credentials: set COFFER_ACCESS_KEY and COFFER_SECRET_KEY (or COFFER_ROOT_ACCESS_KEY and COFFER_ROOT_SECRET_KEY), or give --access-key and --secret-key-file")
	case s.g.accessKey == "":
		return nil, usagef("no access key: give --access-key or set COFFER_ACCESS_KEY (or COFFER_ROOT_ACCESS_KEY)")
	case s.g.secretKey == "":
		return nil, usagef("no secret key: set COFFER_SECRET_KEY (or COFFER_ROOT_SECRET_KEY) or give --secret-key-file")
	}
	c, err := adminapi.NewClient(s.g.endpoint, s.g.accessKey, s.g.secretKey, s.g.region, &http.Client{})
	if err != nil {
		return nil, usagef("--endpoint: %v", err)
	}
	return c, nil
}

// printJSON prints v as indented JSON.
func (s *adminSession) printJSON(v any) error {
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printf prints text output; a write error is reported at the end.
func (s *adminSession) printf(format string, a ...any) {
	_, _ = fmt.Fprintf(s.out, format, a...) // stickyWriter keeps the error
}

// note prints a remark meant for a person, not for a pipe, on stderr,
// unless the output is JSON.
func (s *adminSession) note(format string, a ...any) {
	if !s.g.json {
		fmt.Fprintf(s.stderr, format+"\n", a...)
	}
}

// table returns a tabwriter on the output; the caller flushes it.
func (s *adminSession) table() *tabwriter.Writer {
	return tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
}

// done reports a change that has no output of its own: a sentence in text
// mode, nothing with --json (the API answered 204 No Content).
func (s *adminSession) done(format string, a ...any) error {
	if !s.g.json {
		s.printf(format+"\n", a...)
	}
	return nil
}

// list formats names for a table cell.
func list(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

// timestamp formats a time for text output.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
