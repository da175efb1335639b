package meta

import (
	"bytes"
	"cmp"
	"strings"
	"testing"
	"time"
)

func TestObjectKeyRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, bucket, key string }{
		{"plain", "bucket", "a/b/c.txt"},
		{"empty key", "bucket", ""},
		{"nul in key", "bucket", "a\x00b\x00"},
		{"high bytes", "b", "\xff\xfe\U0010FFFF"},
		{"unicode", "my.bucket-1", "日本/語"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, k, err := decodeObjectKey(objectKey(nil, tc.bucket, tc.key))
			if err != nil || b != tc.bucket || k != tc.key {
				t.Errorf("decodeObjectKey(objectKey(%q, %q)) = %q, %q, %v", tc.bucket, tc.key, b, k, err)
			}
		})
	}
}

func TestUploadKeyRoundTrip(t *testing.T) {
	id := strings.Repeat("ab", UploadIDLen/2)
	for _, key := range []string{"k", "", "a\x00b", "\x00", "x/\xff"} {
		b, k, gotID, err := decodeUploadKey(uploadKey("bkt", key, id))
		if err != nil || b != "bkt" || k != key || gotID != id {
			t.Errorf("decodeUploadKey(uploadKey(bkt, %q, id)) = %q, %q, %q, %v", key, b, k, gotID, err)
		}
	}
	for _, bad := range [][]byte{nil, []byte("u"), []byte("ubkt\x00k\x00short"), append([]byte("obkt\x00k\x00"), id...)} {
		if _, _, _, err := decodeUploadKey(bad); err == nil {
			t.Errorf("decodeUploadKey(%q) succeeded, want error", bad)
		}
	}
}

func TestPartAndGarbageKeys(t *testing.T) {
	id := strings.Repeat("0f", UploadIDLen/2)
	for _, n := range []int{1, 255, 256, 10000} {
		gotID, gotN, err := decodePartKey(partKey(id, n))
		if err != nil || gotID != id || gotN != n {
			t.Errorf("decodePartKey(partKey(id, %d)) = %q, %d, %v", n, gotID, gotN, err)
		}
	}
	if bytes.Compare(partKey(id, 2), partKey(id, 10)) >= 0 {
		t.Error("part keys do not sort numerically")
	}
	times := []time.Time{time.Unix(-5, 0), time.Unix(0, 1), time.Unix(1700000000, 5), time.Unix(1700000000, 6)}
	for i, tm := range times {
		gotT, gotK, err := decodeGarbageKey(garbageKey(tm, "b/aa/x"))
		if err != nil || !gotT.Equal(tm) || gotK != "b/aa/x" {
			t.Errorf("decodeGarbageKey(garbageKey(%v)) = %v, %q, %v", tm, gotT, gotK, err)
		}
		if i > 0 && bytes.Compare(garbageKey(times[i-1], "z"), garbageKey(tm, "a")) >= 0 {
			t.Errorf("garbage key of %v does not sort before %v", times[i-1], tm)
		}
	}
}

func TestSuccessor(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte("a/"), []byte("a0")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("a\xff\xff"), []byte("b")},
		{[]byte("\xff\xff"), nil},
		{nil, nil},
		{[]byte{0}, []byte{1}},
	} {
		in := bytes.Clone(tc.in)
		if got := successor(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("successor(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !bytes.Equal(in, tc.in) {
			t.Errorf("successor modified its input %q", in)
		}
	}
}

// FuzzMetaKey checks that the object key encoding round-trips and preserves
// the order of (bucket, key) pairs, and that the successor of an encoded
// prefix bounds every key having that prefix.
func FuzzMetaKey(f *testing.F) {
	f.Add("a", "x", "ab", "")
	f.Add("bucket", "a/b", "bucket", "a\x00")
	f.Add("b", "\xff", "b", "\xff\x00")
	f.Add("b", "", "b", "\x00")
	f.Add("bk", "日本", "bk", "z")
	f.Fuzz(func(t *testing.T, b1, k1, b2, k2 string) {
		if len(b1)+len(k1)+len(b2)+len(k2) > 4096 {
			return
		}
		if strings.IndexByte(b1, 0) >= 0 || strings.IndexByte(b2, 0) >= 0 {
			return // bucket names never hold 0x00
		}
		e1, e2 := objectKey(nil, b1, k1), objectKey(nil, b2, k2)
		for _, c := range []struct {
			e    []byte
			b, k string
		}{{e1, b1, k1}, {e2, b2, k2}} {
			b, k, err := decodeObjectKey(c.e)
			if err != nil || b != c.b || k != c.k {
				t.Fatalf("decodeObjectKey(objectKey(%q, %q)) = %q, %q, %v", c.b, c.k, b, k, err)
			}
		}
		want := cmp.Compare(b1, b2)
		if want == 0 {
			want = cmp.Compare(k1, k2)
		}
		if got := bytes.Compare(e1, e2); got != want {
			t.Fatalf("order of (%q,%q) vs (%q,%q): encoded %d, want %d", b1, k1, b2, k2, got, want)
		}
		if b1 == b2 && strings.HasPrefix(k2, k1) {
			if s := successor(e1); s != nil && bytes.Compare(e2, s) >= 0 {
				t.Fatalf("successor(%q) = %q does not bound %q", e1, s, e2)
			}
		}
		// History keys: the same order over (bucket, key), whatever the
		// version IDs, and the escaped key round-trips.
		v1, v2 := strings.Repeat("f", VersionIDLen), strings.Repeat("0", VersionIDLen)
		h1, h2 := historyKey(nil, tableHistory, b1, k1, v1), historyKey(nil, tableHistory, b2, k2, v2)
		base := len(bucketPrefix(tableHistory, b1))
		if k, vid, err := decodeHistoryName(h1[base:]); err != nil || k != k1 || vid != v1 {
			t.Fatalf("decodeHistoryName(historyKey(%q, %q)) = %q, %q, %v", b1, k1, k, vid, err)
		}
		if want != 0 {
			if got := bytes.Compare(h1, h2); got != want {
				t.Fatalf("history order of (%q,%q) vs (%q,%q): %d, want %d", b1, k1, b2, k2, got, want)
			}
		}
		if b1 == b2 && strings.HasPrefix(k2, k1) {
			p := escapeKey(bucketPrefix(tableHistory, b1), k1)
			if !bytes.HasPrefix(h2, p) {
				t.Fatalf("escaped prefix %q is not a prefix of %q", p, h2)
			}
		}
	})
}
