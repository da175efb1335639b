package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/sigv4"
)

// scaleOutDoc is the document whose nginx configuration the test runs.
const scaleOutDoc = "../../docs/scale-out.md"

// nginxPath returns Debian's nginx binary. Without one the test skips,
// saying why, or fails under CI=true: CI installs it (.ci/run).
func nginxPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("nginx not found; .ci/run installs it (apt-get install nginx)")
	}
	t.Skip("nginx not found: apt-get install nginx to run the load-balancer test")
	return ""
}

// docNginxConfig returns the ```nginx block of docs/scale-out.md with the
// nodes' addresses in its upstream and listen on listen.
func docNginxConfig(t *testing.T, nodes []string, listen string) string {
	t.Helper()
	doc, err := os.ReadFile(scaleOutDoc)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```nginx\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatalf("%s has no ```nginx block", scaleOutDoc)
	}
	conf := string(m[1])
	servers := regexp.MustCompile(`(?m)^(\s*server )\S+:\d+( .*;)$`)
	locs := servers.FindAllStringSubmatchIndex(conf, -1)
	if len(locs) != len(nodes) {
		t.Fatalf("the doc's upstream has %d servers, want %d", len(locs), len(nodes))
	}
	for i := len(locs) - 1; i >= 0; i-- { // from the end, so that offsets hold
		l := locs[i]
		conf = conf[:l[0]] + conf[l[2]:l[3]] + nodes[i] + conf[l[4]:l[5]] + conf[l[1]:]
	}
	listens := regexp.MustCompile(`(?m)^(\s*listen )\S+;$`)
	if n := len(listens.FindAllString(conf, -1)); n != 1 {
		t.Fatalf("the doc's server has %d listen lines, want 1", n)
	}
	return listens.ReplaceAllString(conf, "${1}"+listen+";")
}

// startNginx runs nginx in the foreground with the doc's configuration in
// front of nodes, every path in a temporary directory, and returns its
// address and the file of its upstream log ($upstream_addr per request).
// It is killed when t ends.
func startNginx(t *testing.T, nodes []string) (addr, upstreamLog string) {
	t.Helper()
	bin := nginxPath(t)
	dir := t.TempDir()
	upstreamLog = filepath.Join(dir, "upstream.log")
	for attempt := 0; ; attempt++ {
		addr = freeAddr(t)
		// The doc's block goes into http {} as conf.d files do; the rest
		// keeps nginx in the foreground, in one process, off /var.
		conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 512; }
http {
    log_format up '$upstream_addr $status $request_method';
    access_log %[2]s up;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
%[3]s
}
`, dir, upstreamLog, docNginxConfig(t, nodes, addr))
		confPath := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		out := &syncBuffer{}
		cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start nginx: %v", err)
		}
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		kill := func() {
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		t.Cleanup(func() {
			kill()
			if t.Failed() {
				log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
				t.Logf("nginx error log (tail):\n%s", tail(string(log), 8*kib))
			}
		})
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-done:
				log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
				if attempt < 3 && bytes.Contains(log, []byte("Address already in use")) {
					deadline = time.Time{}
					continue
				}
				t.Fatalf("nginx exited: %s\n%s", out.String(), log)
			default:
			}
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return addr, upstreamLog
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !deadline.IsZero() {
			t.Fatalf("nginx did not listen on %s within 10s", addr)
		}
	}
}

// testClusterNginx runs nginx with the configuration of docs/scale-out.md
// in front of the cluster and sends S3 through it: PUT and GET of small
// and large objects, ranges, a multipart upload, aws-chunked uploads
// (signed chunks, signed and unsigned trailers). nginx spreads the
// requests over every node, and when a node is killed it sends the
// requests to the others. It kills node 2: run it last.
func testClusterNginx(t *testing.T, cl *cluster) {
	var nodes []string
	for _, n := range cl.nodes {
		nodes = append(nodes, n.addr)
	}
	addr, upstreamLog := startNginx(t, nodes)
	endpoint := "http://" + addr
	c := newClient(t, endpoint)
	ctx := t.Context()
	b := mkBucket(t, c, "nginx")

	small, large := randBytes(1000), randBytes(12*mib+5)
	put(t, c, b, "small", small)
	put(t, c, b, "large", large) // past nginx's default client_max_body_size, with Expect: 100-continue
	checkBody(t, "GET small through nginx", get(t, c, b, "small"), small)
	checkBody(t, "GET large through nginx", get(t, c, b, "large"), large)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("large"), Range: aws.String("bytes=1048000-5242999")})
	if err != nil {
		t.Fatalf("ranged GET through nginx: %v", err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, large[1048000:5243000]) {
		t.Errorf("ranged GET through nginx: %d bytes, %v", len(got), err)
	}

	p1, p2, p3 := randBytes(5*mib), randBytes(5*mib), randBytes(100*kib)
	u := createUpload(t, c, b, "mp")
	if _, err := u.complete(u.part(1, p1), u.part(2, p2), u.part(3, p3)); err != nil {
		t.Fatalf("CompleteMultipartUpload through nginx: %v", err)
	}
	checkBody(t, "GET multipart through nginx", get(t, c, b, "mp"), bytes.Join([][]byte{p1, p2, p3}, nil))

	hc := newHTTPClient()
	payload := randBytes(3*mib + 7)
	for _, tc := range []struct {
		name string
		opts sigv4.ChunkedOptions
	}{
		{"signed chunks", sigv4.ChunkedOptions{}},
		{"signed trailer", sigv4.ChunkedOptions{Mode: sigv4.PayloadStreamingSignedTrailer,
			Trailers: []sigv4.Trailer{{Name: "x-amz-checksum-crc32", Value: checksumOf("CRC32", payload)}}}},
		{"unsigned trailer", sigv4.ChunkedOptions{Mode: sigv4.PayloadStreamingUnsignedTrailer,
			Trailers: []sigv4.Trailer{{Name: "x-amz-checksum-crc32", Value: checksumOf("CRC32", payload)}}}},
	} {
		key := "chunked-" + strings.ReplaceAll(tc.name, " ", "-")
		r, _ := chunkedPut(t, endpoint, b, key, payload, tc.opts)
		if resp, body := do(t, hc, r); resp.StatusCode != http.StatusOK {
			t.Errorf("aws-chunked PUT (%s) through nginx: %d %s", tc.name, resp.StatusCode, body)
			continue
		}
		checkBody(t, "GET aws-chunked ("+tc.name+") through nginx", get(t, c, b, key), payload)
	}

	// nginx used every node.
	log, err := os.ReadFile(upstreamLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if k := bytes.Count(log, []byte(n+" ")); k == 0 {
			t.Errorf("nginx sent no request to node %s; its upstream log:\n%s", n, tail(string(log), 2*kib))
		}
	}

	// Node 2 killed: nginx skips it, and requests go on through the others.
	cl.kill(2)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 6 {
				key := fmt.Sprintf("after-kill-%d-%d", w, i)
				body := randBytes(200 * kib)
				if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
					t.Errorf("PUT %s through nginx with node 2 dead: %v", key, err)
					continue
				}
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
				if err != nil {
					t.Errorf("GET %s through nginx with node 2 dead: %v", key, err)
					continue
				}
				got, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil || !bytes.Equal(got, body) {
					t.Errorf("GET %s through nginx with node 2 dead: %d bytes, %v", key, len(got), err)
				}
			}
		})
	}
	wg.Wait()
}
