package loadgen

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SysConfig configures RunSys.
type SysConfig struct {
	Dir      string        // directory for the disk tests (a temporary file in it)
	Duration time.Duration // per test; default 3 s
	FileSize int64         // size of the sequential write and read; default 256 MiB
}

// SysResult is one local limit measured by RunSys.
type SysResult struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	Note  string  `json:"note,omitempty"`
}

// RunSys measures the local limits benchmark results are judged against:
// loopback TCP throughput, sequential write of FileSize with one fsync at
// the end, sequential read of that file (from the page cache, likely), and
// 4 KiB writes each followed by fsync.
func RunSys(ctx context.Context, cfg SysConfig) ([]SysResult, error) {
	if cfg.Duration == 0 {
		cfg.Duration = 3 * time.Second
	}
	if cfg.FileSize == 0 {
		cfg.FileSize = 256 << 20
	}
	if cfg.Duration < 0 || cfg.FileSize < 1<<20 {
		return nil, errors.New("sys: duration must be positive and file size at least 1 MiB")
	}
	buf := make([]byte, 1<<20)
	_, _ = crand.Read(buf)
	var out []SysResult
	mibps := func(n int64, d time.Duration) float64 { return float64(n) / (1 << 20) / d.Seconds() }

	n, d, err := loopback(ctx, buf, cfg.Duration)
	if err != nil {
		return nil, fmt.Errorf("loopback tcp: %w", err)
	}
	out = append(out, SysResult{Name: "loopback TCP", Value: mibps(n, d), Unit: "MiB/s", Note: "one connection, 1 MiB writes"})

	f, err := os.CreateTemp(cfg.Dir, "coffer-bench-sys-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	start := time.Now()
	for w := int64(0); w < cfg.FileSize; w += int64(len(buf)) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if _, err := f.Write(buf[:min(int64(len(buf)), cfg.FileSize-w)]); err != nil {
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	out = append(out, SysResult{Name: "disk sequential write + fsync", Value: mibps(cfg.FileSize, time.Since(start)), Unit: "MiB/s",
		Note: fmt.Sprintf("%s in %s", fmtSize(cfg.FileSize), filepath.Dir(f.Name()))})

	start = time.Now()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	rn, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
	if err != nil {
		return nil, err
	}
	out = append(out, SysResult{Name: "disk sequential read", Value: mibps(rn, time.Since(start)), Unit: "MiB/s", Note: "likely from the page cache"})

	small, err := os.CreateTemp(cfg.Dir, "coffer-bench-sys-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(small.Name())
	defer small.Close()
	ops := 0
	start = time.Now()
	for time.Since(start) < cfg.Duration && ctx.Err() == nil {
		if _, err := small.Write(buf[:4096]); err != nil {
			return nil, err
		}
		if err := small.Sync(); err != nil {
			return nil, err
		}
		ops++
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out = append(out, SysResult{Name: "4 KiB write + fsync", Value: float64(ops) / time.Since(start).Seconds(), Unit: "ops/s", Note: "appending to one file"})
	return out, nil
}

// loopback sends buf repeatedly over a loopback TCP connection for d and
// returns the bytes received and the time taken.
func loopback(ctx context.Context, buf []byte, d time.Duration) (int64, time.Duration, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	type result struct {
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		rbuf := make([]byte, len(buf))
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{c}, rbuf)
		got <- result{n, err}
	}()
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, 0, err
		}
	}
	if err := c.Close(); err != nil {
		return 0, 0, err
	}
	r := <-got
	elapsed := time.Since(start)
	if r.err != nil {
		return 0, 0, r.err
	}
	return r.n, elapsed, ctx.Err()
}

// WriteSys writes the results of RunSys as a markdown table.
func WriteSys(w io.Writer, rs []SysResult) error {
	if _, err := fmt.Fprint(w, "| Test | Result | Note |\n|---|---:|---|\n"); err != nil {
		return err
	}
	for _, r := range rs {
		if _, err := fmt.Fprintf(w, "| %s | %.1f %s | %s |\n", r.Name, r.Value, r.Unit, r.Note); err != nil {
			return err
		}
	}
	return nil
}
