package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// adminBucketCommands are the commands that describe buckets and their
// usage.
func adminBucketCommands() []adminCmd {
	return []adminCmd{
		{name: "bucket ls", summary: "list buckets with their objects and sizes",
			about: "Lists the buckets you may see (as S3's ListBuckets shows them) with what\n" +
				"each holds: objects, their total size, and multipart uploads in progress\n" +
				"with the size of their parts. Objects are stored versions, current and\n" +
				"noncurrent; delete markers are not counted (a bucket of delete markers\n" +
				"alone shows 0 yet cannot be deleted). The counts are exact and cheap to\n" +
				"read: the server keeps them with every write (a bucket whose stored usage\n" +
				"is corrupt shows ?, and a note says so). PUBLIC says whether the bucket's\n" +
				"policy grants anything to everyone. Sizes are rounded (KiB, MiB, GiB);\n" +
				"--json gives exact bytes.",
			setup: noFlags(adminBucketList)},
		{name: "bucket info", args: "NAME", min: 1, max: 1, summary: "describe a bucket and what it holds",
			about: "Describes bucket NAME: its region and creation time, its objects and their\n" +
				"total size, and its multipart uploads in progress with the size of their\n" +
				"parts.",
			setup: noFlags(adminBucketInfo)},
	}
}

// adminUsageCommands are the commands about usage accounting itself.
func adminUsageCommands() []adminCmd {
	return []adminCmd{
		{name: "usage check", flagHint: "[--repair]", summary: "recount every bucket's usage and compare it",
			about: "Has the server recount every bucket's usage from its object and upload\n" +
				"records, from one consistent snapshot while it keeps serving, and compare\n" +
				"it with the usage it keeps. A difference means a bug, or that a Coffer\n" +
				"older than usage accounting wrote to this storage after a newer one had\n" +
				"counted it. With --repair the buckets that differ are counted again and\n" +
				"corrected while writes go on (only a corrupt value holds off the writes\n" +
				"into its bucket while it is counted); one repair runs at a time.\n\n" +
				"Exits with status 1 if a difference remains: without --repair, any; with\n" +
				"it, any that a second check after the repair still finds (records of a\n" +
				"bucket that does not exist are reported, never repaired), naming those\n" +
				"buckets. A pass reads every object record, so --timeout has no limit by\n" +
				"default here.",
			timeout: noTimeout, setup: adminUsageCheck},
	}
}

func adminBucketList(ctx context.Context, s *adminSession, _ []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	bs, err := c.Buckets(ctx)
	if err != nil {
		return err
	}
	if s.g.json {
		if bs == nil {
			bs = []adminapi.BucketInfo{}
		}
		return s.printJSON(adminapi.BucketList{Buckets: bs})
	}
	if len(bs) == 0 {
		s.note("No buckets.")
		return nil
	}
	tw := s.table()
	fmt.Fprintln(tw, "NAME\tOBJECTS\tSIZE\tUPLOADS\tPART SIZE\tPUBLIC\tCREATED")
	var corrupt []string
	for _, b := range bs {
		if b.UsageHidden {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\t%s\n", b.Name, yesNo(b.Public), timestamp(b.Created))
			continue
		}
		if b.UsageCorrupt {
			corrupt = append(corrupt, b.Name)
			fmt.Fprintf(tw, "%s\t?\t?\t?\t?\t%s\t%s\n", b.Name, yesNo(b.Public), timestamp(b.Created))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\n", b.Name, b.Objects, humanBytes(b.Bytes), b.Uploads,
			humanBytes(b.PartBytes), yesNo(b.Public), timestamp(b.Created))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(corrupt) > 0 {
		s.note("The stored usage of %s is corrupt (shown as ?); %s resets it.", strings.Join(corrupt, ", "), repairCommand)
	}
	return nil
}

// repairCommand is the command that repairs usage, for messages.
const repairCommand = "'coffer admin usage check --repair'"

func adminBucketInfo(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	b, err := c.Bucket(ctx, args[0])
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(b)
	}
	region := b.Region
	if region == "" {
		region = "(the server's)"
	}
	tw := s.table()
	fmt.Fprintf(tw, "Name:\t%s\n", b.Name)
	fmt.Fprintf(tw, "Region:\t%s\n", region)
	fmt.Fprintf(tw, "Created:\t%s\n", timestamp(b.Created))
	if b.UsageHidden {
		fmt.Fprintf(tw, "Usage:\tnot shown: you may not list the whole bucket\n")
		fmt.Fprintf(tw, "Public:\t%s\n", yesNo(b.Public))
		return tw.Flush()
	}
	if b.UsageCorrupt {
		fmt.Fprintf(tw, "Usage:\tunknown: the stored value is corrupt; %s resets it\n", repairCommand)
		fmt.Fprintf(tw, "Public:\t%s\n", yesNo(b.Public))
		return tw.Flush()
	}
	fmt.Fprintf(tw, "Objects:\t%d\n", b.Objects)
	fmt.Fprintf(tw, "Size:\t%s\n", sizeDetail(b.Bytes))
	fmt.Fprintf(tw, "Uploads in progress:\t%d\n", b.Uploads)
	fmt.Fprintf(tw, "Size of their parts:\t%s\n", sizeDetail(b.PartBytes))
	fmt.Fprintf(tw, "Public:\t%s\n", yesNo(b.Public))
	return tw.Flush()
}

