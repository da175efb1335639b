package fsblob

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/blob"
)

// Store IDs of two metadata stores.
const (
	storeA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	storeB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func owner(id string) blob.Owner {
	return blob.Owner{StoreID: id, Claimed: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC), Version: "v9.9.9"}
}

// readClaimFile returns the claim file of root, parsed.
func readClaimFile(t *testing.T, root string) blob.Owner {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, blob.ClaimName))
	if err != nil {
		t.Fatal(err)
	}
	var o blob.Owner
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("claim file %q: %v", b, err)
	}
	return o
}

// A second Open of a root that an open Store holds fails with ErrLocked
// and touches nothing: the files in .tmp are the first Store's Puts under
// way, which an Open that went on would delete. Once the first Store is
// closed the root opens again. (The lock's release when its process is
// killed is what every crash test relies on: the parent reopens the root
// its killed child had open.)
func TestOpenLocked(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	s := open(t, Config{Root: root, Sync: true})
	inFlight := filepath.Join(root, tmpDir, "x-in-flight")
	if err := os.WriteFile(inFlight, []byte("partial"), filePerm); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(Config{Root: root, Sync: true})
	if err == nil {
		s2.Close()
		t.Fatal("second Open of an open root succeeded, want ErrLocked")
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second Open = %v, want ErrLocked naming this process", err)
	}
	if _, err := os.Stat(inFlight); err != nil {
		t.Errorf("the refused Open removed a file of the open store's .tmp: %v", err)
	}
	s.Close()
	s3 := open(t, Config{Root: root, Sync: true})
	if names := tmpNames(t, s3); len(names) != 0 {
		t.Errorf("after the first store closed, Open left %q in .tmp", names)
	}
}

// TestClaim: the first claim of a directory writes the claim file, a
// claim for the same store succeeds again (a restart), and a claim for
// another store fails with ErrClaimed naming the directory and both
// stores, with advice that depends on whether the claiming store holds
// records, and leaves the claim as it was. Neither the claim nor the lock
// file is a key: List never shows them.
func TestClaim(t *testing.T) {
	for _, sync := range []bool{false, true} {
		root := filepath.Join(t.TempDir(), "blobs")
		s := open(t, Config{Root: root, Sync: sync})
		ctx := t.Context()
		before := s.dirFsyncs.Load()
		got, err := s.Claim(ctx, owner(storeA), blob.Local{Blocks: "b/"})
		if err != nil || got.StoreID != storeA {
			t.Fatalf("first claim = %+v, %v; want store A's", got, err)
		}
		// Synced even without Sync: a claim emptied by a power loss would
		// stop every start.
		if s.dirFsyncs.Load() == before {
			t.Errorf("sync=%v: the claim's directory entry was not synced", sync)
		}
		if f := readClaimFile(t, root); f.StoreID != storeA || f.Version != "v9.9.9" || f.Note != blob.ClaimNote {
			t.Errorf("claim file = %+v, want store A's with the note", f)
		}
		if names := tmpNames(t, s); len(names) != 0 {
			t.Errorf("claim left %q in .tmp", names)
		}
		if _, err := s.Claim(ctx, owner(storeA), blob.Local{HasBuckets: true, Blocks: "b/"}); err != nil {
			t.Errorf("claim again for the same store = %v", err)
		}
		for _, tc := range []struct {
			local  blob.Local
			advice string
		}{
			{blob.Local{}, "a storage path of its own"},
			{blob.Local{}, "restore it"},
			{blob.Local{HasBuckets: true}, "do not move it"},
			{blob.Local{Shared: true}, "meta.postgres.url"},
			{blob.Local{HasBuckets: true, NewID: true}, "got its ID at this start"},
		} {
			tc.local.Blocks = "b/"
			_, err := s.Claim(ctx, owner(storeB), tc.local)
			if !errors.Is(err, blob.ErrClaimed) {
				t.Fatalf("claim for another store (%+v) = %v, want ErrClaimed", tc.local, err)
			}
			for _, want := range []string{root, storeA, storeB, blob.ClaimName, "v9.9.9", tc.advice} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("claim error (%+v) %q lacks %q", tc.local, err, want)
				}
			}
		}
		if f := readClaimFile(t, root); f.StoreID != storeA {
			t.Errorf("claim file after refused claims names %s, want store A", f.StoreID)
		}
		putBytes(t, s, "b/00/block", []byte("x"))
		var listed []string
		if err := s.List(ctx, "", func(k string) error { listed = append(listed, k); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(listed, []string{"b/00/block"}) {
			t.Errorf("List = %q, want only the block", listed)
		}
	}
}

