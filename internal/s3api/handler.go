package s3api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/httprec"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/lifecycle"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// Config configures the S3 surface. Zero fields take the defaults noted.
type Config struct {
	// Region is the region Coffer answers for, in GetBucketLocation,
	// ListBuckets and x-amz-bucket-region, and the only LocationConstraint
	// CreateBucket accepts (default "us-east-1"). The sigv4.Verifier must
	// be configured with the same region.
	Region string
	// Domain is the suffix of virtual-hosted-style requests: with
	// "s3.example.com", Host "photos.s3.example.com" addresses the bucket
	// "photos". Empty disables virtual-hosted style; path style always
	// works.
	Domain string
	// MaxKeys is the default and largest page of ListObjects,
	// ListMultipartUploads and ListParts (default 1000, as S3).
	MaxKeys int
	// BodyIdleTimeout is how long a request body may send nothing before
	// the request fails with 400 RequestTimeout (default
	// DefaultBodyIdleTimeout; negative: no limit).
	BodyIdleTimeout time.Duration
	// FormFieldsTimeout bounds the time the fields of a form upload (POST
	// Object), which come before its file and carry its signature, may
	// take to arrive, whatever their pace (default
	// DefaultFormFieldsTimeout): nothing about the sender is known until
	// they are in, and a stranger sending a byte now and then would
	// otherwise hold a request slot as long as it liked.
	FormFieldsTimeout time.Duration
	// MaxRequests is how many S3 requests are served at once (default
	// DefaultMaxRequests; negative: no limit). Past it requests wait, at
	// most MaxQueued of them (default DefaultMaxQueued; negative: none)
	// for at most QueueWait (default DefaultQueueWait), then are answered
	// 503 SlowDown with Retry-After.
	MaxRequests int
	MaxQueued   int
	QueueWait   time.Duration
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = 1000
	}
	if c.BodyIdleTimeout == 0 {
		c.BodyIdleTimeout = DefaultBodyIdleTimeout
	}
	if c.FormFieldsTimeout <= 0 {
		c.FormFieldsTimeout = DefaultFormFieldsTimeout
	}
	if c.MaxRequests == 0 {
		c.MaxRequests = DefaultMaxRequests
	}
	if c.MaxQueued == 0 {
		c.MaxQueued = DefaultMaxQueued
	}
	if c.QueueWait <= 0 {
		c.QueueWait = DefaultQueueWait
	}
	return c
}

// Validate reports whether c, after defaults, is usable.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.MaxKeys < 1 || c.MaxKeys > 1000 {
		return fmt.Errorf("s3api: max keys %d not in 1..1000", c.MaxKeys)
	}
	if strings.ContainsAny(c.Domain, ":/ ") || strings.HasPrefix(c.Domain, ".") {
		return fmt.Errorf("s3api: domain %q is not a host name", c.Domain)
	}
	return nil
}

// Deps are what a Handler calls. Objects, Verifier, IAM and Logger are
// required; a nil Clock is time.Now, and a nil NewRequestID makes IDs that
// are unique per Handler and random across restarts.
type Deps struct {
	Objects      *objects.Service
	Verifier     *sigv4.Verifier
	IAM          *iam.IAM
	Logger       *slog.Logger
	Clock        func() time.Time
	NewRequestID func() string
	// Observer, if not nil, is told about every request (see Observer).
	// Without one, requests pay nothing for it.
	Observer Observer
}

// Handler serves the S3 API. It is safe for concurrent use.
type Handler struct {
	cfg      Config
	objects  *objects.Service
	verifier *sigv4.Verifier
	iam      *iam.IAM
	log      *slog.Logger
	clock    func() time.Time
	newID    func() string
	observer Observer   // nil when none
	admit    *admission // nil without a request limit
	// forms bounds the form uploads reading their fields, which they do
	// holding a slot of this pool instead of a request slot (postObject);
	// nil without a request limit.
	forms *admission
	// storageErr is the object service's Err: nil while the metadata
	// store can commit writes, else the ServiceUnavailable error writes
	// answer. One atomic load.
	storageErr func() error
	// lifecycle stores buckets' lifecycle configurations and keeps them
	// parsed for x-amz-expiration.
	lifecycle *lifecycle.Store
	bufs      sync.Pool // *[]byte of copyBufSize, for streaming object bodies
	obs       sync.Pool // *observation, when there is an observer
	// closing ends the reads in flight (see readContext) when the server
	// closes connections with requests still running (AbortReads).
	closing    context.Context
	abortReads context.CancelFunc
}

