package s3api

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCompatibilityDoc fails if docs/s3-compatibility.md is not what
// RenderCompatibility makes from the op table; -update rewrites it.
func TestCompatibilityDoc(t *testing.T) {
	var b bytes.Buffer
	if err := RenderCompatibility(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "s3-compatibility.md")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s (run with -update to create it): %v", path, err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("%s is stale: run go test ./internal/s3api -run TestCompatibilityDoc -update\n--- got\n%s", path, b.Bytes())
	}
	for _, o := range ops {
		if !bytes.Contains(want, []byte("| "+o.name+" |")) {
			t.Errorf("%s does not list %s", path, o.name)
		}
	}
}
