package cli

import (
	"strings"
	"testing"
	"time"
)

func TestAuditTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{in: ""},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "2026-11-01T00:00:00Z", want: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{in: "2026-11-01T01:00:00.5+01:00", want: time.Date(2026, 11, 1, 0, 0, 0, 5e8, time.UTC)},
		{in: "-1h", wantErr: "a duration must be positive"},
		{in: "yesterday", wantErr: "want an RFC 3339 time"},
		{in: "2026-11-01", wantErr: "want an RFC 3339 time"},
	} {
		got, err := auditTime("--since", tc.in, now)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("auditTime(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("auditTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestDash(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                "-",
		"photos/a b.jpg":  "photos/a b.jpg",
		"ünïcödé/键":       "ünïcödé/键",
		"evil\x1b[2Jkey":  `"evil\x1b[2Jkey"`,
		"line\nbreak":     `"line\nbreak"`,
		"bad\xffutf8 key": `"bad\xffutf8 key"`,
	} {
		if got := dash(in); got != want {
			t.Errorf("dash(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestAdminAuditUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"admin", "audit", "ls", "--source", "ftp"}, `--source "ftp": want s3, admin, lifecycle or console`},
		{[]string{"admin", "audit", "ls", "--limit", "0"}, "--limit must be at least 1"},
		{[]string{"admin", "audit", "ls", "--since", "soon"}, "--since \"soon\""},
		{[]string{"admin", "audit", "export", "--until", "-5m"}, "a duration must be positive"},
	} {
		code, _, stderr := runCLI(t, map[string]string{"COFFER_ACCESS_KEY": "ak", "COFFER_SECRET_KEY": "sk"}, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.wantErr) {
			t.Errorf("coffer %q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.wantErr)
		}
	}
}
