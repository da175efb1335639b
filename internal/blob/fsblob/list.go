package fsblob

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// listBatch is how many directory entries List reads at a time, which bounds
// its memory per directory level.
const listBatch = 256

// List walks the tree under the root, skipping .tmp, and calls fn for every
// regular file whose path is a valid key with the given prefix. Only
// directories that can hold such keys are read: the walk starts at the
// prefix's directory part and descends only into subdirectories compatible
// with the prefix. See blob.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) error) error {
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = prefix[:i]
		// A prefix whose directory part is not a valid key path matches
		// no key; answering so without touching the filesystem also keeps
		// odd prefixes ("../", "/x/") away from it.
		if checkKey(start) != nil {
			return nil
		}
	}
	return s.walk(ctx, start, prefix, fn)
}

// walk lists dir, calling fn for matching files and recursing into
// directories that may hold matching keys. Filesystem errors are wrapped;
// fn's errors are returned as they are.
func (s *Store) walk(ctx context.Context, dir, prefix string, fn func(key string) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %q: %w", prefix, err)
	}
	d, err := s.root.Open(dir)
	if isNotExist(err) {
		return nil // the prefix's directory does not exist, or just went away
	}
	if err != nil {
		return fmt.Errorf("list %q: %w", prefix, err)
	}
	defer d.Close()
	for {
		ents, rerr := d.ReadDir(listBatch)
		for _, e := range ents {
			name := e.Name()
			if dir == "." && name == tmpDir {
				continue
			}
			p := name
			if dir != "." {
				p = dir + "/" + name
			}
			switch {
			case e.IsDir():
				sub := p + "/"
				if strings.HasPrefix(sub, prefix) || strings.HasPrefix(prefix, sub) {
					if err := s.walk(ctx, p, prefix, fn); err != nil {
						return err
					}
				}
			case e.Type().IsRegular():
				if strings.HasPrefix(p, prefix) && checkKey(p) == nil {
					if err := fn(p); err != nil {
						return err
					}
				}
			}
		}
		if rerr == io.EOF || isNotExist(rerr) {
			// ENOTDIR: the prefix's directory part names a file.
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("list %q: %w", prefix, rerr)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("list %q: %w", prefix, err)
		}
	}
}
