package adminapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/lifecycle"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// Credentials the fake backend knows: root may do everything, the user
// nothing unless fakeBackend.allow says so.
var (
	rootCred = sigv4.Credentials{AccessKeyID: "ROOTKEY", SecretKey: "root-secret"}
	userCred = sigv4.Credentials{AccessKeyID: "USERKEY", SecretKey: "user-secret"}
)

// testTime is the created time of every entity the fake returns.
var testTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeBackend records the management calls it receives and answers them
// with fixed values, or with err when set.
type fakeBackend struct {
	mu      sync.Mutex // guards the fields below
	calls   []string   // "CreateUser(alice)", …
	authz   []iam.Request
	allow   map[iam.Action]bool // actions the user key may perform
	err     error               // returned by every management call if set
	authErr error               // returned by Authorize if set
	visible map[string]bool     // buckets the user key may see
	checked *objects.UsageCheck // what CheckUsage returns
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{allow: map[iam.Action]bool{}, visible: map[string]bool{"photos": true}}
}

var _ Backend = (*fakeBackend)(nil)

func (f *fakeBackend) record(format string, a ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, a...))
	return f.err
}

func (f *fakeBackend) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeBackend) Authorizations() []iam.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]iam.Request(nil), f.authz...)
}

func (f *fakeBackend) SecretKey(_ context.Context, id string) (string, error) {
	switch id {
	case rootCred.AccessKeyID:
		return rootCred.SecretKey, nil
	case userCred.AccessKeyID:
		return userCred.SecretKey, nil
	}
	return "", sigv4.ErrUnknownKey
}

func (f *fakeBackend) Principal(id string) iam.Principal {
	if id == rootCred.AccessKeyID {
		return iam.Principal{AccessKeyID: id, Root: true}
	}
	return iam.Principal{AccessKeyID: id, User: "bob"}
}

func (f *fakeBackend) Authorize(_ context.Context, rq iam.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authz = append(f.authz, rq)
	if f.authErr != nil {
		return f.authErr
	}
	if rq.Principal.Root || f.allow[rq.Action] {
		return nil
	}
	return s3err.New(s3err.AccessDenied, "")
}

func (f *fakeBackend) CanSeeBucket(p iam.Principal, bucket string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return p.Root || f.visible[bucket]
}

// The fake also serves as the Buckets of the fixture's Handler. It knows
// two buckets: photos, public by its policy, and private. The policy reads
// are not recorded as calls: they only complete the usage read.
var (
	fakeBuckets = []objects.BucketUsage{
		{Bucket: objects.Bucket{Name: "photos", Created: testTime}, Usage: objects.Usage{Objects: 3, Bytes: 3 << 20, Uploads: 1, PartBytes: 5 << 20}},
		{Bucket: objects.Bucket{Name: "private", Region: "eu-west-1", Created: testTime}, Usage: objects.Usage{Objects: 1, Bytes: 10}},
	}
	publicPolicy = []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*"}]}`)
)

var _ Buckets = (*fakeBackend)(nil)

func (f *fakeBackend) BucketsUsage(context.Context) ([]objects.BucketUsage, error) {
	return fakeBuckets, f.record("BucketsUsage()")
}

func (f *fakeBackend) BucketUsage(_ context.Context, name string) (objects.BucketUsage, error) {
	if err := f.record("BucketUsage(%s)", name); err != nil {
		return objects.BucketUsage{}, err
	}
	for _, b := range fakeBuckets {
		if b.Name == name {
			return b, nil
		}
	}
	return objects.BucketUsage{}, s3err.New(s3err.NoSuchBucket, name)
}

func (f *fakeBackend) BucketPolicy(_ context.Context, bucket string) ([]byte, error) {
	if bucket == "photos" {
		return publicPolicy, nil
	}
	return nil, s3err.New(s3err.NoSuchBucketPolicy, bucket)
}

func (f *fakeBackend) BucketPolicies(context.Context) (map[string][]byte, error) {
	return map[string][]byte{"photos": publicPolicy}, nil
}

