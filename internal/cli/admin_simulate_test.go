package cli

import (
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/iam"
)

func TestAdminPolicySimulate(t *testing.T) {
	t.Parallel()
	s := newAdminServer(t)
	s.ok(t, "policy", "add", "photos", writeFile(t, "p.json", `{"Version":"2012-10-17","Statement":[
		{"Sid":"Read","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}},
		{"Sid":"NoRaw","Effect":"Deny","Action":"s3:*","Resource":"arn:aws:s3:::photos/raw/*"}]}`))
	var alice adminapi.CreateUserResponse
	decode(t, s.ok(t, "user", "add", "alice", "--json"), &alice)
	s.ok(t, "policy", "attach", "photos", "--user", "alice")
	var scoped adminapi.NewKey
	decode(t, s.ok(t, "key", "add", "--user", "alice", "--json", "--policy", writeFile(t, "scope.json",
		`{"Version":"2012-10-17","Statement":[{"Sid":"Thumbs","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/thumbs/*"}]}`)), &scoped)

	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     []string // in stdout, or stderr for usage errors
	}{
		{"allowed", []string{"--user", "alice", "--action", "s3:GetObject", "--resource", "arn:aws:s3:::photos/a.jpg", "--context", "aws:SourceIp=10.0.0.1"}, 0,
			[]string{"ALLOWED: alice s3:GetObject on arn:aws:s3:::photos/a.jpg", `Allowed by statement "Read" of policy "photos" (attached to user alice)`,
				`policy "photos" (attached to user alice)  Allow  statement "Read"`}},
		{"implicit deny", []string{"--user", "alice", "--action", "s3:GetObject", "--resource", "arn:aws:s3:::photos/a.jpg", "--context", "aws:SourceIp=192.0.2.1"}, 1,
			[]string{"DENIED: alice", "no statement of the 1 policy evaluated allows this", "NotApplicable  -"}},
		{"explicit deny", []string{"--user", "alice", "--action", "s3:GetObject", "--resource", "arn:aws:s3:::photos/raw/a.cr2"}, 1,
			[]string{`Denied explicitly by statement "NoRaw" of policy "photos"`}},
		{"outside scope", []string{"--key", scoped.AccessKey, "--action", "s3:GetObject", "--resource", "arn:aws:s3:::photos/a.jpg", "--context", "aws:SourceIp=10.0.0.1"}, 1,
			[]string{"DENIED: alice (key " + scoped.AccessKey + ")", "but the scope of access key " + scoped.AccessKey + " is narrower"}},
		{"within scope", []string{"--key", scoped.AccessKey, "--action", "s3:GetObject", "--resource", "arn:aws:s3:::photos/thumbs/a.jpg", "--context", "aws:SourceIp=10.0.0.1"}, 0,
			[]string{"ALLOWED", `, within statement "Thumbs" of the scope of access key`}},
		{"root", []string{"--key", testRootKey, "--action", "s3:DeleteBucket", "--resource", "arn:aws:s3:::photos"}, 0, []string{"ALLOWED: root", "root may do everything"}},
		{"no principal", []string{"--action", "s3:GetObject"}, 2, []string{"give exactly one of --user NAME and --key ACCESS_KEY"}},
		{"both principals", []string{"--user", "alice", "--key", "K", "--action", "s3:GetObject"}, 2, []string{"exactly one"}},
		{"no action", []string{"--user", "alice"}, 2, []string{"give --action"}},
		{"unknown action", []string{"--user", "alice", "--action", "s3:GetObjekt"}, 2, []string{`unknown action "s3:GetObjekt"`}},
		{"bad resource", []string{"--user", "alice", "--action", "s3:GetObject", "--resource", "photos/a.jpg"}, 2, []string{"not an S3 ARN"}},
		{"bad context", []string{"--user", "alice", "--action", "s3:GetObject", "--context", "aws:SourceIp"}, 2, []string{"want KEY=VALUE"}},
		{"bad context value", []string{"--user", "alice", "--action", "s3:GetObject", "--context", "aws:SourceIp=nope"}, 2, []string{"is not an IP address"}},
		{"unknown user", []string{"--user", "bob", "--action", "s3:GetObject"}, 1, []string{`NoSuchEntity: user "bob"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := s.admin(t, append([]string{"policy", "simulate"}, tc.args...)...)
			out := stdout
			if tc.wantCode == 2 || strings.Contains(stderr, "NoSuchEntity") {
				out = stderr
			}
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tc.wantCode == 1 && !strings.Contains(stderr, "NoSuchEntity") && stderr != "" {
				t.Errorf("a denial printed to stderr: %q", stderr)
			}
		})
	}

	// --json prints the API's answer, and the exit status still tells.
	code, stdout, _ := s.admin(t, "policy", "simulate", "--json", "--user", "alice", "--action", "s3:GetObject", "--resource", "arn:aws:s3:::photos/raw/x")
	if code != 1 {
		t.Errorf("--json denied: exit %d, want 1", code)
	}
	var sim adminapi.Simulation
	decode(t, stdout, &sim)
	if sim.Allowed || sim.Reason != iam.ReasonExplicitDeny || len(sim.Deciding) != 1 || sim.Deciding[0].Sid != "NoRaw" || sim.Deciding[0].Statement != 2 {
		t.Errorf("--json = %+v", sim)
	}
	code, stdout, _ = s.admin(t, "policy", "simulate", "--json", "--user", "alice", "--action", "s3:GetObject", "--resource", "arn:aws:s3:::photos/x", "--context", "aws:SourceIp=10.9.9.9")
	decode(t, stdout, &sim)
	if code != 0 || !sim.Allowed {
		t.Errorf("--json allowed: exit %d, %+v", code, sim)
	}
}
