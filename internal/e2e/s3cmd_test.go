package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// writeS3cfg writes an s3cmd configuration for endpoint (host:port) into dir
// and returns its path. sigV2 selects AWS signature version 2 header
// authentication instead of SigV4.
func writeS3cfg(t *testing.T, dir, hostPort string, sigV2 bool) string {
	t.Helper()
	cfg := fmt.Sprintf(`[default]
access_key = %s
secret_key = %s
host_base = %s
host_bucket = %s
bucket_location = %s
use_https = False
signature_v2 = %s
check_ssl_certificate = False
guess_mime_type = False
progress_meter = False
`, testAccessKey, testSecretKey, hostPort, hostPort, testRegion, map[bool]string{false: "False", true: "True"}[sigV2])
	p := filepath.Join(dir, "s3cfg")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestS3cmd(t *testing.T) {
	requireTool(t, "s3cmd")
	testS3cmd(t, startChild(t, t.TempDir()))
}

// testS3cmd drives s3cmd against ts's one endpoint, once signing with
// SigV4 and once with SigV2 header authentication: buckets, a small and a
// multipart upload, listing, info (which reads ?acl), download, setacl,
// delete.
func testS3cmd(t *testing.T, ts s3Target) {
	hostPort := strings.TrimPrefix(ts.url(t), "http://")
	small := []byte("hello from s3cmd\n")
	big := randBytes(20 * mib)
	for _, tc := range []struct {
		name  string
		sigV2 bool
	}{
		{"sigv4", false},
		{"sigv2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newToolRunner(t, childEnv(t.TempDir()))
			cfg := writeS3cfg(t, t.TempDir(), hostPort, tc.sigV2)
			s3cmd := func(args ...string) string {
				t.Helper()
				return r.must("s3cmd", append([]string{"-c", cfg}, args...)...)
			}
			b := "s3cmd-" + tc.name
			u := "s3://" + b
			smallFile := filepath.Join(r.dir, "small.txt")
			bigFile := filepath.Join(r.dir, "big.bin")
			writeTree(t, r.dir, map[string][]byte{"small.txt": small, "big.bin": big})

			if out := s3cmd("mb", u); !strings.Contains(out, "Bucket '"+u+"/' created") {
				t.Errorf("s3cmd mb output:\n%s", out)
			}
			s3cmd("put", smallFile, u+"/dir/small.txt")
			s3cmd("put", "--multipart-chunk-size-mb=5", bigFile, u+"/big.bin")

			ls := s3cmd("ls", "--recursive", u)
			for _, want := range []string{
				fmt.Sprintf("%d   %s/dir/small.txt", len(small), u),
				fmt.Sprintf("%d   %s/big.bin", len(big), u),
			} {
				if !containsFields(ls, want) {
					t.Errorf("s3cmd ls --recursive lacks %q:\n%s", want, ls)
				}
			}
			if ls := s3cmd("ls"); !strings.Contains(ls, u) {
				t.Errorf("s3cmd ls (buckets) lacks %s:\n%s", u, ls)
			}

			// The subtest signs the way it says it does.
			want := map[bool]string{false: "Using signature v4", true: "Using signature v2"}[tc.sigV2]
			if out, errOut, err := r.run("s3cmd", "-c", cfg, "--debug", "ls", u); err != nil || !strings.Contains(errOut, want) {
				t.Errorf("s3cmd --debug ls: %v; stderr lacks %q:\n%s\n%s", err, want, out, tail(errOut, 4*kib))
			}

			info := s3cmd("info", u+"/dir/small.txt")
			for _, want := range []string{"FULL_CONTROL", md5Hex(small), fmt.Sprint(len(small))} {
				if !strings.Contains(info, want) {
					t.Errorf("s3cmd info lacks %q:\n%s", want, info)
				}
			}
			// s3cmd shows the MD5 it stored in x-amz-meta-s3cmd-attrs for
			// a multipart object; the ETag, read with the SDK, is the
			// multipart one of four 5 MiB parts.
			info = s3cmd("info", u+"/big.bin")
			if want := md5Hex(big); !strings.Contains(info, want) || !strings.Contains(info, "FULL_CONTROL") {
				t.Errorf("s3cmd info of the multipart object lacks MD5 %s or FULL_CONTROL:\n%s", want, info)
			}
			var parts [][]byte
			for off := 0; off < len(big); off += 5 * mib {
				parts = append(parts, big[off:min(off+5*mib, len(big))])
			}
			head, err := ts.client(t).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("big.bin")})
			if err != nil {
				t.Fatalf("HeadObject of the s3cmd multipart upload: %v", err)
			}
			if want := quoted(multipartETag(parts...)); aws.ToString(head.ETag) != want {
				t.Errorf("ETag of the s3cmd multipart upload %s, want %s (4 parts of 5 MiB)", aws.ToString(head.ETag), want)
			}

			for name, want := range map[string][]byte{"dir/small.txt": small, "big.bin": big} {
				dst := filepath.Join(t.TempDir(), "got")
				s3cmd("get", u+"/"+name, dst)
				got, err := os.ReadFile(dst)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("s3cmd get %s: %d bytes differ from the %d put", name, len(got), len(want))
				}
			}

			// The object is private already: s3cmd reads its ACL
			// (GET ?acl) and skips the PUT; it must not fail.
			if out := s3cmd("setacl", "--acl-private", u+"/dir/small.txt"); strings.Contains(out, "ERROR") {
				t.Errorf("s3cmd setacl --acl-private output:\n%s", out)
			}
			// x-amz-acl: private on an upload is accepted.
			s3cmd("put", "--acl-private", smallFile, u+"/private.txt")

			s3cmd("del", u+"/dir/small.txt", u+"/big.bin", u+"/private.txt")
			if ls := s3cmd("ls", "--recursive", u); strings.TrimSpace(ls) != "" {
				t.Errorf("s3cmd ls after del:\n%s", ls)
			}
			if out, errOut, err := r.run("s3cmd", "-c", cfg, "get", u+"/big.bin", filepath.Join(t.TempDir(), "gone")); err == nil || !strings.Contains(out+errOut, "does not exist") {
				t.Errorf("s3cmd get after del: err %v; want a 'does not exist' failure\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
			}
			s3cmd("rb", u)
			if ls := s3cmd("ls"); strings.Contains(ls, u) {
				t.Errorf("s3cmd ls after rb still lists %s:\n%s", u, ls)
			}
		})
	}
}

// containsFields reports whether some line of out ends with the
// whitespace-separated fields of want (s3cmd pads its columns).
func containsFields(out, want string) bool {
	w := strings.Fields(want)
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(w) && slices.Equal(f[len(f)-len(w):], w) {
			return true
		}
	}
	return false
}
