package bytesize

import (
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "1048576", want: 1 << 20},
		{in: "128KiB", want: 128 << 10},
		{in: "8MiB", want: 8 << 20},
		{in: "8 MiB", want: 8 << 20},
		{in: " 5gib ", want: 5 << 30},
		{in: "2TiB", want: 2 << 40},
		{in: "512B", want: 512},
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "", wantErr: "invalid size"},
		{in: "x", wantErr: "invalid size"},
		{in: "-1", wantErr: "invalid size"},
		{in: "1.5GiB", wantErr: `unknown unit ".5GiB"`},
		{in: "8MB", wantErr: `unknown unit "MB"`},
		{in: "8M", wantErr: `unknown unit "M"`},
		{in: "9223372036854775808", wantErr: "out of range"},
		{in: "8388608TiB", wantErr: "out of range"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) = %d, %v, want error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{1000, "1000"},
		{1024, "1KiB"},
		{128 << 10, "128KiB"},
		{8 << 20, "8MiB"},
		{5 << 30, "5GiB"},
		{5 << 40, "5TiB"},
		{3<<20 + 512<<10, "3584KiB"},
		{-5, "-5"},
	} {
		if got := Format(tc.in); got != tc.want {
			t.Errorf("Format(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParse checks that Parse never panics and that every size it
// accepts survives Format and Parse again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "128KiB", "8 MiB", "5gib", "1048576", "8MB", "-1", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("Parse(%q) = %d, negative", s, n)
		}
		back, err := Parse(Format(n))
		if err != nil || back != n {
			t.Fatalf("Parse(Format(%d)) = %d, %v", n, back, err)
		}
	})
}