var _ http.Handler = (*Handler)(nil)

// copyBufSize is the size of the buffers GET bodies are copied through.
const copyBufSize = 128 << 10

// New returns a Handler.
func New(cfg Config, d Deps) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case d.Objects == nil:
		return nil, errors.New("s3api: no objects service")
	case d.Verifier == nil:
		return nil, errors.New("s3api: no signature verifier")
	case d.IAM == nil:
		return nil, errors.New("s3api: no iam")
	case d.Logger == nil:
		return nil, errors.New("s3api: no logger")
	}
	h := &Handler{
		cfg:      cfg.withDefaults(),
		objects:  d.Objects,
		verifier: d.Verifier,
		iam:      d.IAM,
		log:      d.Logger,
		clock:    d.Clock,
		newID:    d.NewRequestID,
		observer: d.Observer,

		storageErr: d.Objects.Err,
		lifecycle:  lifecycle.NewStore(d.Objects),
	}
	if h.clock == nil {
		h.clock = time.Now
	}
	if h.newID == nil {
		h.newID = newRequestIDs()
	}
	h.admit = newAdmission(h.cfg.MaxRequests, max(h.cfg.MaxQueued, 0), h.cfg.QueueWait)
	if h.admit != nil {
		h.forms = newAdmission(max(h.cfg.MaxRequests/formShare, min(h.cfg.MaxRequests, minForms)),
			max(h.cfg.MaxQueued/formShare, 0), h.cfg.QueueWait)
	}
	h.bufs.New = func() any {
		b := make([]byte, copyBufSize)
		return &b
	}
	h.obs.New = func() any { return new(observation) }
	h.closing, h.abortReads = context.WithCancel(context.Background())
	return h, nil
}

// AbortReads cancels the reads in flight, which run detached from their
// requests' cancellation (readContext): the server calls it when it closes
// connections with requests still running, before the storage closes, so
// that a read waiting on its block store (an unresponsive upstream in
// gateway mode) gives up instead of outliving the close.
func (h *Handler) AbortReads() { h.abortReads() }

// newRequestIDs returns a generator of S3-style request IDs: 16 upper-case
// hex digits, a random base plus a counter, so they are unique within the
// process without a system call per request.
func newRequestIDs() func() string {
	var seed [8]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails
	base := binary.BigEndian.Uint64(seed[:])
	var seq atomic.Uint64
	return func() string {
		const digits = "0123456789ABCDEF"
		var b [16]byte
		n := base + seq.Add(1)
		for i := len(b) - 1; i >= 0; i-- {
			b[i] = digits[n&15]
			n >>= 4
		}
		return string(b[:])
	}
}

