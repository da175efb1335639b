package iam

import (
	"errors"
	"testing"

	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestRootOnly(t *testing.T) {
	m, err := New(Config{RootAccessKey: "AK", RootSecretKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	if sk, err := m.SecretKey(t.Context(), "AK"); err != nil || sk != "SK" {
		t.Fatalf("SecretKey(AK) = %q, %v", sk, err)
	}
	if _, err := m.SecretKey(t.Context(), "AKX"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("SecretKey(AKX) error = %v, want ErrUnknownKey", err)
	}
	for _, tc := range []struct {
		name string
		p    Principal
		want s3err.Code
	}{
		{"root", m.Principal("AK"), ""},
		{"anonymous", Principal{Anonymous: true}, s3err.AccessDenied},
		{"other key", m.Principal("BK"), s3err.AccessDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Authorize(t.Context(), Request{Principal: tc.p, Action: GetObject, Bucket: "b", Key: "k"})
			if got := s3err.CodeOf(err); got != tc.want {
				t.Errorf("Authorize = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New with no credentials succeeded")
	}
}
