#!/usr/bin/env python3
"""boto3 smoke test against a Coffer server, run by clients_test.go.

Environment: AWS_ENDPOINT_URL (http:// or https://), AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION, COFFER_BUCKET (a fresh bucket
name), COFFER_WORKDIR (a scratch directory), COFFER_INSECURE=1 to accept a
self-signed certificate, or AWS_CA_BUNDLE to trust a test CA,
COFFER_SETTLE_SECONDS (default 0): how long a bucket configuration changed
through one node may take to reach the others (a cluster behind a
balancer); the script waits that long before relying on a change.

boto3 keeps its default checksum settings (request_checksum_calculation
"when_supported"): every upload carries a CRC32, sent as an aws-chunked
trailer over https and as a header over http.

Prints every check; exits non-zero if any failed or anything raised.
"""

import hashlib
import os
import sys
import time
import traceback
import warnings

import boto3
import botocore
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

MIB = 1024 * 1024


FAILURES = []


def check(cond, what):
    """Records a failed check and goes on, so one run reports them all."""
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
        return
    print("ok:", what, flush=True)


def settle():
    """Waits until a bucket configuration change applies on every node."""
    time.sleep(float(os.environ.get("COFFER_SETTLE_SECONDS", "0")))


def error_code(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200


def md5(b):
    return hashlib.md5(b).hexdigest()


def main():
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    bucket = os.environ["COFFER_BUCKET"]
    work = os.environ["COFFER_WORKDIR"]
    verify = os.environ.get("COFFER_INSECURE") != "1"
    if not verify:
        warnings.filterwarnings("ignore")
    elif os.environ.get("AWS_CA_BUNDLE"):
        verify = os.environ["AWS_CA_BUNDLE"]  # a path: boto3 and the helpers trust it
    print("boto3", boto3.__version__, "botocore", botocore.__version__, "endpoint", endpoint, flush=True)

    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        verify=verify,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"}),
    )

    s3.create_bucket(Bucket=bucket)
    check(bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]], "list_buckets shows the new bucket")
    code, status = error_code(s3.create_bucket, Bucket=bucket)
    check(code is None, "create_bucket of one's own bucket in us-east-1: 200, as S3 (%s %s)" % (code, status))

    # put_object with metadata; boto3 adds a CRC32 by default.
    body = b"hello from boto3\n" * 100
    r = s3.put_object(Bucket=bucket, Key="small.txt", Body=body, ContentType="text/plain", Metadata={"origin": "boto3"})
    check(r["ETag"] == '"%s"' % md5(body), "put_object ETag is the quoted MD5")
    g = s3.get_object(Bucket=bucket, Key="small.txt")
    check(g["Body"].read() == body, "get_object returns the body")
    # Header names are case-insensitive; a proxy may canonicalize them.
    meta = {k.lower(): v for k, v in g["Metadata"].items()}
    check(g["ContentType"] == "text/plain" and meta == {"origin": "boto3"} and "ContentEncoding" not in g,
          "get_object returns type and metadata: %r %r, Content-Encoding %r" % (g["ContentType"], g["Metadata"], g.get("ContentEncoding")))

    # upload_file of 20 MiB through the transfer manager: multipart with
    # 5 MiB parts.
    src = os.path.join(work, "big.bin")
    data = os.urandom(20 * MIB + 12345)
    with open(src, "wb") as f:
        f.write(data)
    tc = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB, max_concurrency=4)
    s3.upload_file(src, bucket, "dir/big.bin", Config=tc)
    h = s3.head_object(Bucket=bucket, Key="dir/big.bin")
    check(h["ContentLength"] == len(data), "head_object size of the multipart upload")
    check(h["ETag"].endswith('-5"'), "multipart ETag has 5 parts: %s" % h["ETag"])
    parts = [data[i:i + 5 * MIB] for i in range(0, len(data), 5 * MIB)]
    want = hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts)).hexdigest() + "-%d" % len(parts)
    check(h["ETag"] == '"%s"' % want, "multipart ETag is the MD5 of the part MD5s")
    dst = os.path.join(work, "big.down")
    s3.download_file(bucket, "dir/big.bin", dst, Config=tc)
    with open(dst, "rb") as f:
        check(f.read() == data, "download_file returns the uploaded bytes")

    # Ranged get.
    g = s3.get_object(Bucket=bucket, Key="dir/big.bin", Range="bytes=5242870-5242889")
    check(g["Body"].read() == data[5242870:5242890], "get_object Range across a part boundary")
    check(g["ContentRange"] == "bytes 5242870-5242889/%d" % len(data), "Content-Range %s" % g["ContentRange"])

    # Checksums: head_object with ChecksumMode returns what boto3 sent.
    r = s3.put_object(Bucket=bucket, Key="ck.bin", Body=data[:3 * MIB], ChecksumAlgorithm="SHA256")
    h = s3.head_object(Bucket=bucket, Key="ck.bin", ChecksumMode="ENABLED")
    import base64
    sha = base64.b64encode(hashlib.sha256(data[:3 * MIB]).digest()).decode()
    check(h.get("ChecksumSHA256") == sha, "head_object ChecksumSHA256 %s, want %s" % (h.get("ChecksumSHA256"), sha))
    h = s3.head_object(Bucket=bucket, Key="small.txt", ChecksumMode="ENABLED")
    check("ChecksumCRC32" in h, "head_object returns the default CRC32 boto3 sent: %s" % sorted(k for k in h if k.startswith("Checksum")))
    g = s3.get_object(Bucket=bucket, Key="ck.bin", ChecksumMode="ENABLED")
    check(g["Body"].read() == data[:3 * MIB], "get_object with ChecksumMode validates and returns the body")

    # The newer algorithms botocore computes: SHA512 in pure Python, the
    # xxHashes only with the AWS CRT (awscrt >= 0.31.2; skipped without).
    from botocore import httpchecksum
    newer = [("SHA512", lambda b: hashlib.sha512(b).digest())]
    if "xxhash64" in httpchecksum._CHECKSUM_CLS:
        from awscrt import checksums as crt
        def xx(new):
            def digest(b):
                h = new()
                h.update(b)
                return h.finalize()
            return digest
        newer += [("XXHASH64", xx(crt.XXHash.new_xxhash64)), ("XXHASH3", xx(crt.XXHash.new_xxhash3_64)),
                  ("XXHASH128", xx(crt.XXHash.new_xxhash3_128))]
    else:
        print("skip: botocore has no xxHash without the AWS CRT", flush=True)
    for alg, digest in newer:
        ck_body = data[:MIB + 17]
        want = base64.b64encode(digest(ck_body)).decode()
        r = s3.put_object(Bucket=bucket, Key="ck-new.bin", Body=ck_body, ChecksumAlgorithm=alg)
        check(r.get("Checksum" + alg) == want, "put_object %s answers %s, want %s" % (alg, r.get("Checksum" + alg), want))
        h = s3.head_object(Bucket=bucket, Key="ck-new.bin", ChecksumMode="ENABLED")
        check(h.get("Checksum" + alg) == want and h.get("ChecksumType") == "FULL_OBJECT",
              "head_object Checksum%s %s type %s, want %s FULL_OBJECT" % (alg, h.get("Checksum" + alg), h.get("ChecksumType"), want))
        g = s3.get_object(Bucket=bucket, Key="ck-new.bin", ChecksumMode="ENABLED")
        check(g["Body"].read() == ck_body, "get_object with ChecksumMode %s validates and returns the body" % alg)

    # Listing with the paginator.
    for i in range(25):
        s3.put_object(Bucket=bucket, Key="list/%03d" % i, Body=b"%d" % i)
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="list/", PaginationConfig={"PageSize": 7}):
        check(page["KeyCount"] == len(page.get("Contents", [])), "page KeyCount %d" % page["KeyCount"])
        keys += [o["Key"] for o in page.get("Contents", [])]
    check(keys == ["list/%03d" % i for i in range(25)], "list_objects_v2 paginator returns all 25 keys in order")
    pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Delimiter="/"))
    prefixes = [p["Prefix"] for page in pages for p in page.get("CommonPrefixes", [])]
    check(prefixes == ["dir/", "list/"], "common prefixes %s" % prefixes)

    # copy_object.
    s3.copy_object(Bucket=bucket, Key="copy.txt", CopySource={"Bucket": bucket, "Key": "small.txt"})
    check(s3.get_object(Bucket=bucket, Key="copy.txt")["Body"].read() == body, "copy_object copies the body")
    s3.copy_object(Bucket=bucket, Key="copy big.bin", CopySource={"Bucket": bucket, "Key": "dir/big.bin"})
    check(s3.head_object(Bucket=bucket, Key="copy big.bin")["ContentLength"] == len(data), "copy_object of the multipart object")

    # Errors.
    code, status = error_code(s3.get_object, Bucket=bucket, Key="no-such-key")
    check(code == "NoSuchKey" and status == 404, "get_object of a missing key: NoSuchKey 404 (%s %s)" % (code, status))
    code, status = error_code(s3.head_object, Bucket=bucket, Key="no-such-key")
    check(status == 404, "head_object of a missing key: 404 (%s %s)" % (code, status))
    code, status = error_code(s3.get_object, Bucket=bucket + "-missing", Key="k")
    check(code == "NoSuchBucket" and status == 404, "get_object of a missing bucket: NoSuchBucket (%s %s)" % (code, status))
    code, status = error_code(s3.delete_bucket, Bucket=bucket)
    check(code == "BucketNotEmpty" and status == 409, "delete_bucket of a full bucket: BucketNotEmpty (%s %s)" % (code, status))
    code, status = error_code(s3.put_object, Bucket=bucket, Key="cond", Body=b"x", IfNoneMatch="*")
    check(code is None, "put_object IfNoneMatch=* of a new key")
    code, status = error_code(s3.put_object, Bucket=bucket, Key="cond", Body=b"y", IfNoneMatch="*")
    check(code == "PreconditionFailed" and status == 412, "put_object IfNoneMatch=* of an existing key: 412 (%s %s)" % (code, status))

    # Presigned GET with a SigV4 signer.
    s3v4 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        verify=verify,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    url = s3v4.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "small.txt"}, ExpiresIn=300)
    check(fetch(url, verify) == (200, body), "SigV4 presigned GET returns the body")

    # Tagging: on put, in place, and the count on HEAD.
    s3.put_object(Bucket=bucket, Key="tagged", Body=b"t", Tagging="project=blue&tier")
    tags = s3.get_object_tagging(Bucket=bucket, Key="tagged")["TagSet"]
    check(tags == [{"Key": "project", "Value": "blue"}, {"Key": "tier", "Value": ""}], "get_object_tagging after put_object Tagging=: %r" % tags)
    s3.put_object_tagging(Bucket=bucket, Key="tagged", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
    h = s3.head_object(Bucket=bucket, Key="tagged")
    check(h["ResponseMetadata"]["HTTPHeaders"].get("x-amz-tagging-count") == "1", "head_object x-amz-tagging-count after put_object_tagging")
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "team", "Value": "storage"}]})
    check(s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "team", "Value": "storage"}], "get_bucket_tagging")

    # Versioning, in a bucket of its own: versions, a delete marker, and
    # emptying the bucket by versions as tools do before deleting it
    # (bucket.object_versions.delete(): ListObjectVersions, then
    # DeleteObjects with version IDs).
    vb = bucket + "-v"
    s3.create_bucket(Bucket=vb)
    s3.put_object(Bucket=vb, Key="plain", Body=b"before versioning")
    s3.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=vb, Key="versioned", Body=b"v1")["VersionId"]
    v2 = s3.put_object(Bucket=vb, Key="versioned", Body=b"v2")["VersionId"]
    d = s3.delete_object(Bucket=vb, Key="versioned")
    check(d.get("DeleteMarker") is True and d.get("VersionId") not in (None, v1, v2), "delete_object on a versioned bucket writes a delete marker")
    got = s3.get_object(Bucket=vb, Key="versioned", VersionId=v1)["Body"].read()
    check(got == b"v1", "get_object of version 1 under a delete marker")
    lv = s3.list_object_versions(Bucket=vb, Prefix="versioned")
    check([v["VersionId"] for v in lv.get("Versions", [])] == [v2, v1] and len(lv.get("DeleteMarkers", [])) == 1,
          "list_object_versions: two versions and a marker: %r" % lv.get("Versions"))
    boto3.resource("s3", endpoint_url=endpoint, verify=verify,
                   config=Config(s3={"addressing_style": "path"})).Bucket(vb).object_versions.delete()
    lv = s3.list_object_versions(Bucket=vb)
    check(not lv.get("Versions") and not lv.get("DeleteMarkers"), "object_versions.delete() removed every version")
    s3.delete_bucket(Bucket=vb)

    # CORS: botocore sends the checksum PutBucketCors requires.
    code, status = error_code(s3.get_bucket_cors, Bucket=bucket)
    check((code, status) == ("NoSuchCORSConfiguration", 404), "get_bucket_cors without one: %s %s" % (code, status))
    rules = [{"ID": "app", "AllowedOrigins": ["https://app.example.com"], "AllowedMethods": ["GET", "PUT"],
              "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 600}]
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": rules})
    check(s3.get_bucket_cors(Bucket=bucket)["CORSRules"] == rules, "get_bucket_cors returns the rules put")
    code, status = error_code(s3.put_bucket_cors, Bucket=bucket,
                              CORSConfiguration={"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]})
    check((code, status) == ("InvalidRequest", 400), "put_bucket_cors with PATCH: %s %s" % (code, status))
    s3.delete_bucket_cors(Bucket=bucket)
    code, status = error_code(s3.get_bucket_cors, Bucket=bucket)
    check(status == 404, "get_bucket_cors after delete_bucket_cors: %s %s" % (code, status))
    # Lifecycle configuration: none yet, put (boto3 sends a checksum, which
    # the operation requires), read back as given (an ID made for the rule
    # without one), x-amz-expiration on PUT and HEAD, refusals as S3's,
    # delete.
    code, status = error_code(s3.get_bucket_lifecycle_configuration, Bucket=bucket)
    check((code, status) == ("NoSuchLifecycleConfiguration", 404), "get_bucket_lifecycle_configuration without one: 404 (%s %s)" % (code, status))
    rules = [
        {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 30},
         "NoncurrentVersionExpiration": {"NoncurrentDays": 7, "NewerNoncurrentVersions": 2}},
        {"ID": "tmp", "Filter": {"And": {"Prefix": "tmp/", "Tags": [{"Key": "t", "Value": "1"}], "ObjectSizeGreaterThan": 0}},
         "Status": "Disabled", "Expiration": {"Days": 1}},
        {"Filter": {}, "Status": "Enabled", "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 3}},
    ]
    r = s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": rules})
    check(r["ResponseMetadata"]["HTTPStatusCode"] == 200, "put_bucket_lifecycle_configuration")
    settle()
    got = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    check(got[:2] == rules[:2], "get_bucket_lifecycle_configuration returns the rules as put: %r" % got)
    check(len(got) == 3 and len(got[2].get("ID", "")) > 0 and got[2]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 3},
          "a rule put without an ID gets one: %r" % got[2:])
    p = s3.put_object(Bucket=bucket, Key="logs/today", Body=b"log line")
    check('rule-id="logs"' in p.get("Expiration", ""), "put_object reports the expiration: %r" % p.get("Expiration"))
    h = s3.head_object(Bucket=bucket, Key="logs/today")
    check(h.get("Expiration") == p.get("Expiration"), "head_object reports the same expiration: %r" % h.get("Expiration"))
    check("Expiration" not in s3.head_object(Bucket=bucket, Key="small.txt"), "no expiration for a key no rule selects")
    code, status = error_code(s3.put_bucket_lifecycle_configuration, Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "x", "Prefix": "a/", "Status": "enabled", "Expiration": {"Days": 1}}]})
    check((code, status) == ("MalformedXML", 400), "a lower-case status is MalformedXML (%s %s)" % (code, status))
    code, status = error_code(s3.put_bucket_lifecycle_configuration, Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "x", "Prefix": "a/", "Status": "Enabled", "Expiration": {"Days": 0}}]})
    check((code, status) == ("InvalidArgument", 400), "Days 0 is InvalidArgument (%s %s)" % (code, status))
    code, status = error_code(s3.put_bucket_lifecycle_configuration, Bucket=bucket, LifecycleConfiguration={"Rules": [
        {"ID": "x", "Filter": {}, "Status": "Enabled", "Transitions": [{"Days": 30, "StorageClass": "GLACIER"}]}]})
    check((code, status) == ("NotImplemented", 501), "a transition is NotImplemented (%s %s)" % (code, status))
    check(s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"][:2] == rules[:2], "refused configurations changed nothing")
    r = s3.delete_bucket_lifecycle(Bucket=bucket)
    check(r["ResponseMetadata"]["HTTPStatusCode"] == 204, "delete_bucket_lifecycle: 204")
    settle()
    code, status = error_code(s3.get_bucket_lifecycle_configuration, Bucket=bucket)
    check(code == "NoSuchLifecycleConfiguration", "get_bucket_lifecycle_configuration after delete: %s" % code)
    check("Expiration" not in s3.head_object(Bucket=bucket, Key="logs/today"), "no expiration once the rules are gone")

    # A browser form upload: generate_presigned_post signs a policy; the
    # form goes out as multipart/form-data, as a browser sends it.
    post = s3.generate_presigned_post(
        bucket, "forms/${filename}",
        Fields={"Content-Type": "text/plain", "success_action_status": "201"},
        Conditions=[{"Content-Type": "text/plain"}, {"success_action_status": "201"}, ["content-length-range", 1, 1024]],
        ExpiresIn=300)
    status, got = post_form(post["url"], post["fields"], ("note.txt", b"sent from a form"), verify)
    check(status == 201 and b"<Key>forms/note.txt</Key>" in got, "presigned POST upload: 201 with a PostResponse (%d %r)" % (status, got[:300]))
    check(s3.get_object(Bucket=bucket, Key="forms/note.txt")["Body"].read() == b"sent from a form", "the form's file is stored")
    status, got = post_form(post["url"], post["fields"], ("big.txt", b"x" * 2000), verify)
    check(status == 400 and b"<Code>EntityTooLarge</Code>" in got, "a form file past content-length-range: EntityTooLarge (%d)" % status)
    code, status = error_code(s3.head_object, Bucket=bucket, Key="forms/big.txt")
    check(status == 404, "the refused form upload stored nothing (%s %s)" % (code, status))

    # delete_objects, then the bucket.
    all_keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        all_keys += [o["Key"] for o in page.get("Contents", [])]
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in all_keys]})
    check(len(r.get("Deleted", [])) == len(all_keys) and not r.get("Errors"), "delete_objects deleted all %d keys" % len(all_keys))
    check(s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0, "bucket is empty")
    s3.delete_bucket(Bucket=bucket)
    code, status = error_code(s3.head_bucket, Bucket=bucket)
    check(status == 404, "head_bucket after delete_bucket: 404 (%s %s)" % (code, status))

    # Last, so that its failure hides nothing else: a presigned URL made
    # with boto3's defaults, which sign S3 presigned URLs with SigV2 query
    # parameters.
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="presigned", Body=body)
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "presigned"}, ExpiresIn=300)
    status, got = fetch(url, verify)
    s3.delete_object(Bucket=bucket, Key="presigned")
    s3.delete_bucket(Bucket=bucket)
    kind = "SigV4" if "X-Amz-Signature=" in url else "SigV2"
    check(status == 200 and got == body, "default (%s) presigned GET returns the body: %d %r" % (kind, status, got[:300]))
    if not FAILURES:
        print("PASS", flush=True)


def post_form(url, fields, file, verify):
    """POSTs a multipart/form-data form (fields, then the file as a
    (name, bytes) pair) and returns (status, body)."""
    import urllib3
    http = urllib3.PoolManager(cert_reqs="CERT_REQUIRED" if verify else "CERT_NONE",
                               ca_certs=verify if isinstance(verify, str) else None)
    r = http.request("POST", url, fields=list(fields.items()) + [("file", file)], redirect=False)
    return r.status, r.data


def fetch(url, verify):
    """GETs url and returns (status, body)."""
    import ssl
    import urllib.error
    import urllib.request
    if isinstance(verify, str):
        ctx = ssl.create_default_context(cafile=verify)
    else:
        ctx = None if verify else ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(url, context=ctx) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    if FAILURES:
        print("%d check(s) failed:" % len(FAILURES), *FAILURES, sep="\n  ", flush=True)
        sys.exit(1)