// hostID derives the x-amz-id-2 of a request from its ID. S3 sends an
// opaque base64 token there; clients echo it in support requests.
func hostID(requestID string) string {
	sum := sha256.Sum256([]byte(requestID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// request is the per-request state the pipeline builds for a handler.
type request struct {
	id, hostID  string
	op          *op
	bucket, key string
	query       url.Values
	principal   iam.Principal
	auth        *sigv4.Result
	// body is the verified request body for ops with a body (nil
	// otherwise): SHA-256-checked, or decoded from aws-chunked, and cut to
	// exactly size bytes.
	body io.Reader
	size int64 // body length after decoding; -1 if not known
	// rawBody is the request body as net/http gave it, drained by
	// writeError so that an early error reaches the client.
	rawBody io.ReadCloser
	// trailer returns a trailing header of an aws-chunked body once body
	// has reached EOF; nil when the request has no trailer.
	trailer func(name string) string
	// tags are the tags of a PutObjectTagging body, once read: the
	// request tags its authorization tests (s3:RequestObjectTag/<key>).
	tags map[string]string
	// pin is what the request's authorization read of its own object
	// (its ACL, its tags; pinVersion is the versionId it named, "" for
	// the current version), and pinSplit says two reads saw different
	// things: a change of that object's ACL or tags applies only if it is
	// still what was read (objects.Pin).
	pin        objects.Pin
	pinVersion string
	pinSplit   bool
	// slot says the request holds a request slot (Handler.admit).
	slot bool

	// What finish reports. code is the S3 error code writeError answered
	// (or met after the status was sent); aborted says the client went
	// away before a status was sent. obs is set when there is an observer.
	code    s3err.Code
	aborted bool
	obs     *observation
	// claimedKey is the access key named by a request that failed
	// authentication, when the verifier reported it; authFailed says
	// that authentication failed, whatever the status answered.
	claimedKey string
	authFailed bool
	// denied says an authorization of the request was refused (see
	// RequestRecord.Denied).
	denied bool
	// idle is the request body with its progress deadline, under rawBody
	// (idle.rc is nil without a body).
	idle idleBody
}

// opName returns the name of the request's op, or "" before routing.
func (rq *request) opName() string {
	if rq.op == nil {
		return ""
	}
	return rq.op.name
}

// anonymous reports whether the request carried no credentials.
func (rq *request) anonymous() bool { return rq.principal.Anonymous }

// ServeHTTP implements http.Handler: request ID → parseOp → signature →
// authorization → body → handler → writeError on failure.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		// net/http answers "100 Continue" only when a handler reads a
		// non-empty body. botocore sends Expect on every PUT, also
		// empty ones, and misreads the next response on the connection
		// when the interim response never came; so send it ourselves.
		w.WriteHeader(http.StatusContinue)
	}
	rq := &request{id: h.newID(), size: -1, rawBody: r.Body}
	rq.hostID = hostID(rq.id)
	// Set verbatim, as S3 spells them; one allocation for the three.
	vals := []string{rq.id, rq.hostID, "Coffer"}
	hdr := w.Header()
	hdr["x-amz-request-id"] = vals[0:1:1]
	hdr["x-amz-id-2"] = vals[1:2:2]
	hdr["Server"] = vals[2:3:3]
	if h.observer != nil {
		rq.obs = h.obs.Get().(*observation)
		if r.Body != nil && r.Body != http.NoBody {
			rq.obs.body.rc = r.Body
			rq.rawBody = &rq.obs.body
		}
	}
	if r.Body != nil && r.Body != http.NoBody {
		rq.idle = idleBody{rc: rq.rawBody, w: w, idle: h.cfg.BodyIdleTimeout}
		rq.idle.start()
		rq.rawBody = &rq.idle
	}
	// rw tells writeError whether the status line has gone out, and
	// finish what was sent. Its ReadFrom hands a GET's block file (from
	// objects' block reader and fsblob's Reader) to net/http's, which
	// sends it with sendfile(2).
	rw := &httprec.Writer{ResponseWriter: w}
	start := h.clock()
	// Deferred first, so it runs last: after a panic has been answered,
	// and also when the client went away (a re-panic of ErrAbortHandler).
	defer h.finish(rw, r, rq, start)
	// A panic of a handler is a bug of that request: it is answered with
	// InternalError (or ServiceUnavailable, by writeError, if the metadata
	// store has failed meanwhile) and the server serves on. A panic of
	// the storage engine never gets here: the metadata store turns it
	// into its failure, recorded before the request sees an error, and
	// the server stops on that (docs/design/0010-fatal-storage-errors.md).
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				rq.aborted = true
				panic(v)
			}
			h.log.ErrorContext(r.Context(), "handler panic", "request_id", rq.id, "op", rq.opName(),
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			h.writeError(rw, r, rq, s3err.New(s3err.InternalError, ""))
		}
	}()
	// A read runs detached from its request's cancellation from here on,
	// waiting for its slot included (see readContext): a client that
	// half-closed after sending it cancels that context, yet waits for
	// the answer. writeError and finish keep the request's own, which
	// still tells them a client has gone.
	sr := r
	if !writes(r.Method) {
		sr = r.WithContext(h.readContext(r.Context()))
	}
	if err := h.takeSlot(rw, sr.Context(), rq); err != nil {
		h.writeError(rw, r, rq, err)
		return
	}
	defer h.releaseSlot(rq) // a panic: given back before it is answered
	err := h.serve(rw, sr, rq)
	// The slot is given back before an error is written: draining a
	// refused body may take drainTimeout, and a stranger's refused
	// requests must not keep others waiting for slots.
	h.releaseSlot(rq)
	if err != nil {
		h.writeError(rw, r, rq, err)
	}
}

// takeSlot takes a request slot for rq (see admission), waiting in the
// queue if need be.
func (h *Handler) takeSlot(w http.ResponseWriter, ctx context.Context, rq *request) error {
	if err := h.admit.enter(w, ctx); err != nil {
		return err
	}
	rq.slot = true
	return nil
}

// releaseSlot gives rq's request slot back, if it holds one.
func (h *Handler) releaseSlot(rq *request) {
	if rq.slot {
		rq.slot = false
		h.admit.release()
	}
}

