// Package iam decides who a request comes from and whether it may do what
// it asks: root, users with access keys (optionally scoped by their own
// policy), groups, named policies in the AWS IAM JSON language
// (internal/policy) and bucket policies.
//
// Requests read an immutable in-memory snapshot, so SecretKey, Principal
// and Authorize take no lock and do no I/O; a management call builds and
// saves a new state, then swaps the snapshot, so every change applies to
// the next request. Secrets are sealed with AES-256-GCM under a master key
// before they reach the Store.
//
// The decision, as AWS makes it for a principal and a resource of the same
// account (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html):
// an explicit Deny in any applicable policy wins; otherwise the request is
// allowed if an identity policy of the user (attached to the user or one
// of its groups) or the bucket's policy allows it, and, for a scoped key,
// the key's own policy allows it too. Anonymous requests are allowed only
// by a bucket policy with Principal "*". Root is allowed everything.
package iam

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coffer-s3/coffer/internal/policy"
	"github.com/coffer-s3/coffer/internal/s3err"
)

// ErrUnknownKey is returned by SecretKey for an access key that does not
// exist, is disabled, has expired or belongs to a disabled user. It matches
// sigv4's expectations through errors.Is on the value the server wires in
// (see server.keyring).
var ErrUnknownKey = errors.New("iam: unknown access key")

// Action is an IAM action name as it appears in policies, e.g. "s3:GetObject".
type Action string

// The S3 actions Coffer's operations map to. See
// https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html
const (
	ListAllMyBuckets           Action = "s3:ListAllMyBuckets"
	CreateBucket               Action = "s3:CreateBucket"
	DeleteBucket               Action = "s3:DeleteBucket"
	ListBucket                 Action = "s3:ListBucket"
	GetBucketLocation          Action = "s3:GetBucketLocation"
	GetBucketVersioning        Action = "s3:GetBucketVersioning"
	PutBucketVersioning        Action = "s3:PutBucketVersioning"
	GetBucketAcl               Action = "s3:GetBucketAcl"
	PutBucketAcl               Action = "s3:PutBucketAcl"
	GetBucketPolicy            Action = "s3:GetBucketPolicy"
	PutBucketPolicy            Action = "s3:PutBucketPolicy"
	DeleteBucketPolicy         Action = "s3:DeleteBucketPolicy"
	GetBucketPolicyStatus      Action = "s3:GetBucketPolicyStatus"
	GetBucketCORS              Action = "s3:GetBucketCORS"
	PutBucketCORS              Action = "s3:PutBucketCORS"
	ListBucketMultipartUploads Action = "s3:ListBucketMultipartUploads"
	ListBucketVersions         Action = "s3:ListBucketVersions"
	GetObject                  Action = "s3:GetObject"
	GetObjectVersion           Action = "s3:GetObjectVersion"
	PutObject                  Action = "s3:PutObject"
	DeleteObject               Action = "s3:DeleteObject"
	DeleteObjectVersion        Action = "s3:DeleteObjectVersion"
	GetObjectAcl               Action = "s3:GetObjectAcl"
	PutObjectAcl               Action = "s3:PutObjectAcl"
	ListMultipartUploadParts   Action = "s3:ListMultipartUploadParts"
	AbortMultipartUpload       Action = "s3:AbortMultipartUpload"
	GetObjectAttributes        Action = "s3:GetObjectAttributes"
	GetObjectVersionAttributes Action = "s3:GetObjectVersionAttributes"
	GetObjectTagging           Action = "s3:GetObjectTagging"
	GetObjectVersionTagging    Action = "s3:GetObjectVersionTagging"
	PutObjectTagging           Action = "s3:PutObjectTagging"
	PutObjectVersionTagging    Action = "s3:PutObjectVersionTagging"
	DeleteObjectTagging        Action = "s3:DeleteObjectTagging"
	DeleteObjectVersionTagging Action = "s3:DeleteObjectVersionTagging"
	GetBucketTagging           Action = "s3:GetBucketTagging"
	GetBucketOwnership         Action = "s3:GetBucketOwnershipControls"
	GetBucketPublicAccessBlock Action = "s3:GetBucketPublicAccessBlock"
	PutBucketPublicAccessBlock Action = "s3:PutBucketPublicAccessBlock"
	PutBucketOwnership         Action = "s3:PutBucketOwnershipControls"
	GetObjectVersionAcl        Action = "s3:GetObjectVersionAcl"
	PutObjectVersionAcl        Action = "s3:PutObjectVersionAcl"
	PutBucketTagging           Action = "s3:PutBucketTagging"
	GetLifecycleConfiguration  Action = "s3:GetLifecycleConfiguration"
	PutLifecycleConfiguration  Action = "s3:PutLifecycleConfiguration"
	NotImplementedAction       Action = "s3:*"
)

