package s3api

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPostFormFieldsHoldNoSlot: strangers who send the start of a form
// and then nothing (no credentials, to a bucket that does not even exist)
// read their fields holding a slot of the form pool, not a request slot:
// as many of them as there are request slots keep nobody else out, and a
// form past the pool (and its queue) is answered SlowDown, counted.
func TestPostFormFieldsHoldNoSlot(t *testing.T) {
	hs := newHarness(t, Config{MaxRequests: 2, MaxQueued: -1, FormFieldsTimeout: 5 * time.Second})
	hs.mkBucket("bkt")
	hs.put("bkt", "k", []byte("v")).mustStatus(t, http.StatusOK)
	var conns []net.Conn
	for range 3 {
		conn, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /no-such-bucket HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"+
			"Content-Length: 100000\r\n\r\n--b\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk")
		conns = append(conns, conn)
		time.Sleep(100 * time.Millisecond)
	}
	if rp := hs.do(call{method: http.MethodGet, path: "/bkt/k"}); rp.status != http.StatusOK {
		t.Errorf("GET while strangers hold forms open: %d %s", rp.status, errorCode(rp.body))
	}
	// The pool holds min(2, 8) = 2 forms and queues none: the third was
	// refused.
	_ = conns[2].SetReadDeadline(time.Now().Add(2 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conns[2]), nil)
	if err != nil {
		t.Fatalf("the form past the pool: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the form past the pool: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if ld := hs.h.Load(); ld.Refused != 1 || ld.InFlight != 2 {
		t.Errorf("Load() = %+v, want the 2 forms reading their fields in flight and 1 refused", ld)
	}
}

// TestPostFormPoolSmallLimit: with a small request limit the form pool
// still takes a few forms at once: a legitimate form beside a stranger's
// stalled one is served.
func TestPostFormPoolSmallLimit(t *testing.T) {
	hs := newHarness(t, Config{MaxRequests: 8, FormFieldsTimeout: 5 * time.Second})
	hs.mkBucket("bkt")
	conn, err := net.Dial("tcp", hs.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /bkt HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"+
		"Content-Length: 100000\r\n\r\n--b\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk")
	time.Sleep(200 * time.Millisecond)
	later := testNow().Add(time.Hour)
	conds := []any{[]any{"starts-with", "$key", "up/"}}
	rp := hs.post("bkt", &postForm{file: []byte("x"), fields: signedV4(t, rootCred(), later, conds, field{"key", "up/a"})})
	if rp.status >= 300 {
		t.Errorf("a form beside a stalled one, 8 request slots idle: %d %s", rp.status, errorCode(rp.body))
	}
}

// TestPostHeaderFieldControlBytes: a form field standing for a header
// (Content-Type, Cache-Control, x-amz-meta-*, acl) may not hold a control
// character no header could carry: stored, it would go out in every GET
// and HEAD of the object, which clients then refuse.
func TestPostHeaderFieldControlBytes(t *testing.T) {
	hs := newHarness(t, Config{})
	hs.mkBucket("bkt")
	later := testNow().Add(time.Hour)
	for _, f := range []field{{"Content-Type", "image/png\x00"}, {"Cache-Control", "no-cache\r\nX-Evil: 1"},
		{"x-amz-meta-a", "b\x01"}, {"Content-Disposition", "inline\x7f"}} {
		conds := []any{[]any{"starts-with", "$key", "up/"}, []any{"starts-with", "$" + f.name, ""}}
		rp := hs.post("bkt", &postForm{file: []byte("x"), fields: signedV4(t, rootCred(), later, conds,
			field{"key", "up/odd"}, f)})
		if rp.status != http.StatusBadRequest || errorCode(rp.body) != "InvalidArgument" {
			t.Errorf("form with %s %q: %d %s, want 400 InvalidArgument", f.name, f.value, rp.status, rp.body)
		}
	}
	hs.do(call{method: http.MethodHead, path: "/bkt/up/odd"}).mustStatus(t, http.StatusNotFound)
	conds := []any{[]any{"starts-with", "$key", "up/"}, []any{"starts-with", "$Content-Type", ""}}
	rp := hs.post("bkt", &postForm{file: []byte("x"), fields: signedV4(t, rootCred(), later, conds,
		field{"key", "up/tab"}, field{"Content-Type", "text/plain;\tcharset=utf-8"})})
	if rp.status >= 300 {
		t.Fatalf("form with a tab in Content-Type: %d %s", rp.status, rp.body)
	}
	if ct := hs.do(call{method: http.MethodHead, path: "/bkt/up/tab"}).header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain;") {
		t.Errorf("Content-Type stored: %q", ct)
	}
}
