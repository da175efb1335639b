package e2e

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// auditLs runs `coffer admin audit ls --json` with args and returns the
// events, newest first.
func auditLs(a adminCLI, args ...string) []audit.Event {
	a.t.Helper()
	out := a.must(append([]string{"audit", "ls", "--json", "--limit", "5000"}, args...)...)
	var p adminapi.AuditPage
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		a.t.Fatalf("audit ls --json printed %q: %v", out, err)
	}
	return p.Events
}

// findEvent returns the first event for which match is true, or fails.
func findEvent(t *testing.T, evs []audit.Event, what string, match func(e audit.Event) bool) audit.Event {
	t.Helper()
	for _, e := range evs {
		if match(e) {
			return e
		}
	}
	t.Errorf("no audit event: %s; have %d events", what, len(evs))
	return audit.Event{}
}

// TestAudit drives a server with the SDK and the admin CLI and checks what
// the audit log holds: writes, admin changes and refusals, with who, where
// from and the outcome; not the reads; the filters and the export.
func TestAudit(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	root := ts.client(t)
	ctx := t.Context()
	admin := adminCLI{t: t, bin: cofferBinary(t), endpoint: ts.endpoint, ak: ts.ak, sk: ts.sk}

	bucket := mkBucket(t, root, "audit")
	oddKey := "dir/ünï cödé %_\\ \x01line\nbreak"
	put(t, root, bucket, "a.txt", []byte("hello"))
	put(t, root, bucket, oddKey, []byte("odd"))
	get(t, root, bucket, "a.txt")
	if _, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("a.txt")}); err != nil {
		t.Fatal(err)
	}
	alice := admin.key("user", "add", "alice")
	admin.must("policy", "attach", "readonly", "--user", "alice")
	ac := ts.clientAs(t, alice.AccessKey, alice.SecretKey)
	_, err := ac.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("nope"), Body: strings.NewReader("x")})
	check(t, "alice PutObject", err, "AccessDenied")
	_, err = ts.clientAs(t, alice.AccessKey, "not-her-secret").GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(oddKey)})
	check(t, "GetObject with a wrong secret", err, "SignatureDoesNotMatch")
	_, err = ts.clientAs(t, "AKNOSUCHKEY0000", "whatever").ListBuckets(ctx, &s3.ListBucketsInput{})
	check(t, "ListBuckets with an unknown key", err, "InvalidAccessKeyId")
	_, aliceErr, err := admin.as(alice.AccessKey, alice.SecretKey).run("audit", "ls")
	if err == nil || !strings.Contains(aliceErr, "AccessDenied") {
		t.Errorf("alice (readonly) ran audit ls: err %v, stderr %q; want AccessDenied", err, aliceErr)
	}

	evs := auditLs(admin)
	for i := 1; i < len(evs); i++ {
		if evs[i].ID >= evs[i-1].ID {
			t.Fatalf("audit ls is not newest first: id %d after %d", evs[i].ID, evs[i-1].ID)
		}
	}
	findEvent(t, evs, "root's CreateBucket", func(e audit.Event) bool {
		return e.Source == "s3" && e.Op == "CreateBucket" && e.Bucket == bucket && e.User == "root" && e.AccessKey == ts.ak && e.Status == 200
	})
	put := findEvent(t, evs, "PutObject of the odd key, byte for byte", func(e audit.Event) bool {
		return e.Op == "PutObject" && e.Key == oddKey && e.Status == 200
	})
	if put.BytesIn < 3 || put.SourceIP != "127.0.0.1" || put.RequestID == "" || put.Duration <= 0 || put.Time.IsZero() {
		t.Errorf("PutObject event %+v: want bytes in, source IP 127.0.0.1 without port, request ID, duration, time", put)
	}
	findEvent(t, evs, "DeleteObject", func(e audit.Event) bool {
		return e.Op == "DeleteObject" && e.Key == "a.txt" && e.Status == 204
	})
	for _, e := range evs {
		if e.Op == "GetObject" && e.Status == 200 {
			t.Errorf("a successful GetObject was recorded with audit.read-sample 0: %+v", e)
		}
	}
	findEvent(t, evs, "alice's refused PutObject", func(e audit.Event) bool {
		return e.Op == "PutObject" && e.User == "alice" && e.AccessKey == alice.AccessKey && e.Status == 403 && e.Code == "AccessDenied"
	})
	findEvent(t, evs, "the bad signature, with the key it claimed", func(e audit.Event) bool {
		return e.Op == "GetObject" && e.Code == "SignatureDoesNotMatch" && e.AccessKey == alice.AccessKey && e.User == ""
	})
	findEvent(t, evs, "the unknown key", func(e audit.Event) bool {
		return e.Op == "ListBuckets" && e.Code == "InvalidAccessKeyId" && e.AccessKey == "AKNOSUCHKEY0000"
	})
	findEvent(t, evs, "the admin CreateUser", func(e audit.Event) bool {
		return e.Source == "admin" && e.Op == "CreateUser" && e.User == "root" && e.Status == 200
	})
	findEvent(t, evs, "the admin AttachPolicy", func(e audit.Event) bool {
		return e.Source == "admin" && e.Op == "AttachPolicy" && e.Target == "policies/readonly/attach"
	})
	findEvent(t, evs, "alice's refused audit ls", func(e audit.Event) bool {
		return e.Source == "admin" && e.Op == "GetAuditLog" && e.User == "alice" && e.Status == 403
	})

	// Filters.
	for _, e := range auditLs(admin, "--user", "alice") {
		if e.User != "alice" {
			t.Errorf("--user alice listed %+v", e)
		}
	}
	failed := auditLs(admin, "--failed", "--source", "s3")
	if len(failed) != 3 {
		t.Errorf("--failed --source s3 listed %d events, want the 3 refusals: %+v", len(failed), failed)
	}
	if got := auditLs(admin, "--bucket", bucket, "--prefix", "dir/ü", "--op", "PutObject"); len(got) != 1 || got[0].Key != oddKey {
		t.Errorf("--bucket --prefix dir/ü --op PutObject listed %+v, want the odd key's PutObject", got)
	}
	if got := auditLs(admin, "--op", "CreateUser", "--since", "1h"); len(got) != 1 {
		t.Errorf("--op CreateUser --since 1h listed %d events, want 1", len(got))
	}
	if got := auditLs(admin, "--until", "1h"); len(got) != 0 {
		t.Errorf("--until 1h (before an hour ago) listed %d events, want none", len(got))
	}
	// Successful admin reads are not recorded, so nothing came after evs.
	if page := auditLs(admin, "--limit", "2"); len(page) != 2 || page[0].ID != evs[0].ID || page[1].ID != evs[1].ID {
		t.Errorf("--limit 2 listed %+v, want the newest two events %d and %d", page, evs[0].ID, evs[1].ID)
	}

	// Export: JSON Lines, oldest first, the same events as ls.
	out := admin.must("audit", "export", "--source", "s3")
	var exported []audit.Event
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e audit.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		exported = append(exported, e)
	}
	s3evs := auditLs(admin, "--source", "s3")
	if len(exported) != len(s3evs) || len(exported) == 0 {
		t.Fatalf("export has %d events, ls %d", len(exported), len(s3evs))
	}
	for i, e := range exported {
		if want := s3evs[len(s3evs)-1-i]; e.ID != want.ID || e.Key != want.Key || e.Op != want.Op {
			t.Errorf("export line %d = %d %s %q, want %d %s %q (ls reversed)", i, e.ID, e.Op, e.Key, want.ID, want.Op, want.Key)
		}
	}
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	admin.must("audit", "export", "--user", "alice", "--out", file)
	if data, err := os.ReadFile(file); err != nil || bytes.Count(data, []byte("\n")) != len(auditLs(admin, "--user", "alice")) {
		t.Errorf("export --out wrote %q (%v), want one line per alice event", data, err)
	}

	// The audit file holds no secret: neither root's nor the new key's.
	for _, name := range []string{"audit.db", "audit.db-wal"} {
		data, err := os.ReadFile(filepath.Join(ts.dir, name))
		if err != nil {
			if name == "audit.db" {
				t.Error(err)
			}
			continue
		}
		for _, secret := range []string{ts.sk, alice.SecretKey} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s contains a secret key", name)
			}
		}
		if fi, err := os.Stat(filepath.Join(ts.dir, name)); err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", name, fi.Mode())
		}
	}
}

