package secretfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		content     string
		mode        os.FileMode
		want        string
		wantExposed bool
	}{
		{name: "one line", content: "s3cret\n", mode: 0o600, want: "s3cret"},
		{name: "no newline", content: "s3cret", mode: 0o600, want: "s3cret"},
		{name: "crlf", content: "s3cret\r\nsecond\n", mode: 0o600, want: "s3cret"},
		{name: "spaces kept", content: " pass word \n", mode: 0o400, want: " pass word "},
		{name: "empty", content: "", mode: 0o600, want: ""},
		{name: "group readable", content: "s3cret\n", mode: 0o640, want: "s3cret", wantExposed: true},
		{name: "others readable", content: "s3cret\n", mode: 0o604, want: "s3cret", wantExposed: true},
		{name: "group writable", content: "s3cret\n", mode: 0o620, want: "s3cret", wantExposed: true},
		{name: "others executable", content: "s3cret\n", mode: 0o601, want: "s3cret", wantExposed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "secret")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil { // whatever the umask
				t.Fatal(err)
			}
			got, exposed, err := ReadLine(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("ReadLine = %q, want %q", got, tc.want)
			}
			if (exposed != nil) != tc.wantExposed {
				t.Fatalf("exposed = %v, want exposed %v", exposed, tc.wantExposed)
			}
			if exposed != nil {
				if exposed.Path != path || exposed.Mode != tc.mode {
					t.Errorf("exposed = %+v, want path %s and mode %#o", exposed, path, tc.mode)
				}
				if msg := exposed.Error(); !strings.Contains(msg, "open to group or others") || strings.Contains(msg, "s3cret") {
					t.Errorf("message %q: want the mode named and the contents not", msg)
				}
			}
		})
	}
}

func TestReadLineMissing(t *testing.T) {
	t.Parallel()
	_, exposed, err := ReadLine(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, fs.ErrNotExist) || exposed != nil {
		t.Errorf("ReadLine(missing) = %v, %v; want fs.ErrNotExist", exposed, err)
	}
}

func TestReadLineBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 2*MaxSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _, err := ReadLine(path)
	if err != nil || len(got) != MaxSize {
		t.Errorf("ReadLine of a %d-byte line = %d bytes, %v; want the first %d", 2*MaxSize, len(got), err, MaxSize)
	}
}
