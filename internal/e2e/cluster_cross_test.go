package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/iam"
)

// testClusterMultipart starts uploads on node 0, sends their parts to
// nodes 1 and 2, and completes, lists and aborts them on others: an upload
// is the cluster's, not a node's.
func testClusterMultipart(t *testing.T, cl *cluster) {
	n0, n1, n2 := cl.nodeClient(t, 0), cl.nodeClient(t, 1), cl.nodeClient(t, 2)
	b := mkBucket(t, n0, "mpx")
	p1, p2 := randBytes(5*mib), randBytes(300*kib)

	u := createUpload(t, n0, b, "mp")
	on := func(c *s3.Client) *upload { return &upload{t: t, c: c, bucket: u.bucket, key: u.key, id: u.id} }
	cp1 := on(n1).part(1, p1)
	cp2 := on(n2).part(2, p2)
	lp, err := n0.ListParts(t.Context(), &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String("mp"), UploadId: aws.String(u.id)})
	if err != nil {
		t.Fatalf("ListParts through node 0: %v", err)
	}
	if len(lp.Parts) != 2 {
		t.Errorf("ListParts through node 0 lists %d parts, want the 2 uploaded through nodes 1 and 2", len(lp.Parts))
	}
	out, err := on(n2).complete(cp1, cp2)
	if err != nil {
		t.Fatalf("CompleteMultipartUpload through node 2: %v", err)
	}
	if got, want := aws.ToString(out.ETag), quoted(multipartETag(p1, p2)); got != want {
		t.Errorf("Complete ETag %s, want %s", got, want)
	}
	checkOnEveryNode(t, cl, b, "mp", append(append([]byte{}, p1...), p2...))

	// A retried Complete (its response lost) through another node gets the
	// same answer, as from S3; with other parts the upload is gone.
	if again, err := on(n1).complete(cp1, cp2); err != nil {
		t.Errorf("retried Complete through node 1: %v", err)
	} else if aws.ToString(again.ETag) != aws.ToString(out.ETag) {
		t.Errorf("retried Complete through node 1: ETag %s, want the first answer's %s", aws.ToString(again.ETag), aws.ToString(out.ETag))
	}
	_, err = on(n0).complete(cp1)
	wantErr(t, "Complete with other parts through node 0 after the upload completed", err, "NoSuchUpload", 404)

	// Abort on another node than the one that started it.
	u2 := createUpload(t, n1, b, "aborted")
	on2 := func(c *s3.Client) *upload { return &upload{t: t, c: c, bucket: u2.bucket, key: u2.key, id: u2.id} }
	on2(n2).part(1, randBytes(200*kib))
	if err := on2(n0).abort(); err != nil {
		t.Fatalf("AbortMultipartUpload through node 0: %v", err)
	}
	if uploads := listUploads(t, n2, b); len(uploads) != 0 {
		t.Errorf("node 2 still lists %d uploads after the abort through node 0", len(uploads))
	}
	_, err = n1.UploadPart(t.Context(), &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("aborted"), UploadId: aws.String(u2.id),
		PartNumber: aws.Int32(2), Body: bytes.NewReader([]byte("late"))})
	wantErr(t, "UploadPart through node 1 after the abort", err, "NoSuchUpload", 404)
}

