package adminapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/audit"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/redact"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// Bounds on the response bodies the Client reads. Listings of many
// thousands of users fit easily; an error document is small.
const (
	maxResponseSize = 64 << 20
	maxErrorSize    = 64 << 10
)

// Client calls the admin API, and the S3 bucket-policy operations, of one
// Coffer server with one access key. It is safe for concurrent use.
type Client struct {
	endpoint string // scheme://host[:port], no trailing slash
	cred     sigv4.Credentials
	region   string
	hc       *http.Client
	clock    func() time.Time
}

// NewClient returns a Client for the server at endpoint (http://host:port
// or https://host:port) signing with accessKey and secretKey for region
// ("" means us-east-1). A nil httpClient means a new http.Client without a
// timeout: bound calls with their context.
func NewClient(endpoint, accessKey, secretKey, region string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		// Not quoted: it may hold a password, and nothing tells where.
		return nil, errors.New("endpoint does not parse as a URL: want http(s)://host[:port]")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		// Quoted with its user information masked whole: the user name
		// may be a token.
		return nil, fmt.Errorf("endpoint %q: want http(s)://host[:port], without credentials", redact.URL(u))
	}
	if accessKey == "" || secretKey == "" {
		return nil, errors.New("adminapi: access key and secret key are required")
	}
	if region == "" {
		region = "us-east-1"
	}
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	return &Client{
		endpoint: u.Scheme + "://" + u.Host,
		cred:     sigv4.Credentials{AccessKeyID: accessKey, SecretKey: secretKey},
		region:   region,
		hc:       httpClient,
		clock:    time.Now,
	}, nil
}

// Endpoint returns the server's base URL, e.g. "http://127.0.0.1:6789".
func (c *Client) Endpoint() string { return c.endpoint }

// AccessKey returns the access key the Client signs with.
func (c *Client) AccessKey() string { return c.cred.AccessKeyID }

// Users lists all users.
func (c *Client) Users(ctx context.Context) ([]UserInfo, error) {
	var out UserList
	err := c.call(ctx, http.MethodGet, apiPath("users"), nil, nil, &out)
	return out.Users, err
}

// CreateUser creates a user with one access key and returns the key with
// its secret.
func (c *Client) CreateUser(ctx context.Context, name string) (CreateUserResponse, error) {
	var out CreateUserResponse
	err := c.call(ctx, http.MethodPost, apiPath("users"), nil, CreateUserRequest{Name: name}, &out)
	return out, err
}

// User describes a user.
func (c *Client) User(ctx context.Context, name string) (UserInfo, error) {
	var out UserInfo
	err := c.call(ctx, http.MethodGet, apiPath("users", name), nil, nil, &out)
	return out, err
}

// DeleteUser deletes a user with its keys.
func (c *Client) DeleteUser(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodDelete, apiPath("users", name), nil, nil, nil)
}

// DisableUser disables a user: its keys stop working.
func (c *Client) DisableUser(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodPost, apiPath("users", name, "disable"), nil, nil, nil)
}

// EnableUser enables a disabled user.
func (c *Client) EnableUser(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodPost, apiPath("users", name, "enable"), nil, nil, nil)
}

// SetPassword sets user name's console password.
func (c *Client) SetPassword(ctx context.Context, name, password string) error {
	return c.call(ctx, http.MethodPost, apiPath("users", name, "password"), nil, SetPasswordRequest{Password: password}, nil)
}

// Keys lists the access keys of user, or of all users if user is "".
func (c *Client) Keys(ctx context.Context, user string) ([]KeyInfo, error) {
	var q url.Values
	if user != "" {
		q = url.Values{"user": {user}}
	}
	var out KeyList
	err := c.call(ctx, http.MethodGet, apiPath("keys"), q, nil, &out)
	return out.Keys, err
}

// CreateKey makes a new access key and returns it with its secret.
func (c *Client) CreateKey(ctx context.Context, in CreateKeyRequest) (NewKey, error) {
	var out NewKey
	err := c.call(ctx, http.MethodPost, apiPath("keys"), nil, in, &out)
	return out, err
}

