package e2e

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/config"
)

// expiryRE parses x-amz-expiration.
var expiryRE = regexp.MustCompile(`^expiry-date="([^"]+)", rule-id="([^"]*)"$`)

// checkExpiration checks an x-amz-expiration value: the rule, and a date
// that is the midnight UTC after modified plus days.
func checkExpiration(t *testing.T, what string, got *string, modified time.Time, days int, rule string) {
	t.Helper()
	m := expiryRE.FindStringSubmatch(aws.ToString(got))
	if m == nil {
		t.Errorf("%s: x-amz-expiration = %q, want a date and rule %s", what, aws.ToString(got), rule)
		return
	}
	d, err := http.ParseTime(m[1])
	if err != nil {
		t.Errorf("%s: expiry-date %q: %v", what, m[1], err)
		return
	}
	due := modified.UTC().AddDate(0, 0, days)
	want := time.Date(due.Year(), due.Month(), due.Day(), 0, 0, 0, 0, time.UTC)
	if due.After(want) {
		want = want.AddDate(0, 0, 1)
	}
	if !d.Equal(want) || m[2] != rule {
		t.Errorf("%s: x-amz-expiration = %q, want %s and rule %s", what, aws.ToString(got), want.Format(http.TimeFormat), rule)
	}
}

// jsonOf renders SDK values as JSON, to compare them without their
// unexported fields.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLifecycleConfiguration drives the lifecycle configuration API with
// aws-sdk-go-v2: the round trip, the errors, and the headers that say
// when an object expires or an upload is aborted.
func TestLifecycleConfiguration(t *testing.T) {
	t.Parallel()
	testLifecycleConfiguration(t, startServer(t))
}