// serve runs the pipeline up to and including the handler.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, rq *request) error {
	rt, err := parseOp(r, h.cfg.Domain)
	if err != nil {
		return err
	}
	rq.op, rq.bucket, rq.key, rq.query = rt.op, rt.bucket, rt.key, rt.query
	if rq.op.body == bodyNone && !rq.op.form && rq.idle.rc != nil {
		// A body sent to an op that takes none (a GET declaring one) is
		// not waited for: net/http would otherwise read up to 256 KiB of
		// it before the answer, from a client that may send nothing.
		// The connection closes after the answer.
		rq.idle.final(0)
		rq.rawBody = nil
	}
	if rq.op.public {
		return rq.op.handle(h, w, r, rq)
	}
	if _, ok := r.Header["Origin"]; ok && rq.bucket != "" {
		// Before authentication and every check but the routing, so that
		// a browser can read every error of a cross-origin request, as
		// from S3. (A request refused SlowDown does not get them: under
		// overload no metadata is read for a refusal.)
		h.setCORSHeaders(w, r, rq)
	}
	if len(rq.key) > maxKeyLen {
		return errKeyTooLong(rq.key)
	}
	if writes(r.Method) {
		// Once the metadata store has failed no write can succeed: say so
		// at once, before reading a body that could only be thrown away.
		if err := h.storageErr(); err != nil {
			return err
		}
	}
	if rq.op.form {
		return rq.op.handle(h, w, r, rq)
	}
	if err := h.authenticate(r, rq); err != nil {
		return err
	}
	if !rq.op.perKey {
		if err := h.authorize(r, rq, rq.op.actionFor(rq.query), rq.bucket, rq.key); err != nil {
			return h.deniedOrMissing(r, rq, err)
		}
	}
	if err := h.checkExpectedOwners(r, rq); err != nil {
		return err
	}
	if err := h.prepareBody(r, rq); err != nil {
		return err
	}
	return rq.op.handle(h, w, r, rq)
}

// readContext detaches a read (a GET or HEAD: any request that changes
// nothing) from the cancellation of its request, as objects.writeContext
// does a write once its body is in. A read's request is received whole with
// its headers, and net/http cancels the request's context when the client
// merely half-closes its side of the connection after sending it
// (shutdown(SHUT_WR), as HTTP/1.0-style tools, netcat scripts and some
// proxies do): the answer would stop before it starts, or be cut short at
// the next block the object's Body opens.
//
// Nothing runs unbounded for a client that has really gone. Before the
// answer there is only bounded work: lookups, a policy check, one listing
// page. While the answer streams, writing it to a client that went away
// fails (EPIPE, ECONNRESET); the handler stops at that write and closes the
// object's Body, which ends the block store's read (gateway mode's upstream
// GetObject too, which also has its own stall deadline). A client that
// reads nothing fails the write after limits.body-idle (the server's
// progressConn).
//
// The detachment is made here rather than in the objects service, where
// writes detach: the service hands out a Body that its caller streams, so
// only the caller sees the writes that tell a client that went away from one
// that half-closed, and the service's other callers (the console's
// downloads, copies) keep what their context means. The context's values
// are kept, as writeContext keeps them. It still ends when the server
// closes connections with requests in flight (AbortReads).
//
// What a client that really went away can still cost is bounded by the
// block store, not by the client: in gateway mode a read waiting on an
// unresponsive upstream runs until the upstream client's own timeouts
// (blob.s3.timeout per attempt, with its retries: about 3 times it) end
// it, holding its request slot that long.
//
// It is one small value per read, with nothing to release: the request's
// values over h.closing's cancellation (readCtx). With the request's copy
// that carries it, a GET makes 2 allocations (~350 B) more than before
// reads were detached (BenchmarkGetObject); a cancellable child of the
// request's values with an AfterFunc on h.closing made 8 to 11 more
// (600 to 950 B) and took ~0.8 µs.
func (h *Handler) readContext(ctx context.Context) context.Context {
	return readCtx{Context: h.closing, values: ctx}
}

// readCtx is a read's context (readContext): Done, Err and Deadline are
// those of the handler's closing context, values those of the request.
// Value asks the closing context first, which knows only the key under
// which the context package finds the cancellation of a parent (so that
// contexts derived from a read's hang on h.closing's like any child, with
// no goroutine to watch it), and nothing else; every other key is the
// request's.
type readCtx struct {
	context.Context                 // h.closing
	values          context.Context // the request's
}