// Simulate asks the policy simulator whether a request would be
// allowed, and why.
func (c *Client) Simulate(ctx context.Context, in SimulateRequest) (Simulation, error) {
	var out Simulation
	err := c.call(ctx, http.MethodPost, apiPath("simulate"), nil, in, &out)
	return out, err
}

// Key describes an access key.
func (c *Client) Key(ctx context.Context, accessKey string) (KeyInfo, error) {
	var out KeyInfo
	err := c.call(ctx, http.MethodGet, apiPath("keys", accessKey), nil, nil, &out)
	return out, err
}

// DeleteKey deletes an access key.
func (c *Client) DeleteKey(ctx context.Context, accessKey string) error {
	return c.call(ctx, http.MethodDelete, apiPath("keys", accessKey), nil, nil, nil)
}

// DisableKey disables an access key.
func (c *Client) DisableKey(ctx context.Context, accessKey string) error {
	return c.call(ctx, http.MethodPost, apiPath("keys", accessKey, "disable"), nil, nil, nil)
}

// EnableKey enables a disabled access key.
func (c *Client) EnableKey(ctx context.Context, accessKey string) error {
	return c.call(ctx, http.MethodPost, apiPath("keys", accessKey, "enable"), nil, nil, nil)
}

// RotateKey replaces an access key by a new one with the same properties
// and returns the new key with its secret.
func (c *Client) RotateKey(ctx context.Context, accessKey string) (NewKey, error) {
	var out NewKey
	err := c.call(ctx, http.MethodPost, apiPath("keys", accessKey, "rotate"), nil, nil, &out)
	return out, err
}

// Groups lists all groups.
func (c *Client) Groups(ctx context.Context) ([]GroupInfo, error) {
	var out GroupList
	err := c.call(ctx, http.MethodGet, apiPath("groups"), nil, nil, &out)
	return out.Groups, err
}

// CreateGroup creates an empty group.
func (c *Client) CreateGroup(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodPost, apiPath("groups"), nil, CreateGroupRequest{Name: name}, nil)
}

// Group describes a group.
func (c *Client) Group(ctx context.Context, name string) (GroupInfo, error) {
	var out GroupInfo
	err := c.call(ctx, http.MethodGet, apiPath("groups", name), nil, nil, &out)
	return out, err
}

// DeleteGroup deletes a group.
func (c *Client) DeleteGroup(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodDelete, apiPath("groups", name), nil, nil, nil)
}

// UpdateGroupMembers adds and removes members of a group, atomically.
func (c *Client) UpdateGroupMembers(ctx context.Context, group string, add, remove []string) error {
	return c.call(ctx, http.MethodPost, apiPath("groups", group, "members"), nil, GroupMembersRequest{Add: add, Remove: remove}, nil)
}

// Policies lists all named policies, canned ones included.
func (c *Client) Policies(ctx context.Context) ([]PolicyInfo, error) {
	var out PolicyList
	err := c.call(ctx, http.MethodGet, apiPath("policies"), nil, nil, &out)
	return out.Policies, err
}

// PutPolicy creates or replaces a named policy with doc, a JSON policy
// document.
func (c *Client) PutPolicy(ctx context.Context, name string, doc []byte) error {
	return c.call(ctx, http.MethodPut, apiPath("policies", name), nil, rawBody(doc), nil)
}

// Policy describes a named policy.
func (c *Client) Policy(ctx context.Context, name string) (PolicyInfo, error) {
	var out PolicyInfo
	err := c.call(ctx, http.MethodGet, apiPath("policies", name), nil, nil, &out)
	return out, err
}

// DeletePolicy deletes a named policy.
func (c *Client) DeletePolicy(ctx context.Context, name string) error {
	return c.call(ctx, http.MethodDelete, apiPath("policies", name), nil, nil, nil)
}

// AttachPolicy attaches a named policy to a user or a group.
func (c *Client) AttachPolicy(ctx context.Context, policy string, t iam.Target) error {
	return c.call(ctx, http.MethodPost, apiPath("policies", policy, "attach"), nil, AttachRequest(t), nil)
}

// DetachPolicy detaches a named policy from a user or a group.
func (c *Client) DetachPolicy(ctx context.Context, policy string, t iam.Target) error {
	return c.call(ctx, http.MethodPost, apiPath("policies", policy, "detach"), nil, AttachRequest(t), nil)
}