// Principal is an authenticated caller.
type Principal struct {
	AccessKeyID string
	User        string // the key's user; "" for root and anonymous
	// UserID is the user's ID (userRec.ID) when the principal was made,
	// "" for a user created before users had IDs: a principal of a user
	// since deleted and created again under its name is not the new one.
	UserID    string
	Root      bool
	Anonymous bool
	// Session marks a principal signed in to the web console (SignIn)
	// rather than one that signed a request with an access key: a user's
	// own identity policies apply, with no key's scope.
	Session bool
}

// Request is what Authorize judges: an action on a resource by a principal,
// with the request's condition keys.
type Request struct {
	Principal Principal
	Action    Action
	Bucket    string // "" for service-level and admin actions
	Key       string // "" for bucket-level actions
	Cond      Conditions
	// ACL, if set, reports whether the resource's access control list
	// grants the request (S3 ACLs: see package acl). It is consulted only
	// when no policy allows the request, and never overrides an explicit
	// Deny or an access key's scope.
	ACL func() bool
	// RestrictPublic, if set, reports whether the bucket restricts access
	// through a public bucket policy to its own account (S3 Block Public
	// Access, RestrictPublicBuckets). It is consulted only for an
	// anonymous request that a public bucket policy allows: if it reports
	// true, the policy's Allow does not count (its Deny still does).
	RestrictPublic func() bool
}

// Conditions are the request facts policy conditions may test. Zero
// values mean absent, except SecureTransport.
type Conditions struct {
	SourceIP         netip.Addr // aws:SourceIp
	SecureTransport  bool       // aws:SecureTransport
	Prefix           *string    // s3:prefix (list requests)
	Delimiter        *string    // s3:delimiter
	MaxKeys          *string    // s3:max-keys
	UserAgent        string     // aws:UserAgent
	Referer          string     // aws:Referer
	SignatureVersion string     // s3:signatureversion: "AWS4-HMAC-SHA256" or "AWS"
	AuthType         string     // s3:authType: "REST-HEADER" or "REST-QUERY-STRING"
	// ExistingObjectTags returns the tags of the object the request is on
	// (s3:ExistingObjectTag/<key>), nil if it has none or none can be
	// known; called only if a policy condition needs it, at most once per
	// policy evaluated.
	ExistingObjectTags func() map[string]string
	// RequestObjectTags are the tags the request sets
	// (s3:RequestObjectTag/<key>, s3:RequestObjectTagKeys); nil for none.
	RequestObjectTags map[string]string
	// Header is the request's headers (an http.Header), for the
	// request-header condition keys (s3:x-amz-acl, …; see package
	// policy); nil for none.
	Header map[string][]string
	// CopySource is a copy's source as bucket/key, decoded
	// (s3:x-amz-copy-source); "" for none.
	CopySource string
	// ContentSHA256 is how the payload was verified
	// (s3:x-amz-content-sha256: a hex SHA-256 or a keyword such as
	// UNSIGNED-PAYLOAD); "" for none.
	ContentSHA256 string
}

