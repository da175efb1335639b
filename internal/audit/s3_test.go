package audit

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coffer-s3/coffer/internal/s3api"
	"github.com/coffer-s3/coffer/internal/s3err"
)

func TestS3Observer(t *testing.T) {
	t.Parallel()
	// put is a successful PutObject by alice; cases change what they test.
	put := s3api.RequestRecord{
		Op: "PutObject", Status: 200, BytesIn: 100, BytesOut: 0,
		Start: t0, Duration: 1500 * time.Microsecond, Bucket: "b", Key: "k", Method: "PUT",
		AccessKeyID: "AKALICE", User: "alice", RemoteAddr: "10.1.2.3:5555", RequestID: "R1",
	}
	putEvent := Event{
		Time: t0, Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "b", Key: "k",
		User: "alice", AccessKey: "AKALICE", SourceIP: "10.1.2.3", RequestID: "R1",
		BytesIn: 100, Duration: 1500 * time.Microsecond,
	}
	with := func(rec s3api.RequestRecord, f func(*s3api.RequestRecord)) s3api.RequestRecord { f(&rec); return rec }
	event := func(f func(*Event)) *Event { e := putEvent; f(&e); return &e }
	get := with(put, func(r *s3api.RequestRecord) { r.Op, r.Method, r.BytesIn, r.BytesOut = "GetObject", "GET", 0, 100 })
	long := strings.Repeat("k", 1000)
	cut := truncate(long)
	getEvent := event(func(e *Event) { e.Op, e.BytesIn, e.BytesOut = "GetObject", 0, 100 })

	for _, tc := range []struct {
		name   string
		sample float64
		rand   float64 // what the random source returns
		rec    s3api.RequestRecord
		want   *Event // nil: not recorded
	}{
		{name: "put", rec: put, want: &putEvent},
		{name: "delete", rec: with(put, func(r *s3api.RequestRecord) { r.Op, r.Method, r.Status = "DeleteObject", "DELETE", 204 }),
			want: event(func(e *Event) { e.Op, e.Status = "DeleteObject", 204 })},
		{name: "post with a client error", rec: with(put, func(r *s3api.RequestRecord) {
			r.Op, r.Method, r.Status, r.Code = "CompleteMultipartUpload", "POST", 400, s3err.Code("InvalidPart")
		}), want: event(func(e *Event) { e.Op, e.Status, e.Code = "CompleteMultipartUpload", 400, "InvalidPart" })},
		{name: "put the client abandoned", rec: with(put, func(r *s3api.RequestRecord) { r.Status = s3api.StatusClientClosed }),
			want: event(func(e *Event) { e.Status = s3api.StatusClientClosed })},
		{name: "get at sample 0", rec: get},
		{name: "get at sample 1", sample: 1, rec: get, want: getEvent},
		{name: "get sampled in", sample: 0.5, rand: 0.49, rec: get, want: getEvent},
		{name: "get sampled out", sample: 0.5, rand: 0.5, rec: get},
		{name: "get at sample NaN", sample: math.NaN(), rec: get},
		{name: "head not found at sample 0", rec: with(get, func(r *s3api.RequestRecord) { r.Method, r.Status = "HEAD", 404 })},
		{name: "head not found at sample 1", sample: 1, rec: with(get, func(r *s3api.RequestRecord) { r.Method, r.Status = "HEAD", 404 }),
			want: event(func(e *Event) { e.Op, e.Status, e.BytesIn, e.BytesOut = "GetObject", 404, 0, 100 })},
		{name: "options", rec: with(get, func(r *s3api.RequestRecord) { r.Op, r.Method = "NotImplemented", "OPTIONS" })},
		{name: "get the client abandoned", rec: with(get, func(r *s3api.RequestRecord) { r.Status = s3api.StatusClientClosed })},
		{name: "get denied, with the claimed key", rec: with(get, func(r *s3api.RequestRecord) {
			r.Status, r.Code, r.AccessKeyID, r.User, r.ClaimedAccessKeyID = 403, "SignatureDoesNotMatch", "", "", "AKCLAIMED"
		}), want: event(func(e *Event) {
			e.Op, e.Status, e.Code, e.User, e.AccessKey, e.BytesIn, e.BytesOut = "GetObject", 403, "SignatureDoesNotMatch", "", "AKCLAIMED", 0, 100
			e.Untrusted = true
		})},
		// A malformed signature is a 400, and an authentication failure
		// all the same (it used to go unrecorded).
		{name: "get with a malformed signature", rec: with(get, func(r *s3api.RequestRecord) {
			r.Status, r.Code, r.AccessKeyID, r.User, r.AuthFailed = 400, "AuthorizationHeaderMalformed", "", "", true
		}), want: event(func(e *Event) {
			e.Op, e.Status, e.Code, e.User, e.AccessKey, e.BytesIn, e.BytesOut = "GetObject", 400, "AuthorizationHeaderMalformed", "", "", 0, 100
			e.Untrusted = true
		})},
		{name: "get with a bad query signature", rec: with(get, func(r *s3api.RequestRecord) {
			r.Method, r.Status, r.Code, r.AccessKeyID, r.User, r.AuthFailed, r.ClaimedAccessKeyID = "HEAD", 400, "AuthorizationQueryParametersError", "", "", true, "AKCLAIMED"
		}), want: event(func(e *Event) {
			e.Op, e.Status, e.Code, e.User, e.AccessKey, e.BytesIn, e.BytesOut = "GetObject", 400, "AuthorizationQueryParametersError", "", "AKCLAIMED", 0, 100
			e.Untrusted = true
		})},
		{name: "get with a bad request of a verified key", rec: with(get, func(r *s3api.RequestRecord) { r.Status, r.Code = 400, "InvalidArgument" })},
		// A denied PUT to a bucket that does not exist is answered
		// NoSuchBucket: still a refusal, which a principal with no
		// permissions can send at will.
		{name: "put denied, answered 404", rec: with(put, func(r *s3api.RequestRecord) { r.Status, r.Code, r.Denied = 404, "NoSuchBucket", true }),
			want: event(func(e *Event) { e.Status, e.Code, e.Untrusted = 404, "NoSuchBucket", true })},
		{name: "get unauthorized", rec: with(get, func(r *s3api.RequestRecord) { r.Status, r.AccessKeyID, r.User = 401, "", "" }),
			want: event(func(e *Event) {
				e.Op, e.Status, e.User, e.AccessKey, e.BytesIn, e.BytesOut = "GetObject", 401, "", "", 0, 100
				e.Untrusted = true
			})},
		{name: "get failing", rec: with(get, func(r *s3api.RequestRecord) { r.Status, r.Code = 500, "InternalError" }),
			want: event(func(e *Event) {
				e.Op, e.Status, e.Code, e.BytesIn, e.BytesOut = "GetObject", 500, "InternalError", 0, 100
			})},
		{name: "get unavailable", rec: with(get, func(r *s3api.RequestRecord) { r.Status = 503 }),
			want: event(func(e *Event) { e.Op, e.Status, e.BytesIn, e.BytesOut = "GetObject", 503, 0, 100 })},
		{name: "root", rec: with(put, func(r *s3api.RequestRecord) { r.User, r.Root, r.AccessKeyID = "", true, "AKROOT" }),
			want: event(func(e *Event) { e.User, e.AccessKey = "root", "AKROOT" })},
		{name: "anonymous", rec: with(put, func(r *s3api.RequestRecord) { r.User, r.AccessKeyID = "", "" }),
			want: event(func(e *Event) { e.User, e.AccessKey, e.Untrusted = "", "", true })},
		{name: "IPv6", rec: with(put, func(r *s3api.RequestRecord) { r.RemoteAddr = "[2001:db8::1]:443" }),
			want: event(func(e *Event) { e.SourceIP = "2001:db8::1" })},
		{name: "address without port", rec: with(put, func(r *s3api.RequestRecord) { r.RemoteAddr = "192.0.2.1" }),
			want: event(func(e *Event) { e.SourceIP = "192.0.2.1" })},
		{name: "long key of an authenticated put kept whole", rec: with(put, func(r *s3api.RequestRecord) { r.Key = long }),
			want: event(func(e *Event) { e.Key = long })},
		// Anyone can send these: they go through RecordBounded, which
		// cuts long fields.
		{name: "long key of an anonymous put cut", rec: with(put, func(r *s3api.RequestRecord) { r.Key, r.User, r.AccessKeyID = long, "", "" }),
			want: event(func(e *Event) { e.Key, e.User, e.AccessKey, e.Untrusted = cut, "", "", true })},
		{name: "long key of a refused put cut", rec: with(put, func(r *s3api.RequestRecord) { r.Key, r.Status, r.Code = long, 403, "AccessDenied" }),
			want: event(func(e *Event) { e.Key, e.Status, e.Code, e.Untrusted = cut, 403, "AccessDenied", true })},
		{name: "long claimed key of a bad signature cut", rec: with(get, func(r *s3api.RequestRecord) {
			r.Status, r.Code, r.AccessKeyID, r.User, r.ClaimedAccessKeyID = 403, "SignatureDoesNotMatch", "", "", long
		}), want: event(func(e *Event) {
			e.Op, e.Status, e.Code, e.User, e.AccessKey, e.BytesIn, e.BytesOut = "GetObject", 403, "SignatureDoesNotMatch", "", cut, 0, 100
			e.Untrusted = true
		})},
		{name: "unroutable", rec: with(put, func(r *s3api.RequestRecord) {
			r.Op, r.Status, r.Code, r.Bucket, r.Key = s3api.OpUnknown, 400, "InvalidBucketName", "", ""
		}),
			want: event(func(e *Event) {
				e.Op, e.Status, e.Code, e.Bucket, e.Key = s3api.OpUnknown, 400, "InvalidBucketName", "", ""
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := openTest(t, Config{}, hooks{})
			o := NewS3Observer(l, tc.sample)
			o.rand = func() float64 { return tc.rand }
			rec := tc.rec
			p := &rec
			o.ObserveRequest(p)
			*p = s3api.RequestRecord{} // the handler reuses its record
			if err := l.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			got := queryAll(t, l, Filter{})
			var want []Event
			if tc.want != nil {
				want = []Event{*tc.want}
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Event{}, "ID"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("recorded mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Not parallel: AllocsPerRun counts the allocations of the whole process.
func TestS3ObserverAllocatesNothing(t *testing.T) {
	const runs = 100
	l := openHeld(t, runs+1)     // AllocsPerRun calls once more than runs
	l.limit.perSource = 2 * runs // the anonymous requests too are recorded in full, onto the held queue
	o := NewS3Observer(l, 0)
	rec := &s3api.RequestRecord{Op: "PutObject", Status: 200, Start: t0, Method: "PUT", Bucket: "b", Key: "k",
		AccessKeyID: "AK", User: "alice", RemoteAddr: "10.1.2.3:5555", RequestID: "R"}
	if n := testing.AllocsPerRun(runs/2, func() { o.ObserveRequest(rec) }); n != 0 {
		t.Errorf("ObserveRequest of an authenticated request allocates %v times per call, want 0", n)
	}
	rec.AccessKeyID, rec.User = "", ""
	if n := testing.AllocsPerRun(runs/2-1, func() { o.ObserveRequest(rec) }); n != 0 {
		t.Errorf("ObserveRequest of an anonymous request allocates %v times per call, want 0", n)
	}
	if st := l.Stats(); st.Dropped != 0 || st.Aggregated != 0 {
		t.Errorf("Stats = %+v, want every request queued in full", st)
	}
}

func TestUntrusted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		key    string
		want   bool
	}{
		{200, "AK", false},
		{204, "AK", false},
		{404, "AK", false},
		{500, "AK", false},
		{401, "AK", true},
		{403, "AK", true},
		{200, "", true},
		{403, "", true},
		{500, "", true},
		{400, "", true},
	} {
		if got := Untrusted(tc.status, tc.key); got != tc.want {
			t.Errorf("Untrusted(%d, %q) = %v, want %v", tc.status, tc.key, got, tc.want)
		}
	}
}
