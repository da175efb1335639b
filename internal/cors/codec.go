package cors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The stored form of a Config is compact and versioned, like meta's
// records: it is read on every request that carries an Origin header, so
// it decodes without XML. Layout (uvarint = encoding/binary's):
//
//	version byte (1)
//	uvarint number of rules, then for each rule:
//	  string ID
//	  byte flags (bit 0: MaxAgeSeconds follows)
//	  [uvarint MaxAgeSeconds]
//	  list AllowedMethods, list AllowedOrigins, list AllowedHeaders, list ExposeHeaders
//
// where a string is a uvarint length and the bytes, and a list a uvarint
// count and that many strings.
const codecVersion = 1

const flagMaxAge = 1 << 0

// ErrCorrupt is returned by Decode for a document that is not a stored
// configuration.
var ErrCorrupt = errors.New("cors: corrupt configuration document")

// Encode returns the stored form of c, which Decode reads back.
func Encode(c *Config) []byte {
	b := []byte{codecVersion}
	b = binary.AppendUvarint(b, uint64(len(c.Rules)))
	for i := range c.Rules {
		r := &c.Rules[i]
		b = appendString(b, r.ID)
		if r.MaxAgeSeconds != nil {
			b = append(b, flagMaxAge)
			b = binary.AppendUvarint(b, uint64(*r.MaxAgeSeconds))
		} else {
			b = append(b, 0)
		}
		for _, l := range [...][]string{r.AllowedMethods, r.AllowedOrigins, r.AllowedHeaders, r.ExposeHeaders} {
			b = binary.AppendUvarint(b, uint64(len(l)))
			for _, s := range l {
				b = appendString(b, s)
			}
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Decode reads a configuration Encode wrote. Every length is checked
// against the bytes left, so a corrupt document fails with ErrCorrupt
// (wrapped) instead of allocating or panicking; a decoded configuration is
// not re-validated. Empty lists decode as nil.
func Decode(doc []byte) (*Config, error) {
	d := decoder{b: doc}
	if v := d.byte(); v != codecVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorrupt, v)
	}
	n := d.count()
	c := &Config{Rules: make([]Rule, 0, n)}
	for range n {
		var r Rule
		r.ID = d.string()
		switch flags := d.byte(); flags {
		case 0:
		case flagMaxAge:
			v := d.uvarint()
			if v > math.MaxInt32 {
				d.fail("max age %d", v)
			}
			age := int(v)
			r.MaxAgeSeconds = &age
		default:
			d.fail("rule flags %#x", flags)
		}
		r.AllowedMethods = d.list()
		r.AllowedOrigins = d.list()
		r.AllowedHeaders = d.list()
		r.ExposeHeaders = d.list()
		if d.err != nil {
			break
		}
		c.Rules = append(c.Rules, r)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the last rule", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// decoder reads the stored form; after the first error every read returns
// a zero value and err keeps that error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items that take at least one byte each, so it can
// be no more than the bytes left.
func (d *decoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)) {
		d.fail("count %d with %d bytes left", v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *decoder) string() string {
	n := d.count()
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) list() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	l := make([]string, 0, n)
	for range n {
		l = append(l, d.string())
	}
	if d.err != nil {
		return nil
	}
	return l
}
