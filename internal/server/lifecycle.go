package server

import (
	"strings"

	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/lifecycle"
	"github.com/coffer-s3/coffer/internal/metrics"
)

// lifecycleUser is the principal the audit log names for the lifecycle
// worker's actions: no access key signed them.
const lifecycleUser = "lifecycle"

// lifecycleAuditor records every action of the lifecycle worker in the
// audit log, as an event of source "lifecycle" by the system principal
// "lifecycle", named as S3's server access logs name lifecycle actions
// (S3.EXPIRE.OBJECT, S3.CREATE.DELETEMARKER, S3.DELETE.UPLOAD). The
// target says which version or upload, and by which rule.
type lifecycleAuditor struct{ log *audit.Log }

var _ lifecycle.Observer = lifecycleAuditor{}

// ObserveLifecycle implements lifecycle.Observer.
func (a lifecycleAuditor) ObserveLifecycle(x *lifecycle.Action) {
	var t []string
	switch {
	case x.UploadID != "":
		t = append(t, "upload="+x.UploadID)
	case x.Kind == lifecycle.DeleteMarkerCreated:
		t = append(t, "deleteMarker="+x.VersionID)
	case x.VersionID != "":
		t = append(t, "versionId="+x.VersionID)
	}
	if x.Replaced {
		t = append(t, "replacedByNullMarker")
	}
	t = append(t, "rule="+x.RuleID)
	a.log.Record(audit.Event{
		Time:   x.Time,
		Source: audit.SourceLifecycle,
		Op:     x.Kind.String(),
		Status: 204,
		Bucket: x.Bucket,
		Key:    x.Key,
		Target: strings.Join(t, " "),
		User:   lifecycleUser,
	})
}

// registerLifecycleMetrics exports the lifecycle worker's counters.
func registerLifecycleMetrics(m *metrics.Registry, w *lifecycle.Worker) error {
	counters := []struct {
		name, help string
		v          func(lifecycle.Stats) float64
	}{
		{"coffer_lifecycle_passes_total", "Lifecycle passes run (background and admin).", func(s lifecycle.Stats) float64 { return float64(s.Passes) }},
		{"coffer_lifecycle_errors_total", "Lifecycle failures: a bucket whose pass failed, or a pass that could not start (see the log).", func(s lifecycle.Stats) float64 { return float64(s.Errors) }},
		{"coffer_lifecycle_examined_total", "Versions and multipart uploads the lifecycle worker looked at.", func(s lifecycle.Stats) float64 { return float64(s.Examined) }},
		{"coffer_lifecycle_objects_expired_total", "Current versions expired: deleted, or hidden under a delete marker in a versioned bucket.", func(s lifecycle.Stats) float64 { return float64(s.ObjectsExpired) }},
		{"coffer_lifecycle_versions_removed_total", "Noncurrent versions removed, and null versions replaced by the null delete marker of an expiry (versioning suspended).", func(s lifecycle.Stats) float64 { return float64(s.VersionsRemoved) }},
		{"coffer_lifecycle_delete_markers_removed_total", "Delete markers left alone (expired object delete markers) removed, and null delete markers replaced by the null delete marker of an expiry.", func(s lifecycle.Stats) float64 { return float64(s.DeleteMarkersRemoved) }},
		{"coffer_lifecycle_uploads_aborted_total", "Incomplete multipart uploads aborted.", func(s lifecycle.Stats) float64 { return float64(s.UploadsAborted) }},
		{"coffer_lifecycle_skipped_total", "Versions and uploads found due but left alone: changed by a write since, or gone.", func(s lifecycle.Stats) float64 { return float64(s.Skipped) }},
		{"coffer_lifecycle_pass_duration_seconds_total", "Time spent in lifecycle passes.", func(s lifecycle.Stats) float64 { return s.PassSeconds }},
	}
	for _, c := range counters {
		if err := m.CounterFunc(c.name, c.help, func() float64 { return c.v(w.Stats()) }); err != nil {
			return err
		}
	}
	if err := m.GaugeFunc("coffer_lifecycle_last_pass_duration_seconds", "Duration of the last lifecycle pass.",
		func() float64 { return w.Stats().LastPassSeconds }); err != nil {
		return err
	}
	return m.GaugeFunc("coffer_lifecycle_last_pass_end_timestamp_seconds", "When the last lifecycle pass ended (Unix time; 0 before the first).",
		func() float64 {
			t := w.Stats().LastPassEnd
			if t.IsZero() {
				return 0
			}
			return float64(t.UnixNano()) / 1e9
		})
}
