package version

import (
	"regexp"
	"runtime/debug"
	"testing"
)

func TestRender(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		Main:     debug.Module{Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}},
	}
	for _, tc := range []struct {
		name string
		v    string
		bi   *debug.BuildInfo
		want string
	}{
		{name: "linker wins", v: "v1.2.3", bi: bi, want: `^coffer v1\.2\.3 \(go\S+ \S+/\S+, 0123456789ab-dirty\)$`},
		{name: "module version", bi: bi, want: `^coffer v0\.3\.0 \(go\S+ \S+/\S+, 0123456789ab-dirty\)$`},
		{name: "clean tree", bi: &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}}, want: `^coffer devel \(go\S+ \S+/\S+, abc\)$`},
		{name: "devel", bi: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: `^coffer devel \(go\S+ \S+/\S+\)$`},
		{name: "no build info", want: `^coffer devel \(go\S+ \S+/\S+\)$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := render(tc.v, tc.bi); !regexp.MustCompile(tc.want).MatchString(got) {
				t.Errorf("render = %q, want it to match %s", got, tc.want)
			}
		})
	}
}

func TestVersionMatchesString(t *testing.T) {
	t.Parallel()
	if v, s := Version(), String(); !regexp.MustCompile(`^coffer ` + regexp.QuoteMeta(v) + ` \(`).MatchString(s) {
		t.Errorf("String() = %q does not carry Version() = %q", s, v)
	}
}
