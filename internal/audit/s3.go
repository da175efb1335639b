package audit

import (
	"math"
	"math/rand/v2"
	"net"
	"net/http"

	"github.com/coffer-s3/coffer/internal/s3api"
)

// S3Observer turns the s3api.RequestRecords of the requests the audit log
// keeps into Events and records them. It implements s3api.Observer.
//
// It keeps every request that may change something (any method but GET,
// HEAD and OPTIONS), every authentication or authorization failure (401,
// 403, and any request whose authentication failed, such as a 400
// AuthorizationHeaderMalformed; any method) and every server error
// (5xx); other reads are kept with the probability given to
// NewS3Observer.
//
// Requests of a verified access key are recorded in full, one event each
// (Log.Record), unless they were refused (an authorization of theirs
// was denied, whatever the status: RequestRecord.Denied). Refused requests and requests
// without a verified key (anonymous, or failing authentication) are
// recorded within the bounds of Log.RecordBounded: anyone can send them,
// as fast as the network allows.
type S3Observer struct {
	log        *Log
	readSample float64
	rand       func() float64 // in [0, 1); math/rand/v2's, which is cheap and safe for concurrent use
}

var _ s3api.Observer = (*S3Observer)(nil)

// NewS3Observer returns an S3Observer recording into l. readSample is the
// probability that a read that is not otherwise kept is recorded: 0 (or
// less) never, 1 (or more) always.
func NewS3Observer(l *Log, readSample float64) *S3Observer {
	if math.IsNaN(readSample) {
		readSample = 0
	}
	return &S3Observer{log: l, readSample: readSample, rand: rand.Float64}
}

// ObserveRequest implements s3api.Observer. It records the request if the
// rules say so; it never blocks, does not retain rec, and allocates only
// for an address without a port.
func (o *S3Observer) ObserveRequest(rec *s3api.RequestRecord) {
	if !o.keep(rec) {
		return
	}
	user := rec.User
	if rec.Root {
		user = "root"
	}
	key := rec.AccessKeyID
	if key == "" {
		key = rec.ClaimedAccessKeyID
	}
	// The strings are the record's own, which an Observer may keep.
	e := Event{
		Time:      rec.Start,
		Source:    SourceS3,
		Op:        rec.Op,
		Status:    rec.Status,
		Code:      string(rec.Code),
		Bucket:    rec.Bucket,
		Key:       rec.Key,
		User:      user,
		AccessKey: key,
		SourceIP:  hostOf(rec.RemoteAddr),
		RequestID: rec.RequestID,
		BytesIn:   rec.BytesIn,
		BytesOut:  rec.BytesOut,
		Duration:  rec.Duration,
	}
	if rec.Denied || Untrusted(rec.Status, rec.AccessKeyID) {
		o.log.RecordBounded(e)
		return
	}
	o.log.Record(e)
}

// Untrusted reports whether a request with HTTP status status, signed by
// verifiedKey ("" if no signature verified), is one a stranger can send
// at will, to be recorded with Log.RecordBounded: a refused request (401,
// 403), or one with no verified access key.
func Untrusted(status int, verifiedKey string) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden || verifiedKey == ""
}

// keep reports whether rec is to be recorded.
func (o *S3Observer) keep(rec *s3api.RequestRecord) bool {
	switch {
	case rec.Status == http.StatusUnauthorized || rec.Status == http.StatusForbidden || rec.AuthFailed:
		return true
	case rec.Status >= 500:
		return true
	}
	switch rec.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		switch {
		case o.readSample <= 0:
			return false
		case o.readSample >= 1:
			return true
		}
		return o.rand() < o.readSample
	}
	return true
}

// hostOf returns the host of a host:port address, or addr itself if it
// has no port.
func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
