// Package server is Coffer's composition root: it opens the storage (the
// metadata index and the block store), builds the services over them (the
// object service, IAM, the SigV4 verifier, the S3 handler), binds the
// listeners and runs everything until its context ends, then shuts down
// gracefully. It is the only package that knows the concrete stores.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/certs"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/console"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/lifecycle"
	"github.com/coffer-s3/coffer/internal/memlimit"
	"github.com/coffer-s3/coffer/internal/meta"
	"github.com/coffer-s3/coffer/internal/metrics"
	"github.com/coffer-s3/coffer/internal/s3api"
	"github.com/coffer-s3/coffer/internal/sigv4"
	"github.com/coffer-s3/coffer/internal/version"
)

// HTTP server limits. There is no ReadTimeout or WriteTimeout: an upload or
// a download of a 5 GiB object over a slow link legitimately takes longer
// than any fixed bound. Instead bodies must make progress: a request body
// that sends nothing, or an answer the client reads nothing of, for
// limits.body-idle ends its request (s3api's idleBody, progressConn,
// bodyDeadlines).
const (
	// readHeaderTimeout bounds how long a client may take to send the
	// request line and headers, so slowloris-style clients cannot hold
	// connections open without sending a request.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes keep-alive connections idle for this long. S3
	// clients pool connections; a minute keeps them warm without letting
	// idle ones pile up.
	idleTimeout = 60 * time.Second
	// maxHeaderBytes bounds the request line and headers. S3 allows 2 KiB
	// of user metadata in a PUT (8 KiB for all headers in practice); 64 KiB
	// leaves room for long presigned URLs and many x-amz-* headers.
	maxHeaderBytes = 64 << 10
	// maxPprofConnections is the connection limit (connLimit) of the
	// pprof listener: operators' tools, a few at a time. The ops listener
	// (console, metrics, health probes) has the S3 listener's,
	// limits.connections: a storm of sign-ins is answered 429 or 503, not
	// dropped.
	maxPprofConnections = 64
	// handlerDrainTimeout bounds how long, after shutdown-timeout expired
	// and connections were closed, Run waits for handlers still running
	// before it closes the storage under them.
	handlerDrainTimeout = 5 * time.Second
	// consoleDrainTimeout bounds how long, once the S3 listener has shut
	// down, the ops listener waits for scrapes and probes in progress.
	consoleDrainTimeout = 2 * time.Second
	// failedDrainTimeout replaces the shutdown timeout, if shorter, when
	// the server stops because its metadata store failed: reads in flight
	// may finish, but no write in flight can, and a few may be stuck in
	// the failed engine for good.
	failedDrainTimeout = 5 * time.Second
	// stopBound bounds how long, after the requests' drain (the shutdown
	// timeout), Run takes to close connections, wait for handlers and
	// close the storage. Past it Run returns an error and leaves the
	// storage open (its log holds every acknowledged write), so that a
	// stopping server stops whatever state its storage is in.
	stopBound = 20 * time.Second
)

// Server is a Coffer server: its storage open and its listeners bound.
type Server struct {
	cfg     config.Config
	log     *slog.Logger
	st      *storage
	root    iam.Config
	iam     *iam.IAM // set by handler
	ln      net.Listener
	srv     *http.Server
	pprofLn net.Listener // nil when pprof is off
	pprof   *http.Server // nil when pprof is off
	slow    *slowTrace   // slow-request captures; nil when pprof is off
	access  *accessLog   // nil when the access log is off

	// The ops listener (console-address) and what it serves; nil when
	// console-address is "". Without it no metrics are collected.
	consoleLn net.Listener
	console   *http.Server
	metrics   *metrics.Registry
	sampler   *metrics.Sampler // the console's Metrics page's history
	ready     *readiness       // also behind the S3 listener's health endpoints
	webUI     *console.Handler // the web console, under / of the ops listener

	audit *audit.Log // nil when audit.enabled is false

	lifecycle *lifecycle.Worker // applies buckets' lifecycle rules

	s3    *s3api.Handler  // the S3 API, behind its request limit
	conns *connLimit      // the S3 listener's connection limit
	certs *certs.Reloader // the TLS certificate; nil without TLS

	inflight atomic.Int64 // handlers running on srv
	ran      atomic.Bool  // Run may be called once

	// failedDrain and stopBound are failedDrainTimeout and stopBound;
	// tests shorten them.
	failedDrain, stopBound time.Duration

	closeOnce sync.Once
	closeErr  error
}