func (c readCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// errKeyTooLong answers every operation on a key longer than S3 allows,
// reads included, as S3 does (a HEAD gets the status without the body).
func errKeyTooLong(key string) error {
	return s3err.New(s3err.KeyTooLongError, "").
		With("Size", strconv.Itoa(len(key))).With("MaxSizeAllowed", strconv.Itoa(maxKeyLen))
}

// writes reports whether requests of method may change what is stored:
// every S3 operation sent with PUT, POST or DELETE does, no GET or HEAD
// does.
func writes(method string) bool {
	return method == http.MethodPut || method == http.MethodPost || method == http.MethodDelete
}

// owner returns the owner S3 reports for the caller: its canonical ID
// (derived from its user, so the same for all its keys) and display name.
func (h *Handler) owner(rq *request) s3xml.Owner {
	return s3xml.Owner{ID: h.iam.CanonicalID(rq.principal), DisplayName: iam.DisplayName(rq.principal)}
}

// quoteETag returns etag in double quotes, as S3 sends ETags.
func quoteETag(etag string) string { return `"` + etag + `"` }

// checkExpectedOwners refuses a request whose x-amz-expected-bucket-owner
// (or, for a copy, x-amz-source-expected-bucket-owner) does not name the
// owner of the bucket (of the copy's source bucket): 403 AccessDenied, as
// S3 answers, so that a client never writes to or reads from a bucket it
// did not mean. Coffer has one account, which any 12-digit account ID
// names, as in policies; a bucket's owner is also named by its canonical
// user ID (what ListBuckets and GetBucketAcl report). It costs a metadata
// read only when the header is sent.
func (h *Handler) checkExpectedOwners(r *http.Request, rq *request) error {
	if v := r.Header.Get("X-Amz-Expected-Bucket-Owner"); v != "" && rq.bucket != "" {
		if err := h.checkOwner(r, rq.bucket, v); err != nil {
			return err
		}
	}
	if v := r.Header.Get("X-Amz-Source-Expected-Bucket-Owner"); v != "" {
		src, err := parseCopySource(r.Header.Get("X-Amz-Copy-Source"))
		if err != nil {
			return nil // the operation itself answers a malformed or missing source
		}
		return h.checkOwner(r, src.bucket, v)
	}
	return nil
}

// checkOwner returns AccessDenied unless owner names bucket's owner (see
// checkExpectedOwners).
func (h *Handler) checkOwner(r *http.Request, bucket, owner string) error {
	if len(owner) == 12 && strings.Trim(owner, "0123456789") == "" {
		return nil
	}
	b, err := h.objects.HeadBucket(r.Context(), bucket)
	if err != nil {
		return err
	}
	if owner != bucketOwnerID(b.Owner) {
		return s3err.New(s3err.AccessDenied, bucket)
	}
	return nil
}

// deniedOrMissing returns what S3 answers a request denied with err when
// what it names does not exist: NoSuchBucket for a bucket that does not
// exist (but for CreateBucket), whoever asks (bucket names are global; S3
// tells anyone), and NoSuchKey for a GET or HEAD of a missing object by a
// caller that may list the bucket (who could learn it by listing; an
// object ACL can grant nothing on an object that is not there), without
// the headers that would say a delete marker hides it. Otherwise err. It
// reads the metadata only for a denied request.
func (h *Handler) deniedOrMissing(r *http.Request, rq *request, err error) error {
	if rq.bucket == "" || rq.op.action == iam.CreateBucket || !s3err.Is(err, s3err.AccessDenied) {
		return err
	}
	if _, herr := h.objects.HeadBucket(r.Context(), rq.bucket); s3err.Is(herr, s3err.NoSuchBucket) {
		return herr
	}
	if action := rq.op.actionFor(rq.query); rq.key == "" || action != iam.GetObject && action != iam.GetObjectVersion {
		return err
	}
	vid, _ := parseVersionID(rq.query)
	obj, herr := h.objects.HeadObject(r.Context(), rq.bucket, rq.key, objects.GetOptions{VersionID: vid})
	if obj != nil && obj.Body != nil {
		obj.Body.Close()
	}
	if !s3err.Is(herr, s3err.NoSuchKey) && !s3err.Is(herr, s3err.NoSuchVersion) {
		return err
	}
	if h.authorize(r, rq, iam.ListBucket, rq.bucket, "") != nil {
		return err
	}
	var e *s3err.Error
	if errors.As(herr, &e) && len(e.Header) > 0 {
		// A delete marker's headers (x-amz-delete-marker, its version ID)
		// are for callers who may read the key; listing it tells neither.
		c := *e
		c.Header = nil
		return &c
	}
	return herr
}
