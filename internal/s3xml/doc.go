// Package s3xml is the XML wire layer of the S3 API: Go structs for the
// request and response bodies of the operations Coffer serves, a strict,
// size-limited decoder for request bodies and an encoder for responses and
// error documents.
//
// # Responses
//
// Every response type carries its root element name and S3's namespace,
// http://s3.amazonaws.com/doc/2006-03-01/, in its XMLName tag, so
// [Encode] writes the root as S3 does:
//
//	<?xml version="1.0" encoding="UTF-8"?>
//	<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">…
//
// Element order follows the examples in the Amazon S3 API Reference, and
// optional elements are omitted when S3 omits them; where that depends on
// the request (NextMarker only with a delimiter, ContinuationToken only when
// sent) the field is a string with omitempty and the caller leaves it empty.
// Timestamps are strings the caller formats with [Time]. Error documents
// ([EncodeError]) have no namespace, as S3's have none.
//
// Listings, the largest documents and the only ones on a hot path, are
// written by a hand-written encoder that produces the same bytes as
// encoding/xml about five times faster and without per-entry allocations;
// tests and a fuzz target hold the two to byte equality.
//
// Strings are escaped as encoding/xml escapes them, with one exception
// taken from S3: a character XML 1.0 cannot carry (U+0000–U+0008, U+000B,
// U+000C, U+000E–U+001F, U+FFFE, U+FFFF) is written as a hexadecimal
// character reference, &#x1; for U+0001, in the listings and in every
// [Text] field (keys, and prefixes and markers that echo keys). Object keys
// may hold such characters; S3 writes them this way, which a strict XML
// 1.0 parser refuses (the SDKs fail the call) but which names the key
// exactly, where encoding/xml's U+FFFD would name a key that does not
// exist. Clients that list such keys send encoding-type=url (boto3 and the
// aws CLI always do); [NeedsURLEncoding] tells whether a key is one of
// them. Invalid UTF-8, which keys cannot hold (writes refuse it), is
// written as U+FFFD. Tab, newline and carriage return are valid and
// round-trip as character references.
//
// # Requests
//
// [Decode] reads a body of at most a given number of bytes and decodes one
// document into a struct. It accepts the root element with or without S3's
// namespace (clients differ), rejects any other root, a DOCTYPE, trailing
// content and ill-formed XML as MalformedXML, a larger body as
// MaxMessageLengthExceeded and an empty one as MissingRequestBodyError
// ([DecodeOptional] treats an empty body as absent instead). Elements the
// structs do not name are ignored, as the AWS SDKs do, so newer clients
// sending newer elements still work; the exception is
// [DecodeCORSConfiguration], which is strict as S3 is about that document
// (an element it does not name, a value given twice or an empty number is
// MalformedXML). The typed decoders
// ([DecodeCompleteMultipartUpload], [DecodeDeleteObjects],
// [DecodeAccessControlPolicy], [DecodeCreateBucketConfiguration]) add the
// checks S3 makes on the document itself; checks that need state (part
// order, ETags, the bucket owner) belong to the caller.
//
// Errors are *s3err.Error values without a Resource: the caller knows the
// bucket or key and may set it. An error reading the body is returned
// wrapped, so an *s3err.Error from the reader (for example a signature
// mismatch in an aws-chunked stream) keeps its code.
package s3xml
