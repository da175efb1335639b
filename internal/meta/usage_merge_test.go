package meta

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func TestUsageValueCodec(t *testing.T) {
	a := Usage{Objects: 3, Bytes: 1 << 40, Uploads: 1, PartBytes: 5 << 20}
	b := Usage{Objects: -1, Bytes: -100, Uploads: -1, PartBytes: -(5 << 20)}
	for _, tc := range []struct {
		name    string
		v       []byte
		want    Usage
		wantErr bool
	}{
		{name: "one record", v: appendUsage(nil, a), want: a},
		{name: "zero", v: appendUsage(nil, Usage{}), want: Usage{}},
		{name: "negative", v: appendUsage(nil, b), want: b},
		{name: "concatenation sums", v: appendUsage(appendUsage(nil, a), b), want: a.add(b)},
		{name: "wraps", v: appendUsage(appendUsage(nil, Usage{Bytes: math.MaxInt64}), Usage{Bytes: 1}), want: Usage{Bytes: math.MinInt64}},
		{name: "empty", v: nil, wantErr: true},
		{name: "short", v: appendUsage(nil, a)[:usageRecLen-1], wantErr: true},
		{name: "trailing byte", v: append(appendUsage(nil, a), usageTagV1), wantErr: true},
		{name: "unknown tag", v: append([]byte{2}, appendUsage(nil, a)[1:]...), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeUsage(tc.v)
			if (err != nil) != tc.wantErr {
				t.Fatalf("decodeUsage(%x) error = %v, want error %v", tc.v, err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, errCorrupt) {
				t.Errorf("decodeUsage error %v does not wrap errCorrupt", err)
			}
			if got != tc.want {
				t.Errorf("decodeUsage = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestMergerName pins the merger's name: Pebble refuses to open a database
// with a merger of another name than the one it was created with, and every
// Coffer database before usage accounting was created with the default.
func TestMergerName(t *testing.T) {
	if merger.Name != "pebble.concatenate" || merger.Name != pebble.DefaultMerger.Name {
		t.Fatalf("merger name %q, want pebble.concatenate", merger.Name)
	}
}

// mergeAll runs the merger as Pebble does over operands, oldest first,
// feeding them newer-first or older-first.
func mergeAll(t testing.TB, key []byte, ops [][]byte, older bool) []byte {
	t.Helper()
	var vm pebble.ValueMerger
	var err error
	if older {
		vm, err = merger.Merge(key, ops[len(ops)-1])
		for i := len(ops) - 2; err == nil && i >= 0; i-- {
			err = vm.MergeOlder(ops[i])
		}
	} else {
		vm, err = merger.Merge(key, ops[0])
		for _, op := range ops[1:] {
			if err == nil {
				err = vm.MergeNewer(op)
			}
		}
	}
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	v, closer, err := vm.Finish(true)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	v = slices.Clone(v)
	if closer != nil {
		closer.Close()
	}
	return v
}

func TestMerger(t *testing.T) {
	uk := usageKey(nil, "bkt")
	ops := [][]byte{
		appendUsage(nil, Usage{}),
		appendUsage(nil, Usage{Objects: 1, Bytes: 10}),
		appendUsage(nil, Usage{Uploads: 1}),
		appendUsage(appendUsage(nil, Usage{PartBytes: 7}), Usage{Objects: 1, Bytes: 5}), // a concatenated (old-merger) value
		appendUsage(nil, Usage{Objects: -1, Bytes: -10}),
	}
	want := Usage{Objects: 1, Bytes: 5, Uploads: 1, PartBytes: 7}
	for _, older := range []bool{false, true} {
		v := mergeAll(t, uk, ops, older)
		if len(v) != usageRecLen {
			t.Errorf("older=%v: merged value of %d bytes, want one record", older, len(v))
		}
		if got, err := decodeUsage(v); err != nil || got != want {
			t.Errorf("older=%v: merged = %+v, %v; want %+v", older, got, err, want)
		}
	}

	// An operand that does not decode is kept, after the sum: nothing is
	// lost and the value reads as corrupt.
	bad := []byte{9, 9, 9}
	v := mergeAll(t, uk, [][]byte{ops[1], bad, ops[2]}, false)
	if !bytes.Equal(v, append(appendUsage(nil, Usage{Objects: 1, Bytes: 10, Uploads: 1}), bad...)) {
		t.Errorf("merge with a bad operand = %x", v)
	}
	if _, err := decodeUsage(v); !errors.Is(err, errCorrupt) {
		t.Errorf("decodeUsage of merged bad value = %v, want errCorrupt", err)
	}

	// Other keys concatenate, as pebble.DefaultMerger does.
	for _, older := range []bool{false, true} {
		if got := mergeAll(t, []byte("okey"), [][]byte{[]byte("ab"), []byte("cd"), []byte("e")}, older); string(got) != "abcde" {
			t.Errorf("older=%v: merge of another key = %q, want concatenation", older, got)
		}
	}
}

// FuzzDecodeUsage checks the usage value decoder on arbitrary bytes: it
// never panics; a value that decodes means the same whether it is summed
// by the merger, concatenated, or split into its records.
func FuzzDecodeUsage(f *testing.F) {
	f.Add(appendUsage(nil, Usage{Objects: 1, Bytes: 2, Uploads: 3, PartBytes: 4}))
	f.Add(appendUsage(appendUsage(nil, Usage{Objects: -1}), Usage{Bytes: math.MaxInt64}))
	f.Add([]byte{})
	f.Add([]byte{usageTagV1})
	f.Add([]byte{2, 0, 0})
	uk := usageKey(nil, "b")
	f.Fuzz(func(t *testing.T, v []byte) {
		if len(v) > 1<<16 {
			return
		}
		u, err := decodeUsage(v)
		if err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			// The merger keeps what it cannot read.
			m := mergeAll(t, uk, [][]byte{v}, false)
			if !bytes.HasSuffix(m, v) {
				t.Fatalf("merge of bad %x = %x, lost bytes", v, m)
			}
			return
		}
		if got, err := decodeUsage(append(slices.Clone(v), v...)); err != nil || got != u.add(u) {
			t.Fatalf("concatenation of %x twice = %+v, %v; want %+v", v, got, err, u.add(u))
		}
		var ops [][]byte
		for r := v; len(r) > 0; r = r[usageRecLen:] {
			ops = append(ops, r[:usageRecLen])
		}
		for _, older := range []bool{false, true} {
			m := mergeAll(t, uk, ops, older)
			if got, err := decodeUsage(m); err != nil || got != u || len(m) != usageRecLen {
				t.Fatalf("merge of %d records = %x (%+v, %v), want one record of %+v", len(ops), m, got, err, u)
			}
		}
		if got, _ := decodeUsage(appendUsage(nil, u)); got != u {
			t.Fatalf("re-encoding %+v decodes as %+v", u, got)
		}
	})
}