func (f *fakeBackend) CheckUsage(_ context.Context, repair bool) (objects.UsageCheck, error) {
	c := objects.UsageCheck{Buckets: 2}
	if f.checked != nil {
		c = *f.checked
	}
	return c, f.record("CheckUsage(%t)", repair)
}

func (f *fakeBackend) user(name string) iam.UserInfo {
	return iam.UserInfo{Name: name, Policies: []string{"readonly"}, Groups: []string{"devs"}, Created: testTime, CanonicalID: "c0ffee"}
}

func (f *fakeBackend) key(ak string) iam.KeyInfo {
	return iam.KeyInfo{AccessKey: ak, User: "alice", Description: "ci", Created: testTime}
}

func (f *fakeBackend) newKey(user string) iam.NewKey {
	return iam.NewKey{KeyInfo: iam.KeyInfo{AccessKey: "NEWKEY", User: user, Created: testTime}, SecretKey: "new-secret"}
}

func (f *fakeBackend) CreateUser(_ context.Context, name string) (iam.NewKey, error) {
	return f.newKey(name), f.record("CreateUser(%s)", name)
}

func (f *fakeBackend) Users(context.Context) ([]iam.UserInfo, error) {
	return []iam.UserInfo{f.user("alice")}, f.record("Users()")
}

func (f *fakeBackend) User(_ context.Context, name string) (iam.UserInfo, error) {
	return f.user(name), f.record("User(%s)", name)
}

func (f *fakeBackend) DeleteUser(_ context.Context, name string) error {
	return f.record("DeleteUser(%s)", name)
}

func (f *fakeBackend) SetUserDisabled(_ context.Context, name string, disabled bool) error {
	return f.record("SetUserDisabled(%s, %t)", name, disabled)
}

// SetPassword records the password's length, never the password.
func (f *fakeBackend) SetPassword(_ context.Context, name, password string) error {
	return f.record("SetPassword(%s, %d bytes)", name, len(password))
}

// Simulate records the question and answers allowed for s3:GetObject.
func (f *fakeBackend) Simulate(_ context.Context, in iam.SimulateInput) (iam.Simulation, error) {
	ip := ""
	if in.Cond.SourceIP.IsValid() {
		ip = in.Cond.SourceIP.String()
	}
	if err := f.record("Simulate(user=%s, key=%s, %s, %s/%s, ip=%s)", in.User, in.AccessKey, in.Action, in.Bucket, in.Key, ip); err != nil {
		return iam.Simulation{}, err
	}
	return iam.Simulation{Allowed: in.Action == iam.GetObject, Reason: iam.ReasonAllowed, Message: "Allowed.",
		Deciding: []iam.Evaluation{}, Evaluated: []iam.Evaluation{}, Principal: in.User, Action: in.Action}, nil
}

func (f *fakeBackend) CreateKey(_ context.Context, user string, opt iam.KeyOptions) (iam.NewKey, error) {
	exp := ""
	if !opt.Expires.IsZero() {
		exp = opt.Expires.UTC().Format(time.RFC3339)
	}
	return f.newKey(user), f.record("CreateKey(%s, policy=%s, description=%s, expires=%s)", user, opt.Policy, opt.Description, exp)
}

func (f *fakeBackend) Keys(_ context.Context, user string) ([]iam.KeyInfo, error) {
	return []iam.KeyInfo{f.key("AK1")}, f.record("Keys(%s)", user)
}

func (f *fakeBackend) Key(_ context.Context, ak string) (iam.KeyInfo, error) {
	return f.key(ak), f.record("Key(%s)", ak)
}

func (f *fakeBackend) DeleteKey(_ context.Context, ak string) error {
	return f.record("DeleteKey(%s)", ak)
}

func (f *fakeBackend) SetKeyDisabled(_ context.Context, ak string, disabled bool) error {
	return f.record("SetKeyDisabled(%s, %t)", ak, disabled)
}

