package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/policy"
)

// simulatorPage is the policy simulator: would a user, or an access key,
// be allowed an action on a bucket or object under given condition
// values, and which statements decide it. It asks iam.Simulate, which
// runs the decision real requests get. The form is a GET: asking changes
// nothing, and an answer's address can be shared. It needs
// admin:SimulatePolicy, as the admin API's POST /simulate does.
func simulatorPage() page {
	return page{
		title:     "Simulator",
		path:      "/simulator",
		need:      "SimulatePolicy",
		templates: []string{"simulator.html"},
		routes: []pageRoute{
			{"GET /simulator", func(h *Handler) sessionHandler { return h.simulator }},
		},
	}
}

// simForm is the simulator's form, as submitted.
type simForm struct {
	As        string // "user" or "key"
	User      string
	AccessKey string
	Action    string
	Bucket    string
	Object    string
	SourceIP  string
	Secure    bool
	Prefix    string
	Context   string // more KEY=VALUE lines
}

type simulatorView struct {
	Form    simForm
	Users   []string // for the user picker; nil without admin:ListUsers
	Keys    []iam.KeyInfo
	Actions []string
	Result  *iam.Simulation
	Error   string
}

func parseSimForm(q url.Values) simForm {
	f := simForm{
		As: q.Get("as"), User: q.Get("user"), AccessKey: strings.TrimSpace(q.Get("accesskey")), Action: strings.TrimSpace(q.Get("action")),
		Bucket: strings.TrimSpace(q.Get("bucket")), Object: q.Get("object"), SourceIP: strings.TrimSpace(q.Get("sourceip")),
		Secure: q.Get("secure") == "true", Prefix: q.Get("prefix"), Context: q.Get("context"),
	}
	if f.As != "key" {
		f.As = "user"
	}
	return f
}

// input returns the simulation f asks for, or a message saying what is
// wrong with the form.
func (f simForm) input() (iam.SimulateInput, string) {
	in := iam.SimulateInput{Action: iam.Action(f.Action), Bucket: f.Bucket, Key: f.Object}
	if f.As == "key" {
		in.AccessKey = f.AccessKey
	} else {
		in.User = f.User
	}
	if in.User == "" && in.AccessKey == "" {
		return in, "Pick a user or enter an access key."
	}
	if f.Action == "" {
		return in, "Enter an action, such as s3:GetObject."
	}
	in.Cond.SecureTransport = f.Secure
	set := func(k, v string) string {
		if err := in.Cond.SetCondition(k, v); err != nil {
			msg, _ := formError(err)
			return capitalize(msg) + "."
		}
		return ""
	}
	if f.SourceIP != "" {
		if msg := set("aws:SourceIp", f.SourceIP); msg != "" {
			return in, msg
		}
	}
	// S3 sends s3:prefix with every listing ("" when none is given).
	listing := in.Action == iam.ListBucket || in.Action == iam.ListBucketVersions || in.Action == iam.ListBucketMultipartUploads
	if f.Prefix != "" || listing {
		if msg := set("s3:prefix", f.Prefix); msg != "" {
			return in, msg
		}
	}
	for line := range strings.Lines(f.Context) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return in, "Write each condition value as KEY=VALUE, such as aws:UserAgent=curl/8.0."
		}
		if msg := set(strings.TrimSpace(k), strings.TrimSpace(v)); msg != "" {
			return in, msg
		}
	}
	return in, ""
}

func (h *Handler) simulator(w http.ResponseWriter, r *http.Request, s *session) error {
	d, err := h.directoryFor(r, s, "SimulatePolicy")
	if err != nil {
		return err
	}
	ctx := r.Context()
	q := r.URL.Query()
	v := simulatorView{Form: parseSimForm(q), Actions: policy.Actions()}
	if h.may(r, s, "ListUsers") {
		us, err := d.Users(ctx)
		if err != nil {
			return err
		}
		v.Users = sortedNames(us, func(u iam.UserInfo) string { return u.Name })
	}
	if h.may(r, s, "ListAccessKeys") {
		if v.Keys, err = d.Keys(ctx, ""); err != nil {
			return err
		}
	}
	status := http.StatusOK
	if q.Has("action") {
		in, msg := v.Form.input()
		if msg == "" {
			sim, err := d.Simulate(ctx, in)
			if err != nil {
				m, ok := formError(err)
				if !ok {
					return err
				}
				msg = capitalize(m) + "."
			} else {
				v.Result = &sim
			}
		}
		if msg != "" {
			v.Error, status = msg, http.StatusBadRequest
		}
	}
	h.render(w, r, status, "simulator.html", s, "Policy simulator", v)
	return nil
}
