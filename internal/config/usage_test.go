package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite docs/config.md")

const docPath = "../../docs/config.md"

// TestConfigDoc fails when docs/config.md is not what the registry
// generates; go test ./internal/config -update rewrites it.
func TestConfigDoc(t *testing.T) {
	var b bytes.Buffer
	if err := writeMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(docPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/config -update)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("%s is stale; run go test ./internal/config -update (-file +generated):\n%s", docPath, diff)
	}
	var c Config
	for _, s := range settings(&c) {
		if !strings.Contains(b.String(), "| `--"+s.name+"` | `"+envName(s.name)+"` |") {
			t.Errorf("generated doc has no row for --%s", s.name)
		}
	}
}

// TestDocExampleIsDefault checks that the example file in the doc loads to
// exactly Default(): the documented defaults are the real ones.
func TestDocExampleIsDefault(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := writeMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(b.String(), "```toml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no toml example in the generated doc")
	}
	p := filepath.Join(t.TempDir(), "example.toml")
	if err := os.WriteFile(p, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load([]string{"--config", p}, env(nil))
	if err != nil {
		t.Fatalf("Load(example) error = %v\n%s", err, example)
	}
	want := Default()
	want.File = p
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("example file mismatch (-default +example):\n%s", diff)
	}
	// Every file-settable flag appears in the example.
	var c Config
	for _, s := range settings(&c) {
		key := s.name[strings.LastIndexByte(s.name, '.')+1:] + " = "
		if !s.noFile && !strings.Contains(example, key) {
			t.Errorf("example lacks %q", key)
		}
	}
}