func testLifecycleConfiguration(t *testing.T, ts s3Target) {
	c := ts.client(t)
	ctx := t.Context()
	b := mkBucket(t, c, "lifecycle-config")

	_, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(b)})
	check(t, "GetBucketLifecycleConfiguration without one", err, "NoSuchLifecycleConfiguration")
	var re *smithy.GenericAPIError
	if errors.As(err, &re) && re.ErrorMessage() != "The lifecycle configuration does not exist" {
		t.Errorf("message %q", re.ErrorMessage())
	}

	rules := []types.LifecycleRule{
		{ID: aws.String("logs"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("logs/")},
			Expiration:                  &types.LifecycleExpiration{Days: aws.Int32(1)},
			NoncurrentVersionExpiration: &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(3), NewerNoncurrentVersions: aws.Int32(2)}},
		{ID: aws.String("tagged"), Status: types.ExpirationStatusEnabled,
			Filter:     &types.LifecycleRuleFilter{And: &types.LifecycleRuleAndOperator{Prefix: aws.String("t/"), Tags: []types.Tag{{Key: aws.String("tmp"), Value: aws.String("yes")}}}},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(7)}},
		{ID: aws.String("uploads"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("up/")},
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(2)}},
		{ID: aws.String("dated"), Status: types.ExpirationStatusDisabled, Filter: &types.LifecycleRuleFilter{},
			Expiration: &types.LifecycleExpiration{Date: aws.Time(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}},
	}
	put, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
		Bucket: aws.String(b), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: rules},
	})
	if err != nil {
		t.Fatalf("PutBucketLifecycleConfiguration: %v", err)
	}
	if put.TransitionDefaultMinimumObjectSize != types.TransitionDefaultMinimumObjectSizeAllStorageClasses128k {
		t.Errorf("TransitionDefaultMinimumObjectSize = %q", put.TransitionDefaultMinimumObjectSize)
	}
	settle(ts) // x-amz-expiration below comes from every node's rules
	got, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(b)})
	if err != nil {
		t.Fatalf("GetBucketLifecycleConfiguration: %v", err)
	}
	if diff := cmp.Diff(jsonOf(t, rules), jsonOf(t, got.Rules)); diff != "" {
		t.Errorf("rules read back (-put +got):\n%s", diff)
	}

	// Refusals as S3's, changing nothing.
	for _, tc := range []struct {
		name  string
		rules []types.LifecycleRule
		code  string
	}{
		{"days 0", []types.LifecycleRule{{ID: aws.String("x"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(0)}}}, "InvalidArgument"},
		{"no action", []types.LifecycleRule{{ID: aws.String("x"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{}}}, "InvalidRequest"},
		{"filter of two", []types.LifecycleRule{{ID: aws.String("x"), Status: types.ExpirationStatusEnabled,
			Filter:     &types.LifecycleRuleFilter{Prefix: aws.String("a"), ObjectSizeGreaterThan: aws.Int64(5)},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)}}}, "MalformedXML"},
		{"transition", []types.LifecycleRule{{ID: aws.String("x"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{},
			Transitions: []types.Transition{{Days: aws.Int32(30), StorageClass: types.TransitionStorageClassGlacier}}}}, "NotImplemented"},
	} {
		_, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
			Bucket: aws.String(b), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: tc.rules},
		})
		check(t, "PutBucketLifecycleConfiguration "+tc.name, err, tc.code)
	}
	if got, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(b)}); err != nil || len(got.Rules) != len(rules) {
		t.Errorf("configuration after refusals: %d rules, %v", len(got.Rules), err)
	}

	// x-amz-expiration on PUT, HEAD, GET, copy and complete.
	p, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("logs/a"), Body: strings.NewReader("line")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("logs/a")})
	if err != nil {
		t.Fatal(err)
	}
	modified := aws.ToTime(h.LastModified)
	checkExpiration(t, "PutObject", p.Expiration, modified, 1, "logs")
	checkExpiration(t, "HeadObject", h.Expiration, modified, 1, "logs")
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("logs/a")})
	if err != nil {
		t.Fatal(err)
	}
	g.Body.Close()
	checkExpiration(t, "GetObject", g.Expiration, modified, 1, "logs")
	tp, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("t/x"), Body: strings.NewReader("x"), Tagging: aws.String("tmp=yes")})
	if err != nil {
		t.Fatal(err)
	}
	checkExpiration(t, "PutObject with the rule's tag", tp.Expiration, modified, 7, "tagged")
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("logs/copy"), CopySource: aws.String(b + "/t/x")})
	if err != nil {
		t.Fatal(err)
	}
	checkExpiration(t, "CopyObject", cp.Expiration, modified, 1, "logs")
	if o, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("t/y"), Body: strings.NewReader("y")}); err != nil || o.Expiration != nil {
		t.Errorf("PutObject without the tag: Expiration %v, %v", aws.ToString(o.Expiration), err)
	}
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("up/big")})
	if err != nil {
		t.Fatal(err)
	}
	if cu.AbortDate == nil || aws.ToString(cu.AbortRuleId) != "uploads" || cu.AbortDate.Hour() != 0 || cu.AbortDate.Before(time.Now().Add(48*time.Hour)) {
		t.Errorf("CreateMultipartUpload AbortDate %v, AbortRuleId %q", cu.AbortDate, aws.ToString(cu.AbortRuleId))
	}

	if _, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(b)}); err != nil {
		t.Fatalf("DeleteBucketLifecycle: %v", err)
	}
	settle(ts)
	_, err = c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(b)})
	check(t, "GetBucketLifecycleConfiguration after delete", err, "NoSuchLifecycleConfiguration")
	if h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("logs/a")}); err != nil || h.Expiration != nil {
		t.Errorf("HeadObject after the rules went: Expiration %q, %v", aws.ToString(h.Expiration), err)
	}
	if _, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(b)}); err != nil {
		t.Errorf("DeleteBucketLifecycle without a configuration: %v", err)
	}
}

