package server

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/httprec"
)

// accessQueueLen bounds the records waiting to be written. When the writer
// falls behind, requests drop their record instead of waiting.
const accessQueueLen = 4096

// accessLog writes one record for a sample of requests. The request path
// only measures and enqueues; a single goroutine (run) formats and writes,
// so a slow log sink never slows requests down. It never records the
// Authorization header, signatures or query strings: only the method, the
// path, the status, the bytes sent, the duration, the access key ID, the
// request ID and the client address.
type accessLog struct {
	h       slog.Handler // written to directly: the sample, not the log level, decides
	log     *slog.Logger // for the writer's own warnings
	sample  float64      // in (0, 1]
	queue   chan accessRecord
	dropped atomic.Uint64 // records dropped because the queue was full, not yet reported
}

type accessRecord struct {
	at        time.Time
	method    string
	path      string
	status    int
	bytes     int64
	dur       time.Duration
	accessKey string
	requestID string
	remote    string
}

func newAccessLog(log *slog.Logger, sample float64) *accessLog {
	return &accessLog{
		h:      log.Handler(),
		log:    log,
		sample: sample,
		queue:  make(chan accessRecord, accessQueueLen),
	}
}

// wrap returns next with access logging.
func (a *accessLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.sample < 1 && rand.Float64() >= a.sample {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rw := &httprec.Writer{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		a.enqueue(accessRecord{
			at:        start,
			method:    r.Method,
			path:      r.URL.Path,
			status:    rw.StatusOr200(),
			bytes:     rw.Written,
			dur:       time.Since(start),
			accessKey: accessKeyID(r),
			requestID: requestID(w.Header()),
			remote:    remoteHost(r.RemoteAddr),
		})
	})
}

func (a *accessLog) enqueue(rec accessRecord) {
	select {
	case a.queue <- rec:
	default:
		a.dropped.Add(1)
	}
}

// run writes records until stop is closed, then writes those still queued
// and returns.
func (a *accessLog) run(stop <-chan struct{}) {
	for {
		select {
		case rec := <-a.queue:
			a.write(rec)
		case <-stop:
			for {
				select {
				case rec := <-a.queue:
					a.write(rec)
				default:
					a.reportDrops()
					return
				}
			}
		}
	}
}

func (a *accessLog) write(rec accessRecord) {
	a.reportDrops()
	r := slog.NewRecord(rec.at, slog.LevelInfo, "request", 0)
	r.AddAttrs(
		slog.String("method", rec.method),
		slog.String("path", rec.path),
		slog.Int("status", rec.status),
		slog.Int64("bytes", rec.bytes),
		slog.Duration("duration", rec.dur),
		slog.String("access_key_id", rec.accessKey),
		slog.String("request_id", rec.requestID),
		slog.String("remote", rec.remote),
	)
	_ = a.h.Handle(context.Background(), r) // a failing log sink has nowhere to report to
}

func (a *accessLog) reportDrops() {
	if n := a.dropped.Swap(0); n > 0 {
		a.log.Warn("access log records dropped: the log sink is slower than the request rate", "dropped", n)
	}
}

// maxAccessKeyLen bounds what a client can make us log as its key ID.
const maxAccessKeyLen = 128

// accessKeyID returns the access key ID a request claims, from the
// Authorization header or a presigned URL's X-Amz-Credential, and nothing
// else of either: the rest of the credential scope, the signature and the
// query string stay out of the log.
func accessKeyID(r *http.Request) string {
	var cred string
	if auth := r.Header.Get("Authorization"); auth != "" {
		if v2, ok := strings.CutPrefix(auth, "AWS "); ok {
			// SigV2: "AWS AccessKeyID:Signature"; never log the signature.
			cred, _, _ = strings.Cut(v2, ":")
		} else if _, after, ok := strings.Cut(auth, "Credential="); ok {
			cred = after
		} else {
			return ""
		}
	} else if strings.Contains(r.URL.RawQuery, "X-Amz-Credential=") {
		cred = r.URL.Query().Get("X-Amz-Credential")
	} else if strings.Contains(r.URL.RawQuery, "AWSAccessKeyId=") {
		cred = r.URL.Query().Get("AWSAccessKeyId")
	}
	ak, _, _ := strings.Cut(cred, "/")
	if i := strings.IndexAny(ak, ", "); i >= 0 {
		ak = ak[:i]
	}
	if len(ak) > maxAccessKeyLen {
		ak = ak[:maxAccessKeyLen]
	}
	return ak
}

// requestID returns the S3 request ID a handler set. s3api sets the
// lower-case header name directly, so both spellings are looked up.
func requestID(h http.Header) string {
	//lint:ignore SA1008 s3api stores the header under its lower-case name, as S3 sends it
	if v := h["x-amz-request-id"]; len(v) > 0 {
		return v[0]
	}
	return h.Get("X-Amz-Request-Id")
}

func remoteHost(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
