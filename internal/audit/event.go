package audit

import (
	"encoding/json"
	"math"
	"time"
)

// The Sources of an Event.
const (
	SourceS3        = "s3"        // an S3 API request
	SourceAdmin     = "admin"     // an admin API action
	SourceLifecycle = "lifecycle" // an action of the lifecycle worker (user "lifecycle")
	SourceConsole   = "console"   // a sign-in or a change made in the web console
)

// Event is one audited action. JSON (admin API, export) uses the tags
// shown, plus "durationMs" for Duration: see MarshalJSON.
type Event struct {
	ID        int64     `json:"id"`                  // assigned when stored; 0 before
	Time      time.Time `json:"time"`                // when the request started; stored in UTC with nanoseconds
	Source    string    `json:"source"`              // SourceS3, SourceAdmin, SourceLifecycle or SourceConsole
	Op        string    `json:"op"`                  // S3 op name ("PutObject"), admin action ("admin:CreateUser"), lifecycle action ("S3.EXPIRE.OBJECT") or console action ("SignIn", "CreateBucket")
	Status    int       `json:"status"`              // HTTP status sent
	Code      string    `json:"code,omitempty"`      // S3/admin error code, "" on success
	Bucket    string    `json:"bucket,omitempty"`    // target bucket, "" if none
	Key       string    `json:"key,omitempty"`       // target key, "" if none
	Target    string    `json:"target,omitempty"`    // admin: what it acted on, e.g. "user/alice"; lifecycle: the version or upload and the rule
	User      string    `json:"user,omitempty"`      // user name; "root" for root; "" anonymous or unauthenticated
	AccessKey string    `json:"accessKey,omitempty"` // the key that signed, or the one a failed signature claimed
	SourceIP  string    `json:"sourceIp,omitempty"`  // IP only, no port
	RequestID string    `json:"requestId,omitempty"` // the request ID sent to the client
	BytesIn   int64     `json:"bytesIn"`             // request body bytes read
	BytesOut  int64     `json:"bytesOut"`            // response body bytes written
	// Duration is how long the request took. In JSON it is "durationMs",
	// float64 milliseconds, exact to the microsecond. For a summary, it is
	// the time its count covers.
	Duration time.Duration `json:"-"`
	// Count is 0 for an event that records one request. A summary, which
	// the log writes for the refused and unauthenticated requests it
	// counted instead of recording them (see Log.RecordBounded), has the
	// number of those requests here; so a range of the log stands for
	// the sum over its events of max(Count, 1) requests.
	Count int64 `json:"count,omitempty"`
	// Untrusted is true for an event a stranger could cause: one
	// recorded with Log.RecordBounded (a refused request, or one
	// without a verified identity) and every summary. Untrusted events
	// may take at most a quarter of the size cap and are evicted first,
	// so that strangers' requests never evict the history of
	// authenticated principals while there are strangers' events to
	// evict. (Events stored before this field existed are not.)
	Untrusted bool `json:"untrusted,omitempty"`
}

// eventJSON is Event's JSON form. Embedding a type without Event's
// methods keeps json from calling them again.
type eventJSON struct {
	eventFields
	DurationMS float64 `json:"durationMs"`
}

type eventFields Event

// MarshalJSON implements json.Marshaler: the fields with their tags, and
// Duration as "durationMs", milliseconds rounded to the microsecond.
func (e Event) MarshalJSON() ([]byte, error) {
	us := e.Duration.Round(time.Microsecond) / time.Microsecond
	return json.Marshal(eventJSON{eventFields(e), float64(us) / 1e3})
}

// UnmarshalJSON implements json.Unmarshaler, reading what MarshalJSON
// writes; "durationMs" is rounded to the microsecond.
func (e *Event) UnmarshalJSON(b []byte) error {
	var v eventJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Event(v.eventFields)
	e.Duration = time.Duration(math.Round(v.DurationMS*1e3)) * time.Microsecond
	return nil
}
