// Package migrate moves a Coffer store — its metadata and its blocks — to
// other engines: `coffer admin migrate`, from a single node's Pebble
// metadata and block files to PostgreSQL and an upstream S3 bucket, for
// scale-out. It is offline (nothing serves either store while it runs:
// the source is marked from the start, and servers refuse it), resumable
// (the progress is stored in the target's metadata with each batch it
// copies; a run refuses to go on if the source changed since the
// migration began) and verifying (every object version and part is read
// back from the target and checked against its ETag and checksum, and
// the target must hold exactly the source's key-value pairs).
//
// It works over meta.DB and blob.Store only; the server package opens the
// concrete stores. See docs/design/0011-postgres-metadata.md ("Moving a single node").
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/meta"
)

// ErrMismatch is wrapped by the error of a migration whose verification
// found records whose data, read back from the target, does not match.
var ErrMismatch = errors.New("data read back from the target does not match its records")

// ErrSourceChanged is wrapped by the error of a run refused because the
// source is not what it was when the migration began: something wrote to
// it in between (a node was started on it), and what was copied before
// no longer matches it.
var ErrSourceChanged = errors.New("the source changed since the migration began")

// ErrIncomplete is wrapped by the error of a migration whose target, once
// verified, does not hold the key-value pairs the source held.
var ErrIncomplete = errors.New("the target does not hold what the source holds")

// Defaults of Config.
const (
	DefaultWorkers = 4
	// A copy batch: one transaction of the target, the unit of progress.
	// An interruption repeats at most one batch's block copies.
	DefaultBatchKeys       = 500
	defaultBatchBytes      = 4 << 20
	defaultBatchBlockBytes = 256 << 20
	// verifyPage is the number of records verified between two saves of
	// the progress.
	verifyPage = 64
)

// Config configures a migration.
type Config struct {
	// Source is the store copied; SourceBlobs its blocks.
	Source      *meta.DB
	SourceBlobs blob.Store
	// Target receives the copy and keeps its progress; TargetBlobs its
	// blocks, under the same keys.
	Target      *meta.DB
	TargetBlobs blob.Store
	// SourceID identifies the source (its storage path): a target
	// holding a migration from another source is refused.
	SourceID string
	// TargetID identifies TargetBlobs: its bucket and prefix. A migration
	// begun with another is not resumed, which would split its blocks
	// between two places. TargetEndpoint is where the bucket is reached;
	// it may differ from one run to the next.
	TargetID       string
	TargetEndpoint string
	// AcceptMismatches ends a verification that finds records whose data
	// does not match in meta.MigrationDone rather than MigrationFailed:
	// for a source whose damage cannot be repaired, whose objects then
	// stay as they were copied (damaged, or without their blocks).
	AcceptMismatches bool
	// Workers bounds concurrent block copies and reads; 0 means
	// DefaultWorkers.
	Workers int
	// Limits bound a copy batch; zero fields take the defaults.
	Limits meta.CopyLimits
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Claim, if set, claims TargetBlobs's prefix for Target (gateway
	// mode's claim, see s3blob.Store.Claim). Run calls it once the target
	// is found fit for this migration and before anything is marked or
	// copied, so that a run refused for its target leaves no claim on a
	// prefix no migration uses, and one refused for its claim leaves the
	// source unmarked.
	Claim func(ctx context.Context) error
}

