package s3api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/objects"
	"github.com/coffer-s3/coffer/internal/s3xml"
)

// attributesQuery is a parsed GetObjectAttributes request.
type attributesQuery struct {
	in    objects.AttributesInput
	attrs map[string]bool // the attributes asked for
}

// objectAttributeNames are the attributes GetObjectAttributes knows. A
// read-only lookup table.
var objectAttributeNames = map[string]bool{"ETag": true, "Checksum": true, "ObjectParts": true, "StorageClass": true, "ObjectSize": true}

// parseObjectAttributes parses a GetObjectAttributes request: the
// attributes of x-amz-object-attributes (a comma-separated list, possibly
// in several header lines; required), x-amz-max-parts,
// x-amz-part-number-marker and versionId.
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAttributes.html
func parseObjectAttributes(h http.Header, q url.Values) (attributesQuery, error) {
	aq := attributesQuery{attrs: map[string]bool{}}
	for _, line := range h.Values("X-Amz-Object-Attributes") {
		for a := range strings.SplitSeq(line, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if !objectAttributeNames[a] {
				return attributesQuery{}, invalidArgument("x-amz-object-attributes", a, "Invalid attribute name specified.")
			}
			aq.attrs[a] = true
		}
	}
	if len(aq.attrs) == 0 {
		return attributesQuery{}, invalidArgument("x-amz-object-attributes", "",
			"The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty")
	}
	var err error
	if aq.in.VersionID, err = parseVersionID(q); err != nil {
		return attributesQuery{}, err
	}
	for _, p := range []struct {
		header string
		dst    *int
	}{{"X-Amz-Max-Parts", &aq.in.MaxParts}, {"X-Amz-Part-Number-Marker", &aq.in.PartNumberMarker}} {
		v := h.Get(p.header)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return attributesQuery{}, invalidArgument(strings.ToLower(p.header), v, "Argument "+strings.ToLower(p.header)+" must be an integer between 0 and 2147483647")
		}
		*p.dst = n
	}
	return aq, nil
}

// getObjectAttributes serves GetObjectAttributes. As in S3, the caller
// needs s3:GetObject (or s3:GetObjectVersion) besides
// s3:GetObjectAttributes.
func (h *Handler) getObjectAttributes(w http.ResponseWriter, r *http.Request, rq *request) error {
	aq, err := parseObjectAttributes(r.Header, rq.query)
	if err != nil {
		return err
	}
	read := iam.GetObject
	if aq.in.VersionID != "" {
		read = iam.GetObjectVersion
	}
	if err := h.authorize(r, rq, read, rq.bucket, rq.key); err != nil {
		return err
	}
	oa, err := h.objects.ObjectAttributes(r.Context(), rq.bucket, rq.key, aq.in)
	if err != nil {
		return err
	}
	info := &oa.Info
	hdr := w.Header()
	hdr.Set("Last-Modified", info.LastModified.UTC().Format(http.TimeFormat))
	if info.VersionID != "" {
		hdr["x-amz-version-id"] = []string{info.VersionID}
	}
	var out s3xml.GetObjectAttributesResponse
	if aq.attrs["ETag"] {
		out.ETag = info.ETag
	}
	if aq.attrs["Checksum"] && info.Checksum.Algorithm != "" {
		out.Checksum = &s3xml.ObjectChecksum{Checksums: xmlChecksums(info.Checksum), ChecksumType: info.Checksum.Type}
	}
	if aq.attrs["ObjectParts"] && oa.PartsCount > 0 {
		page := &s3xml.ObjectPartsPage{
			IsTruncated: oa.IsTruncated, MaxParts: aq.in.MaxParts, PartNumberMarker: aq.in.PartNumberMarker,
			NextPartNumberMarker: oa.NextPartNumberMarker, PartsCount: oa.PartsCount,
		}
		if page.MaxParts <= 0 || page.MaxParts > 1000 {
			page.MaxParts = 1000
		}
		for _, p := range oa.Parts {
			page.Parts = append(page.Parts, s3xml.ObjectPart{Checksums: xmlChecksums(p.Checksum), PartNumber: p.Number, Size: p.Size})
		}
		out.ObjectParts = page
	}
	if aq.attrs["StorageClass"] {
		out.StorageClass = "STANDARD"
	}
	if aq.attrs["ObjectSize"] {
		out.ObjectSize = &info.Size
	}
	return writeXML(w, http.StatusOK, out)
}
