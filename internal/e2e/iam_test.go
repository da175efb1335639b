package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// adminCLI runs `coffer admin` against a test server as one principal.
type adminCLI struct {
	t        *testing.T
	bin      string
	endpoint string
	ak, sk   string
}

func (a adminCLI) as(ak, sk string) adminCLI { a.ak, a.sk = ak, sk; return a }

// run returns stdout, stderr and the exit error of coffer admin args.
func (a adminCLI) run(args ...string) (string, string, error) {
	a.t.Helper()
	cmd := exec.CommandContext(a.t.Context(), a.bin, append([]string{"admin"}, args...)...)
	cmd.Env = childEnv(a.t.TempDir(),
		"COFFER_ENDPOINT="+a.endpoint,
		"COFFER_ACCESS_KEY="+a.ak,
		"COFFER_SECRET_KEY="+a.sk,
	)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (a adminCLI) must(args ...string) string {
	a.t.Helper()
	out, errOut, err := a.run(args...)
	if err != nil {
		a.t.Fatalf("coffer admin %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// newKey is the --json output of user add, key add and key rotate.
type newKey struct {
	User      string `json:"user"`
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

func (a adminCLI) key(args ...string) newKey {
	a.t.Helper()
	out := a.must(append(args, "--json")...)
	var k newKey
	if err := json.Unmarshal([]byte(out), &k); err != nil || k.AccessKey == "" || k.SecretKey == "" {
		a.t.Fatalf("coffer admin %s --json printed %q: %v", strings.Join(args, " "), out, err)
	}
	return k
}

func writeJSONFile(t *testing.T, name, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// clientAs returns an SDK client signing with ak/sk.
func (ts *testServer) clientAs(t *testing.T, ak, sk string) *s3.Client {
	return newClient(t, ts.endpoint, func(o *s3.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(ak, sk, "")
	})
}

// check asserts that err is nil (allowed) or carries code.
func check(t *testing.T, what string, err error, code string) {
	t.Helper()
	switch {
	case code == "" && err != nil:
		t.Errorf("%s: %v, want success", what, err)
	case code != "" && errCode(err) != code:
		t.Errorf("%s: %v, want %s", what, err, code)
	}
}

func bucketNames(t *testing.T, c *s3.Client) []string {
	t.Helper()
	out, err := c.ListBuckets(t.Context(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatalf("ListBuckets: %v", err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	slices.Sort(names)
	return names
}

// httpDo sends a plain, unsigned request and returns status and body.
func httpDo(t *testing.T, method, url string, body []byte) (int, []byte) {
	t.Helper()
	r, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := newHTTPClient().Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestIAM drives users, policies, bucket policies, presigned URLs and key
// management through `coffer admin` and checks them with aws-sdk-go-v2, the
// aws CLI and plain HTTP.
func TestIAM(t *testing.T) {
	ts := startServer(t, "--access-log-sample", "1")
	root := ts.client(t)
	ctx := t.Context()
	team, shared, other := mkBucket(t, root, "team"), mkBucket(t, root, "shared"), mkBucket(t, root, "other")
	put(t, root, team, "k", []byte("team data"))
	put(t, root, shared, "pub/a", []byte("public a"))
	put(t, root, shared, "priv/b", []byte("private b"))
	put(t, root, other, "x", []byte("x"))

	admin := adminCLI{t: t, bin: cofferBinary(t), endpoint: ts.endpoint, ak: ts.ak, sk: ts.sk}
	secrets := []string{ts.sk}
	alice := admin.key("user", "add", "alice")
	bob := admin.key("user", "add", "bob")
	if alice.User != "alice" {
		t.Fatalf("user add printed user %q", alice.User)
	}
	secrets = append(secrets, alice.SecretKey, bob.SecretKey)
	teamPolicy := writeJSONFile(t, "team.json", `{"Version":"2012-10-17","Statement":[
	  {"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::`+team+`"},
	  {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:DeleteObject","s3:AbortMultipartUpload"],"Resource":"arn:aws:s3:::`+team+`/*"},
	  {"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::`+shared+`/pub/*"}]}`)
	admin.must("policy", "add", "team", teamPolicy)
	admin.must("policy", "attach", "team", "--user", "alice")
	admin.must("policy", "attach", "readonly", "--user", "bob")

	t.Run("scoped user", func(t *testing.T) {
		c := ts.clientAs(t, alice.AccessKey, alice.SecretKey)
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &team, Key: aws.String("alice.txt"), Body: strings.NewReader("hi")})
		check(t, "PutObject team", err, "")
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &team, Key: aws.String("k")})
		check(t, "GetObject team", err, "")
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &team, Key: aws.String("k")})
		check(t, "HeadObject team", err, "")
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &team})
		check(t, "ListObjectsV2 team", err, "")
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &team, Key: aws.String("copy"), CopySource: aws.String(team + "/k")})
		check(t, "CopyObject within team", err, "")
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &team, Key: aws.String("copy2"), CopySource: aws.String(other + "/x")})
		check(t, "CopyObject from other", err, "AccessDenied")
		mu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &team, Key: aws.String("mp")})
		check(t, "CreateMultipartUpload team", err, "")
		if err == nil {
			_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &team, Key: aws.String("mp"), UploadId: mu.UploadId})
			check(t, "AbortMultipartUpload team", err, "")
		}
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &team, Key: aws.String("copy")})
		check(t, "DeleteObject team", err, "")
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &shared, Key: aws.String("pub/a")})
		check(t, "GetObject shared/pub", err, "")

		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &shared, Key: aws.String("priv/b")})
		check(t, "GetObject shared/priv", err, "AccessDenied")
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &shared, Key: aws.String("pub/new"), Body: strings.NewReader("x")})
		check(t, "PutObject shared", err, "AccessDenied")
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &shared})
		check(t, "ListObjectsV2 shared", err, "AccessDenied")
		_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &other, Key: aws.String("x")})
		check(t, "GetObject other", err, "AccessDenied")
		_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(newBucketName("alice"))})
		check(t, "CreateBucket", err, "AccessDenied")
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &team})
		check(t, "DeleteBucket team", err, "AccessDenied")
		_, err = c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: &team, Policy: aws.String(`{}`)})
		check(t, "PutBucketPolicy team", err, "AccessDenied")
		if got, want := bucketNames(t, c), sortedStrings(shared, team); !slices.Equal(got, want) {
			t.Errorf("alice's ListBuckets = %v, want %v", got, want)
		}
		// Not an admin.
		if _, stderr, err := admin.as(alice.AccessKey, alice.SecretKey).run("user", "ls"); err == nil || !strings.Contains(stderr, "AccessDenied") {
			t.Errorf("alice ran admin user ls: %v, %s", err, stderr)
		}
	})

	t.Run("readonly user", func(t *testing.T) {
		c := ts.clientAs(t, bob.AccessKey, bob.SecretKey)
		for _, b := range []string{team, shared, other} {
			_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b})
			check(t, "ListObjectsV2 "+b, err, "")
		}
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &shared, Key: aws.String("priv/b")})
		check(t, "GetObject shared/priv", err, "")
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &team, Key: aws.String("bob"), Body: strings.NewReader("x")})
		check(t, "PutObject", err, "AccessDenied")
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &team, Key: aws.String("k")})
		check(t, "DeleteObject", err, "AccessDenied")
		if got := bucketNames(t, c); len(got) < 3 {
			t.Errorf("bob's ListBuckets = %v, want all buckets", got)
		}
		// Disabling the user stops its keys at once; enabling restores them.
		admin.must("user", "disable", "bob")
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &team})
		check(t, "ListObjectsV2 as a disabled user", err, "InvalidAccessKeyId")
		admin.must("user", "enable", "bob")
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &team})
		check(t, "ListObjectsV2 after enable", err, "")
	})

	t.Run("aws cli", func(t *testing.T) {
		requireTool(t, "aws")
		env := childEnv(t.TempDir(),
			"AWS_ACCESS_KEY_ID="+alice.AccessKey, "AWS_SECRET_ACCESS_KEY="+alice.SecretKey,
			"AWS_DEFAULT_REGION="+testRegion, "AWS_ENDPOINT_URL="+ts.endpoint,
			"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
			"AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=")
		r := newToolRunner(t, env)
		src := writeJSONFile(t, "cli.txt", "from the aws cli")
		r.must("aws", "s3", "cp", "--no-progress", src, "s3://"+team+"/cli.txt")
		if _, stderr, err := r.run("aws", "s3", "cp", "--no-progress", src, "s3://"+shared+"/cli.txt"); err == nil || !strings.Contains(stderr, "AccessDenied") {
			t.Errorf("aws s3 cp into shared: %v, %s", err, stderr)
		}
		ls := r.must("aws", "s3", "ls")
		if !strings.Contains(ls, team) || !strings.Contains(ls, shared) || strings.Contains(ls, other) {
			t.Errorf("aws s3 ls as alice:\n%s", ls)
		}
	})

	t.Run("bucket policy", func(t *testing.T) {
		doc := `{"Version":"2012-10-17","Statement":[{"Sid":"PublicRead","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + shared + `/pub/*"}]}`
		url := ts.endpoint + "/" + shared
		if st, _ := httpDo(t, http.MethodGet, url+"/pub/a", nil); st != http.StatusForbidden {
			t.Fatalf("anonymous GET before the policy: %d", st)
		}
		admin.must("bucket", "policy", "set", shared, writeJSONFile(t, "p.json", doc))
		if got := admin.must("bucket", "policy", "get", shared); !strings.Contains(got, "PublicRead") {
			t.Errorf("bucket policy get = %q", got)
		}
		if st, body := httpDo(t, http.MethodGet, url+"/pub/a", nil); st != http.StatusOK || string(body) != "public a" {
			t.Errorf("anonymous GET pub/a: %d %q", st, body)
		}
		for _, rq := range []struct{ method, path string }{{http.MethodGet, "/priv/b"}, {http.MethodPut, "/pub/new"}, {http.MethodDelete, "/pub/a"}, {http.MethodGet, ""}} {
			if st, _ := httpDo(t, rq.method, url+rq.path, []byte("x")); st != http.StatusForbidden {
				t.Errorf("anonymous %s %s: %d, want 403", rq.method, rq.path, st)
			}
		}
		st, err := root.GetBucketPolicyStatus(ctx, &s3.GetBucketPolicyStatusInput{Bucket: &shared})
		if err != nil || !aws.ToBool(st.PolicyStatus.IsPublic) {
			t.Errorf("GetBucketPolicyStatus = %+v, %v", st, err)
		}
		admin.must("bucket", "policy", "rm", shared)
		if st, _ := httpDo(t, http.MethodGet, url+"/pub/a", nil); st != http.StatusForbidden {
			t.Errorf("anonymous GET after the policy was removed: %d", st)
		}
	})

	t.Run("presign", func(t *testing.T) {
		ac := admin.as(alice.AccessKey, alice.SecretKey)
		getURL := strings.TrimSpace(ac.must("presign", "--method", "GET", "s3://"+team+"/k", "--expires", "1h"))
		if st, body := httpDo(t, http.MethodGet, getURL, nil); st != http.StatusOK || string(body) != "team data" {
			t.Fatalf("presigned GET: %d %q", st, body)
		}
		// A URL carries its signer's rights only.
		deniedURL := strings.TrimSpace(ac.must("presign", "s3://"+other+"/x"))
		if st, _ := httpDo(t, http.MethodGet, deniedURL, nil); st != http.StatusForbidden {
			t.Errorf("presigned GET outside alice's rights: %d", st)
		}
		// Disabling the key revokes its URLs; enabling restores them.
		admin.must("key", "disable", alice.AccessKey)
		if st, body := httpDo(t, http.MethodGet, getURL, nil); st != http.StatusForbidden || !bytes.Contains(body, []byte("InvalidAccessKeyId")) {
			t.Errorf("presigned GET with a disabled key: %d %s", st, body)
		}
		admin.must("key", "enable", alice.AccessKey)
		if st, _ := httpDo(t, http.MethodGet, getURL, nil); st != http.StatusOK {
			t.Errorf("presigned GET after enable: %d", st)
		}
		putURL := strings.TrimSpace(ac.must("presign", "--method", "PUT", "s3://"+team+"/uploaded", "--expires", "10m"))
		if st, body := httpDo(t, http.MethodPut, putURL, []byte("via presigned PUT")); st != http.StatusOK {
			t.Fatalf("presigned PUT: %d %s", st, body)
		}
		checkBody(t, "presigned PUT", get(t, root, team, "uploaded"), []byte("via presigned PUT"))
		shortURL := strings.TrimSpace(ac.must("presign", "s3://"+team+"/k", "--expires", "1s"))
		time.Sleep(2100 * time.Millisecond)
		if st, body := httpDo(t, http.MethodGet, shortURL, nil); st != http.StatusForbidden || !bytes.Contains(body, []byte("AccessDenied")) {
			t.Errorf("expired presigned GET: %d %s", st, body)
		}
	})

	t.Run("scoped key", func(t *testing.T) {
		scope := writeJSONFile(t, "scope.json", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::`+team+`/*"}]}`)
		k := admin.key("key", "add", "--user", "alice", "--policy", scope, "--description", "read-only deploy key")
		secrets = append(secrets, k.SecretKey)
		c := ts.clientAs(t, k.AccessKey, k.SecretKey)
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &team, Key: aws.String("k")})
		check(t, "GetObject with the scoped key", err, "")
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &team, Key: aws.String("scoped"), Body: strings.NewReader("x")})
		check(t, "PutObject with the scoped key", err, "AccessDenied")
		if ls := admin.must("key", "ls", "--user", "alice"); !strings.Contains(ls, k.AccessKey) || strings.Contains(ls, k.SecretKey) {
			t.Errorf("key ls:\n%s", ls)
		}
	})

	t.Run("rotate", func(t *testing.T) {
		nk := admin.key("key", "rotate", alice.AccessKey)
		secrets = append(secrets, nk.SecretKey)
		// GetObject, not HeadObject: a HEAD error has no body to carry its code.
		_, err := ts.clientAs(t, alice.AccessKey, alice.SecretKey).GetObject(ctx, &s3.GetObjectInput{Bucket: &team, Key: aws.String("k")})
		check(t, "GetObject with the rotated-out key", err, "InvalidAccessKeyId")
		_, err = ts.clientAs(t, nk.AccessKey, nk.SecretKey).HeadObject(ctx, &s3.HeadObjectInput{Bucket: &team, Key: aws.String("k")})
		check(t, "HeadObject with the new key", err, "")
	})

	t.Run("online gc", func(t *testing.T) {
		out := admin.must("gc", "--grace", "0s", "--json")
		var st map[string]any
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("gc --json printed %q: %v", out, err)
		}
		if _, ok := st["scanned"]; !ok {
			t.Errorf("gc --json = %v, want the pass's statistics", st)
		}
		if _, stderr, err := admin.as(bob.AccessKey, bob.SecretKey).run("gc"); err == nil || !strings.Contains(stderr, "AccessDenied") {
			t.Errorf("a readonly user ran gc: %v, %s", err, stderr)
		}
	})

	t.Run("secrets never logged", func(t *testing.T) {
		logs := ts.logs.String()
		if !strings.Contains(logs, alice.AccessKey) {
			t.Fatal("the log does not even name alice's access key; is request logging on?")
		}
		for _, s := range secrets {
			if strings.Contains(logs, s) {
				t.Errorf("a secret key appears in the server log")
			}
		}
		mk, err := os.ReadFile(filepath.Join(ts.dir, "master-key"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs, strings.TrimSpace(string(mk))) {
			t.Error("the master key appears in the server log")
		}
	})
}

func sortedStrings(s ...string) []string { slices.Sort(s); return s }