// New opens the storage of cfg, loads or creates the root credentials and
// binds the listeners, so that Addr is known when it returns. Generated
// credentials are printed to out, once; log receives everything else. The
// caller must call Run, or Close if it will not.
//
// A second server on the same storage path fails here, with an error
// saying the metadata is locked.
func New(cfg config.Config, log *slog.Logger, out io.Writer) (*Server, error) {
	return newServer(cfg, log, out, testHooks{})
}

// testHooks let tests reach into what a server opens; New passes the zero
// value.
type testHooks struct {
	// failWrite is the metadata store's meta.Config.FailWrite (tests of
	// a failing disk).
	failWrite func(path string) error
	// auditDB, if set, is the metadata store whose SQL pool the
	// cluster's audit log gets, instead of the server's own (tests of an
	// outage of the audit log's connections alone).
	auditDB *meta.DB
	// auditQueue and auditBatch are the audit log's audit.Config
	// QueueSize and BatchSize; 0 the defaults.
	auditQueue, auditBatch int
}

// newServer is New with the hooks of tests.
func newServer(cfg config.Config, log *slog.Logger, out io.Writer, h testHooks) (s *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Fsync {
		log.Warn("fsync is off: acknowledged writes can be lost on a crash or power failure; use fsync=false for benchmarks only", "fsync", false)
	}
	if cfg.Blob.Kind == config.BlobMemory {
		log.Warn("blob.kind is memory: object data lives in memory and is lost on exit, while metadata persists in the storage path; use for tests and benchmarks only")
	}
	if cfg.Meta.Kind == config.MetaPostgres && cfg.Blob.Kind == config.BlobFS {
		// Nothing checks yet that the nodes sharing a metadata store
		// share a block store (docs/scale-out.md, Limits).
		log.Warn("meta.kind is postgres but blob.kind is fs: blocks are kept in this node's own storage path, which no other node can read; " +
			"run one node only on this configuration, or give every node the same blob.kind s3 bucket and prefix")
	}
	if cfg.Meta.Kind == config.MetaPostgres {
		// A node of a cluster publishes its GC settings under an ID of
		// this start (objects.Service.Publish).
		var id [12]byte
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
		cfg.Objects.NodeID = hex.EncodeToString(id[:])
	}
	st, err := openStorage(cfg, log, h.failWrite)
	if err != nil {
		return nil, err
	}
	s = &Server{cfg: cfg, log: log, st: st, failedDrain: failedDrainTimeout, stopBound: stopBound}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Close())
			s = nil
		}
	}()
	// Credentials are read or created after the metadata lock is held, so
	// two servers starting at once cannot both generate them.
	if s.root, err = rootCredentials(cfg.StoragePath, cfg.Root, out, st.db.Shared()); err != nil {
		return s, err
	}
	if s.root.MasterKey, err = masterKey(cfg.StoragePath, cfg.Root.MasterKey, st.db.Shared()); err != nil {
		return s, err
	}
	// Before the first write: the other nodes' GC must count this node's
	// grace before any of its writes makes a block.
	pctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	err = st.objects.Publish(pctx)
	cancel()
	if err != nil {
		return s, err
	}
	s.ready = newReadiness(storageChecks(st), log.With("component", "health"))
	s.ready.space = st.space
	s.ready.storageErr = st.db.Err
	if s.audit, err = openAudit(cfg, st, h, log.With("component", "audit")); err != nil {
		return s, err
	}
	var lcObs lifecycle.Observer
	if s.audit != nil {
		lcObs = lifecycleAuditor{s.audit}
	}
	if s.lifecycle, err = lifecycle.New(cfg.Lifecycle, st.objects, log.With("component", "lifecycle"), lcObs); err != nil {
		return s, err
	}
	if cfg.Lifecycle.Day != 24*time.Hour {
		log.Warn("lifecycle.day is not 24h: rules count days of another length, not rounded to midnight; for tests only", "lifecycle_day", cfg.Lifecycle.Day)
	}
	if cfg.ConsoleAddress != "" {
		s.metrics, err = metrics.New(metrics.Config{Version: version.Version(), Logger: log.With("component", "metrics")})
		if err != nil {
			return s, err
		}
		if err = s.metrics.StorageFunc(st.storageTotals); err != nil {
			return s, err
		}
		if err = registerSpaceMetrics(s.metrics, st.space); err != nil {
			return s, err
		}
		if err = registerUpstreamMetrics(s.metrics, st.blobs); err != nil {
			return s, err
		}
		if err = registerReuseMetrics(s.metrics, st.blobs); err != nil {
			return s, err
		}
		if s.audit != nil {
			if err = registerAuditMetrics(s.metrics, s.audit); err != nil {
				return s, err
			}
		}
		if err = registerLifecycleMetrics(s.metrics, s.lifecycle); err != nil {
			return s, err
		}
		iv := cfg.Console.MetricsInterval
		s.sampler = s.metrics.NewSampler(metrics.SamplerConfig{Interval: iv, Samples: console.MetricsSamples(iv)})
	}
	if cfg.Pprof.Enabled {
		s.slow = &slowTrace{}
	}
	handler, err := s.handler()
	if err != nil {
		return s, err
	}
	if s.ln, err = net.Listen("tcp", cfg.Address); err != nil {
		return s, fmt.Errorf("listen for S3: %w", err)
	}
	// Outermost the connection limit, so that it sees the connections
	// net/http serves (under TLS, the *tls.Conn, which gives requests
	// their TLS state); innermost the TCP connections, whose net/http
	// 431 answer s3api.Listener rewrites (without TLS: under it, that
	// answer is encrypted and passes unchanged).
	idle := cfg.S3.BodyIdleTimeout
	inner := withProgress(s3api.Listener(s.ln, maxHeaderBytes), idle)
	if cfg.TLS.CertFile != "" {
		if s.certs, err = certs.New(cfg.TLS.CertFile, cfg.TLS.KeyFile, log.With("component", "tls")); err != nil {
			return s, err
		}
		if s.metrics != nil {
			if err = registerTLSMetrics(s.metrics, s.certs); err != nil {
				return s, err
			}
		}
		inner = tls.NewListener(inner, s.certs.Config())
	}
	s.conns = newConnLimit(inner, cfg.MaxConnections)
	s.ln = s.conns
	s.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnState:         s.conns.track,
	}
	if s.metrics != nil {
		if err = registerLoadMetrics(s.metrics, s.conns, s.s3); err != nil {
			return s, err
		}
	}
	if cfg.Pprof.Enabled {
		addr := net.JoinHostPort(cfg.Pprof.Host, strconv.Itoa(cfg.Pprof.Port))
		if s.pprofLn, err = net.Listen("tcp", addr); err != nil {
			return s, fmt.Errorf("listen for pprof: %w", err)
		}
		enableContentionProfiles()
		// No WriteTimeout here either: /debug/pprof/profile?seconds=60
		// answers after a minute (a write deadline that moves with
		// progress does not mind: progressConn).
		limit := newConnLimit(withProgress(s.pprofLn, idle), maxPprofConnections)
		s.pprofLn = limit
		s.pprof = &http.Server{
			Handler:           bodyDeadlines(pprofHandler(s.slow), idle),
			ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			ConnState:         limit.track,
		}
	}
	if cfg.ConsoleAddress != "" {
		if s.consoleLn, err = net.Listen("tcp", cfg.ConsoleAddress); err != nil {
			return s, fmt.Errorf("listen for the console (console-address): %w", err)
		}
		s.consoleLn = withProgress(s.consoleLn, idle)
		if s.certs != nil {
			s.consoleLn = tls.NewListener(s.consoleLn, s.certs.Config())
		}
		limit := newConnLimit(s.consoleLn, cfg.MaxConnections)
		s.consoleLn = limit
		s.console = &http.Server{
			Handler:           bodyDeadlines(s.opsHandler(), idle),
			ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			ConnState:         limit.track,
		}
	}
	return s, nil
}