// Run migrates cfg.Source into cfg.Target, or resumes the migration the
// target holds, and returns its final state. A finished migration is not
// repeated: Run returns its state. A verification that finds mismatches
// ends in meta.MigrationFailed with an error wrapping ErrMismatch that
// lists them (unless cfg.AcceptMismatches); a later Run verifies
// everything again. A record whose data does not match has its blocks
// copied from the source again and is checked once more before it counts
// as a mismatch (the source may have been repaired), in every
// verification.
func Run(ctx context.Context, cfg Config) (meta.Migration, error) {
	r, err := newRun(cfg)
	if err != nil {
		return meta.Migration{}, err
	}
	m, err := r.start(ctx)
	if err != nil {
		return m, err
	}
	for m.Phase == meta.MigrationCopying {
		done, err := cfg.Target.CopyFrom(ctx, cfg.Source, &m, r.limits, r.copyBlocks)
		if err != nil {
			return m, fmt.Errorf("copy: %w", err)
		}
		r.log.Info("migration copied a batch", "keys", m.Keys, "blocks", m.Blocks, "block_bytes", m.BlockBytes, "done", done)
	}
	if m.Phase == meta.MigrationFailed {
		if err := r.retry(ctx, &m); err != nil {
			return m, err
		}
	}
	for m.Phase == meta.MigrationVerifying {
		if err := r.verifyPage(ctx, &m); err != nil {
			return m, fmt.Errorf("verify: %w", err)
		}
	}
	if m.Phase == meta.MigrationFailed {
		if !cfg.AcceptMismatches {
			return m, mismatchError(&m)
		}
		r.log.Warn("migration done with records whose data does not match, as asked (accept mismatches): they stay as copied", "mismatched", m.Mismatched)
		m.Phase = meta.MigrationDone
		if err := cfg.Target.SaveMigration(ctx, &m); err != nil {
			return m, fmt.Errorf("write the target: %w", err)
		}
	}
	if !r.wasDone {
		// The source stays marked: a node started on it would serve an
		// old copy.
		mk := meta.MigrationMark{Target: m.TargetEndpoint + "/" + m.Target, Started: m.Started, Done: true}
		if err := cfg.Source.SetMigrationMark(ctx, mk); err != nil {
			return m, fmt.Errorf("mark the source: %w", err)
		}
	}
	r.log.Info("migration done", "keys", m.Keys, "blocks", m.Blocks, "verified", m.Verified)
	return m, nil
}

type run struct {
	cfg     Config
	log     *slog.Logger
	limits  meta.CopyLimits
	workers int
	now     func() time.Time
	wasDone bool // the migration was done before this run
}

func newRun(cfg Config) (*run, error) {
	if cfg.Source == nil || cfg.Target == nil || cfg.SourceBlobs == nil || cfg.TargetBlobs == nil {
		return nil, errors.New("migrate: source and target stores are required")
	}
	if cfg.SourceID == "" {
		return nil, errors.New("migrate: no source ID")
	}
	r := &run{cfg: cfg, log: cfg.Logger, limits: cfg.Limits, workers: cfg.Workers, now: cfg.Now}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.workers <= 0 {
		r.workers = DefaultWorkers
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.limits.Keys <= 0 {
		r.limits.Keys = DefaultBatchKeys
	}
	if r.limits.Bytes <= 0 {
		r.limits.Bytes = defaultBatchBytes
	}
	if r.limits.BlockBytes <= 0 {
		r.limits.BlockBytes = defaultBatchBlockBytes
	}
	return r, nil
}

// start returns the target's migration, beginning one if it has none.
// claim runs Config.Claim, if set.
func (r *run) claim(ctx context.Context) error {
	if r.cfg.Claim == nil {
		return nil
	}
	return r.cfg.Claim(ctx)
}

func (r *run) start(ctx context.Context) (meta.Migration, error) {
	m, err := r.cfg.Target.Migration(ctx)
	switch {
	case errors.Is(err, meta.ErrNotFound):
		has, err := r.cfg.Target.HasRecords(ctx)
		if err != nil {
			return m, fmt.Errorf("read the target: %w", err)
		}
		if has {
			return m, errors.New("the target already holds buckets, IAM state or bucket policies that no migration wrote: migrate into an empty database")
		}
		if err := r.claim(ctx); err != nil {
			return m, err
		}
		m = meta.Migration{Source: r.cfg.SourceID, Target: r.cfg.TargetID, TargetEndpoint: r.cfg.TargetEndpoint, Phase: meta.MigrationCopying, Started: r.now().UTC()}
		// Marked first: from here on no server opens the source.
		if err := r.mark(ctx, &m); err != nil {
			return m, err
		}
		if m.SourceDigest, err = r.cfg.Source.Digest(ctx); err != nil {
			return m, fmt.Errorf("read the source: %w", err)
		}
		if err := r.cfg.Target.SaveMigration(ctx, &m); err != nil {
			return m, fmt.Errorf("write the target: %w", err)
		}
		r.log.Info("migration started", "source", m.Source, "target", m.Target, "target_endpoint", m.TargetEndpoint)
	case err != nil:
		return m, fmt.Errorf("read the target's migration state: %w", err)
	case m.Source != r.cfg.SourceID:
		return m, fmt.Errorf("the target holds a migration from %s, not from %s", m.Source, r.cfg.SourceID)
	case m.Target != r.cfg.TargetID:
		return m, fmt.Errorf("the target database holds a migration whose blocks go to %s, not to %s: run it again with the same target bucket and prefix", m.Target, r.cfg.TargetID)
	case m.Phase == meta.MigrationDone:
		r.wasDone = true
		r.log.Info("migration already done", "source", m.Source, "keys", m.Keys, "verified", m.Verified)
	default:
		now, err := r.cfg.Source.Digest(ctx)
		if err != nil {
			return m, fmt.Errorf("read the source: %w", err)
		}
		if diff := meta.DigestDiff(m.SourceDigest, now, "when it began"); diff != "" {
			return m, fmt.Errorf("%w (%s): was a node started on it? What was copied before no longer matches it: start over into an empty database", ErrSourceChanged, diff)
		}
		if err := r.claim(ctx); err != nil {
			return m, err
		}
		if m.TargetEndpoint != r.cfg.TargetEndpoint {
			r.log.Warn("migration resumed at another endpoint of the target bucket: it must be the same bucket", "target", m.Target, "was", m.TargetEndpoint, "target_endpoint", r.cfg.TargetEndpoint)
			m.TargetEndpoint = r.cfg.TargetEndpoint // saved with the progress
		}
		// Marked again in case the mark was removed (coffer admin
		// migrate --abandon) while nothing wrote to the source.
		if err := r.mark(ctx, &m); err != nil {
			return m, err
		}
		r.log.Info("migration resumed", "source", m.Source, "phase", m.Phase, "keys", m.Keys, "verified", m.Verified)
	}
	return m, nil
}

// mark marks the source as the source of m, in progress: a server
// refuses to open it until the mark is removed.
func (r *run) mark(ctx context.Context, m *meta.Migration) error {
	if err := r.cfg.Source.SetMigrationMark(ctx, meta.MigrationMark{Target: m.TargetEndpoint + "/" + m.Target, Started: m.Started}); err != nil {
		return fmt.Errorf("mark the source: %w", err)
	}
	return nil
}

// copyBlocks copies blocks from the source's block store to the target's,
// under the same keys. A block missing from the source, or shorter there
// than its record says (a truncated file), is logged and skipped: the
// verification then reports the records that need it, with every other
// damaged record, rather than the first stopping the copy for good.
func (r *run) copyBlocks(ctx context.Context, blocks []meta.Block) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(r.workers)
	for _, b := range blocks {
		g.Go(func() error { return r.copyBlock(ctx, b) })
	}
	return g.Wait()
}

