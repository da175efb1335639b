package server

import (
	"log/slog"
	"net"
	"path/filepath"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/config"
	"github.com/coffer-s3/coffer/internal/metrics"
	"github.com/coffer-s3/coffer/internal/s3api"
)

// auditFile is the audit log's file under the storage path, unless
// audit.path names another.
const auditFile = "audit.db"

// auditConns bounds the connections of the audit log's own pool on a
// shared store: its writer and the queries of the console and admin API.
const auditConns = 3

// openAudit opens the audit log cfg asks for, or returns nil when it is
// off. On a shared metadata store (meta.kind postgres) it is the
// cluster's log, in PostgreSQL, on a pool of its own; else a SQLite file.
// On a filesystem that space watches, the file log writes only while more
// than half the free-space reserve is left (diskspace.Guard.Keep).
func openAudit(cfg config.Config, st *storage, h testHooks, log *slog.Logger) (*audit.Log, error) {
	if !cfg.Audit.Enabled {
		return nil, nil
	}
	ac := audit.Config{
		Retention: cfg.Audit.Retention,
		MaxBytes:  cfg.Audit.MaxBytes,
		MaxEvents: int64(cfg.Audit.MaxEvents),
		PerSource: cfg.Audit.PerSource,
		PerMinute: cfg.Audit.PerMinute,
		QueueSize: h.auditQueue,
		BatchSize: h.auditBatch,
		Logger:    log,
	}
	if st.db.Shared() {
		src := st.db
		if h.auditDB != nil {
			src = h.auditDB
		}
		pool, err := src.SQL(auditConns)
		if err != nil {
			return nil, err
		}
		ac.Postgres = pool
		return audit.Open(ac)
	}
	ac.Path = cfg.Audit.Path
	if ac.Path == "" {
		ac.Path = filepath.Join(cfg.StoragePath, auditFile)
	}
	if st.space != nil && st.space.Watches(filepath.Dir(ac.Path)) {
		ac.Room = st.space.Keep
	}
	return audit.Open(ac)
}

// registerAuditMetrics exports how complete the audit log is: events
// recorded, counted in summaries, dropped (queue full), written, failed
// writes, pruned and evicted, the queue's length, and the log's size.
func registerAuditMetrics(m *metrics.Registry, l *audit.Log) error {
	counters := []struct {
		name, help string
		v          func(audit.Stats) uint64
	}{
		{"coffer_audit_events_recorded_total", "Audit events handed to the audit log.", func(s audit.Stats) uint64 { return s.Recorded }},
		{"coffer_audit_events_dropped_total", "Audit events dropped because the writer was a whole queue behind, or the log was closed.", func(s audit.Stats) uint64 { return s.Dropped }},
		{"coffer_audit_events_written_total", "Audit events stored in the audit log (its file, or the cluster's PostgreSQL table).", func(s audit.Stats) uint64 { return s.Written }},
		{"coffer_audit_write_errors_total", "Failed writes of a batch of audit events (the batch is lost).", func(s audit.Stats) uint64 { return s.WriteErrors }},
		{"coffer_audit_events_pruned_total", "Audit events deleted by retention.", func(s audit.Stats) uint64 { return s.Pruned }},
		{"coffer_audit_events_aggregated_total", "Refused or unauthenticated requests counted in an audit summary event instead of recorded one by one.", func(s audit.Stats) uint64 { return s.Aggregated }},
		{"coffer_audit_summaries_written_total", "Audit summary events made of those counts (one per source and minute).", func(s audit.Stats) uint64 { return s.Summaries }},
		{"coffer_audit_events_evicted_total", "Audit events deleted, oldest first, to keep the log within audit.max-bytes and audit.max-events.", func(s audit.Stats) uint64 { return s.Evicted }},
		{"coffer_audit_untrusted_events_evicted_total", "Audit events of refused or unauthenticated requests (and summaries) among those evicted: they go first.", func(s audit.Stats) uint64 { return s.EvictedUntrusted }},
	}
	for _, c := range counters {
		if err := m.CounterFunc(c.name, c.help, func() float64 { return float64(c.v(l.Stats())) }); err != nil {
			return err
		}
	}
	gauges := []struct {
		name, help string
		v          func(audit.Stats) float64
	}{
		{"coffer_audit_events_queued", "Audit events recorded and not yet stored.", func(s audit.Stats) float64 { return float64(s.Queued) }},
		{"coffer_audit_events_stored", "Audit events in the audit log: in the file; in PostgreSQL, every node's.", func(s audit.Stats) float64 { return float64(s.Stored) }},
		{"coffer_audit_untrusted_events_stored", "Audit events of refused or unauthenticated requests (and summaries) among those stored: at most a quarter of the caps.", func(s audit.Stats) float64 { return float64(s.Untrusted) }},
		{"coffer_audit_disk_bytes", "Size of the audit file and its WAL on disk, or of the PostgreSQL table with its indexes, measured every second.", func(s audit.Stats) float64 { return float64(s.DiskBytes) }},
	}
	for _, g := range gauges {
		if err := m.GaugeFunc(g.name, g.help, func() float64 { return g.v(l.Stats()) }); err != nil {
			return err
		}
	}
	return nil
}

// adminAuditor records admin requests in the audit log: every change
// (anything but GET) and every refused or failed request, and every
// request that failed authentication (a malformed signature is a 400).
// Refused requests and those without a verified key go through the
// bounds of RecordBounded, as on the S3 API.
type adminAuditor struct{ log *audit.Log }

var _ adminapi.Observer = adminAuditor{}

// ObserveAdmin implements adminapi.Observer.
func (a adminAuditor) ObserveAdmin(rec *adminapi.Record) {
	if rec.Method == "GET" && rec.Status != 401 && rec.Status != 403 && rec.Status < 500 && !rec.AuthFailed {
		return
	}
	e := audit.Event{
		Time:      rec.Start,
		Source:    audit.SourceAdmin,
		Op:        rec.Op,
		Status:    rec.Status,
		Code:      rec.Code,
		Target:    rec.Target,
		User:      rec.User,
		AccessKey: rec.AccessKeyID,
		SourceIP:  hostOf(rec.RemoteAddr),
		RequestID: rec.RequestID,
		BytesIn:   rec.BytesIn,
		BytesOut:  rec.BytesOut,
		Duration:  rec.Duration,
	}
	if rec.Root {
		e.User = "root"
	}
	if e.AccessKey == "" {
		e.AccessKey = rec.ClaimedAccessKeyID
	}
	if e.Op == "" {
		e.Op = rec.Method + " (no such endpoint)"
	}
	if audit.Untrusted(rec.Status, rec.AccessKeyID) {
		a.log.RecordBounded(e)
		return
	}
	a.log.Record(e)
}

// hostOf returns the host of a host:port address, or addr itself.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// observers tells every one of its observers about each request.
type observers []s3api.Observer

// ObserveRequest implements s3api.Observer.
func (o observers) ObserveRequest(rec *s3api.RequestRecord) {
	for _, ob := range o {
		ob.ObserveRequest(rec)
	}
}
