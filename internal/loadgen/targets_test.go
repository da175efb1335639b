package loadgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		file    string
		want    []Target
		wantErr string
	}{
		{
			name: "two targets",
			file: "[[target]]\nname = \"coffer\"\nurl = \"http://127.0.0.1:9000/\"\n\n[[target]]\nname = \"minio\"\nurl = \"http://127.0.0.1:9100\"\naccess_key = \"ak\"\nsecret_key = \"sk\"\nregion = \"eu-west-1\"\n",
			want: []Target{
				{Name: "coffer", URL: "http://127.0.0.1:9000"},
				{Name: "minio", URL: "http://127.0.0.1:9100", AccessKey: "ak", SecretKey: "sk", Region: "eu-west-1"},
			},
		},
		{
			name: "console",
			file: "[[target]]\nname = \"coffer\"\nurl = \"http://127.0.0.1:9000\"\nconsole_url = \"http://127.0.0.1:6790/\"\nconsole_user = \"alice\"\nconsole_password = \"pw\"\n",
			want: []Target{{Name: "coffer", URL: "http://127.0.0.1:9000", ConsoleURL: "http://127.0.0.1:6790", ConsoleUser: "alice", ConsolePassword: "pw"}},
		},
		{name: "console without password", file: "[[target]]\nname = \"a\"\nurl = \"http://x\"\nconsole_url = \"http://y\"\nconsole_user = \"alice\"\n", wantErr: "console_url, console_user and console_password together"},
		{name: "console password without url", file: "[[target]]\nname = \"a\"\nurl = \"http://x\"\nconsole_user = \"alice\"\nconsole_password = \"pw\"\n", wantErr: "console_url of target a"},
		{name: "typo", file: "[[target]]\nname = \"a\"\nurl = \"http://x\"\nsecret = \"s\"\n", wantErr: "unknown key target.secret"},
		{name: "empty", file: "", wantErr: "no [[target]]"},
		{name: "bad url", file: "[[target]]\nname = \"a\"\nurl = \"x\"\n", wantErr: "URL must be http(s)"},
		{name: "url with credentials", file: "[[target]]\nname = \"a\"\nurl = \"http://ak:Sup3rS3cret@x\"\n", wantErr: `target "a": URL must be http(s)://host[:port], without credentials`},
		{name: "half credentials", file: "[[target]]\nname = \"a\"\nurl = \"http://x\"\naccess_key = \"k\"\n", wantErr: "both access_key and secret_key"},
		{name: "not toml", file: "[[target", wantErr: "targets file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "targets.toml")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadTargets(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("LoadTargets = %v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LoadTargets (-want +got):\n%s", diff)
			}
		})
	}
}
