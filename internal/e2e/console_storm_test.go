package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/adminapi"
)

// Figures of TestLoginStorm.
const (
	stormAttempts = 1000             // concurrent sign-in attempts (issue 11)
	stormRSSLimit = 200 << 10        // KiB: the server's peak RSS must stay under 200 MiB
	stormTimeout  = 30 * time.Second // per attempt: an answer must come by then
)

// stormAttempt is one sign-in of TestLoginStorm: from which loopback
// address, as whom.
type stormAttempt struct {
	from               string
	username, password string
}

// stormBusy is the one address of the storm that is locked out.
const stormBusy = "127.0.2.1"

// stormPlan returns the storm's attempts. They come from many loopback
// addresses (127.0.1.x, 8 each, under the limit of 10 failures per
// address) with names of their own, so that the per-address and per-name
// limits let most of them through to the password check and the gate
// (hashing slots and its queue) is what bounds the work; every tenth is
// the right password of a real user, and 50 come from stormBusy, which
// TestLoginStorm locks out before the storm.
func stormPlan(user, password string) []stormAttempt {
	var plan []stormAttempt
	for i := range stormAttempts - 50 {
		a := stormAttempt{from: fmt.Sprintf("127.0.1.%d", 1+i/8), username: fmt.Sprintf("storm-%d", i), password: "wrong-password"}
		if i%10 == 0 {
			a.username, a.password = user, password
		}
		plan = append(plan, a)
	}
	for i := range 50 {
		plan = append(plan, stormAttempt{from: stormBusy, username: fmt.Sprintf("one-address-%d", i), password: "wrong-password"})
	}
	return plan
}

