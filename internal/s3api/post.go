package s3api

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/checksum"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/postpolicy"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
	"github.com/coffer-s3/coffer/internal/sigv4"
)

// maxPostPreData bounds the bytes of a form upload before its file: the
// fields, their part headers and the boundaries. S3 answers
// MaxPostPreDataLengthExceededError past its own bound; 64 KiB holds a
// policy of postpolicy.MaxSize, base64-encoded, with room for the rest.
const maxPostPreData = 64 << 10

// preDataReadAhead is how far past the fields the multipart reader may
// have read when it finds the file: its 4 KiB buffer, with room to spare.
const preDataReadAhead = 8 << 10

// isFormHeader reports whether a form field (by its lower-case name)
// stands for the PutObject header of that name: the standard headers,
// x-amz-meta-*, x-amz-grant-*, the checksums (checksum.ForHeader), storage
// class, and the features Coffer refuses (unsupportedHeaders), so that
// they are refused here too.
func isFormHeader(name string) bool {
	switch name {
	case "cache-control", "content-type", "content-disposition", "content-encoding", "content-language",
		"expires", "content-md5", "x-amz-storage-class", "x-amz-checksum-algorithm":
		return true
	}
	if _, ok := checksum.ForHeader(name); ok {
		return true
	}
	for _, k := range unsupportedHeaders {
		if strings.EqualFold(name, k) {
			return true
		}
	}
	return strings.HasPrefix(name, "x-amz-meta-") || strings.HasPrefix(name, "x-amz-grant-")
}

// postObject serves a browser form upload: POST /{bucket} with a
// multipart/form-data body whose fields say what to store and, with a
// signed policy, who stores it; its file field is the object. The request
// is authenticated by its fields, not its headers, so the handler does
// what the pipeline does for other ops: it reads the fields up to the
// file, verifies the policy's signature, checks the form against the
// policy, authorizes s3:PutObject, then streams the file to storage, with
// its length checked against the policy's content-length-range as it
// arrives. See https://docs.aws.amazon.com/AmazonS3/latest/API/RESTObjectPOST.html
func (h *Handler) postObject(w http.ResponseWriter, r *http.Request, rq *request) error {
	if !hasContentLength(r) {
		return s3err.New(s3err.MissingContentLength, "")
	}
	mr, pre, err := formReader(r.Header.Get("Content-Type"), rq.rawBody)
	if err != nil {
		return err
	}
	// Nothing is verified before the fields are in: they get a bounded
	// time from when they may be read, whatever their pace (lifted once
	// the upload is authorized),
	// and are read holding a slot of the form pool, not a request slot:
	// strangers who open forms and send their fields slowly, which needs
	// no credentials, can keep other forms waiting (SlowDown), never the
	// rest of the API. The request slot is taken again once they are in.
	// (So under load a form waits twice: for a form slot, then for a
	// request slot again.)
	h.releaseSlot(rq)
	form, file, err := h.readFormFields(w, r, rq, mr, pre)
	if err != nil {
		return err
	}
	defer file.Close()
	if err := h.takeSlot(w, r.Context(), rq); err != nil {
		return err
	}

	// Authenticate: the policy's signature, or nobody.
	pf := sigv4.PostForm{
		Policy:      form.Get("policy"),
		Algorithm:   form.Get("x-amz-algorithm"),
		Credential:  form.Get("x-amz-credential"),
		Date:        form.Get("x-amz-date"),
		Signature:   form.Get("x-amz-signature"),
		AccessKeyID: form.Get("awsaccesskeyid"),
		SignatureV2: form.Get("signature"),
	}
	res, err := h.verifier.VerifyPost(r.Context(), pf)
	if err != nil {
		rq.claimedKey, rq.authFailed = claimedAccessKey(err), true
		return err
	}
	rq.auth = res
	if res.Anonymous {
		rq.principal = iam.Principal{Anonymous: true}
	} else {
		rq.principal = h.iam.Principal(res.AccessKeyID)
	}

	key, ok := form.Values["key"]
	if !ok {
		return s3err.Newf(s3err.InvalidArgument, "", "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.").
			With("ArgumentName", "key").With("ArgumentValue", "")
	}
	key = strings.ReplaceAll(key, "${filename}", fileName(file))
	rq.key = key
	form.Values["key"] = key // the policy checks the key that is stored

	// The policy: the fields as sent, the bucket as addressed.
	var policy *postpolicy.Policy
	if pf.Policy != "" {
		if policy, err = postpolicy.Decode(pf.Policy); err != nil {
			return err
		}
		form.Values["bucket"] = rq.bucket
		if err := policy.Check(&form, h.clock()); err != nil {
			return err
		}
	}

	// What to store, from the fields named as the PutObject headers
	// they stand for.
	hdr, err := formHeader(&form)
	if err != nil {
		return err
	}
	in, err := parsePutObject(hdr, nil)
	if err != nil {
		return err
	}
	if v, ok := form.Values["tagging"]; ok {
		if in.Tags, err = parseFormTagging(v); err != nil {
			return err
		}
	}
	// Authorization sees the request as a PutObject with these headers:
	// its ACL fields (x-amz-acl, grants) and tags.
	fr := r.Clone(r.Context())
	fr.Header = hdr.Clone()
	// aws:UserAgent and aws:Referer are the request's, as for any other.
	for _, k := range []string{"User-Agent", "Referer"} {
		if vs := r.Header.Values(k); len(vs) > 0 {
			fr.Header[k] = vs
		}
	}
	rq.tags = tagMap(in.Tags)
	if err := h.authorize(fr, rq, iam.PutObject, rq.bucket, key); err != nil {
		return err
	}
	if err := h.authorizeRequestTags(fr, rq, in.Tags); err != nil {
		return err
	}
	if in.ACL, err = h.newObjectACL(fr, rq); err != nil {
		return err
	}
	rq.idle.until(time.Time{}) // an authorized upload's file takes as long as it progresses

	in.Size = objects.SizeUnknown
	var body io.Reader = &formFileReader{r: file}
	if policy != nil {
		body = policy.LengthReader(body)
	}
	info, err := h.objects.PutObject(r.Context(), rq.bucket, key, in, body)
	if err != nil {
		return err
	}
	return h.postResponse(w, r, rq, &form, &info)
}