// Store keeps the IAM state and bucket policies durably. The server
// implements it over the metadata store. Implementations must be safe for
// concurrent use.
type Store interface {
	// IAMState returns the saved state document, or nil if none was saved.
	IAMState(ctx context.Context) ([]byte, error)
	// PutIAMState replaces the state document durably.
	PutIAMState(ctx context.Context, doc []byte) error
	// BucketPolicy returns bucket's policy document, or nil if the bucket
	// has none or does not exist.
	BucketPolicy(ctx context.Context, bucket string) ([]byte, error)
	// BucketPolicies returns every bucket policy by bucket name.
	BucketPolicies(ctx context.Context) (map[string][]byte, error)
}

// UpdateStore is a Store shared by several nodes, each with an IAM over
// it: a change must apply to the stored state, read and written under a
// lock all nodes respect, or a concurrent change through another node
// would be lost. Changes then use UpdateIAMState instead of PutIAMState,
// and each node calls Reload and RefreshBucketPolicy (or
// ReloadBucketPolicies) when another node changes the state.
type UpdateStore interface {
	Store
	// UpdateIAMState replaces the state document with what fn returns
	// for the stored one (nil if none), atomically against every other
	// update; fn's error aborts it and is returned.
	UpdateIAMState(ctx context.Context, fn func(old []byte) ([]byte, error)) error
}

// Config configures an IAM.
type Config struct {
	RootAccessKey string
	RootSecretKey string
	// MasterKey seals secrets at rest: MasterKeySize random bytes. Required
	// with a Store.
	MasterKey []byte
	// Store keeps the state. Nil keeps it in memory only (tests).
	Store Store
	// Clock returns the current time. Default time.Now.
	Clock func() time.Time
	// Password holds the argon2id parameters of new console password
	// hashes; the zero value means DefaultPasswordParams.
	Password PasswordParams
	// Logger receives what fails without failing the call that caused
	// it: a sign-in whose password hash upgrade was not saved. Nil
	// discards.
	Logger *slog.Logger
}

// IAM resolves access keys and authorizes requests. Safe for concurrent use.
type IAM struct {
	rootAK, rootSK []byte
	store          Store
	seal           *sealer
	macKey         []byte // MAC's key, derived from the master key
	clock          func() time.Time
	pwParams       PasswordParams
	log            *slog.Logger
	// dummyHash returns a hash of a random password under pwParams, made
	// once, against which SignIn checks unknown names.
	dummyHash func() string

	snap atomic.Pointer[snapshot]
	mu   sync.Mutex // serializes changes of the state

	bpMu sync.Mutex                                // serializes RefreshBucketPolicy
	bp   atomic.Pointer[map[string]*policy.Policy] // bucket → policy; copy on write
}