// GC runs one garbage-collection pass on the server.
func (c *Client) GC(ctx context.Context, in GCRequest) (GCResult, error) {
	var out GCResult
	err := c.call(ctx, http.MethodPost, apiPath("gc"), nil, in, &out)
	return out, err
}

// RunLifecycle runs a lifecycle pass on the server now, over one bucket or
// (bucket "") every bucket with a lifecycle configuration.
func (c *Client) RunLifecycle(ctx context.Context, in LifecycleRunRequest) (LifecycleRunResult, error) {
	var out LifecycleRunResult
	err := c.call(ctx, http.MethodPost, apiPath("lifecycle", "run"), nil, in, &out)
	return out, err
}

// Buckets lists the buckets the Client's key may see, with their usage.
func (c *Client) Buckets(ctx context.Context) ([]BucketInfo, error) {
	var out BucketList
	err := c.call(ctx, http.MethodGet, apiPath("buckets"), nil, nil, &out)
	return out.Buckets, err
}

// Bucket describes one bucket with its usage.
func (c *Client) Bucket(ctx context.Context, name string) (BucketInfo, error) {
	var out BucketInfo
	err := c.call(ctx, http.MethodGet, apiPath("buckets", name), nil, nil, &out)
	return out, err
}

// CheckUsage has the server recount every bucket's usage and compare it
// with the recorded usage, and with in.Repair correct what differs.
func (c *Client) CheckUsage(ctx context.Context, in UsageCheckRequest) (UsageCheckResult, error) {
	var out UsageCheckResult
	err := c.call(ctx, http.MethodPost, apiPath("usage", "check"), nil, in, &out)
	return out, err
}

// AuditEvents returns one page of audit events matching f, newest first;
// pass the page's Next as f.Before for the next one.
func (c *Client) AuditEvents(ctx context.Context, f audit.Filter) (AuditPage, error) {
	var out AuditPage
	err := c.call(ctx, http.MethodGet, apiPath("audit"), auditQuery(f, false), nil, &out)
	return out, err
}

// ExportAudit copies every audit event matching f (Before and Limit
// aside) to w as JSON Lines, oldest first, as the server streams them.
// It returns the bytes copied. A stream cut short is an error.
func (c *Client) ExportAudit(ctx context.Context, f audit.Filter, w io.Writer) (int64, error) {
	resp, err := c.do(ctx, http.MethodGet, apiPath("audit", "export"), auditQuery(f, true).Encode(), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("export audit log: %w", err)
	}
	return n, nil
}

