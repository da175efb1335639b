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
	d := decoder{s: string(doc)} // the rules' strings share this one copy
	n := d.header()
	c := &Config{Rules: make([]Rule, 0, n)}
	for range n {
		r := d.rule()
		if d.err != nil {
			break
		}
		c.Rules = append(c.Rules, r)
	}
	d.end()
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// MatchStored is Match(origin, method, headers) on a stored document: what
// an actual request asks. It decodes only a rule whose methods and origins
// match (and, when headers are given, the others that do until one allows
// them too), so a configuration of many rules costs a request one copy of
// the document and comparisons, not a decoded configuration. Errors are
// Decode's.
func MatchStored(doc []byte, origin, method string, headers []string) (*Rule, error) {
	d := decoder{s: string(doc)}
	n := d.header()
	for range n {
		at := d.s
		d.string() // ID
		d.maxAge()
		methodOK, originOK := false, false
		for range d.count() {
			m := d.string()
			methodOK = methodOK || m == method
		}
		for range d.count() {
			o := d.string()
			originOK = originOK || wildcardMatch(o, origin, false)
		}
		for range 2 { // AllowedHeaders, ExposeHeaders
			for range d.count() {
				d.string()
			}
		}
		if d.err != nil {
			return nil, d.err
		}
		if methodOK && originOK {
			rd := decoder{s: at}
			r := rd.rule()
			if rd.err != nil {
				return nil, rd.err
			}
			if r.allowsHeaders(headers) {
				return &r, nil
			}
		}
	}
	d.end()
	return nil, d.err
}

// decoder reads the stored form from s, which it consumes; after the first
// error every read returns a zero value and err keeps that error.
type decoder struct {
	s   string
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	d.s = ""
}

// header reads the version and the number of rules.
func (d *decoder) header() int {
	if v := d.byte(); v != codecVersion {
		d.fail("version %d", v)
	}
	return d.count()
}

// end checks that nothing follows the last rule.
func (d *decoder) end() {
	if d.err == nil && len(d.s) != 0 {
		d.fail("%d bytes after the last rule", len(d.s))
	}
}

func (d *decoder) rule() Rule {
	var r Rule
	r.ID = d.string()
	r.MaxAgeSeconds = d.maxAge()
	r.AllowedMethods = d.list()
	r.AllowedOrigins = d.list()
	r.AllowedHeaders = d.list()
	r.ExposeHeaders = d.list()
	return r
}

func (d *decoder) maxAge() *int {
	switch flags := d.byte(); flags {
	case 0:
		return nil
	case flagMaxAge:
		v := d.uvarint()
		if v > math.MaxInt32 {
			d.fail("max age %d", v)
			return nil
		}
		age := int(v)
		return &age
	default:
		d.fail("rule flags %#x", flags)
		return nil
	}
}

func (d *decoder) byte() byte {
	if len(d.s) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.s[0]
	d.s = d.s[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if i >= len(d.s) {
			break
		}
		c := d.s[i]
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			d.s = d.s[i+1:]
			return v
		}
	}
	d.fail("bad varint")
	return 0
}

// count reads a count of items that take at least one byte each, so it can
// be no more than the bytes left.
func (d *decoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.s)) {
		d.fail("count %d with %d bytes left", v, len(d.s))
		return 0
	}
	return int(v)
}

func (d *decoder) string() string {
	n := d.count()
	s := d.s[:n]
	d.s = d.s[n:]
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
