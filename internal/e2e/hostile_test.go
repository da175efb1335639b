package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// hostileConns is how many hostile connections TestHostileConnections
// opens: issue 13's figure.
const hostileConns = 10_000

// TestHostileConnections: 10,000 connections that send nothing, trickle a
// request line (slowloris), or send a PUT with a bad signature and a
// 100 MB Content-Length and then trickle its body, all at once, while a
// good client goes on reading and writing. The good client is served
// throughout, the server's peak RSS stays under 150 MiB, and once the
// hostile clients go its connections and goroutines come back down within
// seconds (issue 13, "Hostile and slow clients"). Latency under the flood
// is measured by coffer bench's slowloris case, not here.
func TestHostileConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 10,000 connections")
	}
	ops := freeAddr(t)
	srv := startChild(t, t.TempDir(), "--console-address", ops)
	metrics := "http://" + ops + "/metrics"
	// The good client retries as the SDKs do by default: a connection
	// closed to make room can still meet one of its requests.
	c := newClient(t, srv.endpoint, func(o *s3.Options) { o.Retryer = retry.NewStandard() })
	bucket := mkBucket(t, c, "hostile")
	body := bytes.Repeat([]byte("g"), 4096)
	put(t, c, bucket, "k", body)
	baseGoroutines := metric(t, metrics, "go_goroutines")

	// The good client: GETs and PUTs until told to stop.
	stop := make(chan struct{})
	var good sync.WaitGroup
	var goodOps, goodErrs atomic.Int64
	var latMu sync.Mutex
	var lat []time.Duration
	for w := range 4 {
		good.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				start := time.Now()
				var err error
				if i%2 == 0 {
					_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("w%d", w)), Body: bytes.NewReader(body)})
				} else {
					var out *s3.GetObjectOutput
					if out, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")}); err == nil {
						out.Body.Close()
					}
				}
				cancel()
				latMu.Lock()
				lat = append(lat, time.Since(start))
				latMu.Unlock()
				goodOps.Add(1)
				if err != nil {
					goodErrs.Add(1)
					t.Errorf("good client: %v", err)
				}
			}
		})
	}

	// The hostile clients: each keeps its connection and writes a byte a
	// second until the server closes it or the flood ends. A few
	// goroutines drive them all (the race detector allows 8128).
	const drivers = 50
	var hostile sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	for d := range drivers {
		hostile.Go(func() {
			var mine []net.Conn
			for i := d; i < hostileConns; i += drivers {
				nc, err := net.DialTimeout("tcp", srv.addr, 10*time.Second)
				if err != nil {
					continue // the backlog was full: the kernel refused it
				}
				switch i % 3 {
				case 0: // sends nothing
				case 1:
					fmt.Fprintf(nc, "GET /%s/k HTTP/1.1\r\nHost: %s\r\nX-Slow: ", bucket, srv.addr)
				case 2:
					fmt.Fprintf(nc, "PUT /%s/h-%d HTTP/1.1\r\nHost: %s\r\nAuthorization: AWS4-HMAC-SHA256 Credential=%s/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=%064d\r\nX-Amz-Date: 20260101T000000Z\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\nContent-Length: 100000000\r\n\r\n",
						bucket, i, srv.addr, testAccessKey, 0)
				}
				mine = append(mine, nc)
			}
			mu.Lock()
			conns = append(conns, mine...)
			mu.Unlock()
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
				for _, nc := range mine {
					nc.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
					nc.Write([]byte("x")) // fails once the server closed it; no matter
				}
			}
		})
	}
	time.Sleep(3 * time.Second)
	open := metric(t, metrics, "coffer_s3_connections_open")
	evicted := metric(t, metrics, "coffer_s3_connections_evicted_total")
	goroutines := metric(t, metrics, "go_goroutines")
	close(stop)
	good.Wait()
	hostile.Wait()
	mu.Lock()
	for _, nc := range conns {
		nc.Close()
	}
	dialedOK := len(conns)
	mu.Unlock()

	peak, err := procStatusKB(srv.cmd.Process.Pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var openAfter, goroutinesAfter float64
	for {
		openAfter = metric(t, metrics, "coffer_s3_connections_open")
		goroutinesAfter = metric(t, metrics, "go_goroutines")
		if openAfter <= 8 && goroutinesAfter <= baseGoroutines+10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))].Round(time.Microsecond) }
	t.Logf("%d hostile connections dialed: %v open on the server during the flood (limit 2048), %v evicted, goroutines %v → %v → %v; peak RSS %d MiB; good client %d ops, %d errors, p50 %v p99 %v",
		dialedOK, open, evicted, baseGoroutines, goroutines, goroutinesAfter, peak["VmHWM"]>>10, goodOps.Load(), goodErrs.Load(), p(0.5), p(0.99))
	if peak["VmHWM"] > 150<<10 {
		t.Errorf("peak RSS %d MiB under %d hostile connections, want under 150 MiB", peak["VmHWM"]>>10, hostileConns)
	}
	if goodOps.Load() == 0 {
		t.Error("the good client was not served during the flood")
	}
	if openAfter > 8 || goroutinesAfter > baseGoroutines+10 {
		t.Errorf("not released after the flood: %v connections open, goroutines %v (before %v)", openAfter, goroutinesAfter, baseGoroutines)
	}
	srv.stop()
}

// TestTrickledSignIn: a console sign-in whose form arrives a byte at a
// time, each in time for the body's idle bound, is cut off once the form
// has taken 10 s. It held a connection of the ops listener (which
// /healthz and /metrics share) for as long as its sender liked: a
// thousand of them made every health check fail.
func TestTrickledSignIn(t *testing.T) {
	t.Parallel()
	ops := freeAddr(t)
	startChild(t, t.TempDir(), "--console-address", ops)
	conn, err := net.Dial("tcp", ops)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /login HTTP/1.1\r\nHost: %s\r\nOrigin: http://%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 60000\r\n\r\nusername=", ops, ops)
	answered := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		answered <- strings.TrimSpace(line)
	}()
	var line string
	deadline := time.After(25 * time.Second)
wait:
	for {
		select {
		case line = <-answered:
			break wait
		case <-deadline:
			t.Fatalf("a sign-in form trickled for 25 s is still being read")
		case <-time.After(500 * time.Millisecond):
			conn.Write([]byte("a"))
		}
	}
	if took := time.Since(start); took < 9*time.Second || took > 15*time.Second || !strings.HasPrefix(line, "HTTP/1.1 400") && line != "" {
		t.Errorf("trickled sign-in: %q after %v, want 400 (or the connection closed) after about 10 s", line, took)
	}
}
