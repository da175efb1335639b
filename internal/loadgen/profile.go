package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Profiler captures pprof profiles from a target's pprof listener (coffer
// serve --pprof) while a benchmark runs.
type Profiler struct {
	URL string // pprof listener, e.g. http://127.0.0.1:6060
	Dir string // where the profiles are written
}

// cpu fetches a CPU profile of d (whole seconds, at least 1) into
// Dir/cpu.pprof.
func (p *Profiler) cpu(ctx context.Context, d time.Duration) error {
	secs := max(int(d/time.Second), 1)
	return p.fetch(ctx, "/debug/pprof/profile?seconds="+strconv.Itoa(secs), "cpu.pprof", d+30*time.Second)
}

// memory fetches the heap profile (which also holds the allocation
// samples, -sample_index=alloc_space) into Dir/heap.pprof, and the
// goroutines into Dir/goroutine.pprof.
func (p *Profiler) memory(ctx context.Context) error {
	return errors.Join(
		p.fetch(ctx, "/debug/pprof/heap", "heap.pprof", 30*time.Second),
		p.fetch(ctx, "/debug/pprof/goroutine", "goroutine.pprof", 30*time.Second),
	)
}

func (p *Profiler) fetch(ctx context.Context, path, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := strings.TrimSuffix(p.URL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("profile %s: %w", name, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("profile %s: GET %s: %s: %s", name, u, resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(p.Dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("profile %s: %w", name, err)
	}
	return f.Close()
}
