// Package lifecycle is S3 bucket lifecycle: the rules a bucket's
// lifecycle configuration holds, how they are checked, when they fall due
// for a version or an upload, and the worker that applies them.
//
// # The model
//
// A Configuration is the rules as a client put them (rules.go):
// Validate checks them as S3 checks PutBucketLifecycleConfiguration and
// answers with S3's codes and messages; Encode and Decode are the
// document stored with the bucket (objects.ConfigLifecycle). Deciding is
// pure (eval.go): Expiry, NoncurrentExpiry, MarkerExpiry and AbortExpiry
// are functions of a configuration, what a version is (key, size, tags,
// times) and a Calendar, and return when the first rule that applies
// falls due and which rule it is. S3's calendar adds whole days and
// rounds up to the next midnight UTC; a Calendar with another Day length
// exists for tests only.
//
// # The S3 API
//
// A Store (store.go) reads and writes configurations through the object
// service and keeps them parsed, so that the x-amz-expiration header of a
// GET, HEAD or PUT costs evaluating the bucket's rules for one object and
// no metadata read.
//
// # The worker
//
// A Worker (worker.go) walks every bucket that has a configuration, in
// bounded batches, and removes what is due through the object service,
// which decides again under the keys' locks: a version that changed since
// the worker looked at it is left alone. See
// docs/design/0008-lifecycle.md.
package lifecycle
