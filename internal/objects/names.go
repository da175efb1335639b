package objects

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// checkBucketName applies S3's general-purpose bucket naming rules. See
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
func checkBucketName(name string) error {
	bad := func(why string) error {
		// S3 names the bucket but not the rule it breaks; the rule goes
		// to the log.
		return s3err.Wrap(s3err.InvalidBucketName, name, errors.New(why)).With("BucketName", name)
	}
	if len(name) < 3 || len(name) > 63 {
		return bad("bucket names must be between 3 and 63 characters long")
	}
	for i := range len(name) {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return bad("bucket names can consist only of lowercase letters, numbers, periods and hyphens")
		}
	}
	if !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return bad("bucket names must begin and end with a letter or number")
	}
	if strings.Contains(name, "..") {
		return bad("bucket names must not contain two adjacent periods")
	}
	if _, err := netip.ParseAddr(name); err == nil || looksLikeIPv4(name) {
		return bad("bucket names must not be formatted as an IP address")
	}
	for _, p := range []string{"xn--", "sthree-"} {
		if strings.HasPrefix(name, p) {
			return bad("bucket names must not start with " + p)
		}
	}
	for _, s := range []string{"-s3alias", "--ol-s3", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(name, s) {
			return bad("bucket names must not end with " + s)
		}
	}
	return nil
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// looksLikeIPv4 reports four dot-separated decimal numbers, which S3 refuses
// even where netip would not parse them (leading zeros, "1.2.3.256").
func looksLikeIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil || p == "" || strings.HasPrefix(p, "-") {
			return false
		}
	}
	return true
}

// checkKey checks an object key a write is about to create: 1 to 1024 bytes
// of UTF-8. See https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html
func checkKey(bucket, key string) error {
	switch {
	case key == "":
		return s3err.Newf(s3err.InvalidArgument, bucket, "The object key must not be empty.").
			With("ArgumentName", "key")
	case len(key) > maxKeyLen:
		return s3err.New(s3err.KeyTooLongError, bucket).
			With("Size", strconv.Itoa(len(key))).With("MaxSizeAllowed", strconv.Itoa(maxKeyLen))
	case !utf8.ValidString(key):
		return s3err.Newf(s3err.InvalidArgument, bucket, "The object key must be valid UTF-8.").
			With("ArgumentName", "key")
	}
	return nil
}

// checkMetadata enforces S3's 2 KiB limit on user metadata, measured as the
// sum of the bytes of every key and value.
func checkMetadata(res string, m Metadata) error {
	n := 0
	for k, v := range m.User {
		n += len(k) + len(v)
	}
	if n > maxUserMetadata {
		return s3err.New(s3err.MetadataTooLarge, res).
			With("Size", strconv.Itoa(n)).With("MaxSizeAllowed", strconv.Itoa(maxUserMetadata))
	}
	return nil
}
