package adminapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/sigv4"
	"github.com/google/go-cmp/cmp"
)

// endpointCases exercise every endpoint once, as root.
var endpointCases = []struct {
	endpoint     string // endpoint name in the table
	method, path string // path below BasePath
	body         string
	wantStatus   int
	wantCall     string // the backend call, "" for none
	wantJSON     string // the response body, compared as JSON; "" for none
}{
	{endpoint: "ListUsers", method: "GET", path: "/users", wantStatus: 200, wantCall: "Users()",
		wantJSON: `{"users":[{"name":"alice","disabled":false,"policies":["readonly"],"groups":["devs"],"created":"2025-01-02T03:04:05Z","password":false,"canonicalId":"c0ffee"}]}`},
	{endpoint: "CreateUser", method: "POST", path: "/users", body: `{"name":"alice"}`, wantStatus: 200, wantCall: "CreateUser(alice)",
		wantJSON: `{"user":"alice","accessKey":"NEWKEY","secretKey":"new-secret"}`},
	{endpoint: "GetUser", method: "GET", path: "/users/alice", wantStatus: 200, wantCall: "User(alice)",
		wantJSON: `{"name":"alice","disabled":false,"policies":["readonly"],"groups":["devs"],"created":"2025-01-02T03:04:05Z","password":false,"canonicalId":"c0ffee"}`},
	{endpoint: "DeleteUser", method: "DELETE", path: "/users/alice", wantStatus: 204, wantCall: "DeleteUser(alice)"},
	{endpoint: "DisableUser", method: "POST", path: "/users/alice/disable", wantStatus: 204, wantCall: "SetUserDisabled(alice, true)"},
	{endpoint: "EnableUser", method: "POST", path: "/users/alice/enable", wantStatus: 204, wantCall: "SetUserDisabled(alice, false)"},
	{endpoint: "SetUserPassword", method: "POST", path: "/users/alice/password", body: `{"password":"s3cret-pass"}`, wantStatus: 204,
		wantCall: "SetPassword(alice, 11 bytes)"},
	{endpoint: "ListAccessKeys", method: "GET", path: "/keys?user=alice", wantStatus: 200, wantCall: "Keys(alice)",
		wantJSON: `{"keys":[{"accessKey":"AK1","user":"alice","disabled":false,"description":"ci","created":"2025-01-02T03:04:05Z"}]}`},
	{endpoint: "CreateAccessKey", method: "POST", path: "/keys",
		body:       `{"user":"alice","policy":{"Version":"2012-10-17"},"description":"ci","expires":"2030-01-01T00:00:00Z"}`,
		wantStatus: 200, wantCall: `CreateKey(alice, policy={"Version":"2012-10-17"}, description=ci, expires=2030-01-01T00:00:00Z)`,
		wantJSON: `{"accessKey":"NEWKEY","user":"alice","disabled":false,"created":"2025-01-02T03:04:05Z","secretKey":"new-secret"}`},
	{endpoint: "GetAccessKey", method: "GET", path: "/keys/AK1", wantStatus: 200, wantCall: "Key(AK1)",
		wantJSON: `{"accessKey":"AK1","user":"alice","disabled":false,"description":"ci","created":"2025-01-02T03:04:05Z"}`},
	{endpoint: "DeleteAccessKey", method: "DELETE", path: "/keys/AK1", wantStatus: 204, wantCall: "DeleteKey(AK1)"},
	{endpoint: "DisableAccessKey", method: "POST", path: "/keys/AK1/disable", wantStatus: 204, wantCall: "SetKeyDisabled(AK1, true)"},
	{endpoint: "EnableAccessKey", method: "POST", path: "/keys/AK1/enable", wantStatus: 204, wantCall: "SetKeyDisabled(AK1, false)"},
	{endpoint: "RotateAccessKey", method: "POST", path: "/keys/AK1/rotate", wantStatus: 200, wantCall: "RotateKey(AK1)",
		wantJSON: `{"accessKey":"NEWKEY","user":"alice","disabled":false,"created":"2025-01-02T03:04:05Z","secretKey":"new-secret"}`},
	{endpoint: "ListGroups", method: "GET", path: "/groups", wantStatus: 200, wantCall: "Groups()",
		wantJSON: `{"groups":[{"name":"devs","members":["alice"],"policies":[],"created":"2025-01-02T03:04:05Z"}]}`},
	{endpoint: "CreateGroup", method: "POST", path: "/groups", body: `{"name":"devs"}`, wantStatus: 204, wantCall: "CreateGroup(devs)"},
	{endpoint: "GetGroup", method: "GET", path: "/groups/devs", wantStatus: 200, wantCall: "Group(devs)",
		wantJSON: `{"name":"devs","members":["alice"],"policies":[],"created":"2025-01-02T03:04:05Z"}`},
	{endpoint: "DeleteGroup", method: "DELETE", path: "/groups/devs", wantStatus: 204, wantCall: "DeleteGroup(devs)"},
	{endpoint: "UpdateGroupMembers", method: "POST", path: "/groups/devs/members", body: `{"add":["a","b"],"remove":["c"]}`,
		wantStatus: 204, wantCall: "UpdateGroupMembers(devs, add=a,b, remove=c)"},
	{endpoint: "ListPolicies", method: "GET", path: "/policies", wantStatus: 200, wantCall: "Policies()",
		wantJSON: `{"policies":[{"name":"readonly","canned":true,"document":{"Version":"2012-10-17"},"users":[],"groups":[],"created":"0001-01-01T00:00:00Z"}]}`},
	{endpoint: "PutPolicy", method: "PUT", path: "/policies/p1", body: `{"Version": "2012-10-17"}`, wantStatus: 204,
		wantCall: `PutPolicy(p1, {"Version": "2012-10-17"})`},
	{endpoint: "GetPolicy", method: "GET", path: "/policies/p1", wantStatus: 200, wantCall: "Policy(p1)",
		wantJSON: `{"name":"p1","canned":false,"document":{"Version":"2012-10-17"},"users":["alice"],"groups":[],"created":"2025-01-02T03:04:05Z"}`},
	{endpoint: "DeletePolicy", method: "DELETE", path: "/policies/p1", wantStatus: 204, wantCall: "DeletePolicy(p1)"},
	{endpoint: "AttachPolicy", method: "POST", path: "/policies/p1/attach", body: `{"user":"alice"}`, wantStatus: 204,
		wantCall: "AttachPolicy(p1, user=alice, group=)"},
	{endpoint: "DetachPolicy", method: "POST", path: "/policies/p1/detach", body: `{"group":"devs"}`, wantStatus: 204,
		wantCall: "DetachPolicy(p1, user=, group=devs)"},
	{endpoint: "SimulatePolicy", method: "POST", path: "/simulate",
		body:       `{"user":"alice","action":"s3:GetObject","resource":"arn:aws:s3:::photos/a.jpg","context":{"aws:SourceIp":"10.0.0.1"}}`,
		wantStatus: 200, wantCall: "Simulate(user=alice, key=, s3:GetObject, photos/a.jpg, ip=10.0.0.1)",
		wantJSON: `{"allowed":true,"reason":"allowed","message":"Allowed.","deciding":[],"evaluated":[],"principal":"alice","action":"s3:GetObject","resource":""}`},
	{endpoint: "RunGC", method: "POST", path: "/gc", body: `{"graceSeconds":60}`, wantStatus: 200,
		wantJSON: `{"graceSeconds":60,"scanned":7,"deleted":3,"deletedBytes":300,"expiredUploads":1,"durationSeconds":"*"}`},
	{endpoint: "RunLifecycle", method: "POST", path: "/lifecycle/run", body: `{"bucket":"logs"}`, wantStatus: 200,
		wantJSON: `{"buckets":[` +
			`{"bucket":"logs","examined":10,"objectsExpired":3,"deleteMarkersCreated":1,"versionsRemoved":2,"deleteMarkersRemoved":1,"uploadsAborted":1,"skipped":1,"deletedBytes":500},` +
			`{"bucket":"photos","examined":4,"objectsExpired":0,"deleteMarkersCreated":0,"versionsRemoved":0,"deleteMarkersRemoved":0,"uploadsAborted":0,"skipped":0,"deletedBytes":0,` +
			`"error":"InternalError: We encountered an internal error. Please try again."}],` +
			`"totals":{"examined":14,"objectsExpired":3,"deleteMarkersCreated":1,"versionsRemoved":2,"deleteMarkersRemoved":1,"uploadsAborted":1,"skipped":1,"deletedBytes":500,` +
			`"error":"InternalError: We encountered an internal error. Please try again."},"durationSeconds":1}`},
	{endpoint: "ListBuckets", method: "GET", path: "/buckets", wantStatus: 200, wantCall: "BucketsUsage()",
		wantJSON: `{"buckets":[` +
			`{"name":"photos","created":"2025-01-02T03:04:05Z","objects":3,"bytes":3145728,"uploads":1,"partBytes":5242880,"public":true},` +
			`{"name":"private","region":"eu-west-1","created":"2025-01-02T03:04:05Z","objects":1,"bytes":10,"uploads":0,"partBytes":0,"public":false}]}`},
	{endpoint: "GetBucket", method: "GET", path: "/buckets/photos", wantStatus: 200, wantCall: "BucketUsage(photos)",
		wantJSON: `{"name":"photos","created":"2025-01-02T03:04:05Z","objects":3,"bytes":3145728,"uploads":1,"partBytes":5242880,"public":true}`},
	{endpoint: "CheckUsage", method: "POST", path: "/usage/check", body: `{"repair":true}`, wantStatus: 200, wantCall: "CheckUsage(true)",
		wantJSON: `{"buckets":2,"mismatches":[],"repaired":0,"durationSeconds":"*"}`},
	{endpoint: "GetAuditLog", method: "GET", path: "/audit?user=alice&failed=false&limit=10&since=2026-11-24T00:00:00Z", wantStatus: 200,
		wantCall: "Query(since=2026-11-24T00:00:00Z, user=alice, limit=10)",
		wantJSON: `{"events":[{"id":7,"time":"2025-01-02T03:04:05Z","source":"s3","op":"PutObject","status":200,"bucket":"photos","key":"a.jpg",` +
			`"user":"alice","accessKey":"AK1","sourceIp":"192.0.2.1","requestId":"R7","bytesIn":5,"bytesOut":0,"durationMs":1.5}],"next":6}`},
	{endpoint: "ExportAuditLog", method: "GET", path: "/audit/export?bucket=photos&prefix=a", wantStatus: 200,
		wantCall: "Export(bucket=photos, prefix=a)",
		wantJSON: `{"id":7,"time":"2025-01-02T03:04:05Z","source":"s3","op":"PutObject","status":200,"bucket":"photos","key":"a.jpg",` +
			`"user":"alice","accessKey":"AK1","sourceIp":"192.0.2.1","requestId":"R7","bytesIn":5,"bytesOut":0,"durationMs":1.5}`},
	{endpoint: "WhoAmI", method: "GET", path: "/whoami", wantStatus: 200, wantJSON: `{"accessKey":"ROOTKEY","user":"","root":true}`},
}

