package audit

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEventJSON(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	for _, tc := range []struct {
		name     string
		in       Event
		wantJSON string
		wantBack Event // in after the round trip
	}{
		{
			name: "every field",
			in: Event{ID: 7, Time: start, Source: SourceS3, Op: "PutObject", Status: 200, Bucket: "b", Key: "k<&>",
				User: "alice", AccessKey: "AK", SourceIP: "10.0.0.1", RequestID: "R1", BytesIn: 5, BytesOut: 6,
				Duration: 1234567 * time.Microsecond},
			wantJSON: `{"id":7,"time":"2025-03-04T05:06:07.123456789Z","source":"s3","op":"PutObject","status":200,` +
				`"bucket":"b","key":"k\u003c\u0026\u003e","user":"alice","accessKey":"AK","sourceIp":"10.0.0.1","requestId":"R1",` +
				`"bytesIn":5,"bytesOut":6,"durationMs":1234.567}`,
		},
		{
			name: "admin failure, empty strings omitted",
			in:   Event{ID: 1, Time: start, Source: SourceAdmin, Op: "admin:DeleteUser", Status: 404, Code: "NoSuchUser", Target: "user/dave"},
			wantJSON: `{"id":1,"time":"2025-03-04T05:06:07.123456789Z","source":"admin","op":"admin:DeleteUser","status":404,` +
				`"code":"NoSuchUser","target":"user/dave","bytesIn":0,"bytesOut":0,"durationMs":0}`,
		},
		{
			name:     "sub-microsecond duration rounds",
			in:       Event{Time: start, Duration: 1500 * time.Nanosecond},
			wantJSON: `{"id":0,"time":"2025-03-04T05:06:07.123456789Z","source":"","op":"","status":0,"bytesIn":0,"bytesOut":0,"durationMs":0.002}`,
			wantBack: Event{Time: start, Duration: 2 * time.Microsecond},
		},
		{
			name:     "long duration",
			in:       Event{Time: start, Duration: 90*time.Minute + 999999*time.Microsecond},
			wantJSON: `{"id":0,"time":"2025-03-04T05:06:07.123456789Z","source":"","op":"","status":0,"bytesIn":0,"bytesOut":0,"durationMs":5400999.999}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tc.wantJSON {
				t.Errorf("Marshal:\n got %s\nwant %s", got, tc.wantJSON)
			}
			var back Event
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			want := tc.in
			if !tc.wantBack.Time.IsZero() {
				want = tc.wantBack
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventUnmarshalError(t *testing.T) {
	t.Parallel()
	var e Event
	if err := json.Unmarshal([]byte(`{"durationMs":"fast"}`), &e); err == nil {
		t.Errorf("Unmarshal of a string durationMs: no error, got %+v", e)
	}
}