// handler builds IAM, the verifier and the S3 handler, wrapped in the
// in-flight counter and, when enabled, the access log.
func (s *Server) handler() (http.Handler, error) {
	ic := s.root
	ic.Store = iamStore{s.st.db}
	if s.st.db.Shared() {
		ic.Store = sharedIAMStore{iamStore{s.st.db}}
	}
	ic.Password = s.cfg.PasswordHash.Params()
	ic.Logger = s.log.With("component", "iam")
	m, err := iam.New(ic)
	if err != nil {
		if s.st.db.Shared() {
			err = clusterKeyError(err)
		}
		return nil, err
	}
	s.iam = m
	if s.cfg.ConsoleAddress != "" {
		var auditLog console.AuditLog // both stay nil interfaces when the audit log is off
		var events console.AuditRecorder
		if s.audit != nil {
			auditLog, events = s.audit, s.audit
		}
		s.webUI, err = console.New(s.cfg.Console, console.Deps{
			IAM:     m,
			Buckets: s.st.objects,
			Logger:  s.log.With("component", "console"),
			Browser: console.BrowserDeps{Objects: s.st.objects, Region: s.cfg.S3.Region, S3Endpoint: s.s3Endpoint},
			Audit:   auditLog,
			Events:  events,
			// After a fatal metadata error changes answer 503, as S3 and
			// the admin API do.
			Unavailable: s.st.objects.Err,
			Monitor:     console.MonitorDeps{Metrics: s.sampler, Health: s.ready.consoleHealth, Version: version.Version()},
		})
		if err != nil {
			return nil, err
		}
	}
	v := sigv4.NewVerifier(sigv4.Config{Region: s.cfg.S3.Region, Service: "s3", Domain: s.cfg.S3.Domain, Clock: time.Now}, keyring{m})
	var obs observers
	if s.metrics != nil {
		obs = append(obs, s.metrics)
	}
	if s.audit != nil {
		obs = append(obs, audit.NewS3Observer(s.audit, s.cfg.Audit.ReadSample))
	}
	var observer s3api.Observer // stays a nil interface without observers
	switch len(obs) {
	case 0:
	case 1:
		observer = obs[0]
	default:
		observer = obs
	}
	var adminAudit adminapi.Observer
	var auditLog adminapi.AuditLog
	if s.audit != nil {
		adminAudit, auditLog = adminAuditor{s.audit}, s.audit
	}
	h, err := s3api.New(s.cfg.S3, s3api.Deps{
		Objects:  s.st.objects,
		Verifier: v,
		IAM:      m,
		Logger:   s.log.With("component", "s3api"),
		Clock:    time.Now,
		Observer: observer,
	})
	if err != nil {
		return nil, err
	}
	s.s3 = h
	var s3h http.Handler = h
	if s.metrics != nil {
		s3h = s.metrics.TrackInFlight(h)
	}
	health := bodyDeadlines(s.ready.healthHandler(), s.cfg.S3.BodyIdleTimeout)
	admin, err := adminapi.New(adminapi.Deps{
		IAM:       m,
		Verifier:  v,
		GC:        s.st.objects.GC,
		GCGrace:   s.cfg.Objects.GCGrace, // a pass asked for with no grace keeps what the node's own keep
		Lifecycle: s.lifecycle.RunPass,
		Buckets:   s.st.objects,
		Audit:     auditLog,
		Observer:  adminAudit,
		Logger:    s.log.With("component", "adminapi"),
		// After a fatal metadata error changes answer 503, as S3 writes do.
		Unavailable: s.st.objects.Err,
	})
	if err != nil {
		return nil, err
	}
	adminh := bodyDeadlines(admin, s.cfg.S3.BodyIdleTimeout)
	domain := s.cfg.S3.Domain
	var next http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The admin API and the health endpoints answer path-style
		// requests under their prefixes; "_" is never in a bucket name,
		// so they shadow no bucket. On a virtual-hosted bucket the same
		// paths are object keys.
		if strings.HasPrefix(r.URL.Path, reservedPrefix) && !s3api.VirtualHosted(r.Host, domain) {
			switch {
			case strings.HasPrefix(r.URL.Path, adminapi.PathPrefix):
				adminh.ServeHTTP(w, r)
				return
			case strings.HasPrefix(r.URL.Path, healthPrefix):
				health.ServeHTTP(w, r)
				return
			}
		}
		s3h.ServeHTTP(w, r)
	})
	if s.cfg.Log.AccessLogSample > 0 {
		s.access = newAccessLog(s.log.With("log", "access"), s.cfg.Log.AccessLogSample)
		next = s.access.wrap(next)
	}
	if s.slow != nil {
		next = s.slow.wrap(next)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		next.ServeHTTP(w, r)
	}), nil
}

