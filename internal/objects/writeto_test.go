package objects

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/blob/fsblob"
	"github.com/coffer-s3/coffer/internal/blob/memblob"
)

// readFromRecorder is an io.Writer with ReadFrom, as http.ResponseWriter
// is; it records what each ReadFrom was handed.
type readFromRecorder struct {
	bytes.Buffer
	srcs []io.Reader
}

func (w *readFromRecorder) ReadFrom(src io.Reader) (int64, error) {
	w.srcs = append(w.srcs, src)
	return w.Buffer.ReadFrom(src)
}

// TestBlockReaderSendfile checks the precondition of sendfile(2) on a GET:
// io.Copy from a Body of an fsblob-backed object hands each block's file,
// limited to the range, to the destination's ReadFrom.
func TestBlockReaderSendfile(t *testing.T) {
	store, err := fsblob.Open(fsblob.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	e := &env{dir: t.TempDir()}
	e.open(t, Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock}, store)
	ctx := context.Background()
	if err := e.s.CreateBucket(ctx, "bkt", CreateBucketInput{Region: ""}); err != nil {
		t.Fatal(err)
	}
	data := randBytes(3*testBlock+100, 4)
	e.put(t, "k", data)
	o, err := e.s.GetObject(ctx, "bkt", "k", GetOptions{Range: &Range{Start: 10, End: int64(len(data)) - 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Body.Close()
	var w readFromRecorder
	n, err := io.Copy(&w, o.Body)
	if err != nil || n != int64(len(data))-10 || !bytes.Equal(w.Bytes(), data[10:]) {
		t.Fatalf("io.Copy = %d, %v; equal %v", n, err, bytes.Equal(w.Bytes(), data[10:]))
	}
	if len(w.srcs) != 4 {
		t.Fatalf("ReadFrom called %d times, want once per block (4)", len(w.srcs))
	}
	for i, src := range w.srcs {
		lr, ok := src.(*io.LimitedReader)
		if !ok {
			t.Fatalf("block %d: ReadFrom got %T, want *io.LimitedReader over *os.File", i, src)
		}
		if _, ok := lr.R.(*os.File); !ok {
			t.Errorf("block %d: ReadFrom got a LimitedReader over %T, want *os.File", i, lr.R)
		}
	}
}

// plainStore hides the io.WriterTo of its store's readers, and can make
// them yield more bytes than asked for.
type plainStore struct {
	blob.Store
	extra int // bytes appended to every reader
}

// longStore's readers are io.WriterTo and yield one byte more than asked.
type longStore struct{ blob.Store }

func (s longStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	rc, err := s.Store.Get(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	return struct {
		*bytes.Reader
		io.Closer
	}{bytes.NewReader(append(b, 'x')), io.NopCloser(nil)}, err
}

func (s plainStore) Get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	rc, err := s.Store.Get(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	r := io.MultiReader(rc, strings.NewReader(strings.Repeat("x", s.extra)))
	return struct {
		io.Reader
		io.Closer
	}{r, rc}, nil
}

// TestBlockReaderWriteToPlain covers block readers that cannot write
// themselves (copied through the pooled buffer, limited to the block) and
// a store that breaks its contract by returning too much.
func TestBlockReaderWriteToPlain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra int
	}{{"exact", 0}, {"over-long", 7}} {
		t.Run(tc.name, func(t *testing.T) {
			e := &env{store: memblob.New(), dir: t.TempDir()}
			e.open(t, Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock}, plainStore{e.store, tc.extra})
			if err := e.s.CreateBucket(context.Background(), "bkt", CreateBucketInput{Region: ""}); err != nil {
				t.Fatal(err)
			}
			data := randBytes(2*testBlock+5, 5)
			e.put(t, "k", data)
			o, err := e.s.GetObject(context.Background(), "bkt", "k", GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Body.Close()
			var buf bytes.Buffer
			n, err := io.Copy(&buf, o.Body)
			// The pooled-buffer path limits each block to what was asked,
			// so even an over-long reader yields the object exactly.
			if err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
				t.Errorf("io.Copy = %d, %v; equal %v", n, err, bytes.Equal(buf.Bytes(), data))
			}
		})
	}
}

// TestBlockReaderWriteToOverlong: a block reader that writes itself cannot
// be limited, so a store returning more than asked is reported, not passed
// off as the object.
func TestBlockReaderWriteToOverlong(t *testing.T) {
	e := &env{store: memblob.New(), dir: t.TempDir()}
	e.open(t, Config{InlineThreshold: testInline, BlockSize: testBlock, MinPartSize: 2 * testBlock}, longStore{e.store})
	if err := e.s.CreateBucket(context.Background(), "bkt", CreateBucketInput{Region: ""}); err != nil {
		t.Fatal(err)
	}
	e.put(t, "k", randBytes(2*testBlock+5, 6))
	o, err := e.s.GetObject(context.Background(), "bkt", "k", GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Body.Close()
	if _, err := io.Copy(io.Discard, o.Body); err == nil || !strings.Contains(err.Error(), "more than asked") {
		t.Errorf("io.Copy error = %v, want the over-long block reported", err)
	}
}