// signInRaw sends one POST /login on a connection of its own from the
// loopback address from and returns the answer's status. It is raw
// (net.Conn and http.ReadResponse, one goroutine per attempt), so that a
// thousand attempts cost the test a thousand goroutines, not the three
// or so per connection of http.Transport, well within the race
// detector's limit.
func signInRaw(console, from, username, password string) (int, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", console)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(stormTimeout))
	form := url.Values{"username": {username}, "password": {password}}.Encode()
	req := "POST /login HTTP/1.1\r\nHost: " + console + "\r\nOrigin: http://" + console +
		"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " + fmt.Sprint(len(form)) +
		"\r\nConnection: close\r\n\r\n" + form
	if _, err := conn.Write([]byte(req)); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestLoginStorm sends 1,000 concurrent sign-in attempts to a real
// `coffer serve` (issue 11: "1,000 concurrent sign-in attempts never push
// RSS past 200 MiB"): every attempt is answered, only with 303 (signed
// in), 401 (wrong password), 429 (locked out) or 503 (the password
// checks are saturated), never 500 and never a hang; the server's peak
// RSS (VmHWM) stays under 200 MiB; a normal sign-in works afterwards;
// and the attempts are in the audit log, as `coffer admin audit ls`
// shows them.
//
// The busy address is locked out before the storm, one attempt at a
// time: within the storm, whether ten of its attempts reach the password
// check (a refused 503 is not a failure) depends on the scheduler, and
// the lock-out check was a CI flake.
func TestLoginStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 sign-ins against a child process")
	}
	ops := freeAddr(t)
	srv := startChild(t, t.TempDir(), "--console-address", ops)
	ctx := t.Context()
	ac, err := adminapi.NewClient(srv.endpoint, testAccessKey, testSecretKey, testRegion, newHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.CreateUser(ctx, "stormy"); err != nil {
		t.Fatal(err)
	}
	const password = "stormy-password"
	if err := ac.SetPassword(ctx, "stormy", password); err != nil {
		t.Fatal(err)
	}
	base, err := procStatusKB(srv.cmd.Process.Pid, "VmRSS", "VmHWM")
	if err != nil {
		t.Fatal(err)
	}

	// Lock the busy address out: 10 failed checks, then 429. (A 503,
	// the gate busy with nothing else, would not count; retry it.)
	for i, failed := 0, 0; ; i++ {
		st, err := signInRaw(ops, stormBusy, fmt.Sprintf("busy-%d", i), "wrong-password")
		if err != nil {
			t.Fatalf("sign-in %d from %s: %v", i, stormBusy, err)
		}
		if st == http.StatusTooManyRequests {
			if failed < 10 {
				t.Fatalf("%s locked out after %d failed sign-ins, want 10", stormBusy, failed)
			}
			break
		}
		if st == http.StatusUnauthorized {
			failed++
		}
		if failed > 10 || i > 100 {
			t.Fatalf("%s not locked out after %d failed sign-ins (last %d)", stormBusy, failed, st)
		}
	}

	plan := stormPlan("stormy", password)
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		errs   []string
		wg     sync.WaitGroup
		ready  sync.WaitGroup
		go_    = make(chan struct{})
	)
	ready.Add(len(plan))
	start := time.Now()
	for _, a := range plan {
		wg.Go(func() {
			ready.Done()
			<-go_ // all at once
			st, err := signInRaw(ops, a.from, a.username, a.password)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s as %s: %v", a.from, a.username, err))
				return
			}
			counts[st]++
			if a.from == stormBusy && st != http.StatusTooManyRequests {
				errs = append(errs, fmt.Sprintf("%s as %s: %d, want 429 (locked out)", a.from, a.username, st))
			}
		})
	}
	ready.Wait()
	close(go_)
	wg.Wait()
	took := time.Since(start)

	peak, err := procStatusKB(srv.cmd.Process.Pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sign-ins in %v: %v; RSS before %d MiB (VmHWM %d MiB), peak %d MiB",
		len(plan), took.Round(time.Millisecond), counts, base["VmRSS"]>>10, base["VmHWM"]>>10, peak["VmHWM"]>>10)
	if len(errs) > 0 {
		t.Errorf("%d of %d sign-ins got no answer or the wrong one, e.g. %s", len(errs), len(plan), errs[0])
	}
	for st, n := range counts {
		switch st {
		case http.StatusSeeOther, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		default:
			t.Errorf("%d sign-ins answered %d; want only 303, 401, 429 or 503", n, st)
		}
	}
	// The storm must reach the password checks (401s).
	if counts[http.StatusUnauthorized] == 0 {
		t.Errorf("answers %v: want 401s from the password checks", counts)
	}
	if peak["VmHWM"] >= stormRSSLimit {
		t.Errorf("peak RSS %d MiB under %d concurrent sign-ins, want under %d MiB", peak["VmHWM"]>>10, len(plan), stormRSSLimit>>10)
	}

	// A normal sign-in afterwards, from an address the storm did not use.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := signInRaw(ops, "127.0.0.1", "stormy", password)
		if err == nil && st == http.StatusSeeOther {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sign-in after the storm: %d %v, want 303", st, err)
		}
		time.Sleep(200 * time.Millisecond) // 503 while the queue drains
	}

	admin := []string{"--endpoint", srv.endpoint, "--access-key", testAccessKey, "--secret-key", testSecretKey}
	out, err := runCoffer(t, append([]string{"admin", "audit", "ls", "--source", "console", "--user", "stormy", "--ip", "127.0.0.1", "--limit", "5"}, admin...)...)
	if err != nil || !strings.Contains(out, "SignIn") || !strings.Contains(out, "stormy") {
		t.Errorf("coffer admin audit ls --source console --user stormy --ip 127.0.0.1: %v\n%s\nwant the sign-in after the storm", err, out)
	}
	// The lock-out is asked for by address: a listing of all failures,
	// newest first, is cut by any limit short of everything, and the
	// lock-out is among the oldest. (Within the storm the log keeps the
	// first 5 events a minute of each address and outcome and counts the
	// rest, so not every attempt is listed before the minute ends.)
	out, err = runCoffer(t, append([]string{"admin", "audit", "ls", "--source", "console", "--op", "SignIn", "--failed", "--ip", stormBusy}, admin...)...)
	if err != nil || !strings.Contains(out, "LockedOut") {
		t.Errorf("coffer admin audit ls --source console --op SignIn --failed --ip %s: %v\n%s\nwant its lock-out", stormBusy, err, out)
	}
	out, err = runCoffer(t, append([]string{"admin", "audit", "ls", "--source", "console", "--limit", "5000"}, admin...)...)
	if err != nil {
		t.Errorf("coffer admin audit ls --source console: %v\n%s", err, out)
	}
	if strings.Contains(out, "wrong-password") || strings.Contains(out, password) {
		t.Errorf("the audit log shows a password:\n%s", out)
	}
}
