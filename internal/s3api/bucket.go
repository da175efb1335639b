package s3api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/acl"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3err"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// bucketsQuery is a parsed ListBuckets query.
type bucketsQuery struct {
	prefix     string
	max        int    // 0: no limit
	startAfter string // decoded continuation-token
}

// parseListBuckets parses the optional ListBuckets parameters prefix,
// max-buckets (1..10000) and continuation-token. A client that pages gets
// pages; one that does not gets every bucket, as from S3.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListBuckets.html
func parseListBuckets(q url.Values) (bucketsQuery, error) {
	bq := bucketsQuery{prefix: q.Get("prefix")}
	if vs, ok := q["max-buckets"]; ok {
		s := strings.Join(vs, "")
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 10000 {
			return bucketsQuery{}, invalidArgument("max-buckets", s, "Argument max-buckets must be an integer between 1 and 10000.")
		}
		bq.max = n
	}
	if vs, ok := q["continuation-token"]; ok {
		t := strings.Join(vs, "")
		name, err := decodeToken(t)
		if err != nil {
			return bucketsQuery{}, invalidArgument("continuation-token", t, "The continuation token provided is incorrect")
		}
		bq.startAfter = name
	}
	return bq, nil
}

// listBuckets serves ListBuckets. A caller sees only the buckets it may
// list or read something in (iam.CanSeeBucket); root sees them all.
func (h *Handler) listBuckets(w http.ResponseWriter, r *http.Request, rq *request) error {
	bq, err := parseListBuckets(rq.query)
	if err != nil {
		return err
	}
	bs, err := h.objects.ListBuckets(r.Context())
	if err != nil {
		return err
	}
	out := s3xml.ListAllMyBucketsResult{Owner: h.owner(rq), Buckets: s3xml.Buckets{}, Prefix: bq.prefix}
	for _, b := range bs {
		if !strings.HasPrefix(b.Name, bq.prefix) || b.Name <= bq.startAfter || !h.iam.CanSeeBucket(rq.principal, b.Name) {
			continue
		}
		if bq.max > 0 && len(out.Buckets) == bq.max {
			out.ContinuationToken = encodeToken(out.Buckets[len(out.Buckets)-1].Name)
			break
		}
		out.Buckets = append(out.Buckets, s3xml.Bucket{
			Name:         b.Name,
			CreationDate: s3xml.Time(b.Created),
			BucketRegion: h.bucketRegion(b),
		})
	}
	return writeXML(w, http.StatusOK, out)
}

// bucketRegion returns the region a bucket lives in.
func (h *Handler) bucketRegion(b objects.Bucket) string {
	if b.Region != "" {
		return b.Region
	}
	return h.cfg.Region
}

// parseCreateBucket checks the headers of a CreateBucket: object lock is
// NotImplemented; x-amz-object-ownership must name a setting.
func parseCreateBucket(h http.Header) (acl.Ownership, error) {
	if v := h.Get("X-Amz-Bucket-Object-Lock-Enabled"); strings.EqualFold(v, "true") {
		return "", notImplementedHeader("x-amz-bucket-object-lock-enabled")
	}
	o := acl.Ownership(h.Get("X-Amz-Object-Ownership"))
	if o != "" && !o.Valid() {
		return "", invalidArgument("x-amz-object-ownership", string(o), "Invalid x-amz-object-ownership header: "+string(o))
	}
	return o, nil
}

