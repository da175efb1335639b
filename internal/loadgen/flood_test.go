package loadgen

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFlood checks that a flood opens its connections, sends each kind's
// opening and trickles after it, opens a connection again when the server
// closes it, and closes them all when stopped.
func TestFlood(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"slowloris", "bad-signature"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var accepted, open atomic.Int64
			var mu sync.Mutex
			var firstLines []string
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					n := accepted.Add(1)
					open.Add(1)
					go func() {
						defer open.Add(-1)
						defer c.Close()
						line, _ := bufio.NewReader(c).ReadString('\n')
						mu.Lock()
						firstLines = append(firstLines, line)
						mu.Unlock()
						if n == 1 {
							return // the server closes the first: the flood opens it again
						}
						c.Read(make([]byte, 1<<16)) // until the flood closes it
					}()
				}
			}()
			f := &Flood{Kind: kind, Conns: 40}
			stop, err := f.start(t.Context(), "http://"+ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); accepted.Load() < 41; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections accepted, want 41 (40 and one reopened)", accepted.Load())
				}
			}
			stop()
			for deadline := time.Now().Add(5 * time.Second); open.Load() > 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections still open after stop", open.Load())
				}
			}
			want := map[string]string{"slowloris": "GET /flood HTTP/1.1", "bad-signature": "PUT /flood/key HTTP/1.1"}[kind]
			mu.Lock()
			defer mu.Unlock()
			for _, l := range firstLines {
				if !strings.HasPrefix(l, want) {
					t.Errorf("opening %q, want %q", l, want)
				}
			}
		})
	}
	if _, err := (&Flood{Kind: "nope", Conns: 1}).start(t.Context(), "http://127.0.0.1:1"); err == nil {
		t.Error("an unknown flood started")
	}
}