// auditQuery encodes f as the audit endpoints' query parameters.
func auditQuery(f audit.Filter, export bool) url.Values {
	q := url.Values{}
	set := func(name, v string) {
		if v != "" {
			q.Set(name, v)
		}
	}
	if !f.Since.IsZero() {
		set("since", f.Since.Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		set("until", f.Until.Format(time.RFC3339Nano))
	}
	set("source", f.Source)
	set("op", f.Op)
	set("bucket", f.Bucket)
	set("prefix", f.KeyPrefix)
	set("user", f.User)
	set("accessKey", f.AccessKey)
	set("sourceIp", f.SourceIP)
	if f.Failed {
		set("failed", "true")
	}
	if !export {
		if f.Before > 0 {
			set("before", strconv.FormatInt(f.Before, 10))
		}
		if f.Limit > 0 {
			set("limit", strconv.Itoa(f.Limit))
		}
	}
	return q
}

// WhoAmI returns who the server takes the Client's key for.
func (c *Client) WhoAmI(ctx context.Context) (WhoAmI, error) {
	var out WhoAmI
	err := c.call(ctx, http.MethodGet, apiPath("whoami"), nil, nil, &out)
	return out, err
}

// PutBucketPolicy sets bucket's policy (S3 PutBucketPolicy).
func (c *Client) PutBucketPolicy(ctx context.Context, bucket string, doc []byte) error {
	resp, err := c.do(ctx, http.MethodPut, bucketPath(bucket), "policy", doc)
	if err != nil {
		return err
	}
	return discard(resp)
}

// GetBucketPolicy returns bucket's policy document (S3 GetBucketPolicy).
// A bucket without a policy is an *Error with Code NoSuchBucketPolicy.
func (c *Client) GetBucketPolicy(ctx context.Context, bucket string) ([]byte, error) {
	resp, err := c.do(ctx, http.MethodGet, bucketPath(bucket), "policy", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readAll(resp.Body, maxResponseSize)
}

// DeleteBucketPolicy removes bucket's policy (S3 DeleteBucketPolicy).
func (c *Client) DeleteBucketPolicy(ctx context.Context, bucket string) error {
	resp, err := c.do(ctx, http.MethodDelete, bucketPath(bucket), "policy", nil)
	if err != nil {
		return err
	}
	return discard(resp)
}

// Presign returns a path-style URL for method on bucket/key, signed with
// the Client's key (SigV4 query authentication), valid for expires: a
// whole number of seconds from 1s to 7 days. It makes no request.
func (c *Client) Presign(method, bucket, key string, expires time.Duration) (string, error) {
	u := c.endpoint + bucketPath(bucket)
	if key != "" {
		u += "/" + escapeKey(key)
	}
	return sigv4.Presign(method, u, c.cred, c.region, c.clock(), expires)
}

// apiPath returns the escaped path of an API endpoint from its segments.
func apiPath(segs ...string) string {
	var b strings.Builder
	b.WriteString(BasePath)
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

func bucketPath(bucket string) string { return "/" + url.PathEscape(bucket) }

// escapeKey escapes an object key for a URL path, keeping its slashes.
func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// rawBody is a request body sent as is rather than encoded as JSON.
type rawBody []byte

// call sends a request to the admin API with in (if not nil) as its body,
// JSON-encoded unless it is a rawBody, and decodes a 200 response into out
// (if not nil).
func (c *Client) call(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body []byte
	switch in := in.(type) {
	case nil:
	case rawBody:
		body = in
	default:
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode %s %s request: %w", method, path, err)
		}
	}
	resp, err := c.do(ctx, method, path, q.Encode(), body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := readAll(resp.Body, maxResponseSize)
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}

// do sends a signed request with a signed payload and returns a
// successful response, or an *Error for an error response.
func (c *Client) do(ctx context.Context, method, path, rawQuery string, body []byte) (*http.Response, error) {
	u := c.endpoint + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	sum := sha256.Sum256(body)
	sigv4.SignRequest(req, c.cred, c.region, c.clock(), hex.EncodeToString(sum[:]))
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp, nil
}

// readError turns an error response into an *Error: the admin API's JSON
// body, S3's XML error document, or, for anything else (a proxy's page,
// an empty body), a code derived from the status.
func readError(resp *http.Response) *Error {
	data, _ := readAll(resp.Body, maxErrorSize) // a truncated body still tells the status
	e := &Error{Status: resp.StatusCode, RequestID: resp.Header.Get("x-amz-request-id")}
	trimmed := bytes.TrimSpace(data)
	var je ErrorResponse
	var xe struct {
		Code      string `xml:"Code"`
		Message   string `xml:"Message"`
		RequestID string `xml:"RequestId"`
	}
	switch {
	case bytes.HasPrefix(trimmed, []byte("{")) && json.Unmarshal(trimmed, &je) == nil && je.Code != "":
		e.Code, e.Message = je.Code, je.Message
		if je.RequestID != "" {
			e.RequestID = je.RequestID
		}
	case bytes.HasPrefix(trimmed, []byte("<")) && xml.Unmarshal(trimmed, &xe) == nil && xe.Code != "":
		e.Code, e.Message = xe.Code, xe.Message
		if xe.RequestID != "" {
			e.RequestID = xe.RequestID
		}
	default:
		e.Code = strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "")
		if e.Code == "" {
			e.Code = "HTTP" + strconv.Itoa(resp.StatusCode)
		}
		e.Message = fmt.Sprintf("HTTP status %d", resp.StatusCode)
	}
	return e
}

// readAll reads r, failing if it holds more than limit bytes.
func readAll(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("response larger than %d bytes", limit)
	}
	return data, nil
}

// discard drains and closes a response whose body does not matter.
func discard(resp *http.Response) error {
	defer resp.Body.Close()
	_, err := readAll(resp.Body, maxResponseSize)
	return err
}