// reservedPrefix is the path prefix under which the S3 listener serves
// Coffer's own endpoints (admin API, health) instead of S3.
const reservedPrefix = "/_coffer/"

// Addr returns the address the S3 API listens on, e.g. "127.0.0.1:6789".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// s3Endpoint returns the base URL of the S3 listener, for the console's
// share links.
func (s *Server) s3Endpoint() string {
	if s.ln == nil {
		return ""
	}
	if s.certs != nil {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// ConsoleAddr returns the address of the ops listener (the web console,
// /metrics, /healthz, /readyz), or "" when console-address is "".
func (s *Server) ConsoleAddr() string {
	if s.consoleLn == nil {
		return ""
	}
	return s.consoleLn.Addr().String()
}

// PprofAddr returns the address of the pprof listener, or "" when pprof is
// off.
func (s *Server) PprofAddr() string {
	if s.pprofLn == nil {
		return ""
	}
	return s.pprofLn.Addr().String()
}

// RootCredentials returns the root access key ID and secret in use.
func (s *Server) RootCredentials() (accessKey, secretKey string) {
	return s.root.RootAccessKey, s.root.RootSecretKey
}

// Run serves until ctx is done, a listener fails or the metadata store
// fails, then shuts down: it stops accepting connections, waits up to the
// shutdown timeout for requests in flight, closes the connections still
// open, stops background GC and closes the storage. It returns nil after a
// shutdown caused by ctx.
//
// When the metadata store fails (meta.DB.Err: a full or failing disk, an
// error its engine cannot continue from), writes are refused at once and
// readiness turns to "failed"; Run drains for at most failedDrainTimeout
// and returns the store's error, for the process to exit non-zero and its
// supervisor to restart it (docs/design/0010-fatal-storage-errors.md).
//
// Once shutdown has begun Run returns within the drain plus stopBound,
// whatever the storage does; if closing has not finished by then it
// returns an error saying so, with the storage left open. Otherwise the
// Server is closed when Run returns. Run may be called once.
func (s *Server) Run(ctx context.Context) error {
	if !s.ran.CompareAndSwap(false, true) {
		return errors.New("server: Run called twice")
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return serve(s.srv, s.ln, "S3") })
	if s.pprof != nil {
		g.Go(func() error { return serve(s.pprof, s.pprofLn, "pprof") })
	}
	if s.console != nil {
		g.Go(func() error { return serve(s.console, s.consoleLn, "console") })
	}
	if s.certs != nil {
		g.Go(func() error { s.watchCerts(gctx); return nil })
	}
	if s.st.db.Shared() {
		g.Go(func() error { return s.st.db.WatchChanges(gctx, s.applyChange) })
	}
	if s.sampler != nil {
		g.Go(func() error { return s.sampler.Run(gctx) })
	}
	// Garbage collection paced to the heap outside the metadata engine's
	// caches (the static build holds them on the Go heap); GOGC=off or a
	// GOGC of the user's own percentage is honoured.
	g.Go(func() error { memlimit.PaceFromEnv(gctx, s.st.db.HeapCacheBytes); return nil })
	stopAccess := make(chan struct{})
	if s.access != nil {
		g.Go(func() error { s.access.run(stopAccess); return nil })
	}
	// The object service's background work (GC) and the lifecycle worker
	// stop only after the HTTP servers have: requests in flight may still
	// enqueue garbage, and an admin request may be running a pass.
	objCtx, stopObjects := context.WithCancel(context.WithoutCancel(ctx))
	defer stopObjects()
	g.Go(func() error {
		if err := s.st.objects.Run(objCtx); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("object service: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		if err := s.lifecycle.Run(objCtx); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("lifecycle worker: %w", err)
		}
		return nil
	})
	s.log.Info("serving S3", "address", s.Addr(), "storage_path", s.cfg.StoragePath, "blob_kind", s.cfg.Blob.Kind, "region", s.cfg.S3.Region)
	if s.pprof != nil {
		s.log.Info("serving pprof", "address", s.PprofAddr())
	}
	if s.console != nil {
		s.log.Info("serving the web console, metrics and health checks", "address", s.ConsoleAddr(), "console_url", "http://"+s.ConsoleAddr()+"/")
	}
	g.Go(func() error {
		select {
		case <-s.st.db.Failed():
			err := s.st.db.Err()
			s.log.Error("metadata store failed: refusing writes and stopping; restart once the cause is fixed (acknowledged writes are safe in the metadata log)",
				"err", err)
			return err
		case <-gctx.Done():
			return nil
		}
	})
	stopping := make(chan time.Duration, 1) // the drain's timeout, once shutdown begins
	g.Go(func() error {
		<-gctx.Done()
		drain := s.drainTimeout()
		stopping <- drain
		s.log.Info("shutting down", "timeout", drain)
		err := s.shutdown(context.WithoutCancel(ctx), drain)
		close(stopAccess)
		stopObjects()
		return err
	})
	// The goroutine that closes the storage is left behind if it takes too
	// long, on purpose: the process is about to exit.
	done := make(chan error, 1)
	go func() {
		err := g.Wait()
		if ferr := s.st.db.Err(); ferr != nil && !errors.Is(err, meta.ErrFailed) {
			err = errors.Join(err, ferr) // it failed during a shutdown
		}
		if cerr := s.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		done <- err
	}()
	bound := <-stopping + s.stopBound
	var err error
	select {
	case err = <-done:
	case <-time.After(bound):
		err = fmt.Errorf("server: shutdown did not finish within %v; exiting with the storage open (its log holds every acknowledged write)", bound)
	}
	if err == nil {
		s.log.Info("stopped")
	}
	return err
}

// drainTimeout is how long a shutdown beginning now waits for requests in
// flight: the shutdown timeout, or at most failedDrainTimeout if the
// metadata store has failed.
func (s *Server) drainTimeout() time.Duration {
	if s.st.db.Err() != nil {
		return min(s.cfg.ShutdownTimeout, s.failedDrain)
	}
	return s.cfg.ShutdownTimeout
}

// serve runs srv on ln until it is shut down.
func serve(srv *http.Server, ln net.Listener, name string) error {
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", name, err)
	}
	return nil
}