// TestAuditReadSample: with audit.read-sample 1 every read is recorded too.
func TestAuditReadSample(t *testing.T) {
	t.Parallel()
	ts := startServer(t, "--audit.read-sample", "1")
	root := ts.client(t)
	bucket := mkBucket(t, root, "sample")
	put(t, root, bucket, "k", []byte("v"))
	get(t, root, bucket, "k")
	admin := adminCLI{t: t, bin: cofferBinary(t), endpoint: ts.endpoint, ak: ts.ak, sk: ts.sk}
	findEvent(t, auditLs(admin), "the sampled GetObject", func(e audit.Event) bool {
		return e.Op == "GetObject" && e.Key == "k" && e.Status == 200 && e.BytesOut == 1
	})
}

// TestAuditOff: with audit.enabled false there is no audit file and the
// admin API says the log is off.
func TestAuditOff(t *testing.T) {
	t.Parallel()
	ts := startServer(t, "--audit.enabled=false")
	put(t, ts.client(t), mkBucket(t, ts.client(t), "off"), "k", []byte("v"))
	admin := adminCLI{t: t, bin: cofferBinary(t), endpoint: ts.endpoint, ak: ts.ak, sk: ts.sk}
	_, errOut, err := admin.run("audit", "ls")
	if err == nil || !strings.Contains(errOut, "NotImplemented") {
		t.Errorf("audit ls with the audit log off: err %v, stderr %q; want NotImplemented", err, errOut)
	}
	if _, err := os.Stat(filepath.Join(ts.dir, "audit.db")); !os.IsNotExist(err) {
		t.Errorf("audit.db exists with the audit log off (stat: %v)", err)
	}
}

