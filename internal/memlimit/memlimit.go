// Package memlimit sets the Go runtime's soft memory limit from the memory
// limit of the cgroup the process runs in, so that a server confined to,
// say, a 200 MiB container collects garbage harder as it nears the limit
// instead of being killed by the kernel. The Go runtime sizes GOMAXPROCS
// to a container's CPU quota by itself, but not its memory limit.
//
// An explicit GOMEMLIMIT in the environment always wins; so does the
// absence of a limit (the runtime's default, no limit).
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
)

// Fraction of the cgroup's limit given to the Go runtime. The rest is
// for what the runtime does not count: the kernel's accounting of this
// process's page cache and socket buffers, and memory outside the Go heap.
const Fraction = 0.9

// noLimit is what cgroup v1 reports for an unlimited group: the largest
// page-aligned int64. Anything at or above 1<<62 is treated as unlimited.
const noLimit = 1 << 62

// Limit is a cgroup memory limit and where it was read.
type Limit struct {
	Bytes int64  // the cgroup's limit
	File  string // the file it was read from, for the log
}

// Cgroup finds the memory limit of the cgroup the process belongs to, as
// described by procSelfCgroup (the contents of /proc/self/cgroup), under
// the cgroup file systems mounted in fsys (rooted at "/"; os.DirFS("/") in
// production). It knows cgroup v2 (memory.max) and v1
// (memory/memory.limit_in_bytes), nested paths, and containers whose
// cgroup namespace shows their own group as the root. It returns ok false
// when no limit is set or none can be read.
func Cgroup(fsys fs.FS, procSelfCgroup string) (l Limit, ok bool, err error) {
	var v1, v2 string
	sc := bufio.NewScanner(strings.NewReader(procSelfCgroup))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case hasController(f[1], "memory"):
			v1 = f[2]
		}
	}
	// The smallest limit on the way from the group to the root binds;
	// with a cgroup namespace the group itself is the mount's root.
	best, bestFile := int64(math.MaxInt64), ""
	try := func(mount, rel, file string) error {
		for dir := path.Join(mount, rel); ; dir = path.Dir(dir) {
			p := strings.TrimPrefix(path.Join(dir, file), "/")
			n, found, err := readLimit(fsys, p)
			if err != nil {
				return err
			}
			if found && n < best {
				best, bestFile = n, "/"+p
			}
			if dir == mount || dir == "/" || dir == "." {
				return nil
			}
		}
	}
	if v1 != "" {
		if err := try("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"); err != nil {
			return Limit{}, false, err
		}
	}
	if v2 != "" {
		if err := try("/sys/fs/cgroup", v2, "memory.max"); err != nil {
			return Limit{}, false, err
		}
		if err := try("/sys/fs/cgroup/unified", v2, "memory.max"); err != nil {
			return Limit{}, false, err
		}
	}
	if bestFile == "" {
		return Limit{}, false, nil
	}
	return Limit{Bytes: best, File: bestFile}, true, nil
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads one limit file: "max" or a huge number is no limit, a
// missing file is not an error.
func readLimit(fsys fs.FS, name string) (n int64, found bool, err error) {
	b, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Larger than int64 is unlimited too.
		if errors.Is(err, strconv.ErrRange) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("memlimit: %s: %w", name, err)
	}
	if n <= 0 || n >= noLimit {
		return 0, false, nil
	}
	return n, true, nil
}

// Decision is what Apply did.
type Decision struct {
	Set    bool   // the runtime's limit was set from the cgroup
	Limit  int64  // the runtime's limit set, when Set
	Reason string // why, for the log
}

// Apply sets the runtime's soft memory limit to Fraction of the cgroup's
// limit, unless GOMEMLIMIT is set (getenv) or there is no cgroup limit.
// setLimit is debug.SetMemoryLimit in production.
func Apply(getenv func(string) string, fsys fs.FS, procSelfCgroup string, setLimit func(int64) int64) (Decision, error) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		return Decision{Reason: "GOMEMLIMIT=" + v + " is set"}, nil
	}
	l, ok, err := Cgroup(fsys, procSelfCgroup)
	if err != nil {
		return Decision{}, err
	}
	if !ok {
		return Decision{Reason: "no cgroup memory limit"}, nil
	}
	limit := int64(float64(l.Bytes) * Fraction)
	setLimit(limit)
	return Decision{Set: true, Limit: limit, Reason: fmt.Sprintf("%.0f%% of the cgroup limit %d in %s", Fraction*100, l.Bytes, l.File)}, nil
}

// ApplyFromSystem is Apply on this machine: the real environment,
// /proc/self/cgroup and the root file system. On systems without cgroups
// it does nothing.
func ApplyFromSystem(setLimit func(int64) int64) (Decision, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Decision{Reason: "no /proc/self/cgroup"}, nil
	}
	return Apply(os.Getenv, os.DirFS("/"), string(b), setLimit)
}
