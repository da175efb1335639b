package meta

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestCorruptRecords stores undecodable values under every kind of key and
// checks that each reader reports corruption instead of panicking or
// returning garbage.
func TestCorruptRecords(t *testing.T) { forEachEngine(t, testCorruptRecords) }

func testCorruptRecords(t *testing.T, e engine) {
	ctx := context.Background()
	db := e.open(t)
	mustCreateBucket(t, db, "bkt")
	id := strings.Repeat("e", UploadIDLen)
	if err := db.CreateUpload(ctx, Upload{Bucket: "bkt", Key: "u", ID: id}); err != nil {
		t.Fatal(err)
	}
	bad := []byte{recordVersion + 1}
	b := db.kv.newBatch()
	b.set(bucketKey("bad"), bad)
	b.set(objectKey(nil, "bkt", "k"), bad)
	b.set(dataKey(nil, "bkt", "k"), bad)
	b.set(uploadKey("bkt", "v", strings.Repeat("f", UploadIDLen)), bad)
	b.set(partKey(id, 1), bad)
	b.set(garbageKey(testTime, "b/x"), bad)
	if err := b.commit(true); err != nil {
		t.Fatal(err)
	}
	b.close()
	for name, err := range map[string]error{
		"Bucket":           func() error { _, err := db.Bucket(ctx, "bad"); return err }(),
		"Buckets":          func() error { _, err := db.Buckets(ctx); return err }(),
		"Object":           func() error { _, err := db.Object(ctx, "bkt", "k"); return err }(),
		"ObjectData":       func() error { _, _, err := db.ObjectData(ctx, "bkt", "k", "v", nil); return err }(),
		"UpdateObject":     db.UpdateObject(ctx, "bkt", "k", testTime, func(*Object) (*Object, error) { return nil, nil }),
		"ListObjects":      func() error { _, _, err := db.ListObjects(ctx, "bkt", ListOptions{Limit: 10}); return err }(),
		"ListUploads":      func() error { _, _, err := db.ListUploads(ctx, "bkt", UploadListOptions{Limit: 10}); return err }(),
		"Parts":            func() error { _, _, err := db.Parts(ctx, id, 0, 10); return err }(),
		"Garbage":          func() error { _, err := db.Garbage(ctx, time.Now(), nil, 10); return err }(),
		"ReferencedBlocks": db.ReferencedBlocks(ctx, func(string) error { return nil }),
	} {
		if !errors.Is(err, errCorrupt) {
			t.Errorf("%s over a corrupt record = %v, want errCorrupt", name, err)
		}
	}
	for name, f := range map[string]func([]byte) error{
		"object": func(k []byte) error { _, _, err := decodeObjectKey(k); return err },
		"part":   func(k []byte) error { _, _, err := decodePartKey(k); return err },
		"garbage": func(k []byte) error {
			_, _, err := decodeGarbageKey(k)
			return err
		},
	} {
		for _, k := range [][]byte{nil, []byte("x"), []byte("zzzzzzzzzzzz")} {
			if err := f(k); !errors.Is(err, errBadKey) {
				t.Errorf("decode %s key %q = %v, want errBadKey", name, k, err)
			}
		}
	}
}

func TestPebbleLogger(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := pebbleLogger{log: log, fail: newFailure(log)}
	l.Infof("flushed %d", 1)
	l.Errorf("disk %s", "full")
	out := buf.String()
	if !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "flushed 1") ||
		!strings.Contains(out, "level=ERROR") || !strings.Contains(out, "disk full") {
		t.Errorf("log output = %q", out)
	}
	// Once the store has failed, Pebble's errors (its vain retries) go to
	// Debug: the failure was logged once, at Error.
	l.fail.set(errors.New("disk gone"))
	buf.Reset()
	l.Errorf("background error: %s", "flush failed")
	if out := buf.String(); !strings.Contains(out, "level=DEBUG") || strings.Contains(out, "level=ERROR") {
		t.Errorf("Errorf after the failure logged %q, want it at Debug", out)
	}
}
