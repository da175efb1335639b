package httprec

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

// TestReadFrom: the reader handed to ReadFrom reaches the wrapped writer's
// ReadFrom untouched (what lets net/http use sendfile for a file), the
// bytes are counted, and the status is 200.
func TestReadFrom(t *testing.T) {
	t.Parallel()
	under := &readFromWriter{ResponseRecorder: httptest.NewRecorder()}
	w := &Writer{ResponseWriter: under}
	src := &io.LimitedReader{R: strings.NewReader("hello, world"), N: 5}
	n, err := w.ReadFrom(src)
	if err != nil || n != 5 || under.Body.String() != "hello" {
		t.Fatalf("ReadFrom = %d, %v, body %q", n, err, under.Body.String())
	}
	if len(under.srcs) != 1 || under.srcs[0] != io.Reader(src) {
		t.Errorf("wrapped ReadFrom got %v, want the source itself", under.srcs)
	}
	if w.Status != http.StatusOK || under.Code != http.StatusOK || w.Written != 5 {
		t.Errorf("status %d (sent %d), written %d; want 200 and 5", w.Status, under.Code, w.Written)
	}

	// Over a writer without ReadFrom the bytes are copied and counted.
	rec := httptest.NewRecorder()
	w = &Writer{ResponseWriter: rec}
	w.WriteHeader(http.StatusPartialContent)
	data := bytes.Repeat([]byte("x"), 100_000)
	if n, err := io.Copy(w, bytes.NewBuffer(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("io.Copy = %d, %v", n, err)
	}
	if !bytes.Equal(rec.Body.Bytes(), data) || w.Written != int64(len(data)) || rec.Code != http.StatusPartialContent {
		t.Errorf("body %d bytes, written %d, status %d", rec.Body.Len(), w.Written, rec.Code)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(w http.ResponseWriter)
		want  int // Status
		sent  int // what the wrapped writer got
		bytes int64
	}{
		{name: "nothing", write: func(http.ResponseWriter) {}, want: 0, sent: 200},
		{name: "body only", write: func(w http.ResponseWriter) { io.WriteString(w, "hi") }, want: 200, sent: 200, bytes: 2},
		{name: "header", write: func(w http.ResponseWriter) { w.WriteHeader(404) }, want: 404, sent: 404},
		{name: "first header wins", write: func(w http.ResponseWriter) { w.WriteHeader(206); w.WriteHeader(500) }, want: 206, sent: 206},
		{name: "header after body", write: func(w http.ResponseWriter) { io.WriteString(w, "x"); w.WriteHeader(500) }, want: 200, sent: 200, bytes: 1},
		{name: "interim then final", write: func(w http.ResponseWriter) { w.WriteHeader(100); w.WriteHeader(201) }, want: 201}, // httptest records the 100 as its Code
		{name: "interim only", write: func(w http.ResponseWriter) { w.WriteHeader(103) }, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := &Writer{ResponseWriter: rec}
			tc.write(w)
			if w.Status != tc.want || w.Written != tc.bytes {
				t.Errorf("Status, Written = %d, %d; want %d, %d", w.Status, w.Written, tc.want, tc.bytes)
			}
			if tc.sent != 0 && rec.Code != tc.sent {
				t.Errorf("wrapped writer got status %d, want %d", rec.Code, tc.sent)
			}
			want := tc.want
			if want == 0 {
				want = 200
			}
			if got := w.StatusOr200(); got != want {
				t.Errorf("StatusOr200() = %d, want %d", got, want)
			}
		})
	}
}

// plainWriter is an http.ResponseWriter and nothing more.
type plainWriter struct{ http.ResponseWriter }

func TestFlushAndController(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	w := &Writer{ResponseWriter: rec}
	if err := http.NewResponseController(w).Flush(); err != nil || !rec.Flushed {
		t.Errorf("ResponseController.Flush = %v, flushed %v; want nil, true", err, rec.Flushed)
	}
	// The controller reaches the wrapped writer's other methods through
	// Unwrap; httptest's recorder has no deadlines.
	if err := http.NewResponseController(w).SetWriteDeadline(time.Time{}); !errors.Is(err, http.ErrNotSupported) {
		t.Errorf("SetWriteDeadline = %v, want ErrNotSupported from the wrapped writer", err)
	}
	// Over a writer that cannot flush, Flush does nothing and the
	// controller says so.
	w = &Writer{ResponseWriter: plainWriter{httptest.NewRecorder()}}
	w.Flush()
	if err := http.NewResponseController(w).Flush(); !errors.Is(err, http.ErrNotSupported) {
		t.Errorf("ResponseController.Flush over a plain writer = %v, want ErrNotSupported", err)
	}
}

// TestBefore: Before runs once, before the first thing of the answer that
// reaches the wrapped writer (a final status, a body write, a ReadFrom, a
// flush), and not for an informational status.
func TestBefore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(w *Writer)
	}{
		{"WriteHeader", func(w *Writer) { w.WriteHeader(http.StatusNoContent) }},
		{"Write", func(w *Writer) { _, _ = w.Write([]byte("x")) }},
		{"ReadFrom", func(w *Writer) { _, _ = w.ReadFrom(strings.NewReader("x")) }},
		{"Flush", func(w *Writer) { w.Flush() }},
		{"FlushError", func(w *Writer) { _ = w.FlushError() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			var calls int
			w := &Writer{ResponseWriter: rec, Before: func() {
				calls++
				if rec.Flushed || rec.Body.Len() > 0 {
					t.Error("Before ran after the answer started")
				}
			}}
			w.WriteHeader(http.StatusContinue)
			if calls != 0 {
				t.Fatalf("Before ran for a 100 Continue")
			}
			tc.start(w)
			_, _ = w.Write([]byte("more"))
			w.Flush()
			if calls != 1 {
				t.Errorf("Before ran %d times, want once", calls)
			}
		})
	}
}