// jsonEqual compares JSON documents; a "*" string in want matches any value.
func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("response %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %q: %v", want, err)
	}
	if gm, ok := g.(map[string]any); ok {
		if wm, ok := w.(map[string]any); ok {
			for k, v := range wm {
				if v == "*" {
					if _, ok := gm[k]; ok {
						wm[k] = gm[k]
					}
				}
			}
		}
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("response body mismatch (-want +got):\n%s", diff)
	}
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, tc := range endpointCases {
		covered[tc.endpoint] = true
		t.Run(tc.endpoint, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			w := f.serve(signed(t, rootCred, tc.method, BasePath+tc.path, tc.body))
			body := w.Body.String()
			if w.Code != tc.wantStatus {
				t.Fatalf("%s %s: status %d, want %d; body %s", tc.method, tc.path, w.Code, tc.wantStatus, body)
			}
			if got := w.Header().Get("x-amz-request-id"); got != "REQ1" {
				t.Errorf("x-amz-request-id = %q, want REQ1", got)
			}
			var wantCalls []string
			if strings.HasPrefix(tc.endpoint, "GetAuditLog") || strings.HasPrefix(tc.endpoint, "ExportAuditLog") {
				wantCalls = []string{"Flush()"} // a query sees what came before it
			}
			if tc.wantCall != "" {
				wantCalls = append(wantCalls, tc.wantCall)
			}
			if diff := cmp.Diff(wantCalls, f.be.Calls()); diff != "" {
				t.Errorf("backend calls mismatch (-want +got):\n%s", diff)
			}
			if logs := f.logs.String(); (tc.method != "GET") != strings.Contains(logs, "msg=\"admin change\" request_id=REQ1 op="+tc.endpoint) {
				t.Errorf("change log for %s %s:\n%s", tc.method, tc.path, logs)
			}
			if strings.Contains(f.logs.String(), "new-secret") {
				t.Errorf("a secret was logged:\n%s", f.logs.String())
			}
			if tc.wantJSON == "" {
				if body != "" {
					t.Errorf("body = %q, want none", body)
				}
				return
			}
			wantCT := "application/json"
			if tc.endpoint == "ExportAuditLog" {
				wantCT = "application/x-ndjson"
			}
			if ct := w.Header().Get("Content-Type"); ct != wantCT {
				t.Errorf("Content-Type = %q, want %s", ct, wantCT)
			}
			jsonEqual(t, body, tc.wantJSON)
		})
	}
	for _, ep := range endpoints {
		if !covered[ep.name] {
			t.Errorf("endpoint %s has no case in endpointCases", ep.name)
		}
	}
}