func (f *fakeBackend) RotateKey(_ context.Context, ak string) (iam.NewKey, error) {
	return f.newKey("alice"), f.record("RotateKey(%s)", ak)
}

func (f *fakeBackend) CreateGroup(_ context.Context, name string) error {
	return f.record("CreateGroup(%s)", name)
}

func (f *fakeBackend) Groups(context.Context) ([]iam.GroupInfo, error) {
	return []iam.GroupInfo{{Name: "devs", Members: []string{"alice"}, Policies: []string{}, Created: testTime}}, f.record("Groups()")
}

func (f *fakeBackend) Group(_ context.Context, name string) (iam.GroupInfo, error) {
	return iam.GroupInfo{Name: name, Members: []string{"alice"}, Policies: []string{}, Created: testTime}, f.record("Group(%s)", name)
}

func (f *fakeBackend) DeleteGroup(_ context.Context, name string) error {
	return f.record("DeleteGroup(%s)", name)
}

func (f *fakeBackend) UpdateGroupMembers(_ context.Context, group string, add, remove []string) error {
	return f.record("UpdateGroupMembers(%s, add=%s, remove=%s)", group, strings.Join(add, ","), strings.Join(remove, ","))
}

func (f *fakeBackend) PutPolicy(_ context.Context, name string, doc []byte) error {
	return f.record("PutPolicy(%s, %s)", name, doc)
}

func (f *fakeBackend) Policies(context.Context) ([]iam.PolicyInfo, error) {
	return []iam.PolicyInfo{{Name: "readonly", Canned: true, Document: []byte(`{"Version":"2012-10-17"}`), Users: []string{}, Groups: []string{}}}, f.record("Policies()")
}

func (f *fakeBackend) Policy(_ context.Context, name string) (iam.PolicyInfo, error) {
	return iam.PolicyInfo{Name: name, Document: []byte(`{"Version":"2012-10-17"}`), Users: []string{"alice"}, Groups: []string{}, Created: testTime}, f.record("Policy(%s)", name)
}

func (f *fakeBackend) DeletePolicy(_ context.Context, name string) error {
	return f.record("DeletePolicy(%s)", name)
}

func (f *fakeBackend) AttachPolicy(_ context.Context, policy string, t iam.Target) error {
	return f.record("AttachPolicy(%s, user=%s, group=%s)", policy, t.User, t.Group)
}

func (f *fakeBackend) DetachPolicy(_ context.Context, policy string, t iam.Target) error {
	return f.record("DetachPolicy(%s, user=%s, group=%s)", policy, t.User, t.Group)
}

// fakeGC records the grace of every GC call.
type fakeGC struct {
	mu     sync.Mutex // guards graces
	graces []time.Duration
	err    error
}

func (g *fakeGC) run(_ context.Context, grace time.Duration) (objects.GCStats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.graces = append(g.graces, grace)
	return objects.GCStats{Grace: grace, Scanned: 7, Deleted: 3, DeletedBytes: 300, ExpiredUploads: 1}, g.err
}

// fakeLifecycle stands for lifecycle.Worker.RunPass: it records the
// buckets asked for and answers a pass over two buckets, one failed.
type fakeLifecycle struct {
	mu      sync.Mutex // guards buckets
	buckets []string
	err     error
}

func (l *fakeLifecycle) run(_ context.Context, bucket string) (lifecycle.PassResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buckets = append(l.buckets, bucket)
	if l.err != nil {
		return lifecycle.PassResult{}, l.err
	}
	return lifecycle.PassResult{Duration: time.Second, Buckets: []lifecycle.BucketResult{
		{Bucket: "logs", Examined: 10, ObjectsExpired: 3, DeleteMarkersCreated: 1, VersionsRemoved: 2, DeleteMarkersRemoved: 1,
			UploadsAborted: 1, Skipped: 1, DeletedBytes: 500},
		{Bucket: "photos", Examined: 4, Err: errors.New("disk on fire")},
	}}, nil
}

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixture is a Handler over a fake backend.
type fixture struct {
	h    *Handler
	be   *fakeBackend
	gc   *fakeGC
	lc   *fakeLifecycle
	logs *syncBuffer
	obs  *recordingObserver
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, nil)
}

