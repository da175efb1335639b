package s3api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// listQuery is a parsed ListObjects or ListObjectsV2 query. Its in.Owners
// says whether the listing reports owners: v1 always does, v2 with
// fetch-owner=true; only then are the objects' ACLs read.
type listQuery struct {
	in        objects.ListInput
	encodeURL bool   // encoding-type=url
	marker    string // v1 marker or v2 start-after, as sent
	token     string // v2 continuation-token, as sent
}

// parseListObjects parses the query of ListObjects (v2 false) or
// ListObjectsV2. maxKeys is both the default and the cap of max-keys.
// Errors are InvalidArgument naming the argument, as S3 writes them.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectsV2.html
func parseListObjects(q url.Values, v2 bool, maxKeys int) (listQuery, error) {
	var lq listQuery
	var err error
	marker := "marker"
	if v2 {
		marker = "start-after"
	}
	if err := checkUTF8(q, "prefix", "delimiter", marker); err != nil {
		return listQuery{}, err
	}
	lq.in.Prefix = q.Get("prefix")
	lq.in.Delimiter = q.Get("delimiter")
	if lq.in.MaxKeys, err = parseMax(q, "max-keys", maxKeys, "Provided max-keys not an integer or within integer range"); err != nil {
		return listQuery{}, err
	}
	if lq.encodeURL, err = parseEncodingType(q); err != nil {
		return listQuery{}, err
	}
	if !v2 {
		lq.marker = q.Get("marker")
		lq.in.StartAfter = lq.marker
		lq.in.Owners = true
		return lq, nil
	}
	lq.in.Owners = q.Get("fetch-owner") == "true"
	lq.marker = q.Get("start-after")
	lq.in.StartAfter = lq.marker
	if t, ok := q["continuation-token"]; ok {
		lq.token = strings.Join(t, "")
		key, err := decodeToken(lq.token)
		if err != nil {
			return listQuery{}, invalidArgument("continuation-token", lq.token, "The continuation token provided is incorrect")
		}
		// The token wins over start-after, as in S3.
		lq.in.StartAfter = key
	}
	return lq, nil
}

// checkUTF8 refuses a listing parameter that is not valid UTF-8 with 400
// InvalidArgument. Keys are UTF-8 (objects.checkKey), so such a prefix or
// marker names none, and a delimiter that is not could end a common
// prefix inside a character: an XML document cannot carry that prefix
// (it would be written with U+FFFD, naming keys that do not exist, and a
// client resuming from it would skip keys).
func checkUTF8(q url.Values, names ...string) error {
	for _, name := range names {
		for _, v := range q[name] {
			if !utf8.ValidString(v) {
				return invalidArgument(name, strings.ToValidUTF8(v, "\uFFFD"), "The "+name+" parameter must be valid UTF-8.")
			}
		}
	}
	return nil
}

// parseMax parses a page-size parameter: an integer >= 0, default def,
// capped at def.
func parseMax(q url.Values, name string, def int, message string) (int, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	s := strings.Join(vs, "")
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || s[0] < '0' || s[0] > '9' {
		// Digits only: "+500" would pass a policy's numeric condition on
		// s3:max-keys (which does not read it as a number) yet list 500.
		return 0, invalidArgument(name, s, message)
	}
	return min(n, def), nil
}

