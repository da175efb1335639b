package s3api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// versionsQuery is a parsed ListObjectVersions query.
type versionsQuery struct {
	in        objects.ListVersionsInput
	encodeURL bool
}

// parseListVersions parses the query of ListObjectVersions; maxKeys is the
// default and the cap of max-keys.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html
func parseListVersions(q url.Values, maxKeys int) (versionsQuery, error) {
	var vq versionsQuery
	var err error
	if err := checkUTF8(q, "prefix", "delimiter", "key-marker"); err != nil {
		return versionsQuery{}, err
	}
	vq.in.Prefix = q.Get("prefix")
	vq.in.Delimiter = q.Get("delimiter")
	vq.in.KeyMarker = q.Get("key-marker")
	if vs, ok := q["version-id-marker"]; ok {
		vq.in.VersionIDMarker = strings.Join(vs, "")
	}
	if vq.in.MaxKeys, err = parseMax(q, "max-keys", maxKeys, "Provided max-keys not an integer or within integer range"); err != nil {
		return versionsQuery{}, err
	}
	if vq.encodeURL, err = parseEncodingType(q); err != nil {
		return versionsQuery{}, err
	}
	return vq, nil
}

// listObjectVersions serves ListObjectVersions. It works on every bucket:
// in one that was never versioned, each object is its null version. Each
// version's Owner is its owner (pageOwners), a delete marker's the
// bucket's owner (Coffer records no deleter).
func (h *Handler) listObjectVersions(w http.ResponseWriter, r *http.Request, rq *request) error {
	vq, err := parseListVersions(rq.query, h.cfg.MaxKeys)
	if err != nil {
		return err
	}
	vq.in.Owners = true // every version has an Owner
	res, err := h.objects.ListObjectVersions(r.Context(), rq.bucket, vq.in)
	if err != nil {
		return err
	}
	enc := encoder(vq.encodeURL)
	owners := h.pageOwners(rq)
	out := s3xml.ListVersionsResult{
		Name:                rq.bucket,
		Prefix:              enc(vq.in.Prefix),
		KeyMarker:           enc(vq.in.KeyMarker),
		VersionIDMarker:     vq.in.VersionIDMarker,
		NextKeyMarker:       enc(res.NextKeyMarker),
		NextVersionIDMarker: res.NextVersionIDMarker,
		MaxKeys:             vq.in.MaxKeys,
		Delimiter:           enc(vq.in.Delimiter),
		IsTruncated:         res.IsTruncated,
		CommonPrefixes:      commonPrefixes(res.CommonPrefixes, enc),
	}
	if vq.encodeURL {
		out.EncodingType = "url"
	}
	for _, v := range res.Versions {
		var x s3xml.ObjectVersion
		if v.DeleteMarker {
			x = s3xml.NewDeleteMarker(enc(v.Key), v.VersionID, v.IsLatest, s3xml.Time(v.LastModified))
		} else {
			x = s3xml.NewVersion(enc(v.Key), v.VersionID, v.IsLatest, s3xml.Time(v.LastModified), quoteETag(v.ETag), v.Size)
			x.ChecksumAlgorithm, x.ChecksumType = string(v.Checksum.Algorithm), checksumType(v.Checksum)
		}
		if x.Owner, err = owners.of(r.Context(), v.Owner); err != nil {
			return fmt.Errorf("owner of %s/%s version %s: %w", rq.bucket, v.Key, v.VersionID, err)
		}
		out.Versions = append(out.Versions, x)
	}
	return writeXML(w, http.StatusOK, out)
}