// newFixtureWith is newFixture with adjust applied to the Deps first.
func newFixtureWith(t *testing.T, adjust func(*Deps)) *fixture {
	t.Helper()
	f := &fixture{be: newFakeBackend(), gc: &fakeGC{}, lc: &fakeLifecycle{}, logs: &syncBuffer{}, obs: &recordingObserver{}}
	d := Deps{
		IAM:          f.be,
		Verifier:     sigv4.NewVerifier(sigv4.Config{}, f.be),
		GC:           f.gc.run,
		Lifecycle:    f.lc.run,
		Buckets:      f.be,
		Audit:        f.be,
		Observer:     f.obs,
		Logger:       slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		NewRequestID: func() string { return "REQ1" },
	}
	if adjust != nil {
		adjust(&d)
	}
	h, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

// signed returns a request for target signed by cred with a signed
// payload, as the Client sends it.
func signed(t *testing.T, cred sigv4.Credentials, method, target, body string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if body == "" {
		r.Body, r.ContentLength = http.NoBody, 0
	}
	sum := sha256.Sum256([]byte(body))
	sigv4.SignRequest(r, cred, "us-east-1", time.Now(), hex.EncodeToString(sum[:]))
	return r
}

// serve runs r through the fixture's handler.
func (f *fixture) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

// The fake audit log: Flush, then Query or Export, recorded as calls.

var testEvent = audit.Event{ID: 7, Time: testTime, Source: "s3", Op: "PutObject", Status: 200, Bucket: "photos", Key: "a.jpg",
	User: "alice", AccessKey: "AK1", SourceIP: "192.0.2.1", RequestID: "R7", BytesIn: 5, Duration: 1500 * time.Microsecond}

func (f *fakeBackend) Flush(context.Context) error { return f.record("Flush()") }

func (f *fakeBackend) Query(_ context.Context, flt audit.Filter) (audit.Page, error) {
	if err := f.record("Query(%s)", filterString(flt)); err != nil {
		return audit.Page{}, err
	}
	return audit.Page{Events: []audit.Event{testEvent}, Next: 6}, nil
}

func (f *fakeBackend) Export(_ context.Context, flt audit.Filter, w io.Writer) (int64, error) {
	if err := f.record("Export(%s)", filterString(flt)); err != nil {
		return 0, err
	}
	data, err := json.Marshal(testEvent)
	if err != nil {
		return 0, err
	}
	_, err = w.Write(append(data, '\n'))
	return 1, err
}

// filterString renders the fields of a filter that are set.
func filterString(f audit.Filter) string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+"="+v)
		}
	}
	if !f.Since.IsZero() {
		add("since", f.Since.UTC().Format(time.RFC3339))
	}
	if !f.Until.IsZero() {
		add("until", f.Until.UTC().Format(time.RFC3339))
	}
	add("source", f.Source)
	add("op", f.Op)
	add("bucket", f.Bucket)
	add("prefix", f.KeyPrefix)
	add("user", f.User)
	add("accessKey", f.AccessKey)
	add("sourceIp", f.SourceIP)
	if f.Failed {
		add("failed", "true")
	}
	if f.Before != 0 {
		add("before", fmt.Sprint(f.Before))
	}
	if f.Limit != 0 {
		add("limit", fmt.Sprint(f.Limit))
	}
	return strings.Join(parts, ", ")
}

// recordingObserver keeps the records it is told about.
type recordingObserver struct {
	mu   sync.Mutex
	recs []Record
}

func (o *recordingObserver) ObserveAdmin(rec *Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recs = append(o.recs, *rec)
}

func (o *recordingObserver) records() []Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Record(nil), o.recs...)
}
