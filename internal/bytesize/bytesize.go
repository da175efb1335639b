// Package bytesize parses and formats byte counts the one way every Coffer
// command accepts them: an integer with an optional binary (IEC) unit, B,
// KiB, MiB, GiB or TiB. Decimal units (MB) are refused rather than guessed:
// "8MB" could mean 8,000,000 or 8,388,608 bytes.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the accepted suffixes, largest first. Only binary
// (IEC) units are accepted: "MB" would be ambiguous between 10^6 and 2^20.
var units = []struct {
	suffix string
	mult   int64
}{
	{"TiB", 1 << 40},
	{"GiB", 1 << 30},
	{"MiB", 1 << 20},
	{"KiB", 1 << 10},
	{"B", 1},
}

// Parse parses a byte count: a non-negative integer optionally followed
// by B, KiB, MiB, GiB or TiB (case-insensitive, optional space), e.g.
// "1048576", "128KiB", "8 MiB", "5gib".
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid size %q: want a number of bytes with an optional unit B, KiB, MiB, GiB or TiB", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: out of range", s)
	}
	unit := strings.TrimSpace(t[i:])
	if unit == "" {
		return n, nil
	}
	for _, u := range units {
		if strings.EqualFold(unit, u.suffix) {
			if n > math.MaxInt64/u.mult {
				return 0, fmt.Errorf("invalid size %q: out of range", s)
			}
			return n * u.mult, nil
		}
	}
	return 0, fmt.Errorf("invalid size %q: unknown unit %q (want B, KiB, MiB, GiB or TiB)", s, unit)
}

// Format renders n with the largest unit that divides it exactly, so
// that Parse(Format(n)) == n: 131072 → "128KiB", 1000 → "1000".
func Format(n int64) string {
	if n > 0 {
		for _, u := range units[:len(units)-1] {
			if n%u.mult == 0 {
				return strconv.FormatInt(n/u.mult, 10) + u.suffix
			}
		}
	}
	return strconv.FormatInt(n, 10)
}
