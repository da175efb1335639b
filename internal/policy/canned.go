package policy

import (
	"slices"
)

// cannedDocs are the built-in identity policies. All resources are
// "arn:aws:s3:::*", which also matches the resource-less
// s3:ListAllMyBuckets (see Context.Resource).
//
//   - readonly reads and lists: every bucket in ListBuckets, objects and
//     their versions, tags, ACLs, attributes, retention and legal hold,
//     in-progress multipart uploads, and the bucket settings that change
//     how reads behave (location, versioning, Object Lock, ACL, tags). It
//     cannot read bucket policies or change anything.
//   - writeonly uploads: PutObject (which covers CreateMultipartUpload,
//     UploadPart, UploadPartCopy and CompleteMultipartUpload), aborting
//     and listing the parts of its uploads, and GetBucketLocation, which
//     clients ask before writing. It cannot list or read objects.
//   - readwrite may do every s3 action, like AWS's AmazonS3FullAccess.
//   - admin may do every s3 action and every admin action.
var cannedDocs = map[string]string{
	"readonly": `{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Sid": "ReadOnly",
      "Effect": "Allow",
      "Action": [
        "s3:ListAllMyBuckets",
        "s3:ListBucket",
        "s3:ListBucketVersions",
        "s3:ListBucketMultipartUploads",
        "s3:ListMultipartUploadParts",
        "s3:GetBucketLocation",
        "s3:GetBucketVersioning",
        "s3:GetBucketObjectLockConfiguration",
        "s3:GetBucketAcl",
        "s3:GetBucketTagging",
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:GetObjectAttributes",
        "s3:GetObjectVersionAttributes",
        "s3:GetObjectTagging",
        "s3:GetObjectVersionTagging",
        "s3:GetObjectAcl",
        "s3:GetObjectVersionAcl",
        "s3:GetObjectRetention",
        "s3:GetObjectLegalHold"
      ],
      "Resource": "arn:aws:s3:::*"
    }
  ]
}
`,
	"writeonly": `{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Sid": "WriteOnly",
      "Effect": "Allow",
      "Action": [
        "s3:PutObject",
        "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts",
        "s3:GetBucketLocation"
      ],
      "Resource": "arn:aws:s3:::*"
    }
  ]
}
`,
	"readwrite": `{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Sid": "ReadWrite",
      "Effect": "Allow",
      "Action": "s3:*",
      "Resource": "arn:aws:s3:::*"
    }
  ]
}
`,
	"admin": `{
  "Version": "2012-10-17",
  "Statement": [
    {
      "Sid": "S3",
      "Effect": "Allow",
      "Action": "s3:*",
      "Resource": "arn:aws:s3:::*"
    },
    {
      "Sid": "Admin",
      "Effect": "Allow",
      "Action": "admin:*",
      "Resource": "*"
    }
  ]
}
`,
}

// canned holds the parsed canned policies; read-only after package
// initialization.
var canned = func() map[string]*Policy {
	m := make(map[string]*Policy, len(cannedDocs))
	for name, doc := range cannedDocs {
		p, err := ParseIdentity([]byte(doc))
		if err != nil {
			panic("policy: canned policy " + name + " does not parse: " + err.Error())
		}
		m[name] = p
	}
	return m
}()

// Canned returns the built-in identity policy called name: "readonly",
// "readwrite", "writeonly" or "admin".
func Canned(name string) (*Policy, bool) {
	p, ok := canned[name]
	return p, ok
}

// CannedNames returns the names of the built-in policies, sorted.
func CannedNames() []string {
	names := make([]string, 0, len(canned))
	for n := range canned {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