// An unclaimed directory that holds blocks is claimed only by a store
// with buckets (a deployment from before claims) and no other metadata
// beside it; an empty store fails with ErrUnclaimedBlocks naming a block,
// and writes no claim. Blobs outside the blocks' prefix do not count.
func TestClaimUnclaimedBlocks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	s := open(t, Config{Root: root})
	ctx := t.Context()
	putBytes(t, s, "u/00/other", []byte("x"))
	if _, err := s.Claim(ctx, owner(storeA), blob.Local{Blocks: "b/"}); err != nil {
		t.Fatalf("empty store's claim of a directory without blocks = %v", err)
	}
	if err := os.Remove(filepath.Join(root, blob.ClaimName)); err != nil {
		t.Fatal(err)
	}
	putBytes(t, s, "b/00/block", []byte("x"))
	_, err := s.Claim(ctx, owner(storeB), blob.Local{Blocks: "b/"})
	if !errors.Is(err, blob.ErrUnclaimedBlocks) || !strings.Contains(err.Error(), "b/00/block") {
		t.Fatalf("empty store's claim of a directory with blocks = %v, want ErrUnclaimedBlocks naming a block", err)
	}
	if _, err := os.Stat(filepath.Join(root, blob.ClaimName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused claim left a claim file: %v", err)
	}
	// Blocks beside another deployment's metadata are refused even to a
	// store with buckets.
	_, err = s.Claim(ctx, owner(storeB), blob.Local{HasBuckets: true, Shared: true, Beside: "the meta next door", Blocks: "b/"})
	if !errors.Is(err, blob.ErrUnclaimedBlocks) || !strings.Contains(err.Error(), "the meta next door") {
		t.Fatalf("claim beside other metadata = %v, want ErrUnclaimedBlocks naming it", err)
	}
	if _, err := s.Claim(ctx, owner(storeB), blob.Local{HasBuckets: true, Blocks: "b/"}); err != nil {
		t.Fatalf("claim by a store with buckets = %v", err)
	}
	if f := readClaimFile(t, root); f.StoreID != storeB {
		t.Errorf("claim file names %s, want store B", f.StoreID)
	}
}

// A claim file Coffer did not write is nobody's to replace: Claim fails
// without touching it.
func TestClaimForeignFile(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	s := open(t, Config{Root: root})
	for _, body := range []string{"not json", `{"owner":"someone"}`, `{"store_id":"` + strings.Repeat("x", blob.MaxClaimSize) + `"}`} {
		if err := os.WriteFile(filepath.Join(root, blob.ClaimName), []byte(body), filePerm); err != nil {
			t.Fatal(err)
		}
		_, err := s.Claim(t.Context(), owner(storeA), blob.Local{HasBuckets: true})
		if err == nil || errors.Is(err, blob.ErrClaimed) || !strings.Contains(err.Error(), "not a claim") {
			t.Errorf("claim over %.20q = %v, want a not-a-claim error", body, err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, blob.ClaimName)); string(b) != body {
			t.Errorf("claim over %.20q changed the file", body)
		}
	}
}

// CheckClaim, which garbage collection calls before every sweep, does
// nothing before a claim, passes while the claim is this store's, writes
// it again when it was deleted, and fails with ErrClaimed once it names
// another store.
func TestCheckClaim(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	s := open(t, Config{Root: root, Sync: true})
	ctx := t.Context()
	if err := s.CheckClaim(ctx); err != nil {
		t.Fatalf("CheckClaim before Claim = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, blob.ClaimName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CheckClaim before Claim wrote a claim: %v", err)
	}
	if _, err := s.Claim(ctx, owner(storeA), blob.Local{}); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckClaim(ctx); err != nil {
		t.Errorf("CheckClaim under its own claim = %v", err)
	}
	if err := os.Remove(filepath.Join(root, blob.ClaimName)); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckClaim(ctx); err != nil {
		t.Errorf("CheckClaim after the claim was deleted = %v", err)
	}
	if f := readClaimFile(t, root); f.StoreID != storeA {
		t.Errorf("claim written again names %s, want store A", f.StoreID)
	}
	b, err := json.Marshal(owner(storeB))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, blob.ClaimName), b, filePerm); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckClaim(ctx); !errors.Is(err, blob.ErrClaimed) {
		t.Errorf("CheckClaim after another store's claim replaced it = %v, want ErrClaimed", err)
	}
}
