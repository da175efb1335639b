package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// emptySHA256 is the hex SHA-256 of an empty payload.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// TestSignedRequests checks the wiring of IAM, the keyring adapter and the
// verifier end to end, with the AWS SDK's signer as the reference client.
func TestSignedRequests(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s, _ := start(t, cfg, testLogger(io.Discard))
	for _, tc := range []struct {
		name       string
		ak, sk     string
		wantStatus int
		wantBody   string
	}{
		{name: "root", ak: cfg.Root.RootAccessKey, sk: cfg.Root.RootSecretKey, wantStatus: http.StatusOK, wantBody: "<ListAllMyBucketsResult"},
		{name: "wrong secret", ak: cfg.Root.RootAccessKey, sk: "not-the-secret", wantStatus: http.StatusForbidden, wantBody: "<Code>SignatureDoesNotMatch</Code>"},
		{name: "unknown key", ak: "NOSUCHKEY", sk: "whatever-secret", wantStatus: http.StatusForbidden, wantBody: "<Code>InvalidAccessKeyId</Code>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+s.Addr()+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
			creds := aws.Credentials{AccessKeyID: tc.ak, SecretAccessKey: tc.sk}
			if err := v4.NewSigner().SignHTTP(t.Context(), creds, req, emptySHA256, "s3", cfg.S3.Region, time.Now()); err != nil {
				t.Fatal(err)
			}
			resp, err := client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("signed GET / = %d %s, want %d with %s", resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
		})
	}
}
