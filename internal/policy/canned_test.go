package policy

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestCannedGolden pins the canned documents: a change shows up as a diff
// of testdata/canned/*.json (rewrite them with go test -update).
func TestCannedGolden(t *testing.T) {
	names := CannedNames()
	if want := []string{"admin", "readonly", "readwrite", "writeonly"}; !slices.Equal(names, want) {
		t.Fatalf("CannedNames() = %q, want %q", names, want)
	}
	for _, name := range names {
		p, ok := Canned(name)
		if !ok {
			t.Fatalf("Canned(%q) not found", name)
		}
		path := filepath.Join("testdata", "canned", name+".json")
		if *update {
			if err := os.WriteFile(path, p.Raw(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Raw(); string(got) != string(want) {
			t.Errorf("canned %s:\n%s\nwant (%s):\n%s", name, got, path, want)
		}
		if _, err := ParseIdentity(p.Raw()); err != nil {
			t.Errorf("canned %s does not re-parse: %v", name, err)
		}
	}
	if _, ok := Canned("root"); ok {
		t.Errorf(`Canned("root") found`)
	}
}

// TestCannedDecisions is what each canned policy lets a user do.
func TestCannedDecisions(t *testing.T) {
	type check struct {
		action, resource string
		want             Decision
	}
	na := NotApplicable
	for name, checks := range map[string][]check{
		"readonly": {
			{"s3:ListAllMyBuckets", "", Allow},
			{"s3:ListBucket", bktARN, Allow},
			{"s3:ListBucketVersions", bktARN, Allow},
			{"s3:GetBucketLocation", bktARN, Allow},
			{"s3:GetBucketVersioning", bktARN, Allow},
			{"s3:GetObject", objARN, Allow},
			{"s3:GetObjectVersion", objARN, Allow},
			{"s3:GetObjectAcl", objARN, Allow},
			{"s3:GetObjectAttributes", objARN, Allow},
			{"s3:PutObject", objARN, na},
			{"s3:DeleteObject", objARN, na},
			{"s3:CreateBucket", bktARN, na},
			{"s3:DeleteBucket", bktARN, na},
			{"s3:GetBucketPolicy", bktARN, na},
			{"s3:PutBucketPolicy", bktARN, na},
			{AdminListUsers, "", na},
		},
		"writeonly": {
			{"s3:PutObject", objARN, Allow},
			{"s3:AbortMultipartUpload", objARN, Allow},
			{"s3:ListMultipartUploadParts", objARN, Allow},
			{"s3:GetBucketLocation", bktARN, Allow},
			{"s3:GetObject", objARN, na},
			{"s3:ListBucket", bktARN, na},
			{"s3:ListAllMyBuckets", "", na},
			{"s3:DeleteObject", objARN, na},
			{AdminCreateUser, "", na},
		},
		"readwrite": {
			{"s3:ListAllMyBuckets", "", Allow},
			{"s3:CreateBucket", bktARN, Allow},
			{"s3:GetObject", objARN, Allow},
			{"s3:PutObject", objARN, Allow},
			{"s3:DeleteObject", objARN, Allow},
			{"s3:PutBucketPolicy", bktARN, Allow},
			{AdminCreateUser, "", na},
			{AdminServerInfo, "", na},
		},
		"admin": {
			{"s3:ListAllMyBuckets", "", Allow},
			{"s3:DeleteBucket", bktARN, Allow},
			{"s3:PutObject", objARN, Allow},
			{AdminCreateUser, "", Allow},
			{AdminRunGC, "", Allow},
			{AdminServerInfo, "", Allow},
		},
	} {
		p, _ := Canned(name)
		for _, c := range checks {
			ctx := req(c.action, c.resource)
			if got := p.Evaluate(&ctx); got != c.want {
				t.Errorf("canned %s: Evaluate(%s on %q) = %v, want %v", name, c.action, c.resource, got, c.want)
			}
		}
	}
}
