// Package archtest enforces the import graph of docs/architecture.md as a
// test, after pebble's internal/lint: dependencies flow one way, HTTP →
// service → metadata and block-store interfaces → implementations, and
// third-party engines stay behind the one package that owns them.
package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/coffer-s3/coffer/"

type pkg struct {
	ImportPath string
	Imports    []string // non-test imports
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-json=ImportPath,Imports", mod+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// rule forbids packages matching from (a prefix of the import path below
// the module, "" for all) to import anything with one of the given prefixes
// (full import paths or module-relative ones ending in the package name).
type rule struct {
	name   string
	from   []string
	forbid []string
	except []string // importers exempt from the rule
}

var rules = []rule{
	{
		name:   "leaf packages import nothing of ours but s3err",
		from:   []string{"internal/s3err", "internal/sigv4", "internal/checksum", "internal/s3xml", "internal/bytesize", "internal/policy", "internal/cors", "internal/acl", "internal/memlimit", "internal/procs", "internal/version", "internal/postpolicy", "internal/diskspace", "internal/httprec", "internal/secretfile", "internal/redact"},
		forbid: []string{mod + "internal/"},
		except: nil,
	},
	{
		name:   "storage layers never see HTTP or S3 handlers",
		from:   []string{"internal/meta", "internal/blob", "internal/objects", "internal/migrate"},
		forbid: []string{"net/http", mod + "internal/s3api", mod + "internal/server", mod + "internal/cli", mod + "internal/sigv4", mod + "internal/s3xml"},
		// The gateway's block store is an HTTP client of its upstream.
		except: []string{"internal/blob/s3blob"},
	},
	{
		// migrate works over the seams; server opens the concrete stores.
		name:   "migrate sees only the seams",
		from:   []string{"internal/migrate"},
		forbid: []string{mod + "internal/objects", mod + "internal/iam", mod + "internal/blob/"},
	},
	{
		name:   "blob stores and meta do not depend on the object service",
		from:   []string{"internal/meta", "internal/blob"},
		forbid: []string{mod + "internal/objects", mod + "internal/iam"},
	},
	{
		name:   "iam decides without storage or HTTP; the server gives it a Store",
		from:   []string{"internal/iam", "internal/policy"},
		forbid: []string{"net/http", mod + "internal/meta", mod + "internal/objects", mod + "internal/blob", mod + "internal/s3api", mod + "internal/sigv4"},
	},
	{
		name:   "the admin API reaches storage only through iam, the object service and the GC function it is given",
		from:   []string{"internal/adminapi"},
		forbid: []string{mod + "internal/meta", mod + "internal/blob", mod + "internal/s3api"},
	},
	{
		name: "the lifecycle worker acts only through the object service and reports through its Observer",
		from: []string{"internal/lifecycle"},
		forbid: []string{"net/http", mod + "internal/meta", mod + "internal/blob", mod + "internal/s3api", mod + "internal/s3xml",
			mod + "internal/sigv4", mod + "internal/audit", mod + "internal/metrics", mod + "internal/adminapi",
			"github.com/cockroachdb/pebble"},
	},
	{
		name:   "the HTTP layer reaches storage only through the object service",
		from:   []string{"internal/s3api"},
		forbid: []string{mod + "internal/meta", mod + "internal/blob", "github.com/cockroachdb/pebble"},
	},
	{
		name: "metrics sees requests only through s3api's records, never storage or the wiring",
		from: []string{"internal/metrics"},
		forbid: []string{mod + "internal/meta", mod + "internal/blob", mod + "internal/objects", mod + "internal/iam",
			mod + "internal/sigv4", mod + "internal/adminapi", mod + "internal/server", mod + "internal/cli", mod + "internal/config",
			"github.com/cockroachdb/pebble"},
	},
	{
		name: "audit sees requests only through s3api's records, never storage or the wiring",
		from: []string{"internal/audit"},
		forbid: []string{mod + "internal/meta", mod + "internal/blob", mod + "internal/objects", mod + "internal/iam",
			mod + "internal/sigv4", mod + "internal/adminapi", mod + "internal/server", mod + "internal/cli", mod + "internal/config",
			"github.com/cockroachdb/pebble"},
	},
	{
		name: "the web console acts only through iam and the object service, never storage, S3 handlers or the wiring",
		from: []string{"internal/console"},
		forbid: []string{mod + "internal/meta", mod + "internal/blob", mod + "internal/s3api", mod + "internal/adminapi",
			mod + "internal/metrics", mod + "internal/lifecycle", "github.com/cockroachdb/pebble", "net/http/pprof"},
	},
	{
		name:   "SQLite stays inside audit",
		from:   []string{""},
		forbid: []string{"modernc.org/sqlite"},
		except: []string{"internal/audit"},
	},
	{
		// meta hands the cluster's audit log its PostgreSQL pool as a
		// *sql.DB (DB.SQL), so that pgx stays inside meta.
		name:   "database/sql only in audit and meta",
		from:   []string{""},
		forbid: []string{"database/sql"},
		except: []string{"internal/audit", "internal/meta"},
	},
	{
		name:   "the Prometheus client stays inside metrics",
		from:   []string{""},
		forbid: []string{"github.com/prometheus"},
		except: []string{"internal/metrics"},
	},
	{
		// pgtest, under meta, starts PostgreSQL for tests and makes
		// their schemas.
		name:   "pgx stays inside meta",
		from:   []string{""},
		forbid: []string{"github.com/jackc/pgx"},
		except: []string{"internal/meta"},
	},
	{
		name:   "pebble stays inside meta",
		from:   []string{""},
		forbid: []string{"github.com/cockroachdb/pebble"},
		except: []string{"internal/meta"},
	},
	{
		name:   "the AWS SDK is a test client only (and may back s3blob)",
		from:   []string{""},
		forbid: []string{"github.com/aws/aws-sdk-go-v2"},
		except: []string{"internal/blob/s3blob"},
	},
	{
		name:   "only the CLI and the composition root wire everything",
		from:   []string{""},
		forbid: []string{mod + "internal/server", mod + "internal/cli", mod + "internal/config"},
		except: []string{"cmd/coffer", "internal/cli", "internal/server", "internal/e2e"},
	},
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") || (strings.HasSuffix(p, "/") && strings.HasPrefix(s, p)) {
			return true
		}
	}
	return false
}

func TestImportGraph(t *testing.T) {
	pkgs := listPackages(t)
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			for _, p := range pkgs {
				rel := strings.TrimPrefix(p.ImportPath, mod)
				if !matchesFrom(rel, r.from) || hasPrefix(rel, r.except) {
					continue
				}
				for _, imp := range p.Imports {
					if imp == mod+"internal/s3err" {
						continue
					}
					if hasPrefix(imp, r.forbid) && !hasPrefix(strings.TrimPrefix(imp, mod), []string{rel}) {
						t.Errorf("%s imports %s", rel, imp)
					}
				}
			}
		})
	}
}

func matchesFrom(rel string, from []string) bool {
	for _, f := range from {
		if f == "" || rel == f || strings.HasPrefix(rel, f+"/") {
			return true
		}
	}
	return false
}

func TestRulesMatchSomething(t *testing.T) {
	// A rule whose from-set matches no package protects nothing; catch
	// renames that would silently disable it.
	pkgs := listPackages(t)
	for _, r := range rules {
		found := false
		for _, p := range pkgs {
			if matchesFrom(strings.TrimPrefix(p.ImportPath, mod), r.from) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("rule %q matches no package", r.name)
		}
	}
}