func (r *run) copyBlock(ctx context.Context, b meta.Block) error {
	rc, err := r.cfg.SourceBlobs.Get(ctx, b.Key, 0, b.Size)
	if errors.Is(err, blob.ErrNotFound) {
		r.log.Warn("block missing from the source: not copied", "block", b.Key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read block %s from the source: %w", b.Key, err)
	}
	defer rc.Close()
	src := &countingReader{r: rc}
	err = r.cfg.TargetBlobs.Put(ctx, b.Key, src, b.Size)
	if errors.Is(err, blob.ErrSize) && src.eof && src.n < b.Size {
		r.log.Warn("block shorter on the source than its record says: not copied", "block", b.Key, "size", b.Size, "source_bytes", src.n)
		return nil
	}
	if err != nil {
		return fmt.Errorf("write block %s to the target: %w", b.Key, err)
	}
	return nil
}

// countingReader counts the bytes read through it and notes the end.
type countingReader struct {
	r   io.Reader
	n   int64
	eof bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err == io.EOF {
		c.eof = true
	}
	return n, err
}

// retry prepares a new verification after one that failed: everything
// is verified again, and the verification copies the blocks of each
// record that does not match again before it checks it once more
// (recheck), so that blocks restored on the source since are picked up,
// however many records did not match.
func (r *run) retry(ctx context.Context, m *meta.Migration) error {
	r.log.Info("migration verification failed before: verifying again, with the blocks of records that do not match copied again", "mismatched", m.Mismatched)
	m.Phase, m.Cursor, m.Verified, m.Mismatches, m.Mismatched = meta.MigrationVerifying, nil, 0, nil, 0
	if err := r.cfg.Target.SaveMigration(ctx, m); err != nil {
		return fmt.Errorf("write the target: %w", err)
	}
	return nil
}

func recordBlocks(rec *meta.StoredRecord) []meta.Block {
	if rec.Part != nil {
		return rec.Part.Blocks
	}
	return rec.Version.Blocks
}

// verifyPage verifies the next page of records and saves the progress.
func (r *run) verifyPage(ctx context.Context, m *meta.Migration) error {
	recs, next, err := r.cfg.Target.Records(ctx, m.Cursor, verifyPage)
	if err != nil {
		return err
	}
	if next == nil {
		// The last page: the migration ends with it, and must not end
		// done unless the target holds every pair the source held.
		got, err := r.cfg.Target.Digest(ctx)
		if err != nil {
			return fmt.Errorf("read the target: %w", err)
		}
		if diff := meta.DigestDiff(m.SourceDigest, got, "the source"); diff != "" {
			return fmt.Errorf("%w (%s): was something else writing to it? Start over into an empty database", ErrIncomplete, diff)
		}
	}
	problems := make([]string, len(recs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.workers)
	for i := range recs {
		g.Go(func() error {
			p, err := r.verify(gctx, &recs[i])
			if err == nil && p != "" {
				p, err = r.recheck(gctx, &recs[i])
			}
			problems[i] = p
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, p := range problems {
		if p == "" {
			m.Verified++
			continue
		}
		r.log.Error("migrated record does not match", "record", recs[i].String(), "problem", p)
		m.Mismatched++
		if len(m.Mismatches) < meta.MaxMismatches {
			m.Mismatches = append(m.Mismatches, meta.Mismatch{Key: recs[i].Key, Record: recs[i].String(), Problem: p})
		}
	}
	m.Cursor = next
	if next == nil {
		m.Phase = meta.MigrationDone
		if m.Mismatched > 0 {
			m.Phase = meta.MigrationFailed
		}
	}
	if err := r.cfg.Target.SaveMigration(ctx, m); err != nil {
		return fmt.Errorf("write the target: %w", err)
	}
	r.log.Info("migration verified a page", "verified", m.Verified, "mismatched", m.Mismatched, "done", next == nil)
	return nil
}

// recheck copies the blocks of rec, whose data did not match, from the
// source again and verifies it once more: the source may have been
// repaired since the copy (or the copy damaged on its way). It returns
// what still does not match.
func (r *run) recheck(ctx context.Context, rec *meta.StoredRecord) (string, error) {
	for _, b := range recordBlocks(rec) {
		if err := r.copyBlock(ctx, b); err != nil {
			return "", fmt.Errorf("copy again: %w", err)
		}
	}
	return r.verify(ctx, rec)
}

// verify reads rec's data from the target and checks it against the
// record. It returns what does not match ("" if all does), or an error
// if the target cannot be read at all.
func (r *run) verify(ctx context.Context, rec *meta.StoredRecord) (string, error) {
	var (
		want     expected
		blocks   []meta.Block
		inline   bool
		partSums []string
	)
	if rec.Part != nil {
		p := rec.Part
		want = expected{size: p.Size, etag: p.ETag, checksum: p.Checksum}
		blocks = p.Blocks
	} else {
		o := rec.Version
		if o.DeleteMarker {
			return "", nil
		}
		want = expected{size: o.Size, etag: o.ETag, checksum: o.Checksum, parts: o.PartSizes}
		blocks, inline = o.Blocks, len(o.Blocks) == 0 && o.Size > 0
		partSums = o.PartChecksums
	}
	v, err := newVerifier(want, partSums)
	if err != nil {
		return err.Error(), nil
	}
	if inline {
		data, _, err := r.cfg.Target.RecordData(ctx, rec, nil)
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return fmt.Sprintf("inline data unreadable: %v", err), nil
		}
		_, _ = v.Write(data) // never fails
	}
	for _, b := range blocks {
		rc, err := r.cfg.TargetBlobs.Get(ctx, b.Key, 0, b.Size)
		if errors.Is(err, blob.ErrNotFound) {
			return fmt.Sprintf("block %s is missing from the target", b.Key), nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return fmt.Sprintf("block %s unreadable: %v", b.Key, err), nil
		}
		n, err := io.Copy(v, rc)
		rc.Close()
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return fmt.Sprintf("block %s unreadable after %d bytes: %v", b.Key, n, err), nil
		}
		if n != b.Size {
			return fmt.Sprintf("block %s holds %d bytes, its record says %d", b.Key, n, b.Size), nil
		}
	}
	return v.check(), nil
}

// mismatchError reports m's mismatches, the first ten by name.
func mismatchError(m *meta.Migration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d records", m.Mismatched, m.Mismatched+m.Verified)
	for i, mm := range m.Mismatches {
		if i == 10 {
			fmt.Fprintf(&b, "\n  … and %d more (the log lists every one)", m.Mismatched-10)
			break
		}
		fmt.Fprintf(&b, "\n  %s: %s", mm.Record, mm.Problem)
	}
	return fmt.Errorf("%w: %s", ErrMismatch, b.String())
}