// New returns an IAM with root credentials from cfg, loading the saved
// state and bucket policies from cfg.Store.
func New(cfg Config) (*IAM, error) {
	if cfg.RootAccessKey == "" || cfg.RootSecretKey == "" {
		return nil, errors.New("iam: root credentials are required")
	}
	m := &IAM{rootAK: []byte(cfg.RootAccessKey), rootSK: []byte(cfg.RootSecretKey), store: cfg.Store, clock: cfg.Clock, pwParams: cfg.Password, log: cfg.Logger}
	if m.clock == nil {
		m.clock = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.pwParams == (PasswordParams{}) {
		m.pwParams = DefaultPasswordParams
	}
	if err := m.pwParams.Validate(); err != nil {
		return nil, fmt.Errorf("iam: %w", err)
	}
	m.dummyHash = sync.OnceValue(func() string {
		pw := make([]byte, 32)
		_, _ = randRead(pw)
		return hashPassword(m.pwParams, string(pw))
	})
	key := cfg.MasterKey
	if key == nil && cfg.Store == nil {
		// Nothing is stored, so nothing needs to open later.
		key = make([]byte, MasterKeySize)
		_, _ = randRead(key)
	}
	s, err := newSealer(key)
	if err != nil {
		return nil, err
	}
	m.seal = s
	m.macKey = newMACKey(key)
	ctx := context.Background()
	var data []byte
	bps := map[string][]byte{}
	if m.store != nil {
		if data, err = m.store.IAMState(ctx); err != nil {
			return nil, fmt.Errorf("iam: load state: %w", err)
		}
		if bps, err = m.store.BucketPolicies(ctx); err != nil {
			return nil, fmt.Errorf("iam: load bucket policies: %w", err)
		}
	}
	doc, err := decodeState(data)
	if err != nil {
		return nil, err
	}
	if doc.Check == "" {
		doc.Check = s.seal(checkText, checkAD)
	} else if txt, err := s.open(doc.Check, checkAD); err != nil || txt != checkText {
		return nil, ErrWrongMasterKey
	}
	if us, ok := m.store.(UpdateStore); ok && data == nil {
		if doc, err = m.storeCheck(ctx, us, doc); err != nil {
			return nil, err
		}
	}
	snap, err := buildSnapshot(doc, s, nil)
	if err != nil {
		return nil, err
	}
	m.snap.Store(snap)
	pols := make(map[string]*policy.Policy, len(bps))
	for b, d := range bps {
		p, err := parseStoredBucketPolicy(b, d)
		if err != nil {
			return nil, fmt.Errorf("iam: stored policy of bucket %s: %w", b, err)
		}
		pols[b] = p
	}
	m.bp.Store(&pols)
	return m, nil
}

// errStored ends storeCheck's update without writing: another node
// stored the state first.
var errStored = errors.New("iam: state already stored")

// storeCheck stores doc, the new state of a shared store that has none
// yet, so that its master-key check (doc.Check) is in the database from
// the first start of the first node: a node started later with another
// key is refused by New, rather than starting with no users and failing
// at the first change. If another node stored a state meanwhile, that is
// returned instead, once its check opens with this node's key; else
// ErrWrongMasterKey.
func (m *IAM) storeCheck(ctx context.Context, us UpdateStore, doc *stateDoc) (*stateDoc, error) {
	stored := doc
	err := us.UpdateIAMState(ctx, func(old []byte) ([]byte, error) {
		if old == nil {
			return json.Marshal(doc)
		}
		d, err := decodeState(old)
		if err != nil {
			return nil, err
		}
		if txt, err := m.seal.open(d.Check, checkAD); err != nil || txt != checkText {
			return nil, ErrWrongMasterKey
		}
		stored = d
		return nil, errStored
	})
	switch {
	case errors.Is(err, errStored):
	case errors.Is(err, ErrWrongMasterKey):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("iam: store the master-key check: %w", err)
	}
	return stored, nil
}

// decodeStored returns the snapshot of the stored document data (nil: none
// saved, which is the current snapshot's empty state), reusing what the
// current snapshot already decoded. The caller holds m.mu.
func (m *IAM) decodeStored(data []byte) (*snapshot, error) {
	prev := m.snap.Load()
	if data == nil {
		return prev, nil
	}
	doc, err := decodeState(data)
	if err != nil {
		return nil, err
	}
	if doc.Check != prev.doc.Check {
		if txt, err := m.seal.open(doc.Check, checkAD); err != nil || txt != checkText {
			return nil, ErrWrongMasterKey
		}
	}
	return buildSnapshot(doc, m.seal, prev)
}

// Reload reads the state from the Store again and makes it current: a
// node calls it when another node of a shared store changed the state. A
// key revoked or disabled there stops working here with the swap. On
// error the current state stays.
func (m *IAM) Reload(ctx context.Context) error {
	if m.store == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	data, err := m.store.IAMState(ctx)
	if err != nil {
		return fmt.Errorf("iam: reload state: %w", err)
	}
	snap, err := m.decodeStored(data)
	if err != nil {
		// The stored state, which may have revoked keys, cannot be
		// read (another master key, a newer format): fail closed, with
		// no user and no key, until a reload succeeds; root still works.
		prev := m.snap.Load()
		empty := newStateDoc()
		empty.Check = prev.doc.Check
		if s, berr := buildSnapshot(empty, m.seal, nil); berr == nil {
			m.snap.Store(s)
		}
		return fmt.Errorf("iam: reload state: %w", err)
	}
	m.snap.Store(snap)
	return nil
}

// ReloadBucketPolicies reads every bucket policy from the Store again and
// makes them current, as RefreshBucketPolicy does for one bucket. On error
// the current policies stay.
func (m *IAM) ReloadBucketPolicies(ctx context.Context) error {
	if m.store == nil {
		return nil
	}
	m.bpMu.Lock()
	defer m.bpMu.Unlock()
	bps, err := m.store.BucketPolicies(ctx)
	if err != nil {
		return fmt.Errorf("iam: reload bucket policies: %w", err)
	}
	pols := make(map[string]*policy.Policy, len(bps))
	for b, d := range bps {
		p, err := parseStoredBucketPolicy(b, d)
		if err != nil {
			// Fail closed, as RefreshBucketPolicy does.
			p = denyAll(b)
		}
		pols[b] = p
	}
	m.bp.Store(&pols)
	return nil
}

// isRoot reports whether accessKeyID is root's, in constant time.
func (m *IAM) isRoot(accessKeyID string) bool {
	return subtle.ConstantTimeCompare([]byte(accessKeyID), m.rootAK) == 1
}

// SecretKey returns the secret of accessKeyID, or ErrUnknownKey if the key
// does not exist or may not sign requests now (disabled, expired, or its
// user disabled).
func (m *IAM) SecretKey(_ context.Context, accessKeyID string) (string, error) {
	if m.isRoot(accessKeyID) {
		return string(m.rootSK), nil
	}
	k, ok := m.snap.Load().keys[accessKeyID]
	if !ok || !k.usable(m.clock()) {
		return "", ErrUnknownKey
	}
	return k.secret, nil
}

// CanonicalID returns the canonical user ID of p, which S3 shows as the
// owner of its buckets and objects and which ACL grants name: 64 hex
// digits, root's (RootCanonicalID) or derived from the user's name and
// ID (the same for all its keys, and another for a user deleted and
// created again under the same name); "" for an anonymous principal. A
// principal whose user no longer exists, or is another user of the name
// now (Principal.UserID differs), gets an ID that names nothing, so a
// request in flight when its user was deleted can own or match nothing.
func (m *IAM) CanonicalID(p Principal) string {
	switch {
	case p.Anonymous:
		return ""
	case p.Root:
		return RootCanonicalID()
	}
	if u, ok := m.snap.Load().users[p.User]; ok && u.id == p.UserID {
		return u.canonical
	}
	return canonicalID("gone:" + p.User)
}

// RootCanonicalID returns the root user's canonical ID, which also owns
// the buckets created before owners were recorded.
func RootCanonicalID() string { return canonicalID("root") }

// userCanonicalID derives the canonical ID of user name whose ID is id.
// A user created before users had IDs keeps the one derived from its name.
func userCanonicalID(name, id string) string {
	if id == "" {
		return canonicalID("user:" + name)
	}
	return canonicalID("user:" + name + "/" + id)
}

func canonicalID(name string) string {
	sum := sha256.Sum256([]byte("coffer-canonical:" + name))
	return hex.EncodeToString(sum[:])
}

// newUserID returns a new user's ID (userRec.ID): 128 random bits.
func newUserID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// AccountID is the 12-digit ID that names Coffer's one account in the ARNs
// it writes. The account has no number of its own (a policy may name it by
// any 12-digit ID), so this one is all zeros: plainly not an AWS account.
const AccountID = "000000000000"

// UploadInitiator names p in a multipart upload's record
// (objects.CreateUploadInput.Initiator), for ListMultipartUploads and
// ListParts to report who started it: "root", "user:" and the user's
// name, or "" for an anonymous caller, whose upload reports its owner
// instead. ParseUploadInitiator reads it back.
func UploadInitiator(p Principal) string {
	switch {
	case p.Anonymous:
		return ""
	case p.Root:
		return "root"
	}
	return "user:" + p.User
}

// ParseUploadInitiator returns the principal UploadInitiator named; ok is
// false for "" (an anonymous caller, or an upload from before initiators
// were kept) and anything else it did not write.
func ParseUploadInitiator(s string) (p Principal, ok bool) {
	if s == "root" {
		return Principal{Root: true}, true
	}
	if user, isUser := strings.CutPrefix(s, "user:"); isUser && user != "" {
		return Principal{User: user}, true
	}
	return Principal{}, false
}

// ARN returns the IAM ARN of p, as S3 names an IAM user where it names who
// did something (a multipart upload's Initiator):
// arn:aws:iam::ACCOUNT:user/NAME, or arn:aws:iam::ACCOUNT:root for root;
// "" for an anonymous principal. A policy's Principal accepts it back.
func ARN(p Principal) string {
	switch {
	case p.Anonymous:
		return ""
	case p.Root:
		return "arn:aws:iam::" + AccountID + ":root"
	}
	return "arn:aws:iam::" + AccountID + ":user/" + p.User
}

// DisplayName returns the display name S3 shows with p's canonical ID:
// the user's name, or "root".
func DisplayName(p Principal) string {
	if p.Root {
		return "root"
	}
	return p.User
}

// CanonicalUser returns the principal whose canonical ID is id: root or a
// user that exists now. An ACL grant may name only those.
func (m *IAM) CanonicalUser(id string) (Principal, bool) {
	if id == RootCanonicalID() {
		return Principal{Root: true}, true
	}
	snap := m.snap.Load()
	if name, ok := snap.byCanonical[id]; ok {
		return Principal{User: name, UserID: snap.users[name].id}, true
	}
	return Principal{}, false
}

// Principal returns the principal for an authenticated access key.
func (m *IAM) Principal(accessKeyID string) Principal {
	if m.isRoot(accessKeyID) {
		return Principal{AccessKeyID: accessKeyID, Root: true}
	}
	p := Principal{AccessKeyID: accessKeyID}
	if k, ok := m.snap.Load().keys[accessKeyID]; ok {
		p.User, p.UserID = k.user.name, k.user.id
	}
	return p
}

// Authorize returns nil if the request is allowed, else an AccessDenied
// *s3err.Error whose resource is bucket/key. It fails closed: a principal
// whose key vanished or was disabled since authentication is denied.
//
// s3:ListAllMyBuckets is special: every authenticated principal may call
// ListBuckets unless a policy denies it explicitly, and sees the buckets
// CanSeeBucket allows.
func (m *IAM) Authorize(_ context.Context, rq Request) error {
	if m.authorize(&rq, nil) {
		return nil
	}
	res := rq.Bucket
	if rq.Key != "" {
		res += "/" + rq.Key
	}
	return s3err.New(s3err.AccessDenied, res)
}

// authorize decides rq. If tr is not nil, it records each policy
// evaluated and why the decision fell as it did: Simulate and Authorize
// run this same code, so an explanation cannot drift from the decision.
func (m *IAM) authorize(rq *Request, tr *trace) bool {
	p := rq.Principal
	if p.Root && !p.Anonymous && m.isRoot(p.AccessKeyID) {
		return tr.verdict(true, ReasonRoot)
	}
	return m.decide(rq, tr)
}

// decide evaluates rq for a principal that is not root, recording in tr
// (if not nil) what it evaluated and why it decided.
func (m *IAM) decide(rq *Request, tr *trace) bool {
	c := m.context(rq)
	var bp *policy.Policy
	if rq.Bucket != "" {
		bp = (*m.bp.Load())[rq.Bucket]
	}
	if rq.Principal.Anonymous {
		if bp != nil {
			switch tr.eval(bp, &c, Source{Kind: SourceBucket, Bucket: rq.Bucket}) {
			case policy.Deny:
				return tr.verdict(false, denyReason(&c))
			case policy.Allow:
				// Anyone outside the account reaches a bucket only
				// through a public policy, which Block Public Access
				// may restrict to the account.
				if !bp.Public() || rq.RestrictPublic == nil || !rq.RestrictPublic() {
					return tr.verdict(true, ReasonAllowed)
				}
			}
		}
		if rq.ACL != nil && rq.ACL() {
			return tr.verdict(true, ReasonACL)
		}
		return tr.verdict(false, ReasonNoAllow)
	}
	user, scope, key, ok := m.identity(rq.Principal, c.CurrentTime)
	if !ok {
		return tr.verdict(false, ReasonInactive)
	}
	c.Principal.UserID = user.id // for bucket policies bound to users
	allowed := false
	for i, ip := range user.policies {
		src := Source{Kind: SourceUser, Policy: user.refs[i].name, User: user.name}
		if g := user.refs[i].group; g != "" {
			src = Source{Kind: SourceGroup, Policy: user.refs[i].name, Group: g}
		}
		switch tr.eval(ip, &c, src) {
		case policy.Deny:
			return tr.verdict(false, denyReason(&c))
		case policy.Allow:
			allowed = true
		}
	}
	if bp != nil {
		switch tr.eval(bp, &c, Source{Kind: SourceBucket, Bucket: rq.Bucket}) {
		case policy.Deny:
			return tr.verdict(false, denyReason(&c))
		case policy.Allow:
			allowed = true
		}
	}
	if scope != nil {
		switch tr.eval(scope, &c, Source{Kind: SourceKey, AccessKey: key}) {
		case policy.Deny:
			return tr.verdict(false, denyReason(&c))
		case policy.NotApplicable:
			return tr.verdict(false, ReasonOutsideScope)
		}
	}
	if rq.Action == ListAllMyBuckets {
		return tr.verdict(true, ReasonListBuckets) // no explicit deny: CanSeeBucket filters
	}
	if allowed {
		return tr.verdict(true, ReasonAllowed)
	}
	// An ACL grant allows what no policy does, but never against an
	// explicit Deny or outside a key's scope (both checked above).
	if rq.ACL != nil && rq.ACL() {
		return tr.verdict(true, ReasonACL)
	}
	return tr.verdict(false, ReasonNoAllow)
}

// denyReason is why a policy's Deny denies: a Deny statement applies, or
// matching its patterns against the request ran out of its budget
// (policy.Context.Costly).
func denyReason(c *policy.Context) Reason {
	if c.Costly() {
		return ReasonCostly
	}
	return ReasonExplicitDeny
}

// context returns the policy evaluation context of rq.
func (m *IAM) context(rq *Request) policy.Context {
	c := policy.Context{
		Action:           string(rq.Action),
		Resource:         resourceARN(rq.Bucket, rq.Key),
		Principal:        policy.Principal{Anonymous: rq.Principal.Anonymous, User: rq.Principal.User},
		Username:         rq.Principal.User,
		SourceIP:         rq.Cond.SourceIP,
		SecureTransport:  rq.Cond.SecureTransport,
		CurrentTime:      m.clock(),
		UserAgent:        rq.Cond.UserAgent,
		Referer:          rq.Cond.Referer,
		SignatureVersion: rq.Cond.SignatureVersion,
		AuthType:         rq.Cond.AuthType,

		ExistingObjectTags: rq.Cond.ExistingObjectTags,
		RequestObjectTags:  rq.Cond.RequestObjectTags,
		Header:             rq.Cond.Header,
		CopySource:         rq.Cond.CopySource,
		ContentSHA256:      rq.Cond.ContentSHA256,
	}
	if rq.Principal.Anonymous {
		c.Username = ""
		c.Principal.User = ""
	}
	if v := rq.Cond.Prefix; v != nil {
		c.Prefix, c.HasPrefix = *v, true
	}
	if v := rq.Cond.Delimiter; v != nil {
		c.Delimiter, c.HasDelimiter = *v, true
	}
	if v := rq.Cond.MaxKeys; v != nil {
		c.MaxKeys, c.HasMaxKeys = *v, true
	}
	return c
}

// resourceARN returns the ARN of bucket/key, or "" for actions on no
// resource.
func resourceARN(bucket, key string) string {
	switch {
	case bucket == "":
		return ""
	case key == "":
		return "arn:aws:s3:::" + bucket
	}
	return "arn:aws:s3:::" + bucket + "/" + key
}

// visibleActions are what makes a bucket show in a caller's ListBuckets:
// the caller may list it or read something in it.
var visibleActions = []string{string(ListBucket), string(GetObject)}

// CanSeeBucket reports whether bucket belongs in p's ListBuckets: root sees
// every bucket; a user sees a bucket if one of its identity policies or the
// bucket's policy could allow it to list the bucket or read an object in
// it (conditions aside), and its key's scope could too.
func (m *IAM) CanSeeBucket(p Principal, bucket string) bool {
	if p.Root && !p.Anonymous && m.isRoot(p.AccessKeyID) {
		return true
	}
	if p.Anonymous {
		return false
	}
	user, scope, _, ok := m.identity(p, m.clock())
	if !ok {
		return false
	}
	pp := policy.Principal{User: user.name, UserID: user.id}
	if scope != nil && !scope.CouldAllowInBucket(pp, user.name, bucket, visibleActions...) {
		return false
	}
	for _, ip := range user.policies {
		if ip.CouldAllowInBucket(pp, user.name, bucket, visibleActions...) {
			return true
		}
	}
	bp := (*m.bp.Load())[bucket]
	return bp != nil && bp.CouldAllowInBucket(pp, user.name, bucket, visibleActions...)
}

// identity returns the user a principal that is neither root nor
// anonymous acts as, with its access key's scope (nil for none) and ID,
// or false if it may not act at now: its key is unknown, disabled or
// expired, or its user disabled. A console session (Principal.Session)
// acts as its user with no scope.
func (m *IAM) identity(p Principal, now time.Time) (*liveUser, *policy.Policy, string, bool) {
	snap := m.snap.Load()
	if p.Session {
		u, ok := snap.users[p.User]
		if !ok || u.disabled || u.id != p.UserID {
			return nil, nil, "", false
		}
		return u, nil, "", true
	}
	k, ok := snap.keys[p.AccessKeyID]
	if !ok || !k.usable(now) {
		return nil, nil, "", false
	}
	if p.User != "" && (k.user.name != p.User || k.user.id != p.UserID) {
		// Made for another user than the key's now (IAM.Principal sets
		// both): not this one.
		return nil, nil, "", false
	}
	return k.user, k.scope, k.id, true
}

// ParseBucketPolicy parses bucket's policy as stored (see
// BindBucketPolicy) and reports whether it grants anything to everyone
// (GetBucketPolicyStatus). Its error wraps ErrPolicy.
func ParseBucketPolicy(bucket string, stored []byte) (public bool, err error) {
	p, err := parseStoredBucketPolicy(bucket, stored)
	if err != nil {
		return false, err
	}
	return p.Public(), nil
}

// RefreshBucketPolicy reloads bucket's policy from the Store. Callers call
// it after every change of a bucket's policy or existence (PutBucketPolicy,
// DeleteBucketPolicy, DeleteBucket): refreshes are serialized and each
// reads the stored state, so after the last one the cache equals the
// store, whatever the interleaving of concurrent changes.
func (m *IAM) RefreshBucketPolicy(ctx context.Context, bucket string) error {
	if m.store == nil {
		return nil
	}
	m.bpMu.Lock()
	defer m.bpMu.Unlock()
	doc, err := m.store.BucketPolicy(ctx, bucket)
	var p *policy.Policy
	if err == nil && doc != nil {
		p, err = parseStoredBucketPolicy(bucket, doc)
	}
	if err != nil {
		// Fail closed: the stored policy may deny what the cached one
		// allowed, so until a refresh succeeds only root gets in.
		p = denyAll(bucket)
		err = fmt.Errorf("iam: load policy of bucket %s: %w", bucket, err)
	}
	old := *m.bp.Load()
	next := make(map[string]*policy.Policy, len(old)+1)
	for b, q := range old {
		next[b] = q
	}
	if p != nil {
		next[bucket] = p
	} else {
		delete(next, bucket)
	}
	m.bp.Store(&next)
	return err
}

// denyAll returns a bucket policy that denies everything to everyone.
func denyAll(bucket string) *policy.Policy {
	doc := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`, bucket, bucket)
	p, err := policy.ParseBucket(bucket, []byte(doc))
	if err != nil {
		panic("iam: deny-all policy does not parse: " + err.Error())
	}
	return p
}