// parseCount parses a count or marker of the multipart listings
// (max-uploads, max-parts, part-number-marker): digits only, at most
// 2^31-1, default def, capped at def. S3 refuses a negative value with a
// message of its own, and anything else that is not such an integer
// (a word, "+5", a value past 2^31-1) with another, both InvalidArgument;
// zero is a value like any other (an empty page for max-*). See
// docs/s3-compatibility.md, and moto's test_multipart_list_parts_invalid_argument
// for the messages.
func parseCount(q url.Values, name string, def int) (int, error) {
	vs, ok := q[name]
	if !ok {
		return def, nil
	}
	s := strings.Join(vs, "")
	if len(s) > 1 && s[0] == '-' && digits(s[1:]) {
		return 0, invalidArgument(name, s, "Argument "+name+" must be an integer between 0 and 2147483647")
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || !digits(s) {
		return 0, invalidArgument(name, s, "Provided "+name+" not an integer or within integer range")
	}
	return min(int(n), def), nil
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseEncodingType reports whether encoding-type asks for url; any other
// value is InvalidArgument.
func parseEncodingType(q url.Values) (bool, error) {
	vs, ok := q["encoding-type"]
	if !ok {
		return false, nil
	}
	s := strings.Join(vs, "")
	if s != "url" {
		return false, invalidArgument("encoding-type", s, "Invalid Encoding Method specified in Request")
	}
	return true, nil
}

// encodeToken makes the opaque continuation token of a listing that
// resumes after key.
func encodeToken(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}

// decodeToken returns the key a continuation token resumes after.
func decodeToken(t string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return "", err
	}
	if len(b) == 0 {
		return "", errors.New("empty continuation token")
	}
	return string(b), nil
}

// s3URLEncode encodes s as S3 encodes keys and prefixes in listings with
// encoding-type=url: every byte but unreserved ones, '/' and '*' as %XX
// (a space as %20, not "+"; '~' escaped too). The SDKs decode it with a
// query unescape.
func s3URLEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if s3ShouldEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if s3ShouldEscape(c) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// s3ShouldEscape reports whether s3URLEncode escapes c.
func s3ShouldEscape(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return false
	case c == '-', c == '_', c == '.', c == '/', c == '*':
		return false
	}
	return true
}

// encoder returns s3URLEncode when on, else the identity, as the XML
// text of a key (see s3xml.Text for keys XML 1.0 cannot carry).
func encoder(on bool) func(string) s3xml.Text {
	if on {
		return func(s string) s3xml.Text { return s3xml.Text(s3URLEncode(s)) }
	}
	return func(s string) s3xml.Text { return s3xml.Text(s) }
}

// listObjects serves ListObjects (version 1).
func (h *Handler) listObjects(w http.ResponseWriter, r *http.Request, rq *request) error {
	lq, err := parseListObjects(rq.query, false, h.cfg.MaxKeys)
	if err != nil {
		return err
	}
	res, err := h.objects.ListObjects(r.Context(), rq.bucket, lq.in)
	if err != nil {
		return err
	}
	contents, err := h.listContents(r.Context(), rq, res, lq)
	if err != nil {
		return err
	}
	enc := encoder(lq.encodeURL)
	out := s3xml.ListBucketResult{
		Name:           rq.bucket,
		Prefix:         enc(lq.in.Prefix),
		Marker:         enc(lq.marker),
		MaxKeys:        lq.in.MaxKeys,
		Delimiter:      enc(lq.in.Delimiter),
		IsTruncated:    res.IsTruncated,
		Contents:       contents,
		CommonPrefixes: commonPrefixes(res.CommonPrefixes, enc),
	}
	if lq.encodeURL {
		out.EncodingType = "url"
	}
	// S3 returns NextMarker only with a delimiter; without one, clients
	// resume after the last key listed.
	if res.IsTruncated && lq.in.Delimiter != "" {
		out.NextMarker = enc(res.NextMarker)
	}
	return writeXML(w, http.StatusOK, out)
}

// listObjectsV2 serves ListObjectsV2.
func (h *Handler) listObjectsV2(w http.ResponseWriter, r *http.Request, rq *request) error {
	lq, err := parseListObjects(rq.query, true, h.cfg.MaxKeys)
	if err != nil {
		return err
	}
	res, err := h.objects.ListObjects(r.Context(), rq.bucket, lq.in)
	if err != nil {
		return err
	}
	contents, err := h.listContents(r.Context(), rq, res, lq)
	if err != nil {
		return err
	}
	enc := encoder(lq.encodeURL)
	out := s3xml.ListBucketResultV2{
		Name:              rq.bucket,
		Prefix:            enc(lq.in.Prefix),
		ContinuationToken: lq.token,
		StartAfter:        enc(lq.marker),
		KeyCount:          len(res.Objects) + len(res.CommonPrefixes),
		MaxKeys:           lq.in.MaxKeys,
		Delimiter:         enc(lq.in.Delimiter),
		IsTruncated:       res.IsTruncated,
		Contents:          contents,
		CommonPrefixes:    commonPrefixes(res.CommonPrefixes, enc),
	}
	if lq.encodeURL {
		out.EncodingType = "url"
	}
	if res.IsTruncated {
		out.NextContinuationToken = encodeToken(res.NextMarker)
	}
	return writeXML(w, http.StatusOK, out)
}

