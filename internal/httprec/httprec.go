// Package httprec records what a handler answered: the final status and
// the number of body bytes, for access logs, audit records and metrics. It
// is a leaf, so that every HTTP surface (s3api, adminapi, console, server)
// can share the one writer.
package httprec

import (
	"io"
	"net/http"
)

// Writer is an http.ResponseWriter that records the status and counts the
// body bytes of the response written through it. It keeps the fast paths
// of the writer it wraps: ReadFrom (net/http sends an *os.File, or an
// io.LimitedReader over one, with sendfile(2)), Flush and FlushError, and
// Unwrap for http.ResponseController.
//
// A Writer is used by one handler goroutine at a time, as any
// http.ResponseWriter is. The zero Writer is not usable: set
// ResponseWriter.
type Writer struct {
	http.ResponseWriter

	// Status is the final status sent: the first WriteHeader with a code
	// of 200 or more, or 200 on the first body byte. It is 0 while
	// nothing but informational (1xx) responses has been sent.
	Status int
	// Written counts the body bytes the wrapped writer accepted.
	Written int64

	// Before, if set, is called once, before the answer starts: before
	// the first final status, body write or flush is passed on. That is
	// when net/http sends the status line and, first, reads and discards
	// what the handler left of the request body.
	Before func()
}

// before runs Before the first time.
func (w *Writer) before() {
	if f := w.Before; f != nil {
		w.Before = nil
		f()
	}
}

// WriteHeader implements http.ResponseWriter. A 1xx response (100
// Continue, 103 Early Hints) is interim: it is passed on but is not the
// status.
func (w *Writer) WriteHeader(code int) {
	if w.Status == 0 && code >= 200 {
		w.Status = code
		w.before()
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *Writer) Write(p []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK // the wrapped writer sends it implicitly
		w.before()
	}
	n, err := w.ResponseWriter.Write(p)
	w.Written += int64(n)
	return n, err
}

// ReadFrom implements io.ReaderFrom: src goes untouched to the wrapped
// writer's ReadFrom when it has one, so that net/http can use sendfile(2)
// for a file; otherwise it is copied through Write.
func (w *Writer) ReadFrom(src io.Reader) (int64, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
		w.before()
	}
	var (
		n   int64
		err error
	)
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		// Hide the wrapped writer's other methods, so io.Copy cannot
		// come back here.
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, src)
	}
	w.Written += n
	return n, err
}

// Flush implements http.Flusher; it does nothing when the wrapped writer
// cannot flush.
func (w *Writer) Flush() {
	w.before()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError flushes the wrapped writer and returns its error, or
// http.ErrNotSupported when it cannot flush. http.ResponseController
// prefers it to Flush, so that a flush failure reaches the caller as it
// would without the Writer in between.
func (w *Writer) FlushError() error {
	w.before()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// StatusOr200 returns Status, or 200 when no final status has been sent:
// what net/http sends for a handler that returns without writing.
func (w *Writer) StatusOr200() int {
	if w.Status == 0 {
		return http.StatusOK
	}
	return w.Status
}
