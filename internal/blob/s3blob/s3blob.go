package s3blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/coffer-s3/coffer/internal/blob"
	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/redact"
)

var (
	_ blob.Store = (*Store)(nil)
	_ io.Closer  = (*Store)(nil)
)

// ErrChecksum is returned (wrapped) when bytes sent to or read from the
// upstream do not match their checksum: by Put when the upstream reports a
// different checksum or ETag than the one computed while sending (the blob
// is then deleted), and by the reader of a whole-blob Get at its end.
var ErrChecksum = errors.New("s3blob: checksum mismatch")

// Checksum modes besides the flexible-checksum algorithm names.
const (
	// ChecksumMD5 sends a plain body and compares the MD5 of the bytes sent
	// with the ETag the upstream returns.
	ChecksumMD5 = "MD5"
	// ChecksumNone sends a plain body and verifies only its length.
	ChecksumNone = "none"
)

const (
	defaultRegion = "us-east-1"
	// maxPutSize is the largest blob one S3 PutObject may carry.
	maxPutSize = 5 << 30
	// maxPrefixLen keeps Prefix plus the longest blob key (200 bytes)
	// within S3's 1024-byte key limit.
	maxPrefixLen = 1024 - maxKeyLen
	// cleanupTimeout bounds the best-effort Delete after a failed Put.
	cleanupTimeout = 30 * time.Second
)

// Config configures a Store.
type Config struct {
	// Endpoint is the URL of the upstream S3 API, e.g.
	// "http://127.0.0.1:9000" or "https://s3.eu-west-1.amazonaws.com".
	// Required.
	Endpoint string
	// Region is the region requests are signed for; "" means us-east-1.
	Region string
	// Bucket is the upstream bucket holding the blobs. Required; it must
	// exist: New checks with HeadBucket.
	Bucket string
	// Prefix is prepended to every blob key inside the bucket, e.g.
	// "coffer/"; "" for none. It must end in "/", so that one store's
	// prefix is never the start of another's (List of "coffer" would
	// also return "coffer2/…").
	Prefix string
	// AccessKey and SecretKey are static credentials. Required.
	AccessKey, SecretKey string
	// PathStyle selects path-style addressing (endpoint/bucket/key), which
	// MinIO, Ceph and Coffer usually need; false means virtual-hosted
	// (bucket.endpoint/key).
	PathStyle bool
	// HTTPClient sends the requests. nil means a client of the Store's own
	// (see New), whose idle connections Close releases.
	HTTPClient *http.Client
	// Logger receives lifecycle events and warnings; nil discards them.
	Logger *slog.Logger

	// Checksum says how Put protects a blob in transit. "" means CRC32C.
	//   - "CRC32C", "CRC32", "CRC64NVME", "SHA1", "SHA256", "SHA512",
	//     "XXHASH64", "XXHASH3", "XXHASH128": the body is sent aws-chunked
	//     with the checksum in a trailer, which the upstream verifies before
	//     it stores anything and keeps with the blob; a whole-blob Get
	//     verifies it again. (The last four need an upstream that knows
	//     S3's newer algorithms.)
	//   - "MD5" (not S3's flexible MD5 checksum): a plain body; Put
	//     compares the MD5 of the bytes sent with the ETag the upstream
	//     answers (for upstreams without trailer support that return MD5
	//     ETags for single PUTs, which AWS does not with SSE-KMS); a
	//     whole-blob Get compares it again.
	//   - "none": a plain body; only its length is checked.
	// Names are case-insensitive.
	Checksum string
	// MaxAttempts is the number of attempts per request when the upstream
	// fails in a retryable way (throttling, 5xx, a dropped connection); 0
	// means the SDK's standard 3. A Put is retried only while none of its
	// body has been consumed (see Store.Put).
	MaxAttempts int
	// Timeout is the longest the upstream may stall one attempt of a
	// request before the attempt fails (as a timeout, which makes the
	// upstream unavailable: see blob.ErrUnavailable): to accept a
	// connection, to answer once the request is sent, to take more of a
	// Put's body, or to send more of a Get's. Time spent waiting for the
	// caller (reading a Put's source, between Reads of a Get) does not
	// count. 0 means 10s. With Config.HTTPClient the client's own dial and
	// response-header timeouts apply instead of the first two.
	Timeout time.Duration
}

