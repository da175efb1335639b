// Package version says which Coffer this is: the release version set at
// link time, else the module version from the build information, and the
// source revision. `coffer version` prints it; coffer_build_info reports it.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// release is the release version, set at link time:
//
//	go build -ldflags "-X github.com/coffer-s3/coffer/internal/version.release=v1.2.3" ./cmd/coffer
//
// It is the one package-level variable that is not a constant, a sentinel
// or a lookup table: the linker's -X can set only a variable. Nothing
// writes it at run time.
var release string

// Version returns the release version ("v1.2.3"), or "devel" for a
// development build.
func Version() string {
	v, _ := resolve(release, buildInfo())
	return v
}

// String renders "coffer <version> (<go version> <os>/<arch>[, <revision>])".
func String() string {
	return render(release, buildInfo())
}

func buildInfo() *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi
}

// resolve picks the version, preferring the link-time v, then the module
// version from bi, and the short source revision ("-dirty" when the tree
// had uncommitted changes).
func resolve(v string, bi *debug.BuildInfo) (version, revision string) {
	if bi != nil {
		if v == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if len(revision) > 12 {
			revision = revision[:12]
		}
		if revision != "" && modified {
			revision += "-dirty"
		}
	}
	if v == "" {
		v = "devel"
	}
	return v, revision
}

func render(v string, bi *debug.BuildInfo) string {
	v, rev := resolve(v, bi)
	s := fmt.Sprintf("coffer %s (%s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if rev != "" {
		s += ", " + rev
	}
	return s + ")"
}
