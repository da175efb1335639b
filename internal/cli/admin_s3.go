package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// adminS3Commands are the commands that use S3 itself: bucket policies and
// presigned URLs.
func adminS3Commands() []adminCmd {
	return []adminCmd{
		{name: "bucket policy set", args: "BUCKET FILE", min: 2, max: 2, summary: "set a bucket's policy from a JSON file",
			about: "Sets the policy of BUCKET to the JSON policy document in FILE (\"-\" reads\nstandard input), with S3's PutBucketPolicy.",
			setup: noFlags(adminBucketPolicySet)},
		{name: "bucket policy get", args: "BUCKET", min: 1, max: 1, summary: "print a bucket's policy",
			about: "Prints the policy document of BUCKET (S3's GetBucketPolicy).",
			setup: noFlags(adminBucketPolicyGet)},
		{name: "bucket policy rm", args: "BUCKET", min: 1, max: 1, summary: "remove a bucket's policy",
			about: "Removes the policy of BUCKET (S3's DeleteBucketPolicy).",
			setup: noFlags(adminBucketPolicyRm)},
		{name: "presign", args: "s3://BUCKET/KEY", flagHint: "[--method M] [--expires D]", min: 1, max: 1,
			summary: "print a presigned URL for an object",
			about:   "Prints a path-style URL on --endpoint that lets whoever holds it do --method\non the object until it expires, signed with your access key (SigV4 query\nauthentication). It is made locally: the server is not asked.",
			setup:   adminPresign},
	}
}

func adminBucketPolicySet(ctx context.Context, s *adminSession, args []string) error {
	doc, err := s.readPolicyFile(args[1])
	if err != nil {
		return err
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.PutBucketPolicy(ctx, args[0], doc); err != nil {
		return err
	}
	return s.done("Set the policy of bucket %s.", args[0])
}

func adminBucketPolicyGet(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	doc, err := c.GetBucketPolicy(ctx, args[0])
	if err != nil {
		return err
	}
	s.printf("%s\n", indentJSON(doc))
	return nil
}

func adminBucketPolicyRm(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.DeleteBucketPolicy(ctx, args[0]); err != nil {
		return err
	}
	return s.done("Removed the policy of bucket %s.", args[0])
}

// maxPresignExpiry is SigV4's limit on presigned URLs.
const maxPresignExpiry = 7 * 24 * time.Hour

// presignedURL is the --json output of presign.
type presignedURL struct {
	URL     string    `json:"url"`
	Method  string    `json:"method"`
	Expires time.Time `json:"expires"`
}

// daysDuration is a duration flag that also takes whole days: 7d.
type daysDuration time.Duration

func (d *daysDuration) String() string { return time.Duration(*d).String() }

func (d *daysDuration) Set(v string) error {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 && n <= 366 {
			*d = daysDuration(time.Duration(n) * 24 * time.Hour)
			return nil
		}
	}
	t, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration such as 15m, 12h or 7d")
	}
	*d = daysDuration(t)
	return nil
}

// parseS3URL splits s3://BUCKET/KEY.
func parseS3URL(v string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(v, "s3://")
	if ok {
		bucket, key, ok = strings.Cut(rest, "/")
	}
	if !ok || bucket == "" || key == "" {
		return "", "", fmt.Errorf("bad URL %q: want s3://BUCKET/KEY", v)
	}
	return bucket, key, nil
}

func adminPresign(fs *flag.FlagSet) adminRun {
	method := fs.String("method", http.MethodGet, "the request the URL allows: GET, PUT, HEAD or DELETE")
	expires := new(time.Hour)
	fs.Var((*daysDuration)(expires), "expires", "how long the URL works, from 1s to 7d (default 1h)")
	return func(_ context.Context, s *adminSession, args []string) error {
		m := strings.ToUpper(*method)
		switch m {
		case http.MethodGet, http.MethodPut, http.MethodHead, http.MethodDelete:
		default:
			return usagef("--method %q: want GET, PUT, HEAD or DELETE", *method)
		}
		if *expires < time.Second || *expires > maxPresignExpiry || *expires%time.Second != 0 {
			return usagef("--expires %s: want whole seconds from 1s to 7d", *expires)
		}
		bucket, key, err := parseS3URL(args[0])
		if err != nil {
			return usagef("%v", err)
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		now := time.Now()
		u, err := c.Presign(m, bucket, key, *expires)
		if err != nil {
			return err
		}
		if s.g.json {
			return s.printJSON(presignedURL{URL: u, Method: m, Expires: now.Add(*expires).UTC().Truncate(time.Second)})
		}
		s.printf("%s\n", u)
		return nil
	}
}
