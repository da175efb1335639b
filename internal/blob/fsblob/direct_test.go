package fsblob

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/coffer-s3/coffer/internal/blob"
)

// TestPutDirect stores blobs around the sizes where Put switches to direct
// I/O and back to the page cache for an unaligned tail, from readers that
// deliver any number of bytes, and reads them back, on the temporary
// directory's filesystem and on tmpfs (which has direct I/O only since
// Linux 6.6; before, Puts there fall back to the page cache).
func TestPutDirect(t *testing.T) {
	t.Parallel()
	data := make([]byte, 5*writeBufSize+directAlign+123)
	for i := range data {
		data[i] = byte(i*131 + i>>12)
	}
	roots := map[string]string{"tempdir": ""}
	if runtime.GOOS == "linux" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			dir, err := os.MkdirTemp("/dev/shm", "fsblob-direct-")
			if err == nil {
				t.Cleanup(func() { os.RemoveAll(dir) })
				roots["tmpfs"] = filepath.Join(dir, "blobs")
			}
		}
	}
	for name, root := range roots {
		t.Run(name, func(t *testing.T) {
			for _, sync := range []bool{true, false} {
				s := open(t, Config{Root: root, Sync: sync})
				for _, size := range []int{directMin - 1, directMin, directMin + 1, 3 * writeBufSize, 3*writeBufSize + directAlign, len(data)} {
					for rname, reader := range map[string]func(io.Reader) io.Reader{
						"whole": func(r io.Reader) io.Reader { return r },
						"half":  iotest.HalfReader,
						"odd":   func(r io.Reader) io.Reader { return &oddReader{r: r} },
					} {
						for _, known := range []bool{true, false} {
							declared := int64(size)
							if !known {
								declared = blob.SizeUnknown
							}
							key := "d/x"
							if err := s.Put(t.Context(), key, reader(bytes.NewReader(data[:size])), declared); err != nil {
								t.Fatalf("sync=%v Put of %d bytes (%s, known %v): %v", sync, size, rname, known, err)
							}
							got, err := os.ReadFile(filepath.Join(s.root.Name(), key))
							if err != nil {
								t.Fatal(err)
							}
							if !bytes.Equal(got, data[:size]) {
								t.Fatalf("sync=%v %d bytes (%s, known %v): read back %d bytes that differ", sync, size, rname, known, len(got))
							}
						}
					}
				}
				s.Close() // the next Open of root would find it locked
			}
		})
	}
}

// oddReader returns at most 4097 bytes per Read, so that direct writes
// are assembled from unaligned pieces.
type oddReader struct{ r io.Reader }

func (o *oddReader) Read(p []byte) (int, error) {
	return o.r.Read(p[:min(len(p), 4097)])
}

// TestDirectWriteFallback checks that a direct write the kernel refuses
// (here: from a misaligned buffer) is done through the page cache, and
// that the store stops asking for direct I/O.
func TestDirectWriteFallback(t *testing.T) {
	t.Parallel()
	if oDirect == 0 {
		t.Skip("no direct I/O on " + runtime.GOOS)
	}
	s := open(t, Config{Sync: true})
	tmpd, err := s.dir(tmpDir)
	if err != nil {
		t.Fatal(err)
	}
	f, _, _, err := s.createTemp(tmpd, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if s.noDirect.Load() {
		t.Skip("the temporary directory's filesystem has no direct I/O")
	}
	buf := alignedBuffer(2 * directAlign)
	p := buf[1 : 1+directAlign] // aligned length, misaligned address
	for i := range p {
		p[i] = byte(i)
	}
	w := fileWriter{f: f, direct: true, noDirect: &s.noDirect}
	if err := w.write(p); err != nil {
		t.Fatalf("write: %v", err)
	}
	if !s.noDirect.Load() || w.direct {
		t.Errorf("after a refused direct write: store noDirect %v, writer direct %v; want true, false", s.noDirect.Load(), w.direct)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, p) {
		t.Errorf("file holds %d bytes that differ from the %d written", len(got), len(p))
	}
}