// auditFiles returns the bytes of the audit log's files: the database,
// its WAL and its shared-memory index.
func auditFiles(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestAuditFlood floods a server for a fixed time with refused requests
// anyone can send: anonymous GETs and PUTs of 1,000-byte keys, requests
// signed with a wrong secret, and requests each claiming a new access key
// (so that the sources outnumber the limit). The audit files grow by at
// most the bound the settings give, and every refused request is still
// accounted for: in an event of its own or in a summary's count.
func TestAuditFlood(t *testing.T) {
	t.Parallel()
	const (
		perSource = 3
		perMinute = 50
		maxBytes  = 1 << 20
		floodFor  = 3 * time.Second
		workers   = 4
		maxEach   = 50_000 // requests per worker, whatever the machine's speed
	)
	ts := startServer(t, "--audit.refused.per-source", fmt.Sprint(perSource),
		"--audit.refused.per-minute", fmt.Sprint(perMinute), "--audit.max-bytes", fmt.Sprint(maxBytes))
	bucket := mkBucket(t, ts.client(t), "flood")
	path := filepath.Join(ts.dir, "audit.db")
	before := auditFiles(t, path)

	var refused atomic.Int64
	start := time.Now()
	deadline := start.Add(floodFor)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			hc := newHTTPClient()
			for i := 0; i < maxEach && time.Now().Before(deadline); i++ {
				key := hex.EncodeToString(randBytes(500)) // 1,000 bytes
				rq := rawReq{method: "GET", target: "/" + bucket + "/" + key}
				switch w {
				case 0:
					rq.anon = true
				case 1:
					rq.anon, rq.method, rq.body = true, "PUT", []byte("x")
				case 2:
					rq.cred = &sigv4.Credentials{AccessKeyID: testAccessKey, SecretKey: "not-the-secret"}
				case 3:
					rq.cred = &sigv4.Credentials{AccessKeyID: fmt.Sprintf("AKFLOOD%010d", i), SecretKey: "whatever"}
				}
				resp, err := hc.Do(rq.build(t, ts.endpoint))
				if err != nil {
					t.Errorf("worker %d request %d: %v", w, i, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("worker %d request %d: status %d, want 403", w, i, resp.StatusCode)
					return
				}
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	end := time.Now()
	m := scrapeMetrics(t, ts.console)
	ts.stop() // the last minute's summaries are written at shutdown
	grew := auditFiles(t, path) - before
	for name, want := range map[string]float64{"coffer_audit_events_dropped_total": 0, "coffer_audit_events_evicted_total": 0} {
		if got := metricValue(m, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := metricValue(m, "coffer_audit_events_aggregated_total"); got <= 0 {
		t.Errorf("coffer_audit_events_aggregated_total = %v, want the flood counted", got)
	}

	l, err := audit.Open(audit.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var buf bytes.Buffer
	if _, err := l.Export(t.Context(), audit.Filter{Source: audit.SourceS3}, &buf); err != nil {
		t.Fatal(err)
	}
	var events, summaries, accounted int64
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var e audit.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if e.Status != http.StatusForbidden {
			continue // CreateBucket
		}
		events++
		accounted += max(e.Count, 1)
		if e.Count > 0 {
			summaries++
		}
		if len(e.Key) > audit.MaxFieldBytes || len(e.AccessKey) > audit.MaxFieldBytes {
			t.Errorf("event %d keeps a key of %d bytes, access key of %d", e.ID, len(e.Key), len(e.AccessKey))
		}
	}
	windows := int64(end.Truncate(time.Minute).Sub(start.Truncate(time.Minute))/time.Minute) + 1
	t.Logf("%d refused requests in %v: %d audit events (%d summaries) in %d minute windows; the audit files grew by %d bytes",
		refused.Load(), end.Sub(start).Round(time.Millisecond), events, summaries, windows, grew)
	if accounted != refused.Load() {
		t.Errorf("the audit log accounts for %d refused requests, %d were sent", accounted, refused.Load())
	}
	if bound := windows * (2*perMinute + 1); events > bound {
		t.Errorf("%d audit events for the flood, more than %d (2×%d+1 a minute)", events, bound, perMinute)
	}
	if grew > maxBytes {
		t.Errorf("the audit files grew by %d bytes, more than audit.max-bytes %d", grew, maxBytes)
	}
}