// shutdown stops the HTTP servers gracefully within timeout, then
// forcibly, and waits (briefly) for handlers still running.
//
// Readiness turns to 503 first, and the ops listener closes last: while S3
// requests drain, /readyz tells load balancers to send no more and
// /metrics shows the drain.
//
// If the metadata store has failed, handlers and readiness checks still
// running are not waited for: some may be stuck in the failed engine for
// good, and the storage is not closed under them (meta.DB.Close of a
// failed store releases nothing).
func (s *Server) shutdown(ctx context.Context, timeout time.Duration) error {
	failed := s.st.db.Err() != nil
	s.ready.startDrain()
	checksWait := handlerDrainTimeout
	if failed {
		checksWait = 0
	}
	defer s.ready.drain(checksWait) // its checks read the storage Run closes next
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var errs []error
	if s.pprof != nil {
		// Profiles in progress are not worth waiting for.
		if err := s.pprof.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close pprof server: %w", err))
		}
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		s.log.Warn("shutdown timeout expired: closing connections with requests in flight",
			"timeout", timeout, "in_flight", s.inflight.Load())
		// Reads run detached from their requests' cancellation (a
		// client may half-close and still read the answer): end them.
		if s.s3 != nil {
			s.s3.AbortReads()
		}
		if err := s.srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close S3 server: %w", err))
		}
		// Handlers of closed connections see their request context canceled
		// (reads their aborted one) and return soon; give them a moment
		// before the storage closes.
		deadline := time.Now().Add(handlerDrainTimeout)
		for !failed && s.inflight.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := s.inflight.Load(); n > 0 && !failed {
			s.log.Warn("closing storage with handlers still running", "in_flight", n)
		}
	}
	if s.console != nil {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), consoleDrainTimeout)
		defer ccancel()
		if err := s.console.Shutdown(cctx); err != nil {
			if err := s.console.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close console server: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Close releases everything New acquired: listeners and storage. Run calls
// it; call it directly only for a Server that will not Run. It is safe to
// call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		for _, ln := range []net.Listener{s.ln, s.pprofLn, s.consoleLn} {
			if ln != nil {
				if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
					errs = append(errs, err)
				}
			}
		}
		if s.audit != nil {
			// After the listeners: what requests in flight recorded is written.
			if err := s.audit.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close audit log: %w", err))
			}
		}
		errs = append(errs, s.st.close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
