package checksum

import (
	"encoding/base64"
	"testing"
)

// FuzzValidate checks, for every algorithm, that Validate never panics and
// accepts exactly the canonical base64 encodings of a digest of the
// algorithm's size: an accepted value decodes to Size bytes that encode
// back to the same string.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		"", "y/Q5Jg==", "AAAAAA==", "rosUhgp5mIg=", "98O8HYCOBHMq32eZZczDTKeuNEE=",
		"FeKw08M4keuw8e9gnsQZQgwg4yDOlMZfvIwzEkSOsiU=", "y/Q5Jh==", "y_Q5Jg==", "y/Q5\nJg=",
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<10 {
			return
		}
		for _, a := range algorithms {
			if err := a.Validate(s); err != nil {
				continue
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(b) != a.Size() {
				t.Fatalf("%s.Validate(%q) = nil, but it decodes to %d bytes (%v), want %d", a, s, len(b), err, a.Size())
			}
			if got := Encode(b); got != s {
				t.Fatalf("%s.Validate(%q) = nil, but the canonical encoding is %q", a, s, got)
			}
		}
	})
}
