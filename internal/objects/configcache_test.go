package objects

import (
	"context"
	"errors"
	"testing"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// TestConfigCache: a decoded document is served until the configuration
// generation moves (a change through the service, or ConfigsChanged for
// one made by another node), then read again; a bucket without the
// document and a missing bucket are answered as BucketConfig answers them.
func TestConfigCache(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	decodes := 0
	c := NewConfigCache(e.s, ConfigTagging, func(doc []byte) (string, error) {
		decodes++
		if string(doc) == "bad" {
			return "", errors.New("bad document")
		}
		return string(doc), nil
	})
	if _, ok, err := c.Get(ctx, "bkt"); ok || err != nil {
		t.Fatalf("no document: %v, %v", ok, err)
	}
	if err := e.s.PutBucketConfig(ctx, "bkt", ConfigTagging, []byte("one")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if v, ok, err := c.Get(ctx, "bkt"); v != "one" || !ok || err != nil {
			t.Fatalf("Get = %q, %v, %v", v, ok, err)
		}
	}
	if decodes != 1 {
		t.Errorf("decoded %d times for three Gets, want 1", decodes)
	}
	// Another node's change reaches the store beneath the service: the
	// cache serves the old document until told.
	if err := e.db.PutBucketConfig(ctx, "bkt", string(ConfigTagging), []byte("two")); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := c.Get(ctx, "bkt"); v != "one" {
		t.Fatalf("Get before ConfigsChanged = %q, want the cached one", v)
	}
	e.s.ConfigsChanged()
	if v, _, _ := c.Get(ctx, "bkt"); v != "two" {
		t.Fatalf("Get after ConfigsChanged = %q, want two", v)
	}
	if err := e.s.PutBucketConfig(ctx, "bkt", ConfigTagging, []byte("bad")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx, "bkt"); err == nil {
		t.Error("a document that does not decode was served")
	}
	if _, _, err := c.Get(ctx, "nope"); s3err.CodeOf(err) != s3err.NoSuchBucket {
		t.Errorf("missing bucket: %v, want NoSuchBucket", err)
	}
}
