package checksum

import (
	"fmt"
	"net/http"
)

// FromHeaders finds the x-amz-checksum-<algorithm> header of a request, if
// any, and validates its value. It returns ("", "", nil) when there is none.
// More than one such header, whether of different algorithms or the same one
// repeated, is an error wrapping ErrMultiple. A malformed value is an error
// wrapping ErrInvalid, returned together with the algorithm so the caller can
// name the header. Other x-amz-checksum-* headers (-algorithm, -type, -mode)
// are not values and are ignored.
//
// Keys of h must be in canonical form, as net/http produces them.
func FromHeaders(h http.Header) (Algorithm, string, error) {
	var (
		alg Algorithm
		val string
	)
	for i := range specs {
		vs := h[specs[i].canonical]
		if len(vs) == 0 {
			continue
		}
		a := specs[i].alg
		if alg != "" || len(vs) > 1 {
			return "", "", fmt.Errorf("%w: %s and %s", ErrMultiple, headerOr(alg, a), a.Header())
		}
		alg, val = a, vs[0]
	}
	if alg == "" {
		return "", "", nil
	}
	if err := alg.Validate(val); err != nil {
		return alg, "", err
	}
	return alg, val, nil
}

// headerOr returns a's header name, or b's if a is empty (the case of one
// header repeated).
func headerOr(a, b Algorithm) string {
	if a == "" {
		return b.Header()
	}
	return a.Header()
}
