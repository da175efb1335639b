package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPostgresNodesSerialise runs read-decide-write cycles on one key from
// two DBs over one PostgreSQL schema, as two nodes would: their in-process
// locks know nothing of each other, so only the transactions' advisory
// locks keep increments from being lost and make If-None-Match exact.
func TestPostgresNodesSerialise(t *testing.T) {
	ctx := context.Background()
	pg := engines[1]
	place := pg.place(t)
	nodes := []*DB{pg.openAt(t, place), pg.openAt(t, place)}
	mustCreateBucket(t, nodes[0], "bkt")

	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		db := nodes[w%2]
		wg.Go(func() {
			for range each {
				err := db.UpdateObject(ctx, "bkt", "ctr", testTime, func(old *Object) (*Object, error) {
					n := int64(0)
					if old != nil {
						n = old.Size
					}
					return &Object{Size: n + 1}, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if o, err := nodes[1].Object(ctx, "bkt", "ctr"); err != nil || o.Size != writers*each {
		t.Errorf("counter = %d, %v; want %d", o.Size, err, writers*each)
	}

	// Create-if-absent on both nodes at once: exactly one wins per key.
	errExists := errors.New("exists")
	for i := range 20 {
		key := fmt.Sprint("once", i)
		var wins sync.WaitGroup
		won := make(chan int, writers)
		for w := range writers {
			db := nodes[w%2]
			wins.Go(func() {
				err := db.UpdateObject(ctx, "bkt", key, testTime, func(old *Object) (*Object, error) {
					if old != nil {
						return nil, errExists
					}
					return &Object{Size: int64(w)}, nil
				})
				switch {
				case err == nil:
					won <- w
				case !errors.Is(err, errExists):
					t.Error(err)
				}
			})
		}
		wins.Wait()
		close(won)
		var winners []int
		for w := range won {
			winners = append(winners, w)
		}
		if len(winners) != 1 {
			t.Fatalf("%s: winners %v, want exactly one", key, winners)
		}
		if o, err := nodes[0].Object(ctx, "bkt", key); err != nil || o.Size != int64(winners[0]) {
			t.Errorf("%s = size %d, %v; want the winner's %d", key, o.Size, err, winners[0])
		}
	}
	bu, err := nodes[0].BucketUsage(ctx, "bkt")
	if err != nil || bu.Usage.Objects != 21 {
		t.Errorf("usage = %+v, %v; want 21 objects", bu.Usage, err)
	}
}

// BenchmarkPostgresCommitObject is BenchmarkCommitObject on PostgreSQL,
// with the test cluster's fsync turned on for its duration (the cluster
// runs without it otherwise): serial is the latency of one synced PUT's
// transaction (three round trips and a WAL flush), parallel shows how far
// concurrent commits on separate connections share WAL flushes, which
// PostgreSQL does by itself.
func BenchmarkPostgresCommitObject(b *testing.B) {
	ctx := context.Background()
	rec := Object{VersionID: "0123456789abcdef", Size: 1024, ETag: "0123456789abcdef0123456789abcdef",
		Modified: testTime, Meta: Metadata{ContentType: "application/octet-stream"}, Inline: make([]byte, 1024)}
	pg := engines[1]
	for _, par := range []int{0, 16} {
		name := "serial"
		if par > 0 {
			name = fmt.Sprint("parallel=", par)
		}
		b.Run(name, func(b *testing.B) {
			db, err := Open(Config{Kind: EnginePostgres, Sync: true,
				Postgres: PostgresConfig{URL: pg.place(b), MaxConns: max(par, 1)}})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			pool := db.kv.(*pgKV).pool
			for _, q := range []string{`ALTER SYSTEM SET fsync = on`, `SELECT pg_reload_conf()`} {
				if _, err := pool.Exec(ctx, q); err != nil {
					b.Skipf("cannot turn fsync on: %v", err)
				}
			}
			// Backends read the new setting when the reload signal reaches
			// them.
			for deadline := time.Now().Add(5 * time.Second); ; {
				var on string
				if err := pool.QueryRow(ctx, `SHOW fsync`).Scan(&on); err != nil {
					b.Fatal(err)
				}
				if on == "on" {
					break
				}
				if time.Now().After(deadline) {
					b.Fatal("fsync is still off")
				}
				time.Sleep(10 * time.Millisecond)
			}
			defer func() {
				_, _ = pool.Exec(ctx, `ALTER SYSTEM RESET fsync`)
				_, _ = pool.Exec(ctx, `SELECT pg_reload_conf()`)
			}()
			mustCreateBucket(b, db, "bkt")
			put := func(k string) error {
				return db.UpdateObject(ctx, "bkt", k, testTime, func(*Object) (*Object, error) { return &rec, nil })
			}
			b.ReportAllocs()
			b.SetBytes(1024)
			if par == 0 {
				i := 0
				for b.Loop() {
					i++
					if err := put(fmt.Sprint("k", i)); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.SetParallelism(par / 2) // × GOMAXPROCS (2 here) goroutines
			var n atomic.Int64
			b.RunParallel(func(p *testing.PB) {
				for p.Next() {
					if err := put(fmt.Sprint("k", n.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func TestStatus(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		db := e.open(t)
		got, err := db.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := Status{Engine: e.name, SchemaVersion: 1, KnownVersion: 1, StoreID: db.StoreID()}
		if e.name == EnginePostgres {
			want.SchemaVersion, want.KnownVersion = 6, 6 // 0006_audit_batches
		}
		if got != want {
			t.Errorf("Status = %+v, want %+v", got, want)
		}
	})
}

// TestPostgresChanges changes cached state (IAM state, a bucket policy, a
// bucket's versioning, a bucket configuration, a bucket's deletion) through one node and waits
// for another node's WatchChanges to report it: through the listener
// connection, and through the counters' poll alone (the fallback when
// the listener is down). Each must arrive within a second. Either way the
// watch begins with a reload of every kind.
func TestPostgresChanges(t *testing.T) {
	for _, listen := range []bool{true, false} {
		t.Run(fmt.Sprint("listen=", listen), func(t *testing.T) {
			ctx := t.Context()
			pg := engines[1]
			place := pg.place(t)
			a, b := pg.openAt(t, place), pg.openAt(t, place)
			b.kv.(*pgKV).noListen = !listen
			mustCreateBucket(t, a, "bkt")
			got := make(chan Change, 64)
			wctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- b.WatchChanges(wctx, func(c Change) error { got <- c; return nil }) }()
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			})
			// The listener announces itself with a reload of all, and so
			// does the first poll without it: a change made between the
			// node's loading its state and then would be lost otherwise.
			timeout := time.After(5 * ChangePoll)
			for range changeKinds {
				select {
				case <-got:
				case <-timeout:
					t.Fatalf("no reload of all within %v of watching", 5*ChangePoll)
				}
			}
			// want is what the listener reports; the poll reports the kind
			// with no bucket.
			for _, tc := range []struct {
				name   string
				change func() error
				want   Change
			}{
				{"iam", func() error { return a.PutIAMState(ctx, []byte(`{}`)) }, Change{Kind: ChangeIAM}},
				{"policy", func() error { return a.PutBucketPolicy(ctx, "bkt", []byte(`{}`)) }, Change{Kind: ChangePolicy, Bucket: "bkt"}},
				{"versioning", func() error { return a.SetVersioning(ctx, "bkt", VersioningEnabled) }, Change{Kind: ChangeConfig, Bucket: "bkt"}},
				{"config", func() error { return a.PutBucketConfig(ctx, "bkt", "cors", []byte(`x`)) }, Change{Kind: ChangeConfig, Bucket: "bkt"}},
				{"delete bucket", func() error { return a.DeleteBucket(ctx, "bkt", testTime) }, Change{Kind: ChangePolicy, Bucket: "bkt"}},
			} {
				start := time.Now()
				if err := tc.change(); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				want := tc.want
				if !listen {
					want.Bucket = ""
				}
				timeout := time.After(time.Second)
			wait:
				for {
					select {
					case c := <-got:
						if c == want {
							t.Logf("%s: seen after %v", tc.name, time.Since(start))
							break wait
						}
					case <-timeout:
						t.Fatalf("%s: %+v not seen within 1s", tc.name, want)
					}
				}
			}
		})
	}
}

// TestPostgresGCLease takes the GC lease on one node: the other cannot
// take it until it is released.
func TestPostgresGCLease(t *testing.T) {
	ctx := t.Context()
	pg := engines[1]
	place := pg.place(t)
	a, b := pg.openAt(t, place), pg.openAt(t, place)
	release, ok, err := a.GCLease(ctx)
	if err != nil || !ok {
		t.Fatalf("GCLease on a = %v, %v; want it", ok, err)
	}
	if _, ok, err := b.GCLease(ctx); err != nil || ok {
		t.Fatalf("GCLease on b while a holds it = %v, %v; want false", ok, err)
	}
	release()
	release, ok, err = b.GCLease(ctx)
	if err != nil || !ok {
		t.Fatalf("GCLease on b after a released it = %v, %v; want it", ok, err)
	}
	release()
}

// TestPostgresPasswordFileMode: a password file open to group or others
// is used, with a warning that names it and its mode (never the
// password); a private one gives no warning. Nothing listens on port 1,
// so the connection fails after the file has been read.
func TestPostgresPasswordFileMode(t *testing.T) {
	t.Parallel()
	const password = "hunter2-db-password"
	for _, tc := range []struct {
		name     string
		mode     os.FileMode
		wantWarn bool
	}{
		{name: "private", mode: 0o600},
		{name: "group readable", mode: 0o640, wantWarn: true},
		{name: "world readable", mode: 0o644, wantWarn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "pgpass")
			mustDo(t, os.WriteFile(path, []byte(password+"\n"), 0o600))
			mustDo(t, os.Chmod(path, tc.mode))
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			cfg := PostgresConfig{URL: "postgres://coffer@127.0.0.1:1/coffer?connect_timeout=5", PasswordFile: path, StatementTimeout: 5 * time.Second}
			if p, err := openPostgres(t.Context(), cfg, log); err == nil {
				_ = p.close()
				t.Fatal("openPostgres of a closed port succeeded")
			}
			warned := strings.Contains(logs.String(), "password file is open to group or others")
			if warned != tc.wantWarn {
				t.Errorf("warned %v, want %v; log:\n%s", warned, tc.wantWarn, logs.String())
			}
			if tc.wantWarn && !strings.Contains(logs.String(), fmt.Sprintf("mode=%#o", tc.mode)) {
				t.Errorf("the warning does not name the mode %#o:\n%s", tc.mode, logs.String())
			}
			if strings.Contains(logs.String(), password) {
				t.Errorf("the log holds the password:\n%s", logs.String())
			}
		})
	}
}
