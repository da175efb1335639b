package s3api

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// readFromWriter is an http.ResponseWriter with ReadFrom, as net/http's is.
type readFromWriter struct {
	*httptest.ResponseRecorder
	srcs []io.Reader
}

func (w *readFromWriter) ReadFrom(src io.Reader) (int64, error) {
	w.srcs = append(w.srcs, src)
	return w.ResponseRecorder.Body.ReadFrom(src)
}

// TestResponseWriterReadFrom: the reader handed to responseWriter.ReadFrom
// reaches the underlying writer's ReadFrom untouched (what lets net/http use
// sendfile for a file), the bytes are counted, and a status is sent first.
func TestResponseWriterReadFrom(t *testing.T) {
	under := &readFromWriter{ResponseRecorder: httptest.NewRecorder()}
	w := &responseWriter{ResponseWriter: under}
	src := &io.LimitedReader{R: strings.NewReader("hello, world"), N: 5}
	n, err := w.ReadFrom(src)
	if err != nil || n != 5 || under.Body.String() != "hello" {
		t.Fatalf("ReadFrom = %d, %v, body %q", n, err, under.Body.String())
	}
	if len(under.srcs) != 1 || under.srcs[0] != io.Reader(src) {
		t.Errorf("underlying ReadFrom got %v, want the source itself", under.srcs)
	}
	if w.status != http.StatusOK || under.Code != http.StatusOK || w.written != 5 {
		t.Errorf("status %d (sent %d), written %d; want 200 and 5", w.status, under.Code, w.written)
	}

	// Over a writer without ReadFrom the bytes are copied and counted.
	rec := httptest.NewRecorder()
	w = &responseWriter{ResponseWriter: rec}
	w.WriteHeader(http.StatusPartialContent)
	data := bytes.Repeat([]byte("x"), 100_000)
	if n, err := io.Copy(w, bytes.NewBuffer(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("io.Copy = %d, %v", n, err)
	}
	if !bytes.Equal(rec.Body.Bytes(), data) || w.written != int64(len(data)) || rec.Code != http.StatusPartialContent {
		t.Errorf("body %d bytes, written %d, status %d", rec.Body.Len(), w.written, rec.Code)
	}
}
