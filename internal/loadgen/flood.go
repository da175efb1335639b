package loadgen

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"
)

// Flood is a crowd of hostile connections a case holds open against a
// target while it measures the target's good requests: they show whether
// clients that send nothing useful slow down those that do (issue 13's
// "p99 at most doubled"). Kind is "slowloris" (connections that trickle a
// request's headers, a byte a second, and never finish them) or
// "bad-signature" (PUTs with a bad signature and a 100 MB Content-Length
// whose body then trickles). A connection the server closes is opened
// again, so the crowd stays Conns strong for the whole round.
type Flood struct {
	Kind  string
	Conns int
}

// floodDrivers is how many goroutines drive a flood's connections.
const floodDrivers = 32

// start opens the flood against target and returns the function that
// closes it again.
func (f *Flood) start(ctx context.Context, target string) (stop func(), err error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	var opening []byte
	switch f.Kind {
	case "slowloris":
		opening = fmt.Appendf(nil, "GET /flood HTTP/1.1\r\nHost: %s\r\nX-Slow: ", u.Host)
	case "bad-signature":
		opening = fmt.Appendf(nil, "PUT /flood/key HTTP/1.1\r\nHost: %s\r\n"+
			"Authorization: AWS4-HMAC-SHA256 Credential=FLOODFLOODFLOOD00000/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=%064d\r\n"+
			"X-Amz-Date: 20260101T000000Z\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\nContent-Length: 100000000\r\n\r\n", u.Host, 0)
	default:
		return nil, fmt.Errorf("unknown flood %q: want slowloris or bad-signature", f.Kind)
	}
	dial := func() net.Conn {
		d := net.Dialer{Timeout: 5 * time.Second}
		var c net.Conn
		var err error
		if u.Scheme == "https" {
			c, err = tls.DialWithDialer(&d, "tcp", host, &tls.Config{InsecureSkipVerify: true}) // a hostile client checks nothing
		} else {
			c, err = d.Dial("tcp", host)
		}
		if err != nil {
			return nil
		}
		c.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(opening); err != nil {
			c.Close()
			return nil
		}
		return c
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for d := range floodDrivers {
		n := f.Conns / floodDrivers
		if d < f.Conns%floodDrivers {
			n++
		}
		wg.Go(func() {
			conns := make([]net.Conn, n)
			defer func() {
				for _, c := range conns {
					if c != nil {
						c.Close()
					}
				}
			}()
			for {
				for i, c := range conns {
					if ctx.Err() != nil {
						return
					}
					if c != nil {
						c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
						if _, err := c.Write([]byte("x")); err == nil {
							continue
						}
						c.Close()
					}
					conns[i] = dial()
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }, nil
}