// errUsageDiffers is the failure of usage check when a difference remains.
var errUsageDiffers = errors.New("usage differs from the records; run with --repair to correct it")

func adminUsageCheck(fs *flag.FlagSet) adminRun {
	repair := fs.Bool("repair", false, "correct the usage of the buckets that differ")
	return func(ctx context.Context, s *adminSession, _ []string) error {
		c, err := s.client()
		if err != nil {
			return err
		}
		res, err := c.CheckUsage(ctx, adminapi.UsageCheckRequest{Repair: *repair})
		if err != nil {
			return err
		}
		if s.g.json {
			if err := s.printJSON(res); err != nil {
				return err
			}
		} else {
			s.printUsageCheck(res, *repair)
		}
		switch {
		case len(res.Mismatches) == 0:
			return nil
		case !*repair:
			return errUsageDiffers
		}
		// Some differences cannot be repaired (records of a bucket that
		// does not exist), and a repair may skip a bucket (deleted
		// meanwhile): what is still wrong is what a second check finds.
		after, err := c.CheckUsage(ctx, adminapi.UsageCheckRequest{})
		if err != nil {
			return fmt.Errorf("check again after the repair: %w", err)
		}
		if len(after.Mismatches) > 0 {
			return usageRemainsError(after.Mismatches)
		}
		return nil
	}
}

// usageRemainsError is the failure of usage check --repair when a second
// check still finds differences: it names the buckets.
func usageRemainsError(ms []adminapi.UsageMismatch) error {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Bucket
		if m.Problem != "" {
			names[i] += " (" + m.Problem + ")"
		}
	}
	n := fmt.Sprintf("%d buckets still differ from their records", len(ms))
	if len(ms) == 1 {
		n = "1 bucket still differs from its records"
	}
	return fmt.Errorf("usage of %s after the repair: %s", n, strings.Join(names, ", "))
}

// printUsageCheck prints the result of a check as text.
func (s *adminSession) printUsageCheck(res adminapi.UsageCheckResult, repair bool) {
	if len(res.Mismatches) == 0 {
		s.printf("Checked %d buckets: usage matches the records.\n", res.Buckets)
		return
	}
	s.printf("Checked %d buckets: %d differ from their records.\n", res.Buckets, len(res.Mismatches))
	tw := s.table()
	fmt.Fprintln(tw, "BUCKET\tSTORED OBJECTS\tCOUNTED\tSTORED BYTES\tCOUNTED\tSTORED UPLOADS\tCOUNTED\tSTORED PART BYTES\tCOUNTED\tPROBLEM")
	for _, m := range res.Mismatches {
		problem := m.Problem
		if problem == "" {
			problem = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", m.Bucket,
			m.Stored.Objects, m.Counted.Objects, m.Stored.Bytes, m.Counted.Bytes,
			m.Stored.Uploads, m.Counted.Uploads, m.Stored.PartBytes, m.Counted.PartBytes, problem)
	}
	_ = tw.Flush() // the sticky writer keeps a write error
	if repair {
		s.printf("Repaired %d.\n", res.Repaired)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// humanUnits are the binary units of humanBytes, as internal/bytesize
// spells them.
var humanUnits = []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// humanBytes formats a byte count for a person: bytes below 1 KiB, else
// one decimal in the largest binary unit that leaves at least 1 (1.5 MiB).
// bytesize.Format writes exact counts for configuration files; a table
// wants them rounded.
func humanBytes(n int64) string {
	sign, u := "", uint64(n)
	if n < 0 { // only a corrupt count is negative
		sign, u = "-", -u
	}
	if u < 1024 {
		return sign + strconv.FormatUint(u, 10) + " B"
	}
	v, unit := float64(u)/1024, 0
	for v >= 1024 && unit < len(humanUnits)-1 {
		v /= 1024
		unit++
	}
	// Rounding 1023.96 up would print "1024.0 KiB": move to the next unit.
	if v >= 1023.95 && unit < len(humanUnits)-1 {
		v /= 1024
		unit++
	}
	return sign + strconv.FormatFloat(v, 'f', 1, 64) + " " + humanUnits[unit]
}

// sizeDetail is humanBytes with the exact count beside it, when rounding
// hid it.
func sizeDetail(n int64) string {
	h := humanBytes(n)
	if n < 1024 && n > -1024 {
		return h
	}
	return fmt.Sprintf("%s (%d bytes)", h, n)
}