// listContents converts the objects of bucket listed for lq to <Contents>
// entries, with their owners if lq asked for them.
func (h *Handler) listContents(ctx context.Context, rq *request, res objects.ListResult, lq listQuery) ([]s3xml.Object, error) {
	objs := res.Objects
	if len(objs) == 0 {
		return nil, nil
	}
	var owners *pageOwners
	if lq.in.Owners {
		owners = h.pageOwners(rq)
	}
	enc := encoder(lq.encodeURL)
	out := make([]s3xml.Object, len(objs))
	for i, o := range objs {
		out[i] = s3xml.Object{
			Key:               enc(o.Key),
			LastModified:      s3xml.Time(o.LastModified),
			ETag:              quoteETag(o.ETag),
			ChecksumAlgorithm: string(o.Checksum.Algorithm),
			ChecksumType:      checksumType(o.Checksum),
			Size:              o.Size,
			StorageClass:      "STANDARD",
		}
		if owners != nil {
			var err error
			if out[i].Owner, err = owners.of(ctx, res.Owners[i]); err != nil {
				return nil, fmt.Errorf("owner of %s/%s: %w", rq.bucket, o.Key, err)
			}
		}
	}
	return out, nil
}

// pageOwners reports the Owner of each object or version of a listing's
// page, as GetObjectAcl reports it: the owner in its ACL (the owner ID
// objects reads from it), the bucket's owner for one stored without an
// ACL and for every object where ACLs are off (BucketOwnerEnforced). It
// reads the bucket's settings at the first entry and names each owner
// once: entries of one owner share its *s3xml.Owner. An anonymous caller
// (a public bucket) gets owners' IDs without their display names: in
// Coffer those are IAM user names, which S3, whose owners are accounts,
// never lists.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_Owner.html
type pageOwners struct {
	h         *Handler
	bucket    string
	anonymous bool
	loaded    bool
	// enforced and bucketOwner are the bucket's settings, once loaded.
	enforced    bool
	bucketOwner string
	byID        map[string]*s3xml.Owner // canonical ID → owner
}

// pageOwners returns the owners of one page of a listing of rq's bucket.
func (h *Handler) pageOwners(rq *request) *pageOwners {
	return &pageOwners{h: h, bucket: rq.bucket, anonymous: rq.principal.Anonymous, byID: map[string]*s3xml.Owner{}}
}

// of returns the Owner of an object or version whose ACL names owner id
// ("" for none: objects.ListResult.Owners).
func (po *pageOwners) of(ctx context.Context, id string) (*s3xml.Owner, error) {
	if !po.loaded {
		ba, err := po.h.objects.BucketAccess(ctx, po.bucket)
		if err != nil {
			return nil, err
		}
		po.enforced = acl.Ownership(ba.Ownership) == acl.BucketOwnerEnforced
		po.bucketOwner = bucketOwnerID(ba.Owner)
		po.loaded = true
	}
	if po.enforced || id == "" {
		id = po.bucketOwner
	}
	return po.named(id), nil
}

// named returns the Owner of canonical ID id.
func (po *pageOwners) named(id string) *s3xml.Owner {
	o, ok := po.byID[id]
	if !ok {
		x := po.h.canonicalOwner(id)
		if po.anonymous {
			x.DisplayName = ""
		}
		o = &x
		po.byID[id] = o
	}
	return o
}

// checksumType returns the checksum type to list: S3 lists one only with
// an algorithm.
func checksumType(c objects.ChecksumValue) string {
	if c.Algorithm == "" {
		return ""
	}
	return c.Type
}