// Validate reports whether c can be used by New. It does not contact the
// upstream.
func (c Config) Validate() error {
	if _, err := parseEndpoint(c.Endpoint); err != nil {
		return err
	}
	if c.Bucket == "" {
		return errors.New("s3blob: bucket not set")
	}
	if strings.Contains(c.Bucket, "/") {
		return fmt.Errorf("s3blob: bucket %q contains a slash", c.Bucket)
	}
	if err := checkPrefix(c.Prefix); err != nil {
		return err
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return errors.New("s3blob: access key and secret key are required")
	}
	if _, err := parseChecksum(c.Checksum); err != nil {
		return err
	}
	if c.MaxAttempts < 0 {
		return fmt.Errorf("s3blob: max attempts %d is negative", c.MaxAttempts)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("s3blob: timeout %v is negative", c.Timeout)
	}
	return nil
}

// parseEndpoint checks that s is an http or https URL without credentials,
// query or fragment.
func parseEndpoint(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("s3blob: endpoint not set")
	}
	u, err := url.Parse(s)
	if err != nil {
		// Not url.Parse's error, which quotes the whole input, user
		// information and all; nothing tells which part is a secret.
		return nil, errors.New("s3blob: endpoint does not parse as a URL (not shown: it may hold credentials)")
	}
	// Messages quote the endpoint with its user information masked
	// whole: the user name may be a token.
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("s3blob: endpoint %q: scheme must be http or https", redact.URL(u))
	case u.Host == "":
		return nil, fmt.Errorf("s3blob: endpoint %q has no host", redact.URL(u))
	case u.User != nil:
		// Credentials in the URL would end up in error messages and logs.
		return nil, fmt.Errorf("s3blob: endpoint %q must not contain credentials; use the access and secret key settings", redact.URL(u))
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("s3blob: endpoint %q must not have a query or fragment", redact.URL(u))
	}
	// The SDK appends "/bucket/key" (path-style) or "/key".
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// checkPrefix enforces Config.Prefix's rules.
func checkPrefix(p string) error {
	switch {
	case p == "":
		return nil
	case !strings.HasSuffix(p, "/"):
		return fmt.Errorf("s3blob: prefix %q must end in a slash", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("s3blob: prefix %q must not start with a slash", p)
	case len(p) > maxPrefixLen:
		return fmt.Errorf("s3blob: prefix is %d bytes, more than %d", len(p), maxPrefixLen)
	}
	return nil
}

// integrity is how Put protects a blob in transit (Config.Checksum).
type integrity struct {
	alg checksum.Algorithm // sent in an aws-chunked trailer; "" for none
	md5 bool               // compare the MD5 of the body with the ETag
}

// String returns the mode as Config.Checksum spells it.
func (m integrity) String() string {
	switch {
	case m.alg != "":
		return string(m.alg)
	case m.md5:
		return ChecksumMD5
	}
	return ChecksumNone
}

func parseChecksum(s string) (integrity, error) {
	switch {
	case s == "":
		return integrity{alg: checksum.CRC32C}, nil
	case strings.EqualFold(s, ChecksumMD5):
		return integrity{md5: true}, nil
	case strings.EqualFold(s, ChecksumNone):
		return integrity{}, nil
	}
	alg, err := checksum.Parse(s)
	if err != nil {
		return integrity{}, fmt.Errorf("s3blob: checksum %q: want CRC32C, CRC32, CRC64NVME, SHA1, SHA256, SHA512, XXHASH64, XXHASH3, XXHASH128, MD5 or none", s)
	}
	return integrity{alg: alg}, nil
}

// Store is a blob.Store in a bucket of an upstream S3-compatible service:
// gateway mode (see the package doc). It is safe for concurrent use. New
// makes one; Close releases it.
type Store struct {
	client    *s3.Client
	bucket    string
	prefix    string
	endpoint  string // for error messages; never carries credentials
	region    string // the signing region, for error messages
	accessKey string // the key ID, for error messages; never the secret
	integrity integrity
	retryer   aws.Retryer   // Put's own retry loop (see Put)
	timeout   time.Duration // Config.Timeout
	log       *slog.Logger
	transport *http.Transport // ours, closed by Close; nil for Config.HTTPClient
	health    health
	claims    blob.Claims // the claim Claim made or found, for CheckClaim
}

// New returns a Store for cfg. It checks that the bucket exists and can be
// used: a HeadBucket, then a small test blob that is put, read back,
// compared and deleted under Prefix, which proves the credentials allow
// s3:PutObject, s3:GetObject and s3:DeleteObject and that the upstream
// understands the configured Checksum mode. Errors name the bucket, the
// endpoint and the access key ID, and the upstream's error code when there
// is one.
//
// Without cfg.HTTPClient the Store uses its own transport: HTTP/1.1 (one
// TCP stream per transfer, as S3 clients do), keep-alives with up to 256
// idle connections to the upstream, Config.Timeout (10s) on dialing, the
// TLS handshake and the response header, 64 KiB socket buffers, and no
// overall timeout since a body may be 1 GiB (a stalled body is caught by
// Config.Timeout too; see the package doc, "Unavailable upstream").
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _ := parseEndpoint(cfg.Endpoint)
	integ, _ := parseChecksum(cfg.Checksum)
	region := cfg.Region
	if region == "" {
		region = defaultRegion
	}
	s := &Store{
		bucket:    cfg.Bucket,
		prefix:    cfg.Prefix,
		endpoint:  u.String(),
		region:    region,
		accessKey: cfg.AccessKey,
		integrity: integ,
		timeout:   cfg.Timeout,
		log:       cfg.Logger,
	}
	if s.timeout == 0 {
		s.timeout = defaultTimeout
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		s.transport = newTransport(s.timeout)
		hc = &http.Client{Transport: s.transport}
	}
	s.retryer = retry.NewStandard(func(o *retry.StandardOptions) {
		if cfg.MaxAttempts > 0 {
			o.MaxAttempts = cfg.MaxAttempts
		}
		o.Backoff = retry.BackoffDelayerFunc(backoff)
	})
	s.client = s3.New(s3.Options{
		Region:       region,
		BaseEndpoint: aws.String(u.String()),
		UsePathStyle: cfg.PathStyle,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		HTTPClient:   http11Client{hc},
		Retryer:      s.retryer,
		// Checksums are ours (see put.go and get.go); the SDK's would
		// buffer or refuse an unseekable body over plain HTTP.
		RequestChecksumCalculation:                aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation:                aws.ResponseChecksumValidationWhenRequired,
		DisableLogOutputChecksumValidationSkipped: true,
		Logger: logging.Nop{},
		AppID:  "coffer-s3blob",
	})
	if err := s.checkBucket(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.probe(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.log.InfoContext(ctx, "upstream block store ready",
		"endpoint", s.endpoint, "bucket", s.bucket, "prefix", s.prefix,
		"checksum", s.integrity.String(), "access_key_id", s.accessKey)
	return s, nil
}

// maxBackoff caps the delay between attempts.
const maxBackoff = 4 * time.Second

// backoff returns the delay before the attempt after attempt (1-based): a
// random share (full jitter, as the SDK's) of 1s·2^(attempt-1), at most
// maxBackoff. The SDK's own grows from 2s (under 2s, then 4s, then 8s):
// with the standard 3 attempts the delays here add up to less than 3s
// instead of 6s, which keeps the time a request waits for an upstream that
// is down short; a client that is told 503 retries anyway.
func backoff(attempt int, _ error) (time.Duration, error) {
	d := min(time.Second<<min(max(attempt-1, 0), 8), maxBackoff)
	return time.Duration(rand.Int64N(int64(d))), nil
}

// newTransport returns the transport New uses without Config.HTTPClient.
func newTransport(timeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	// HTTP/1.1 only: S3 endpoints speak it, and parallel transfers get one
	// TCP stream each instead of sharing one HTTP/2 connection's window.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		Protocols:             &protocols,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		// Large Puts send Expect: 100-continue (the SDK does for 2 MiB and
		// more); an upstream that never answers it gets the body after 1s.
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   256,
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
		DisableCompression:    true,
	}
}

// http11Client sends the SDK's requests as HTTP/1.1 requests. The SDK
// builds them with Proto 0.0, and net/http waits for the answer to an
// Expect: 100-continue only in requests of HTTP/1.1 or later: without this,
// the header is sent but the body follows at once, so an upstream that
// refuses a large Put (throttling, authorization) gets the body anyway, and
// Put cannot retry.
type http11Client struct{ c *http.Client }

// Do sends r with c.
func (h http11Client) Do(r *http.Request) (*http.Response, error) {
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	return h.c.Do(r)
}

// Close releases the idle connections of the Store's own transport. It
// does not close a Config.HTTPClient. Readers returned by Get stay usable
// until closed.
func (s *Store) Close() error {
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
	return nil
}

// objectKey returns the upstream key of blob key.
func (s *Store) objectKey(key string) *string {
	return aws.String(s.prefix + key)
}

// cleanup deletes key after a Put that failed but may have stored it, so
// that a failed Put leaves nothing behind. It outlives ctx, but not by long:
// after a failure of the upstream itself (unavailable), one attempt within
// Config.Timeout, so that the Put's error is not held up by an upstream
// that is gone.
func (s *Store) cleanup(ctx context.Context, key string, unavailable bool) {
	d := cleanupTimeout
	var opts []func(*s3.Options)
	if unavailable {
		d = min(d, s.timeout)
		opts = append(opts, func(o *s3.Options) { o.Retryer = aws.NopRetryer{} })
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	if err := s.delete(ctx, key, opts...); err != nil {
		s.log.WarnContext(ctx, "cannot delete blob of failed put; garbage collection will",
			"bucket", s.bucket, "key", s.prefix+key, "err", err)
	}
}