// postResponse answers a stored form upload as the form asks:
// success_action_redirect (or the older redirect) sends the browser on
// with 303 and the bucket, key and ETag in the query; else
// success_action_status 200 or 201 (with a PostResponse document); else,
// and for any other status, 204.
func (h *Handler) postResponse(w http.ResponseWriter, r *http.Request, rq *request, form *postpolicy.Form, info *objects.ObjectInfo) error {
	hdr := w.Header()
	etag := quoteETag(info.ETag)
	hdr["ETag"] = []string{etag}
	setVersionHeaders(hdr, info.VersionID, "")
	h.setExpiration(r.Context(), hdr, rq.bucket, info)
	location := objectURL(r, h.cfg.Domain, rq.bucket, info.Key)
	hdr.Set("Location", location)

	redirect := form.Get("success_action_redirect")
	if redirect == "" {
		redirect = form.Get("redirect")
	}
	if u, err := url.Parse(redirect); redirect != "" && err == nil && u.Scheme != "" && u.Host != "" {
		// In S3's order, after the redirect's own query.
		q := "bucket=" + url.QueryEscape(rq.bucket) + "&key=" + url.QueryEscape(info.Key) + "&etag=" + url.QueryEscape(etag)
		if u.RawQuery != "" {
			q = u.RawQuery + "&" + q
		}
		u.RawQuery = q
		hdr.Set("Location", u.String())
		hdr.Set("Content-Length", "0")
		w.WriteHeader(http.StatusSeeOther)
		return nil
	}
	switch form.Get("success_action_status") {
	case "200":
		hdr.Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	case "201":
		return writeXML(w, http.StatusCreated, s3xml.PostResponse{
			Location: location, Bucket: rq.bucket, Key: info.Key, ETag: etag,
		})
	default:
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

// objectURL returns the URL of bucket/key as the request addressed the
// server: virtual-hosted style if it came that way, else path style.
func objectURL(r *http.Request, domain, bucket, key string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	p := (&url.URL{Path: "/" + bucket + "/" + key}).EscapedPath()
	if VirtualHosted(r.Host, domain) {
		p = (&url.URL{Path: "/" + key}).EscapedPath()
	}
	return scheme + "://" + r.Host + p
}

// formReader returns the reader of a multipart/form-data body and the
// bound on its fields, or MalformedPOSTRequest for any other content type.
func formReader(contentType string, body io.Reader) (*multipart.Reader, *preDataReader, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.EqualFold(mt, "multipart/form-data") || params["boundary"] == "" {
		return nil, nil, s3err.Wrap(s3err.MalformedPOSTRequest, "",
			errors.New("the Content-Type must be multipart/form-data with a boundary"))
	}
	pre := &preDataReader{r: body, left: maxPostPreData}
	return multipart.NewReader(pre, params["boundary"]), pre, nil
}

// readForm reads a form's fields up to its file, which it returns unread.
// Field names are matched without regard to case; a repeated field is
// InvalidArgument. Fields after the file are never read, as in S3. A form
// without a file is IncorrectNumberOfFilesInPostRequest; fields that run
// past maxPostPreData are MaxPostPreDataLengthExceededError.
func readForm(mr *multipart.Reader, pre *preDataReader) (postpolicy.Form, *multipart.Part, error) {
	var form postpolicy.Form
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return form, nil, s3err.New(s3err.IncorrectNumberOfFilesInPostRequest, "")
		}
		if err != nil {
			return form, nil, formError(err)
		}
		name := p.FormName()
		if name == "" {
			p.Close()
			return form, nil, s3err.Wrap(s3err.MalformedPOSTRequest, "", errors.New("a part has no form-data name"))
		}
		if strings.EqualFold(name, "file") {
			pre.file = true
			return form, p, nil
		}
		v, err := io.ReadAll(p)
		p.Close()
		if err != nil {
			return form, nil, formError(err)
		}
		if !form.Set(name, string(v)) {
			return form, nil, s3err.Newf(s3err.InvalidArgument, "", "POST form fields must not repeat: '"+name+"' is given more than once.").
				With("ArgumentName", name).With("ArgumentValue", string(v))
		}
	}
}

