package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/certs/certstest"
)

// TestServeTLS runs the server with --tls-cert-file and --tls-key-file: the
// aws CLI and boto3 work over HTTPS trusting a test CA, the ops listener
// answers over HTTPS too, aws:SecureTransport is true, and SIGHUP reloads
// the certificate for new connections while a kept-alive one goes on.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := certstest.NewCA(t)
	ca.Issue(t, certFile, keyFile, 1)
	caFile := ca.WriteCA(t, dir)
	ops := freeAddr(t)
	srv := startChild(t, t.TempDir(), "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--console-address", ops)
	endpoint := "https://" + srv.addr

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool()}
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	c := newClient(t, endpoint, func(o *s3.Options) { o.HTTPClient = hc })
	bucket := mkBucket(t, c, "tls")
	put(t, c, bucket, "public/hello.txt", []byte("hello over tls"))

	// aws:SecureTransport: anonymous reads allowed only over TLS.
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::` + bucket +
		`/public/*","Condition":{"Bool":{"aws:SecureTransport":"true"}}}]}`
	if _, err := c.PutBucketPolicy(t.Context(), &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)}); err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(endpoint + "/" + bucket + "/public/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("anonymous GET over TLS with aws:SecureTransport true allowed: status %d", resp.StatusCode)
	}

	// The ops listener speaks TLS with the same certificate.
	if resp, err := hc.Get("https://" + ops + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET https://%s/readyz: %v %v", ops, resp, err)
	} else {
		resp.Body.Close()
	}

	t.Run("aws CLI", func(t *testing.T) {
		requireTool(t, "aws")
		r := newToolRunner(t, append(awsEnv(t, endpoint), "AWS_CA_BUNDLE="+caFile))
		src := filepath.Join(r.dir, "up.txt")
		if err := os.WriteFile(src, []byte("from the aws CLI over tls"), 0o644); err != nil {
			t.Fatal(err)
		}
		r.must("aws", "s3", "cp", "--only-show-errors", src, "s3://"+bucket+"/cli.txt")
		if out := r.must("aws", "s3", "ls", "s3://"+bucket+"/"); !strings.Contains(out, "cli.txt") {
			t.Errorf("aws s3 ls over TLS:\n%s", out)
		}
	})
	t.Run("boto3", func(t *testing.T) {
		requireTool(t, "boto3", "python3", "-c", "import boto3")
		script, err := filepath.Abs(filepath.Join("testdata", "boto3_smoke.py"))
		if err != nil {
			t.Fatal(err)
		}
		env := append(awsEnv(t, endpoint), "AWS_CA_BUNDLE="+caFile, "COFFER_BUCKET=boto3-tls", "COFFER_WORKDIR="+t.TempDir())
		if out, _, err := newToolRunner(t, env).run("python3", script); err != nil || !strings.Contains(out, "PASS") {
			t.Errorf("boto3_smoke.py over TLS: %v\n%s", err, out)
		}
	})

	// Reload on SIGHUP: a new connection gets the new certificate, the
	// kept-alive one is reused.
	serial := func() int64 {
		conn, err := tls.Dial("tcp", srv.addr, &tls.Config{RootCAs: ca.Pool()})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if n := serial(); n != 1 {
		t.Fatalf("serial %d before the reload, want 1", n)
	}
	get(t, c, bucket, "public/hello.txt") // leaves a kept-alive connection
	ca.Issue(t, certFile, keyFile, 2)
	if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); serial() != 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the new certificate is not served 10s after SIGHUP")
		}
	}
	reused := false
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("public/hello.txt")})
	if err != nil {
		t.Fatalf("GET on the kept-alive connection after the reload: %v", err)
	}
	var got bytes.Buffer
	got.ReadFrom(out.Body)
	out.Body.Close()
	if got.String() != "hello over tls" || !reused {
		t.Errorf("after the reload: %q, connection reused %v; want the object on the kept-alive connection", got.String(), reused)
	}
	if !strings.Contains(srv.out.String(), `msg="TLS certificate reloaded"`) {
		t.Errorf("no reload in the log:\n%s", tail(srv.out.String(), 4*kib))
	}
	srv.stop()
}

// TestServeSIGHUP: SIGHUP (systemctl reload, kill -HUP) to a server
// without TLS is logged as nothing to reload, and the server goes on
// serving; it used to end the process (the signal's default action), as
// SIGHUP was handled only with TLS.
func TestServeSIGHUP(t *testing.T) {
	t.Parallel()
	srv := startChild(t, t.TempDir())
	c := newClient(t, srv.endpoint)
	bucket := mkBucket(t, c, "hup")
	for range 2 {
		if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); strings.Count(srv.out.String(), "nothing to reload without TLS") < 2; time.Sleep(20 * time.Millisecond) {
		select {
		case <-srv.done:
			t.Fatalf("coffer serve exited after SIGHUP: %v; output:\n%s", srv.waitErr, tail(srv.out.String(), 4*kib))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP not logged within 10s; output:\n%s", tail(srv.out.String(), 4*kib))
		}
	}
	put(t, c, bucket, "after", []byte("still serving"))
	checkBody(t, "GET after SIGHUP", get(t, c, bucket, "after"), []byte("still serving"))
	srv.stop()
}