// wantActions are the actions of the endpoints, as the API contract names
// them; "" means authentication only.
var wantActions = map[string]iam.Action{
	"ListUsers": "admin:ListUsers", "CreateUser": "admin:CreateUser", "GetUser": "admin:GetUser",
	"DeleteUser": "admin:DeleteUser", "DisableUser": "admin:DisableUser", "EnableUser": "admin:EnableUser",
	"SetUserPassword": "admin:SetUserPassword",
	"ListAccessKeys":  "admin:ListAccessKeys", "CreateAccessKey": "admin:CreateAccessKey", "GetAccessKey": "admin:ListAccessKeys",
	"DeleteAccessKey": "admin:DeleteAccessKey", "DisableAccessKey": "admin:UpdateAccessKey", "EnableAccessKey": "admin:UpdateAccessKey",
	"RotateAccessKey": "admin:UpdateAccessKey",
	"ListGroups":      "admin:ListGroups", "CreateGroup": "admin:CreateGroup", "GetGroup": "admin:GetGroup",
	"DeleteGroup": "admin:DeleteGroup", "UpdateGroupMembers": "admin:UpdateGroupMembers",
	"ListPolicies": "admin:ListPolicies", "PutPolicy": "admin:CreatePolicy", "GetPolicy": "admin:GetPolicy",
	"DeletePolicy": "admin:DeletePolicy", "AttachPolicy": "admin:AttachPolicy", "DetachPolicy": "admin:DetachPolicy",
	"SimulatePolicy": "admin:SimulatePolicy",
	"ListBuckets":    "s3:ListAllMyBuckets", "GetBucket": "s3:ListAllMyBuckets",
	"RunGC": "admin:RunGC", "RunLifecycle": "admin:RunLifecycle", "CheckUsage": "admin:CheckUsage",
	"GetAuditLog": "admin:GetAuditLog", "ExportAuditLog": "admin:GetAuditLog",
	"WhoAmI": "",
}

func TestEndpointActions(t *testing.T) {
	t.Parallel()
	for _, ep := range endpoints {
		want, ok := wantActions[ep.name]
		if !ok || ep.action != want {
			t.Errorf("endpoint %s has action %q, want %q", ep.name, ep.action, want)
		}
	}
	if len(wantActions) != len(endpoints) {
		t.Errorf("%d endpoints, %d expected actions", len(endpoints), len(wantActions))
	}
}