// fakeClock is the lifecycle worker's clock in TestLifecycleExpiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// TestLifecycleExpiry expires objects through `coffer admin lifecycle
// run` on a server whose lifecycle worker runs on a clock the test moves
// days ahead: objects of an unversioned bucket are deleted, those of a
// versioned one hidden under delete markers, noncurrent versions and
// expired uploads removed; every action is in the audit log, by the
// system principal "lifecycle", and counted in the metrics.
func TestLifecycleExpiry(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	ts := startServerWith(t, nil, func(c *config.Config) { c.Lifecycle.Clock = clock.Now },
		"--lifecycle.interval", "0") // no background passes: the test runs them
	c := ts.client(t)
	ctx := t.Context()
	admin := adminCLI{t: t, bin: cofferBinary(t), endpoint: ts.endpoint, ak: ts.ak, sk: ts.sk}

	plain := mkBucket(t, c, "lifecycle-plain")
	versioned := mkBucket(t, c, "lifecycle-versioned")
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(versioned),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	rules := []types.LifecycleRule{
		{ID: aws.String("tmp"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("tmp/")},
			Expiration:                     &types.LifecycleExpiration{Days: aws.Int32(1)},
			NoncurrentVersionExpiration:    &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(1)},
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(1)}},
	}
	for _, b := range []string{plain, versioned} {
		if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
			Bucket: aws.String(b), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: rules},
		}); err != nil {
			t.Fatal(err)
		}
		put(t, c, b, "tmp/a", randBytes(3*mib)) // blocks
		put(t, c, b, "tmp/b", []byte("small"))
		put(t, c, b, "keep/c", []byte("kept"))
	}
	put(t, c, versioned, "tmp/b", []byte("second")) // tmp/b has a noncurrent version
	createUpload(t, c, plain, "tmp/upload")
	createUpload(t, c, plain, "keep/upload")

	// Nothing is due yet.
	var res adminapi.LifecycleRunResult
	if err := json.Unmarshal([]byte(admin.must("lifecycle", "run", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Totals.ObjectsExpired+res.Totals.VersionsRemoved+res.Totals.UploadsAborted != 0 || len(res.Buckets) != 2 {
		t.Fatalf("pass before anything is due: %+v", res)
	}

	// Two days later: a pass of one bucket, then of all.
	clock.Set(time.Now().Add(50 * time.Hour))
	if err := json.Unmarshal([]byte(admin.must("lifecycle", "run", plain, "--json")), &res); err != nil {
		t.Fatal(err)
	}
	want := adminapi.LifecycleBucketResult{Bucket: plain, Examined: 3, // only what is under tmp/
		ObjectsExpired: 2, UploadsAborted: 1, DeletedBytes: 3*mib + 5}
	if len(res.Buckets) != 1 || res.Buckets[0] != want {
		t.Fatalf("pass of %s = %+v, want %+v", plain, res.Buckets, want)
	}
	out := admin.must("lifecycle", "run")
	if !strings.Contains(out, versioned) || !strings.Contains(out, "lifecycle pass on") {
		t.Errorf("lifecycle run printed:\n%s", out)
	}

	keys := func(b string) []string {
		lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b)})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range lv.Versions {
			out = append(out, aws.ToString(v.Key))
		}
		for _, m := range lv.DeleteMarkers {
			out = append(out, aws.ToString(m.Key)+" (marker)")
		}
		return out
	}
	if diff := cmp.Diff([]string{"keep/c"}, keys(plain)); diff != "" {
		t.Errorf("%s after the pass (-want +got):\n%s", plain, diff)
	}
	// Versioned: the current versions are hidden under markers and the old
	// noncurrent tmp/b version is gone; the versions just hidden are
	// noncurrent only since now.
	if diff := cmp.Diff([]string{"keep/c", "tmp/a", "tmp/b", "tmp/a (marker)", "tmp/b (marker)"}, keys(versioned)); diff != "" {
		t.Errorf("%s after the pass (-want +got):\n%s", versioned, diff)
	}
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(plain)})
	if err != nil || len(ups.Uploads) != 1 || aws.ToString(ups.Uploads[0].Key) != "keep/upload" {
		t.Errorf("uploads left: %+v, %v", ups.Uploads, err)
	}

	// Every action is audited, by the lifecycle.
	evs := auditLs(admin, "--source", "lifecycle")
	ops := map[string]int{}
	for _, e := range evs {
		if e.User != "lifecycle" || e.Source != audit.SourceLifecycle || !strings.Contains(e.Target, "rule=tmp") {
			t.Errorf("lifecycle event %+v", e)
		}
		ops[e.Op]++
	}
	if diff := cmp.Diff(map[string]int{"S3.EXPIRE.OBJECT": 3, "S3.CREATE.DELETEMARKER": 2, "S3.DELETE.UPLOAD": 1}, ops); diff != "" {
		t.Errorf("audited lifecycle actions (-want +got):\n%s", diff)
	}

	// And counted.
	samples := scrapeMetrics(t, ts.console)
	for name, want := range map[string]float64{
		"coffer_lifecycle_objects_expired_total": 4, "coffer_lifecycle_versions_removed_total": 1,
		"coffer_lifecycle_uploads_aborted_total": 1, "coffer_lifecycle_passes_total": 3, "coffer_lifecycle_errors_total": 0,
	} {
		if got := metricValue(samples, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	// A pass of a bucket without rules, and of no bucket, are 404s.
	_, errOut, err := admin.run("lifecycle", "run", "keep-out-no-such-bucket")
	if err == nil || !strings.Contains(errOut, "NoSuchBucket") {
		t.Errorf("lifecycle run of a missing bucket: %v, %s", err, errOut)
	}
	other := mkBucket(t, c, "lifecycle-none")
	_, errOut, err = admin.run("lifecycle", "run", other)
	if err == nil || !strings.Contains(errOut, "NoSuchLifecycleConfiguration") {
		t.Errorf("lifecycle run of a bucket without rules: %v, %s", err, errOut)
	}
}
