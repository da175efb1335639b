package s3xml

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"github.com/coffer-s3/coffer/internal/s3err"
)

// xsiNamespace is the XML Schema instance namespace of the xsi:type
// attribute on <Grantee>.
const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// Grantee types, the values of xsi:type on <Grantee>.
const (
	GranteeCanonicalUser = "CanonicalUser"
	GranteeByEmail       = "AmazonCustomerByEmail"
	GranteeGroup         = "Group"
)

// ACL permissions, the values of <Permission>.
const (
	PermissionFullControl = "FULL_CONTROL"
	PermissionRead        = "READ"
	PermissionWrite       = "WRITE"
	PermissionReadACP     = "READ_ACP"
	PermissionWriteACP    = "WRITE_ACP"
)

// AccessControlPolicy is the GetObjectAcl and GetBucketAcl response and the
// PutObjectAcl and PutBucketAcl body. Its grants are written inside one
// <AccessControlList>, which is omitted when there are none. See
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObjectAcl.html
type AccessControlPolicy struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ AccessControlPolicy"`
	Owner   Owner    `xml:"Owner"`
	Grants  []Grant  `xml:"AccessControlList>Grant"`
}

// OwnerFullControl returns the policy S3 reports for a private bucket or
// object: owner owns it and has FULL_CONTROL.
func OwnerFullControl(owner Owner) AccessControlPolicy {
	return AccessControlPolicy{
		Owner: owner,
		Grants: []Grant{{
			Grantee: Grantee{
				Type:        GranteeCanonicalUser,
				ID:          owner.ID,
				DisplayName: owner.DisplayName,
			},
			Permission: PermissionFullControl,
		}},
	}
}

// Grant gives one permission to one grantee.
type Grant struct {
	Grantee    Grantee `xml:"Grantee"`
	Permission string  `xml:"Permission"`
}

// Grantee is who a Grant is for. Type is its xsi:type: a CanonicalUser has
// an ID (and optionally a DisplayName), an AmazonCustomerByEmail an
// EmailAddress and a Group a URI.
//
// It is written as S3 writes it,
//
//	<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">
//
// with the namespace declared on the element itself: aws-sdk-go-v2 reads
// xsi:type only when its prefix is declared there.
type Grantee struct {
	Type         string
	ID           string
	DisplayName  string
	EmailAddress string
	URI          string
}

// granteeBody is the content of <Grantee>, in S3's order.
type granteeBody struct {
	ID           string `xml:"ID,omitempty"`
	DisplayName  string `xml:"DisplayName,omitempty"`
	EmailAddress string `xml:"EmailAddress,omitempty"`
	URI          string `xml:"URI,omitempty"`
}

// MarshalXML implements xml.Marshaler.
func (g Grantee) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	// encoding/xml would invent its own prefix for a namespaced attribute,
	// so the prefixed names are written literally.
	start.Attr = append(start.Attr,
		xml.Attr{Name: xml.Name{Local: "xmlns:xsi"}, Value: xsiNamespace},
		xml.Attr{Name: xml.Name{Local: "xsi:type"}, Value: g.Type},
	)
	body := granteeBody{ID: g.ID, DisplayName: g.DisplayName, EmailAddress: g.EmailAddress, URI: g.URI}
	return e.EncodeElement(body, start)
}

// UnmarshalXML implements xml.Unmarshaler. It takes the type from an
// xsi:type attribute whether or not the client declared the xsi prefix.
func (g *Grantee) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var body granteeBody
	if err := d.DecodeElement(&body, &start); err != nil {
		return err
	}
	*g = Grantee{ID: body.ID, DisplayName: body.DisplayName, EmailAddress: body.EmailAddress, URI: body.URI}
	for _, a := range start.Attr {
		if a.Name.Local == "type" && (a.Name.Space == xsiNamespace || a.Name.Space == "xsi") {
			g.Type = a.Value
		}
	}
	return nil
}

// DecodeAccessControlPolicy decodes a PutObjectAcl or PutBucketAcl body of
// at most limit bytes. S3 answers MalformedACLError for an ACL body that
// is not well-formed or does not validate, so the MalformedXML of Decode
// becomes MalformedACLError here, as do a grant without a known grantee
// type, without the identifier its type needs, or with an unknown
// permission. Whether Owner is the resource's owner, and whether the
// grantees exist, is the caller's to check.
func DecodeAccessControlPolicy(r io.Reader, limit int64) (AccessControlPolicy, error) {
	var p AccessControlPolicy
	if err := Decode(r, limit, &p); err != nil {
		if e, ok := errors.AsType[*s3err.Error](err); ok && e.Code == s3err.MalformedXML {
			err = s3err.Wrap(s3err.MalformedACLError, "", e.Err)
		}
		return AccessControlPolicy{}, err
	}
	for i, g := range p.Grants {
		if err := validGrant(g); err != nil {
			return AccessControlPolicy{}, s3err.Wrap(s3err.MalformedACLError, "",
				fmt.Errorf("grant %d: %w", i+1, err))
		}
	}
	return p, nil
}

// validGrant checks a grant's grantee and permission against S3's schema.
func validGrant(g Grant) error {
	switch g.Permission {
	case PermissionFullControl, PermissionRead, PermissionWrite, PermissionReadACP, PermissionWriteACP:
	default:
		return fmt.Errorf("unknown permission %q", g.Permission)
	}
	var id string
	switch g.Grantee.Type {
	case GranteeCanonicalUser:
		id = g.Grantee.ID
	case GranteeByEmail:
		id = g.Grantee.EmailAddress
	case GranteeGroup:
		id = g.Grantee.URI
	default:
		return fmt.Errorf("unknown grantee type %q", g.Grantee.Type)
	}
	if id == "" {
		return fmt.Errorf("%s grantee without its identifier", g.Grantee.Type)
	}
	return nil
}