// createBucket serves CreateBucket. The optional body names the region;
// Coffer serves one, so any other is IllegalLocationConstraintException,
// as S3 answers a request for another region's bucket at this endpoint.
// The caller owns the bucket; x-amz-acl or x-amz-grant-* set its ACL, and
// x-amz-object-ownership its Object Ownership (with BucketOwnerEnforced,
// an ACL other than private is InvalidBucketAclWithObjectOwnership).
// Re-creating one's own bucket is 200 OK and resets its ACL when the
// server's region is us-east-1, as in S3 (BucketAlreadyOwnedByYou
// elsewhere); someone else's is BucketAlreadyExists. The reset is an ACL
// write like PutBucketAcl: the bucket's Object Ownership and Block Public
// Access settings apply to it (checkACL). As S3 requires, an ACL other
// than private needs s3:PutBucketAcl besides s3:CreateBucket, and
// x-amz-object-ownership needs s3:PutBucketOwnershipControls.
func (h *Handler) createBucket(w http.ResponseWriter, r *http.Request, rq *request) error {
	ownership, err := parseCreateBucket(r.Header)
	if err != nil {
		return err
	}
	ra, err := parseACLHeaders(r.Header, h.resolveID)
	if err != nil {
		return err
	}
	cfg, err := s3xml.DecodeCreateBucketConfiguration(rq.body, rq.op.limit)
	if err != nil {
		return err
	}
	region := cfg.LocationConstraint
	if region != "" && region != h.cfg.Region {
		return s3err.Newf(s3err.IllegalLocationConstraintExc, rq.bucket,
			"The "+region+" location constraint is incompatible for the region specific endpoint this request was sent to.")
	}
	owner := bucketOwnerID(h.iam.CanonicalID(rq.principal))
	a, err := ra.build(owner, owner)
	if err != nil {
		return err
	}
	in := objects.CreateBucketInput{Region: region, Owner: owner, Ownership: string(ownership),
		LegacyOwner: bucketOwnerID(""), RecreateOwned: h.cfg.Region == "us-east-1",
		CheckRecreate: func(ctx context.Context) error {
			ba, err := h.objects.BucketAccess(ctx, rq.bucket)
			if err != nil {
				return err
			}
			return checkACL(ba, a)
		}}
	if !a.IsPrivate() {
		if ownership == acl.BucketOwnerEnforced {
			return s3err.New(s3err.InvalidBucketAclWithObjectOwnership, rq.bucket)
		}
		if err := h.authorize(r, rq, iam.PutBucketAcl, rq.bucket, ""); err != nil {
			return err
		}
		in.ACL = acl.Encode(a)
	}
	if ownership != "" {
		if err := h.authorize(r, rq, iam.PutBucketOwnership, rq.bucket, ""); err != nil {
			return err
		}
	}
	if err := h.objects.CreateBucket(r.Context(), rq.bucket, in); err != nil {
		return err
	}
	w.Header().Set("Location", "/"+rq.bucket)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}

// headBucket serves HeadBucket.
func (h *Handler) headBucket(w http.ResponseWriter, r *http.Request, rq *request) error {
	b, err := h.objects.HeadBucket(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	w.Header()["x-amz-bucket-region"] = []string{h.bucketRegion(b)}
	w.WriteHeader(http.StatusOK)
	return nil
}

// deleteBucket serves DeleteBucket.
func (h *Handler) deleteBucket(w http.ResponseWriter, r *http.Request, rq *request) error {
	if err := h.objects.DeleteBucket(r.Context(), rq.bucket); err != nil {
		return err
	}
	// The bucket's policy went with it.
	if err := h.iam.RefreshBucketPolicy(context.WithoutCancel(r.Context()), rq.bucket); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// getBucketLocation serves GetBucketLocation. S3 writes us-east-1 as an
// empty LocationConstraint.
func (h *Handler) getBucketLocation(w http.ResponseWriter, r *http.Request, rq *request) error {
	b, err := h.objects.HeadBucket(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	region := h.bucketRegion(b)
	if region == "us-east-1" {
		region = ""
	}
	return writeXML(w, http.StatusOK, s3xml.LocationConstraint{Region: region})
}

// getBucketVersioning serves GetBucketVersioning. A bucket that never had
// versioning configured has an empty configuration, as in S3.
func (h *Handler) getBucketVersioning(w http.ResponseWriter, r *http.Request, rq *request) error {
	b, err := h.objects.HeadBucket(r.Context(), rq.bucket)
	if err != nil {
		return err
	}
	out := s3xml.VersioningConfiguration{Status: b.Versioning}
	if b.Versioning != "" {
		out.MFADelete = "Disabled"
	}
	return writeXML(w, http.StatusOK, out)
}

// putBucketVersioning serves PutBucketVersioning.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_PutBucketVersioning.html
func (h *Handler) putBucketVersioning(w http.ResponseWriter, r *http.Request, rq *request) error {
	var cfg s3xml.VersioningConfiguration
	if err := s3xml.Decode(rq.body, rq.op.limit, &cfg); err != nil {
		return err
	}
	if err := h.objects.PutBucketVersioning(r.Context(), rq.bucket, cfg.Status, cfg.MFADelete); err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return nil
}