// testClusterConditionalRace starts writers on every node at once, each
// with a body of its own: with If-None-Match: * on an absent key, and with
// If-Match on the key's ETag, exactly one of them wins and the others get
// 412 PreconditionFailed, and every node then returns the winner's bytes.
func testClusterConditionalRace(t *testing.T, cl *cluster) {
	const writers = 12 // four per node
	clients := make([]*s3.Client, len(cl.nodes))
	for i := range clients {
		clients[i] = cl.nodeClient(t, i)
	}
	b := mkBucket(t, clients[0], "race")

	race := func(t *testing.T, key string, size int, cond func(*s3.PutObjectInput)) {
		t.Helper()
		var (
			start  = make(chan struct{})
			wg     sync.WaitGroup
			mu     sync.Mutex // guards the rest
			wins   []int
			lost   int
			winner []byte
		)
		for i := range writers {
			body := randBytes(size)
			in := &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(body)}
			cond(in)
			c := clients[i%len(clients)]
			wg.Go(func() {
				<-start
				out, err := c.PutObject(t.Context(), in)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins = append(wins, i%len(clients))
					winner = body
					if aws.ToString(out.ETag) != quoted(md5Hex(body)) {
						t.Errorf("winner's ETag %s is not its body's", aws.ToString(out.ETag))
					}
				case errCode(err) == "PreconditionFailed" && errStatus(err) == 412:
					lost++
				default:
					t.Errorf("PutObject %s through node %d: %v, want success or 412 PreconditionFailed", key, i%len(clients), err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(wins) != 1 || lost != writers-1 {
			t.Fatalf("%s: %d writers won (through nodes %v) and %d got 412, want 1 and %d", key, len(wins), wins, lost, writers-1)
		}
		checkOnEveryNode(t, cl, b, key, winner)
	}
	for round, size := range []int{100, 200 * kib, 1*mib + 1} {
		key := fmt.Sprintf("inm-%d", round)
		t.Run(fmt.Sprintf("IfNoneMatch/%d", size), func(t *testing.T) {
			race(t, key, size, func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
		})
		t.Run(fmt.Sprintf("IfMatch/%d", size), func(t *testing.T) {
			etag := put(t, clients[round%len(clients)], b, key+"-im", randBytes(size)).ETag
			race(t, key+"-im", size, func(in *s3.PutObjectInput) { in.IfMatch = etag })
		})
	}
}

// testClusterIAM changes IAM through node 0 and measures how long node 2
// takes to enforce it: a policy attached to a new user, a policy detached,
// a key deleted. Each must take effect within a second.
func testClusterIAM(t *testing.T, cl *cluster) {
	const within = time.Second
	ctx := t.Context()
	a := cl.admin(t, 0)
	root := cl.nodeClient(t, 0)
	mine, other := mkBucket(t, root, "iam-mine"), mkBucket(t, root, "iam-other")
	put(t, root, other, "x", []byte("not yours"))
	user := "cluster-user"
	created, err := a.CreateUser(ctx, user)
	if err != nil {
		t.Fatalf("CreateUser through node 0: %v", err)
	}
	userCreated := time.Now()
	doc := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::` + mine + `/*"}]}`
	if err := a.PutPolicy(ctx, "cluster-rw", []byte(doc)); err != nil {
		t.Fatalf("PutPolicy through node 0: %v", err)
	}
	as := func(i int, k adminapi.CreateUserResponse) *s3.Client {
		return cl.nodeClient(t, i, func(o *s3.Options) {
			o.Credentials = credentials.NewStaticCredentialsProvider(k.AccessKey, k.SecretKey, "")
		})
	}
	onC := as(2, created)
	putMine := func() error {
		_, err := onC.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(mine), Key: aws.String("k"), Body: strings.NewReader("hi")})
		return err
	}
	// wait polls (node 2, unless try says otherwise) until cond holds for
	// what try returns, for at most a second from since, and fails the
	// test if it does not.
	wait := func(what string, since time.Time, try func() error, cond func(error) bool) {
		t.Helper()
		var err error
		for {
			if err = try(); cond(err) {
				t.Logf("%s through node 0: enforced after %v", what, time.Since(since).Round(100*time.Microsecond))
				return
			}
			if time.Since(since) > within {
				t.Fatalf("%s through node 0: still answered %v after %v", what, err, within)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	isCode := func(code string) func(error) bool { return func(err error) bool { return errCode(err) == code } }

	// The new user's key is known on node 2, and allowed nothing yet.
	wait("user created", userCreated, putMine, isCode("AccessDenied"))
	if err := a.AttachPolicy(ctx, "cluster-rw", iam.Target{User: user}); err != nil {
		t.Fatalf("AttachPolicy through node 0: %v", err)
	}
	wait("policy attached", time.Now(), putMine, isCode(""))
	_, err = onC.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(other), Key: aws.String("x")})
	check(t, "GetObject outside the policy through node 2", err, "AccessDenied")

	key2, err := a.CreateKey(ctx, adminapi.CreateKeyRequest{User: user})
	if err != nil {
		t.Fatalf("CreateKey through node 0: %v", err)
	}
	k2 := adminapi.CreateUserResponse{User: user, AccessKey: key2.AccessKey, SecretKey: key2.SecretKey}
	getWith := func(c *s3.Client) func() error {
		return func() error {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(mine), Key: aws.String("k")})
			if err == nil {
				out.Body.Close()
			}
			return err
		}
	}
	wait("new key", time.Now(), getWith(as(2, k2)), isCode(""))

	if err := a.DetachPolicy(ctx, "cluster-rw", iam.Target{User: user}); err != nil {
		t.Fatalf("DetachPolicy through node 0: %v", err)
	}
	wait("policy detached", time.Now(), putMine, isCode("AccessDenied"))
	if err := a.AttachPolicy(ctx, "cluster-rw", iam.Target{User: user}); err != nil {
		t.Fatal(err)
	}
	wait("policy attached again", time.Now(), putMine, isCode(""))

	if err := a.DeleteKey(ctx, created.AccessKey); err != nil {
		t.Fatalf("DeleteKey through node 0: %v", err)
	}
	revoked := time.Now()
	wait("key deleted", revoked, putMine, isCode("InvalidAccessKeyId"))
	// Node 1 too, and the user's other key still works everywhere.
	wait("key deleted (checked on node 1)", revoked, func() error {
		_, err := as(1, created).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(mine), Key: aws.String("k"), Body: strings.NewReader("hi")})
		return err
	}, isCode("InvalidAccessKeyId"))
	for i := range cl.nodes {
		if err := getWith(as(i, k2))(); err != nil {
			t.Errorf("the user's other key through node %d: %v", i, err)
		}
	}
	if err := a.DisableKey(ctx, key2.AccessKey); err != nil {
		t.Fatalf("DisableKey through node 0: %v", err)
	}
	wait("key disabled", time.Now(), getWith(as(2, k2)), func(err error) bool { return errStatus(err) == 403 })
}

// testClusterDeleteBucketRace races DeleteBucket through node 0 against
// PUTs into the bucket through nodes 1 and 2, round after round. A bucket
// is deleted only when empty, and a PUT commits only into a bucket that
// exists, so either the delete wins — and no PUT is acknowledged, and the
// bucket recreated under the same name is empty — or a PUT does, and the
// delete fails with BucketNotEmpty and the acknowledged objects are there.
func testClusterDeleteBucketRace(t *testing.T, cl *cluster) {
	deleter := cl.nodeClient(t, 0)
	writers := []*s3.Client{cl.nodeClient(t, 1), cl.nodeClient(t, 2)}
	outcomes := map[bool]int{}
	for round := range 8 {
		b := mkBucket(t, deleter, "delrace")
		var (
			start   = make(chan struct{})
			wg      sync.WaitGroup
			mu      sync.Mutex // guards acked
			acked   []string
			deleted bool
		)
		for w := range 6 {
			c := writers[w%len(writers)]
			size := []int{100, 200 * kib}[w%2] // inline, and blocks
			wg.Go(func() {
				<-start
				for i := range 3 {
					key := fmt.Sprintf("w%d-%d", w, i)
					_, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(randBytes(size))})
					switch {
					case err == nil:
						mu.Lock()
						acked = append(acked, key)
						mu.Unlock()
					case errCode(err) != "NoSuchBucket":
						t.Errorf("round %d: PutObject %s: %v, want success or NoSuchBucket", round, key, err)
					}
				}
			})
		}
		wg.Go(func() {
			<-start
			for range 20 {
				_, err := deleter.DeleteBucket(t.Context(), &s3.DeleteBucketInput{Bucket: aws.String(b)})
				if err == nil {
					deleted = true
					return
				}
				if errCode(err) != "BucketNotEmpty" {
					t.Errorf("round %d: DeleteBucket: %v, want success or BucketNotEmpty", round, err)
					return
				}
			}
		})
		close(start)
		wg.Wait()
		outcomes[deleted]++
		if deleted {
			if len(acked) > 0 {
				t.Errorf("round %d: the bucket was deleted, yet %d PUTs into it were acknowledged: %v", round, len(acked), acked)
			}
			if _, err := deleter.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
				t.Fatal(err)
			}
			if keys := upstreamKeys(t, writers[0], b, ""); len(keys) != 0 {
				t.Errorf("round %d: the bucket recreated after its deletion holds %v", round, keys)
			}
			continue
		}
		for _, key := range acked {
			if _, err := writers[1].HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)}); err != nil {
				t.Errorf("round %d: acknowledged %s: %v", round, key, err)
			}
		}
	}
	t.Logf("the delete won %d rounds, a PUT %d", outcomes[true], outcomes[false])
}