// TestAuthorization checks that each endpoint asks iam for its action with
// the caller's principal and no resource, and refuses what iam denies
// before touching the backend.
func TestAuthorization(t *testing.T) {
	t.Parallel()
	byName := map[string]*endpoint{}
	for i := range endpoints {
		byName[endpoints[i].name] = &endpoints[i]
	}
	for _, tc := range endpointCases {
		ep := byName[tc.endpoint]
		t.Run(tc.endpoint, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			w := f.serve(signed(t, userCred, tc.method, BasePath+tc.path, tc.body))
			if ep.action == "" {
				if w.Code != tc.wantStatus {
					t.Errorf("status %d, want %d without authorization: %s", w.Code, tc.wantStatus, w.Body)
				}
				if got := f.be.Authorizations(); len(got) != 0 {
					t.Errorf("Authorize called %v for an endpoint without action", got)
				}
				return
			}
			checkError(t, w, http.StatusForbidden, CodeAccessDenied, "user bob is not allowed to perform "+string(ep.action))
			if calls := f.be.Calls(); len(calls) != 0 {
				t.Errorf("denied request reached the backend: %v", calls)
			}
			got := f.be.Authorizations()
			if len(got) != 1 {
				t.Fatalf("Authorize calls = %v, want one", got)
			}
			rq := got[0]
			if rq.Action != ep.action || rq.Bucket != "" || rq.Key != "" || rq.Principal.AccessKeyID != userCred.AccessKeyID || rq.Principal.User != "bob" {
				t.Errorf("Authorize(%+v), want action %s for USERKEY/bob and no resource", rq, ep.action)
			}
			if rq.Cond.AuthType != "REST-HEADER" || rq.Cond.SignatureVersion != "AWS4-HMAC-SHA256" || !rq.Cond.SourceIP.IsValid() {
				t.Errorf("Authorize conditions = %+v, want header auth, SigV4 and a source IP", rq.Cond)
			}

			// Allowed its action but not what it also needs (a rotation
			// creates and deletes keys): refused, the backend untouched.
			if also := alsoNeeds[ep.name]; len(also) > 0 {
				f = newFixture(t)
				f.be.allow[ep.action] = true
				w := f.serve(signed(t, userCred, tc.method, BasePath+tc.path, tc.body))
				checkError(t, w, http.StatusForbidden, CodeAccessDenied, "user bob is not allowed to perform "+string(also[0]))
				if calls := f.be.Calls(); len(calls) != 0 {
					t.Errorf("request denied an extra action reached the backend: %v", calls)
				}
			}

			// Allowed by policy, the user gets what root gets.
			f = newFixture(t)
			f.be.allow[ep.action] = true
			for _, a := range alsoNeeds[ep.name] {
				f.be.allow[a] = true
			}
			if w := f.serve(signed(t, userCred, tc.method, BasePath+tc.path, tc.body)); w.Code != tc.wantStatus {
				t.Errorf("allowed user: status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
		})
	}
}

// checkError checks an error response: status, code, a message containing
// msg, the request ID in header and body.
func checkError(t *testing.T, w *httptest.ResponseRecorder, status int, code, msg string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("status %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var e ErrorResponse
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("error body is not an ErrorResponse: %v", err)
	}
	if e.Code != code || !strings.Contains(e.Message, msg) || e.RequestID != w.Header().Get("x-amz-request-id") || e.RequestID == "" {
		t.Errorf("error = %+v (request id header %q), want code %s, message containing %q", e, w.Header().Get("x-amz-request-id"), code, msg)
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method, target string
		wantStatus           int
		wantCode, wantMsg    string
		wantAllow            string
		wantCall             string
	}{
		{name: "unknown collection", method: "GET", target: BasePath + "/volumes", wantStatus: 404, wantCode: CodeNoSuchRoute, wantMsg: "no admin API endpoint at /_coffer/admin/v1/volumes"},
		{name: "other version", method: "GET", target: PathPrefix + "v2/users", wantStatus: 404, wantCode: CodeNoSuchRoute, wantMsg: "version 1 is under /_coffer/admin/v1/"},
		{name: "base", method: "GET", target: BasePath, wantStatus: 404, wantCode: CodeNoSuchRoute},
		{name: "trailing slash", method: "GET", target: BasePath + "/users/", wantStatus: 404, wantCode: CodeNoSuchRoute},
		{name: "too deep", method: "POST", target: BasePath + "/users/alice/disable/now", wantStatus: 404, wantCode: CodeNoSuchRoute},
		{name: "unknown action", method: "POST", target: BasePath + "/users/alice/promote", wantStatus: 404, wantCode: CodeNoSuchRoute},
		{name: "wrong method on collection", method: "DELETE", target: BasePath + "/users", wantStatus: 405, wantCode: CodeMethodNotAllowed, wantMsg: "DELETE is not allowed", wantAllow: "GET, POST"},
		{name: "wrong method on entity", method: "PUT", target: BasePath + "/users/alice", wantStatus: 405, wantCode: CodeMethodNotAllowed, wantAllow: "DELETE, GET"},
		{name: "wrong method on policy", method: "POST", target: BasePath + "/policies/p", wantStatus: 405, wantCode: CodeMethodNotAllowed, wantAllow: "DELETE, GET, PUT"},
		{name: "head", method: "HEAD", target: BasePath + "/whoami", wantStatus: 405, wantCode: CodeMethodNotAllowed, wantAllow: "GET"},
		{name: "gc by GET", method: "GET", target: BasePath + "/gc", wantStatus: 405, wantCode: CodeMethodNotAllowed, wantAllow: "POST"},
		{name: "decoded name", method: "GET", target: BasePath + "/users/a%2Fb%20c", wantStatus: 200, wantCall: "User(a/b c)"},
		{name: "empty name", method: "GET", target: BasePath + "/users//disable", wantStatus: 404, wantCode: CodeNoSuchRoute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			w := f.serve(signed(t, rootCred, tc.method, tc.target, ""))
			if tc.wantCode == "" {
				if w.Code != tc.wantStatus {
					t.Fatalf("status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
				}
			} else {
				checkError(t, w, tc.wantStatus, tc.wantCode, tc.wantMsg)
			}
			if got := w.Header().Get("Allow"); got != tc.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tc.wantAllow)
			}
			var want []string
			if tc.wantCall != "" {
				want = []string{tc.wantCall}
			}
			if diff := cmp.Diff(want, f.be.Calls()); diff != "" {
				t.Errorf("backend calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	target := BasePath + "/users"
	body := `{"name":"alice"}`
	sum := sha256.Sum256([]byte(body))
	hash := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name       string
		req        func(t *testing.T) *http.Request
		wantStatus int
		wantCode   string
		wantMsg    string
	}{
		{
			name: "anonymous",
			req: func(t *testing.T) *http.Request {
				return httptest.NewRequest("POST", target, strings.NewReader(body))
			},
			wantStatus: 403, wantCode: "AccessDenied", wantMsg: "needs a request signed with an access key",
		},
		{
			name: "unsigned payload",
			req: func(t *testing.T) *http.Request {
				r := httptest.NewRequest("POST", target, strings.NewReader(body))
				sigv4.SignRequest(r, rootCred, "us-east-1", time.Now(), "UNSIGNED-PAYLOAD")
				return r
			},
			wantStatus: 400, wantCode: CodeInvalidRequest, wantMsg: "needs a signed payload",
		},
		{
			name: "streaming payload",
			req: func(t *testing.T) *http.Request {
				r := httptest.NewRequest("POST", target, nil)
				if err := sigv4.SignChunked(r, rootCred, "us-east-1", time.Now(), []byte(body), sigv4.ChunkedOptions{}); err != nil {
					t.Fatal(err)
				}
				return r
			},
			wantStatus: 400, wantCode: CodeInvalidRequest, wantMsg: "needs a signed payload",
		},
		{
			name: "presigned without payload hash",
			req: func(t *testing.T) *http.Request {
				u, err := sigv4.Presign("GET", "http://example.com"+BasePath+"/whoami", rootCred, "us-east-1", time.Now(), time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				return httptest.NewRequest("GET", u, nil)
			},
			wantStatus: 400, wantCode: CodeInvalidRequest, wantMsg: "UNSIGNED-PAYLOAD",
		},
		{
			name: "sigv2",
			req: func(t *testing.T) *http.Request {
				r := httptest.NewRequest("POST", target, strings.NewReader(body))
				sigv4.SignV2Request(r, rootCred, time.Now())
				return r
			},
			wantStatus: 400, wantCode: CodeInvalidRequest,
		},
		{
			name: "unknown key",
			req: func(t *testing.T) *http.Request {
				return signed(t, sigv4.Credentials{AccessKeyID: "NOPE", SecretKey: "x"}, "POST", target, body)
			},
			wantStatus: 403, wantCode: "InvalidAccessKeyId",
		},
		{
			name: "wrong secret",
			req: func(t *testing.T) *http.Request {
				return signed(t, sigv4.Credentials{AccessKeyID: rootCred.AccessKeyID, SecretKey: "wrong"}, "POST", target, body)
			},
			wantStatus: 403, wantCode: "SignatureDoesNotMatch",
		},
		{
			name: "skewed clock",
			req: func(t *testing.T) *http.Request {
				r := httptest.NewRequest("POST", target, strings.NewReader(body))
				sigv4.SignRequest(r, rootCred, "us-east-1", time.Now().Add(-time.Hour), hash)
				return r
			},
			wantStatus: 403, wantCode: "RequestTimeTooSkewed",
		},
		{
			name: "body differs from its signed hash",
			req: func(t *testing.T) *http.Request {
				r := httptest.NewRequest("POST", target, strings.NewReader(`{"name":"mallory"}`))
				sigv4.SignRequest(r, rootCred, "us-east-1", time.Now(), hash)
				return r
			},
			wantStatus: 400, wantCode: "XAmzContentSHA256Mismatch",
		},
		{
			name: "wrong region",
			req: func(t *testing.T) *http.Request {
				r := httptest.NewRequest("POST", target, strings.NewReader(body))
				sigv4.SignRequest(r, rootCred, "eu-west-1", time.Now(), hash)
				return r
			},
			wantStatus: 400, wantCode: "AuthorizationHeaderMalformed",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			w := f.serve(tc.req(t))
			checkError(t, w, tc.wantStatus, tc.wantCode, tc.wantMsg)
			if calls := f.be.Calls(); len(calls) != 0 {
				t.Errorf("refused request reached the backend: %v", calls)
			}
		})
	}
}

func TestBodies(t *testing.T) {
	t.Parallel()
	big := `{"name":"` + strings.Repeat("a", MaxBodySize) + `"}`
	for _, tc := range []struct {
		name, method, path, body string
		chunked                  bool // send without Content-Length
		wantStatus               int
		wantCode, wantMsg        string
		wantCall                 string
	}{
		{name: "too large by length", method: "POST", path: "/users", body: big, wantStatus: 413, wantCode: CodeEntityTooLarge, wantMsg: "larger than the limit of 1048576 bytes"},
		{name: "too large when read", method: "POST", path: "/users", body: big, chunked: true, wantStatus: 413, wantCode: CodeEntityTooLarge},
		{name: "at the limit", method: "PUT", path: "/policies/p", body: strings.Repeat(" ", MaxBodySize-2) + "{}", wantStatus: 204, wantCall: "PutPolicy(p, " + strings.Repeat(" ", MaxBodySize-2) + "{})"},
		{name: "unknown field", method: "POST", path: "/users", body: `{"name":"a","admin":true}`, wantStatus: 400, wantCode: CodeMalformedJSON, wantMsg: `unknown field "admin"`},
		{name: "trailing data", method: "POST", path: "/users", body: `{"name":"a"} {}`, wantStatus: 400, wantCode: CodeMalformedJSON, wantMsg: "data after the JSON object"},
		{name: "trailing garbage", method: "POST", path: "/users", body: `{"name":"a"}x`, wantStatus: 400, wantCode: CodeMalformedJSON},
		{name: "trailing space ok", method: "POST", path: "/users", body: "{\"name\":\"a\"}\n", wantStatus: 200, wantCall: "CreateUser(a)"},
		{name: "empty", method: "POST", path: "/users", wantStatus: 400, wantCode: CodeMalformedJSON, wantMsg: "empty"},
		{name: "not an object", method: "POST", path: "/users", body: `["a"]`, wantStatus: 400, wantCode: CodeMalformedJSON, wantMsg: "must be a JSON object"},
		{name: "null", method: "POST", path: "/users", body: `null`, wantStatus: 400, wantCode: CodeMalformedJSON},
		{name: "truncated", method: "POST", path: "/users", body: `{"name":`, wantStatus: 400, wantCode: CodeMalformedJSON, wantMsg: "incomplete"},
		{name: "wrong type", method: "POST", path: "/users", body: `{"name":7}`, wantStatus: 400, wantCode: CodeMalformedJSON, wantMsg: `field "name" must not be a JSON number`},
		{name: "bad time", method: "POST", path: "/keys", body: `{"user":"a","expires":"tomorrow"}`, wantStatus: 400, wantCode: CodeMalformedJSON, wantMsg: "RFC 3339"},
		{name: "body on GET", method: "GET", path: "/users", body: `{}`, wantStatus: 400, wantCode: CodeUnexpectedContent, wantMsg: "takes no request body"},
		{name: "body on disable", method: "POST", path: "/users/a/disable", body: `{}`, wantStatus: 400, wantCode: CodeUnexpectedContent},
		{name: "policy as string", method: "POST", path: "/keys", body: `{"user":"a","policy":"{\"Version\":\"2012-10-17\"}"}`, wantStatus: 200,
			wantCall: `CreateKey(a, policy={"Version":"2012-10-17"}, description=, expires=)`},
		{name: "policy null", method: "POST", path: "/keys", body: `{"user":"a","policy":null}`, wantStatus: 200, wantCall: `CreateKey(a, policy=, description=, expires=)`},
		{name: "policy not an object", method: "POST", path: "/keys", body: `{"user":"a","policy":[1]}`, wantStatus: 400, wantCode: CodeMalformedPolicyDocument},
		{name: "empty policy document", method: "PUT", path: "/policies/p", body: " ", wantStatus: 400, wantCode: CodeMalformedPolicyDocument},
		{name: "attach to nothing", method: "POST", path: "/policies/p/attach", body: `{}`, wantStatus: 400, wantCode: CodeInvalidInput, wantMsg: "exactly one"},
		{name: "attach to both", method: "POST", path: "/policies/p/detach", body: `{"user":"a","group":"g"}`, wantStatus: 400, wantCode: CodeInvalidInput},
		{name: "members none", method: "POST", path: "/groups/g/members", body: `{"add":[]}`, wantStatus: 400, wantCode: CodeInvalidInput},
		{name: "gc negative grace", method: "POST", path: "/gc", body: `{"graceSeconds":-1}`, wantStatus: 400, wantCode: CodeInvalidInput, wantMsg: "graceSeconds"},
		{name: "gc huge grace", method: "POST", path: "/gc", body: `{"graceSeconds":1e300}`, wantStatus: 400, wantCode: CodeInvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := signed(t, rootCred, tc.method, BasePath+tc.path, tc.body)
			if tc.chunked {
				r = httptest.NewRequest(tc.method, BasePath+tc.path, io.NopCloser(iotest.HalfReader(strings.NewReader(tc.body))))
				r.ContentLength = -1
				sum := sha256.Sum256([]byte(tc.body))
				sigv4.SignRequest(r, rootCred, "us-east-1", time.Now(), hex.EncodeToString(sum[:]))
			}
			w := f.serve(r)
			if tc.wantCode != "" {
				checkError(t, w, tc.wantStatus, tc.wantCode, tc.wantMsg)
			} else if w.Code != tc.wantStatus {
				t.Errorf("status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
			var want []string
			if tc.wantCall != "" {
				want = []string{tc.wantCall}
			}
			if diff := cmp.Diff(want, f.be.Calls()); diff != "" {
				t.Errorf("backend calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
		wantMsg    string
	}{
		{name: "not found", err: fmt.Errorf("%w: user %q", iam.ErrNotFound, "alice"), wantStatus: 404, wantCode: CodeNoSuchEntity, wantMsg: `user "alice"`},
		{name: "exists", err: fmt.Errorf("%w: user %q", iam.ErrExists, "alice"), wantStatus: 409, wantCode: CodeEntityAlreadyExists, wantMsg: `user "alice"`},
		{name: "invalid", err: fmt.Errorf("%w: user name must be 1 to 64 characters", iam.ErrInvalid), wantStatus: 400, wantCode: CodeInvalidInput, wantMsg: "user name must be 1 to 64 characters"},
		{name: "in use", err: fmt.Errorf("%w: policy p is attached", iam.ErrInUse), wantStatus: 409, wantCode: CodeDeleteConflict, wantMsg: "policy p is attached"},
		{name: "policy", err: fmt.Errorf("%w: Statement: missing", iam.ErrPolicy), wantStatus: 400, wantCode: CodeMalformedPolicyDocument, wantMsg: "Statement: missing"},
		{name: "policy and invalid", err: fmt.Errorf("%w: %w: bad", iam.ErrPolicy, iam.ErrInvalid), wantStatus: 400, wantCode: CodeMalformedPolicyDocument},
		{name: "bare sentinel", err: iam.ErrNotFound, wantStatus: 404, wantCode: CodeNoSuchEntity, wantMsg: "no such entity"},
		{name: "s3 error", err: s3err.New(s3err.SlowDown, ""), wantStatus: 503, wantCode: "SlowDown"},
		{name: "internal", err: errors.New("disk on fire at /var/lib/coffer"), wantStatus: 500, wantCode: CodeInternalError, wantMsg: "internal error"},
		{name: "s3 internal", err: s3err.Wrap(s3err.InternalError, "", errors.New("meta: corrupt")), wantStatus: 500, wantCode: CodeInternalError},
		{name: "store unavailable", err: fmt.Errorf("iam: save: %w", objects.ErrUnavailable), wantStatus: 503, wantCode: "ServiceUnavailable", wantMsg: "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.be.err = tc.err
			w := f.serve(signed(t, rootCred, "DELETE", BasePath+"/users/alice", ""))
			body := w.Body.String()
			checkError(t, w, tc.wantStatus, tc.wantCode, tc.wantMsg)
			logs := f.logs.String()
			if tc.wantStatus == 500 {
				if strings.Contains(body, "on fire") || strings.Contains(body, "corrupt") {
					t.Errorf("internal detail leaked to the client: %s", body)
				}
				if !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, tc.err.Error()) || !strings.Contains(logs, "request_id=REQ1") {
					t.Errorf("internal error not logged with its detail and request id:\n%s", logs)
				}
			} else if tc.wantStatus < 500 && strings.Contains(logs, "level=ERROR") {
				t.Errorf("client error logged at Error:\n%s", logs)
			}
		})
	}
}

func TestAuthorizeFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.be.authErr = errors.New("iam: state unavailable")
	w := f.serve(signed(t, userCred, "GET", BasePath+"/users", ""))
	checkError(t, w, 500, CodeInternalError, "")
	if len(f.be.Calls()) != 0 {
		t.Errorf("request reached the backend after Authorize failed")
	}
}

func TestGC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		gcGrace    time.Duration // Deps.GCGrace: the server's gc-grace
		want       time.Duration
	}{
		{name: "empty body", want: time.Hour},
		{name: "empty object", body: `{}`, want: time.Hour},
		{name: "zero", body: `{"graceSeconds":0}`, want: 0},
		{name: "fraction", body: `{"graceSeconds":1.5}`, want: 1500 * time.Millisecond},
		{name: "empty body, server's gc-grace", gcGrace: 10 * time.Minute, want: 10 * time.Minute},
		{name: "empty object, server's gc-grace", body: `{}`, gcGrace: 3 * time.Hour, want: 3 * time.Hour},
		{name: "asked grace over server's gc-grace", body: `{"graceSeconds":60}`, gcGrace: 10 * time.Minute, want: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixtureWith(t, func(d *Deps) { d.GCGrace = tc.gcGrace })
			w := f.serve(signed(t, rootCred, "POST", BasePath+"/gc", tc.body))
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			var res GCResult
			if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if res.GraceSeconds != tc.want.Seconds() || res.Scanned != 7 || res.Deleted != 3 || res.DeletedBytes != 300 || res.ExpiredUploads != 1 || res.DurationSeconds < 0 {
				t.Errorf("result %+v, want grace %v and the fake's stats", res, tc.want)
			}
			if diff := cmp.Diff([]time.Duration{tc.want}, f.gc.graces); diff != "" {
				t.Errorf("GC graces (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("failure", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.gc.err = errors.New("blob store unreachable")
		w := f.serve(signed(t, rootCred, "POST", BasePath+"/gc", ""))
		checkError(t, w, 500, CodeInternalError, "")
		if !strings.Contains(f.logs.String(), "blob store unreachable") {
			t.Errorf("GC failure not logged: %s", f.logs.String())
		}
	})

	t.Run("unavailable", func(t *testing.T) {
		t.Parallel()
		be := newFakeBackend()
		h, err := New(Deps{IAM: be, Verifier: sigv4.NewVerifier(sigv4.Config{}, be), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, signed(t, rootCred, "POST", BasePath+"/gc", ""))
		checkError(t, w, 501, CodeNotImplemented, "not available")
		if id := w.Header().Get("x-amz-request-id"); len(id) != 16 {
			t.Errorf("default request id %q, want 16 hex digits", id)
		}
	})
}

func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		err        error
		wantStatus int
		wantCode   string
		want       []string // buckets the worker was asked for
	}{
		{name: "every bucket, empty body", wantStatus: 200, want: []string{""}},
		{name: "every bucket, empty object", body: `{}`, wantStatus: 200, want: []string{""}},
		{name: "one bucket", body: `{"bucket":"logs"}`, wantStatus: 200, want: []string{"logs"}},
		{name: "not JSON", body: `bucket`, wantStatus: 400, wantCode: CodeMalformedJSON},
		{name: "unknown field", body: `{"buckets":["a"]}`, wantStatus: 400, wantCode: CodeMalformedJSON},
		{name: "no such bucket", body: `{"bucket":"nope"}`, err: s3err.New(s3err.NoSuchBucket, "nope"), wantStatus: 404,
			wantCode: "NoSuchBucket", want: []string{"nope"}},
		{name: "no configuration", body: `{"bucket":"plain"}`, err: s3err.New(s3err.NoSuchLifecycleConfiguration, "plain"), wantStatus: 404,
			wantCode: "NoSuchLifecycleConfiguration", want: []string{"plain"}},
		{name: "failure", err: errors.New("meta unreachable"), wantStatus: 500, wantCode: CodeInternalError, want: []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.lc.err = tc.err
			w := f.serve(signed(t, rootCred, "POST", BasePath+"/lifecycle/run", tc.body))
			if tc.wantCode != "" {
				checkError(t, w, tc.wantStatus, tc.wantCode, "")
			} else if w.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
			if diff := cmp.Diff(tc.want, f.lc.buckets); diff != "" {
				t.Errorf("passes asked for (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unavailable", func(t *testing.T) {
		t.Parallel()
		be := newFakeBackend()
		h, err := New(Deps{IAM: be, Verifier: sigv4.NewVerifier(sigv4.Config{}, be), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, signed(t, rootCred, "POST", BasePath+"/lifecycle/run", ""))
		checkError(t, w, 501, CodeNotImplemented, "not available")
	})
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	be := newFakeBackend()
	v := sigv4.NewVerifier(sigv4.Config{}, be)
	for _, d := range []Deps{
		{Verifier: v, Logger: slog.New(slog.DiscardHandler)},
		{IAM: be, Logger: slog.New(slog.DiscardHandler)},
		{IAM: be, Verifier: v},
		{IAM: be, Verifier: v, Logger: slog.New(slog.DiscardHandler), GCGrace: -time.Second},
	} {
		if _, err := New(d); err == nil {
			t.Errorf("New(%+v) succeeded, want an error for the missing or invalid dependency", d)
		}
	}
}

func TestRequestIDsUnique(t *testing.T) {
	t.Parallel()
	gen := newRequestIDs()
	seen := map[string]bool{}
	for range 1000 {
		id := gen()
		if len(id) != 16 || strings.Trim(id, "0123456789ABCDEF") != "" || seen[id] {
			t.Fatalf("request id %q: want 16 upper-case hex digits, unique", id)
		}
		seen[id] = true
	}
}

// TestUnavailable checks that once the metadata store has failed every
// change answers 503 ServiceUnavailable before reaching the backend,
// reads go on, and a read that fails answers 503 too rather than 500.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	down := &s3err.Error{Code: s3err.ServiceUnavailable, Message: "The metadata store failed (disk full); the server is restarting. Please retry."}
	f.h.down = func() error { return down }

	w := f.serve(signed(t, rootCred, "DELETE", BasePath+"/users/alice", ""))
	checkError(t, w, http.StatusServiceUnavailable, "ServiceUnavailable", "metadata store failed")
	w = f.serve(signed(t, rootCred, "POST", BasePath+"/users", `{"name":"bob"}`))
	checkError(t, w, http.StatusServiceUnavailable, "ServiceUnavailable", "metadata store failed")
	if calls := f.be.Calls(); len(calls) != 0 {
		t.Errorf("changes reached the backend of a failed store: %v", calls)
	}
	if w := f.serve(signed(t, rootCred, "GET", BasePath+"/users", "")); w.Code != http.StatusOK {
		t.Errorf("GET /users on a failed store: %d %s", w.Code, w.Body)
	}
	f.be.err = errors.New("pebble: closed")
	w = f.serve(signed(t, rootCred, "GET", BasePath+"/users/alice", ""))
	checkError(t, w, http.StatusServiceUnavailable, "ServiceUnavailable", "metadata store failed")
}

// timeoutBody fails its first read with a read deadline's error.
type timeoutBody struct{}

func (timeoutBody) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
}
func (timeoutBody) Close() error { return nil }

// TestReadBodyStalled: a body that stopped coming (the server's idle
// bound) is the client's doing, 400 RequestTimeout, not a 500 logged as
// the server's error.
func TestReadBodyStalled(t *testing.T) {
	r := httptest.NewRequest("PUT", "/x", nil)
	r.Body = timeoutBody{}
	r.ContentLength = 100
	err := (&Handler{}).readBody(&request{r: r, auth: &sigv4.Result{Payload: sigv4.PayloadUnsigned}})
	if e, ok := errors.AsType[*apiError](err); !ok || e.status != http.StatusBadRequest || e.code != CodeRequestTimeout {
		t.Errorf("readBody of a stalled body = %v, want 400 RequestTimeout", err)
	}
}
