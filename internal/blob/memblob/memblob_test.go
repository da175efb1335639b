package memblob

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/blobtest"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(*testing.T) blob.Store { return New() })
}

func BenchmarkStore(b *testing.B) {
	blobtest.Bench(b, func(*testing.B) blob.Store { return New() })
}

func TestInvalidKeys(t *testing.T) {
	for _, key := range []string{
		"", "../x", "/abs", "a/../../b", "a\x00b", "A", "a b", `a\b`, "a/", "a//b", "a/./b", ".",
		"a/..", strings.Repeat("k", 201),
	} {
		t.Run(key, func(t *testing.T) {
			s := New()
			ctx := t.Context()
			if err := s.Put(ctx, key, strings.NewReader("x"), 1); err == nil {
				t.Errorf("Put(%q) = nil, want error", key)
			}
			if _, err := s.Get(ctx, key, 0, -1); err == nil || errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Get(%q) = %v, want an invalid-key error", key, err)
			}
			if err := s.Delete(ctx, key); err == nil {
				t.Errorf("Delete(%q) = nil, want error", key)
			}
			if len(s.blobs) != 0 {
				t.Errorf("store holds %d blobs after rejected Put", len(s.blobs))
			}
		})
	}
	for _, key := range []string{"a", strings.Repeat("k", 200), "b/00/0123abc", ".x/y", "a.b/c_d-e", "a/.b"} {
		if err := New().Put(t.Context(), key, strings.NewReader("x"), 1); err != nil {
			t.Errorf("Put(%q) = %v, want nil", key, err)
		}
	}
}

func TestGetNegativeOffset(t *testing.T) {
	s := New()
	if err := s.Put(t.Context(), "k", strings.NewReader("abc"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "k", -1, 1); err == nil {
		t.Error("Get with negative offset = nil error, want error")
	}
}

func TestPutNegativeSize(t *testing.T) {
	s := New()
	if err := s.Put(t.Context(), "k", strings.NewReader(""), -2); !errors.Is(err, blob.ErrSize) {
		t.Errorf("Put with size -2 = %v, want ErrSize", err)
	}
}

func TestPutLargeDeclaredSizeAllocatesLazily(t *testing.T) {
	// A client claiming 1 TiB and sending 10 bytes must not make the store
	// allocate 1 TiB.
	s := New()
	err := s.Put(t.Context(), "k", bytes.NewReader(make([]byte, 10)), 1<<40)
	if !errors.Is(err, blob.ErrSize) {
		t.Fatalf("Put = %v, want ErrSize", err)
	}
}