// formError maps an error reading the fields of a form: what bodyError
// makes of S3 errors, timeouts and a body that ends early, and
// MalformedPOSTRequest for anything the multipart reader could not parse.
func formError(err error) error {
	_, s3 := errors.AsType[*s3err.Error](err)
	ne, isNet := errors.AsType[net.Error](err)
	if s3 || errors.Is(err, io.ErrUnexpectedEOF) || isNet && ne.Timeout() {
		return bodyError(err)
	}
	return s3err.Wrap(s3err.MalformedPOSTRequest, "", err)
}

// preDataReader reads a form body, failing once more than left bytes were
// read before the file part was reached (the multipart reader reads ahead a
// few KiB, which the bound allows for). After that it is a plain reader.
type preDataReader struct {
	r    io.Reader
	left int64
	file bool // the file part was reached: no more bound
}

func (p *preDataReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if !p.file {
		p.left -= int64(n)
		if p.left < -preDataReadAhead {
			return 0, s3err.New(s3err.MaxPostPreDataLengthExceededError, "")
		}
	}
	return n, err
}

// formFileReader reads the file part of a form, mapping the multipart
// reader's errors: a body cut short (the client went away, or its
// connection) is IncompleteBody, a timeout RequestTimeout.
type formFileReader struct {
	r *multipart.Part
}

func (f *formFileReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF {
		err = bodyError(err)
	}
	return n, err
}

// readFormFields reads the fields of a form up to its file (readForm)
// holding a slot of the form pool (Handler.forms), in FormFieldsTimeout
// from when it has the slot.
func (h *Handler) readFormFields(w http.ResponseWriter, r *http.Request, rq *request, mr *multipart.Reader, pre *preDataReader) (postpolicy.Form, *multipart.Part, error) {
	if err := h.forms.enter(w, r.Context()); err != nil {
		return postpolicy.Form{}, nil, err
	}
	defer h.forms.release()
	rq.idle.until(time.Now().Add(h.cfg.FormFieldsTimeout)) // real time: a deadline
	return readForm(mr, pre)
}

// fileName returns the name the form gave its file, without any directory
// (old browsers sent the whole path), for ${filename} in the key.
func fileName(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	name := strings.ReplaceAll(params["filename"], `\`, "/")
	if name == "" {
		return ""
	}
	return path.Base(name)
}

// formHeader returns the fields of a form that stand for PutObject
// headers as those headers (isFormHeader), and acl as x-amz-acl. A value
// no HTTP header could carry (a control character other than tab: a
// header sent with it is refused by net/http, as by S3's front end) is
// 400 InvalidArgument: stored, it would go out in the object's
// Content-Type or Cache-Control, and clients refuse such a response (a
// NUL in it made the object unreadable to Go's client and to curl).
func formHeader(form *postpolicy.Form) (http.Header, error) {
	hdr := make(http.Header, len(form.Names))
	for _, name := range form.Names {
		v := form.Values[name]
		if (name == "acl" || isFormHeader(name)) && !validHeaderValue(v) {
			return nil, invalidArgument(name, strings.ToValidUTF8(v, "\uFFFD"),
				"The form field "+name+" holds a character no HTTP header may carry.")
		}
		switch {
		case name == "acl":
			hdr.Set("X-Amz-Acl", v)
		case isFormHeader(name):
			hdr[textproto.CanonicalMIMEHeaderKey(name)] = []string{v}
		}
	}
	return hdr, nil
}

// validHeaderValue reports whether an HTTP header could carry v: no
// control characters but tab (RFC 9110 section 5.5).
func validHeaderValue(v string) bool {
	for i := range len(v) {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// parseFormTagging parses the tagging field of a form: a Tagging document,
// as the body of PutObjectTagging.
func parseFormTagging(v string) ([]objects.Tag, error) {
	doc, err := s3xml.DecodeTagging(strings.NewReader(v), maxConfigBody)
	if err != nil {
		return nil, err
	}
	tags := make([]objects.Tag, len(doc.TagSet.Tags))
	for i, t := range doc.TagSet.Tags {
		tags[i] = objects.Tag{Key: *t.Key, Value: t.Value}
	}
	return tags, nil
}
