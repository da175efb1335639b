package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// adminLifecycleCommands are the commands about the lifecycle worker.
func adminLifecycleCommands() []adminCmd {
	return []adminCmd{
		{name: "lifecycle run", args: "[BUCKET]", summary: "apply buckets' lifecycle rules now",
			about: "Runs a lifecycle pass on the server now (admin:RunLifecycle): over BUCKET,\n" +
				"or over every bucket with a lifecycle configuration, as the background\n" +
				"worker does every lifecycle.interval. Expired objects are deleted (or\n" +
				"hidden under a delete marker in a versioned bucket), noncurrent versions\n" +
				"and delete markers left alone are removed and expired multipart uploads\n" +
				"aborted, each action recorded in the audit log. Prints what it did, per\n" +
				"bucket. A pass in progress is waited for first.\n\n" +
				"A pass over a large bucket takes a while, so --timeout has no limit by\n" +
				"default here.",
			max: 1, timeout: noTimeout, setup: noFlags(adminLifecycleRun)},
	}
}

func adminLifecycleRun(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	var in adminapi.LifecycleRunRequest
	if len(args) > 0 {
		in.Bucket = args[0]
	}
	res, err := c.RunLifecycle(ctx, in)
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(res)
	}
	if len(res.Buckets) == 0 {
		s.printf("no bucket has a lifecycle configuration\n")
		return nil
	}
	tw := s.table()
	fmt.Fprintf(tw, "BUCKET\tEXAMINED\tEXPIRED\tMARKERS MADE\tVERSIONS REMOVED\tMARKERS REMOVED\tUPLOADS ABORTED\tSKIPPED\tERROR\n")
	rows := res.Buckets
	if len(rows) > 1 {
		t := res.Totals
		t.Bucket = "(total)"
		rows = append(rows, t)
	}
	for _, b := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", b.Bucket, b.Examined, b.ObjectsExpired, b.DeleteMarkersCreated,
			b.VersionsRemoved, b.DeleteMarkersRemoved, b.UploadsAborted, b.Skipped, b.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s.printf("lifecycle pass on %s in %s\n", c.Endpoint(), time.Duration(res.DurationSeconds*float64(time.Second)).Round(time.Millisecond))
	return nil
}
