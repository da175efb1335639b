package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/audit"
)

// adminAuditCommands are the commands that read the audit log.
func adminAuditCommands() []adminCmd {
	const filters = "Filters (all optional, combined with AND):\n" +
		"  --since T|D  events at or after T (RFC 3339) or in the last D (e.g. 1h)\n" +
		"  --until T|D  events before T or before D ago\n" +
		"  --source S   s3, admin, lifecycle or console\n" +
		"  --op OP      S3 operation (PutObject) or admin operation (CreateUser)\n" +
		"  --bucket B, --prefix P   bucket, and key prefix within it\n" +
		"  --user U, --key-id K, --ip IP   who, with which access key, from where\n" +
		"  --failed     only refused or failed requests (status 400 and above)"
	return []adminCmd{
		{name: "audit ls", flagHint: "[filters] [--limit N]", summary: "show recent audit events, newest first",
			about: "Shows the newest events of the audit log: every mutating S3 request, every\n" +
				"admin change and every refused request, with who made it, from where and\n" +
				"the outcome (successful reads only if audit.read-sample is set).\n\n" + filters,
			setup: adminAuditList},
		{name: "audit export", flagHint: "[filters] [--out FILE]", summary: "write audit events as JSON Lines, oldest first",
			about: "Writes every matching audit event as one JSON object per line, oldest first,\n" +
				"to --out or standard output, as the server streams them.\n\n" + filters,
			timeout: noTimeout, setup: adminAuditExport},
	}
}

// auditFlags registers the filter flags and returns what builds the
// filter once they are parsed.
func auditFlags(fs *flag.FlagSet) func(now time.Time) (audit.Filter, error) {
	since := fs.String("since", "", "events at or after this time (RFC 3339) or this long ago (1h)")
	until := fs.String("until", "", "events before this time (RFC 3339) or this long ago")
	var f audit.Filter
	fs.StringVar(&f.Source, "source", "", "s3, admin, lifecycle or console")
	fs.StringVar(&f.Op, "op", "", "operation name, e.g. PutObject or CreateUser")
	fs.StringVar(&f.Bucket, "bucket", "", "bucket")
	fs.StringVar(&f.KeyPrefix, "prefix", "", "key prefix")
	fs.StringVar(&f.User, "user", "", "user name (root for root)")
	fs.StringVar(&f.AccessKey, "key-id", "", "access key ID")
	fs.StringVar(&f.SourceIP, "ip", "", "client IP address")
	fs.BoolVar(&f.Failed, "failed", false, "only refused or failed requests")
	return func(now time.Time) (audit.Filter, error) {
		var err error
		if f.Since, err = auditTime("--since", *since, now); err != nil {
			return f, err
		}
		if f.Until, err = auditTime("--until", *until, now); err != nil {
			return f, err
		}
		switch f.Source {
		case "", audit.SourceS3, audit.SourceAdmin, audit.SourceLifecycle, audit.SourceConsole:
		default:
			return f, usagef("--source %q: want s3, admin, lifecycle or console", f.Source)
		}
		return f, nil
	}
}

// auditTime parses a time flag: an RFC 3339 time, or a duration back from
// now.
func auditTime(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, usagef("%s %s: a duration must be positive", name, v)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, usagef("%s %q: want an RFC 3339 time (2026-11-24T18:00:00Z) or a duration (90m)", name, v)
	}
	return t, nil
}

func adminAuditList(fs *flag.FlagSet) adminRun {
	filter := auditFlags(fs)
	limit := fs.Int("limit", 50, "most events shown (pages through the server's limit of "+strconv.Itoa(adminapi.MaxAuditLimit)+")")
	return func(ctx context.Context, s *adminSession, _ []string) error {
		f, err := filter(time.Now())
		if err != nil {
			return err
		}
		if *limit < 1 {
			return usagef("--limit must be at least 1")
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		var out adminapi.AuditPage
		for want := *limit; ; {
			f.Limit = min(want, adminapi.MaxAuditLimit)
			p, err := c.AuditEvents(ctx, f)
			if err != nil {
				return err
			}
			out.Events = append(out.Events, p.Events...)
			out.Next = p.Next
			want -= len(p.Events)
			if p.Next == 0 || want <= 0 {
				break
			}
			f.Before = p.Next
		}
		if s.g.json {
			if out.Events == nil {
				out.Events = []audit.Event{}
			}
			return s.printJSON(out)
		}
		if len(out.Events) == 0 {
			s.note("No events.")
			return nil
		}
		tw := s.table()
		fmt.Fprintln(tw, "TIME\tSOURCE\tOP\tSTATUS\tUSER\tKEY ID\tIP\tTARGET")
		for _, e := range out.Events {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Source, e.Op,
				auditStatus(e), dash(e.User), dash(e.AccessKey), dash(e.SourceIP), dash(auditTarget(e)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if out.Next != 0 {
			s.note("More events: raise --limit, or narrow with --until or the filters.")
		}
		return nil
	}
}

func adminAuditExport(fs *flag.FlagSet) adminRun {
	filter := auditFlags(fs)
	path := fs.String("out", "", "file to write (created, or truncated); standard output if empty")
	return func(ctx context.Context, s *adminSession, _ []string) (err error) {
		f, err := filter(time.Now())
		if err != nil {
			return err
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		if *path == "" {
			_, err = c.ExportAudit(ctx, f, s.out)
			return err
		}
		file, err := os.OpenFile(*path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}()
		n, err := c.ExportAudit(ctx, f, file)
		if err != nil {
			return err
		}
		s.note("Wrote %d bytes to %s.", n, *path)
		return nil
	}
}

// auditStatus formats an event's outcome: the status, and the code of a
// failure.
func auditStatus(e audit.Event) string {
	if e.Code == "" {
		return strconv.Itoa(e.Status)
	}
	return strconv.Itoa(e.Status) + " " + e.Code
}

// auditTarget is what an event acted on: bucket/key for S3, the admin
// path for admin.
func auditTarget(e audit.Event) string {
	switch {
	case e.Target != "":
		return e.Target
	case e.Key != "":
		return e.Bucket + "/" + e.Key
	}
	return e.Bucket
}

// dash formats a table cell: "-" for nothing, and a Go-quoted string
// for one with control or non-printable characters (keys may hold any
// byte), so that a cell never moves the terminal's cursor.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