// commonPrefixes converts rolled-up prefixes to <CommonPrefixes> entries.
func commonPrefixes(ps []string, enc func(string) s3xml.Text) []s3xml.CommonPrefix {
	if len(ps) == 0 {
		return nil
	}
	out := make([]s3xml.CommonPrefix, len(ps))
	for i, p := range ps {
		out[i] = s3xml.CommonPrefix{Prefix: enc(p)}
	}
	return out
}

// listUploadsQuery is a parsed ListMultipartUploads query.
type listUploadsQuery struct {
	in        objects.ListUploadsInput
	encodeURL bool
}

// parseListUploads parses the query of ListMultipartUploads.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListMultipartUploads.html
func parseListUploads(q url.Values, maxUploads int) (listUploadsQuery, error) {
	var lq listUploadsQuery
	var err error
	if err := checkUTF8(q, "prefix", "delimiter", "key-marker"); err != nil {
		return listUploadsQuery{}, err
	}
	lq.in = objects.ListUploadsInput{
		Prefix:         q.Get("prefix"),
		Delimiter:      q.Get("delimiter"),
		KeyMarker:      q.Get("key-marker"),
		UploadIDMarker: q.Get("upload-id-marker"),
	}
	if lq.in.MaxUploads, err = parseCount(q, "max-uploads", maxUploads); err != nil {
		return listUploadsQuery{}, err
	}
	if lq.encodeURL, err = parseEncodingType(q); err != nil {
		return listUploadsQuery{}, err
	}
	if lq.in.KeyMarker == "" {
		// S3 ignores upload-id-marker without key-marker.
		lq.in.UploadIDMarker = ""
	}
	return lq, nil
}

// listMultipartUploads serves ListMultipartUploads.
func (h *Handler) listMultipartUploads(w http.ResponseWriter, r *http.Request, rq *request) error {
	lq, err := parseListUploads(rq.query, h.cfg.MaxKeys)
	if err != nil {
		return err
	}
	// max-uploads=0 is an empty, final page, as S3 answers it; the service
	// (whose 0 means its default) is asked for one upload, to answer
	// NoSuchBucket all the same.
	ask := lq.in
	ask.MaxUploads = max(lq.in.MaxUploads, 1)
	res, err := h.objects.ListMultipartUploads(r.Context(), rq.bucket, ask)
	if err != nil {
		return err
	}
	if lq.in.MaxUploads == 0 {
		res = objects.ListUploadsResult{}
	}
	ba, err := h.objects.BucketAccess(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	enc := encoder(lq.encodeURL)
	out := s3xml.ListMultipartUploadsResult{
		Bucket:         rq.bucket,
		KeyMarker:      enc(lq.in.KeyMarker),
		UploadIDMarker: lq.in.UploadIDMarker,
		Delimiter:      enc(lq.in.Delimiter),
		Prefix:         enc(lq.in.Prefix),
		MaxUploads:     lq.in.MaxUploads,
		IsTruncated:    res.IsTruncated,
		CommonPrefixes: commonPrefixes(res.CommonPrefixes, enc),
	}
	if res.IsTruncated {
		out.NextKeyMarker = enc(res.NextKeyMarker)
		out.NextUploadIDMarker = res.NextUploadIDMarker
	}
	if lq.encodeURL {
		out.EncodingType = "url"
	}
	for _, u := range res.Uploads {
		initiator, owner := h.uploadParties(r.Context(), ba, u)
		out.Uploads = append(out.Uploads, s3xml.Upload{
			Key:               enc(u.Key),
			UploadID:          u.UploadID,
			Initiator:         initiator,
			Owner:             owner,
			StorageClass:      "STANDARD",
			Initiated:         s3xml.Time(u.Initiated),
			ChecksumAlgorithm: string(u.ChecksumAlgorithm),
			ChecksumType:      uploadChecksumType(u),
		})
	}
	return writeXML(w, http.StatusOK, out)
}

// uploadChecksumType returns the checksum type of an upload, written only
// with an algorithm.
func uploadChecksumType(u objects.Upload) string {
	if u.ChecksumAlgorithm == "" {
		return ""
	}
	if u.ChecksumType == "" {
		return "COMPOSITE"
	}
	return u.ChecksumType
}
