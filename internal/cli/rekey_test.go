package cli

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestS3Rekey rekeys objects: in place (--force required), to another
// key and bucket, and in batch under a prefix, where a failure is
// reported and does not stop the others.
func TestS3Rekey(t *testing.T) {
	e := newS3Env(t)
	bob := e.keygen(t, "bob")
	e.keygen(t, "carol")
	e.srv.Bucket(t, "other-bucket")
	small := randomData(100000, 41)
	e.put(t, "small.c4gh", encryptBytes(t, small, e.sk))

	code, _, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-i", url("small.c4gh"), "-o", url("small.c4gh"))
	if code != exitUsage || !strings.Contains(stderr, "is the input") || !strings.Contains(stderr, "--force") {
		t.Errorf("in place without --force: exit %d\n%s", code, stderr)
	}
	e.must(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--trim", "--drop-self", "--force", "-i", url("small.c4gh"), "-o", url("small.c4gh"))
	sameBytes(t, "small, rekeyed in place", decryptBytes(t, e.get(t, "small.c4gh"), bob), small)

	e.must(t, "reencrypt", "--sk", "bob.sec", "--recipient_pk", "me.pub", "-i", url("small.c4gh"), "-o", "s3://other-bucket/copy.c4gh")
	code, _, stderr = e.run(t, "decrypt", "--sk", "me.sec", "-i", "s3://other-bucket/copy.c4gh", "-o", "copy")
	if code != 0 || string(e.read(t, "copy")) != string(small) {
		t.Errorf("rekeyed to another bucket: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := e.run(t, "reencrypt", "--sk", "bob.sec", "--recipient_pk", "me.pub", "-i", url("small.c4gh"), "-o", "s3://other-bucket/copy.c4gh"); code != exitUsage || !strings.Contains(stderr, "object exists") {
		t.Errorf("over an existing object: exit %d\n%s", code, stderr)
	}
	// In a batch with a journal, an object that was there is refused
	// without a start line: a second run does not take it for its own
	// and replace it.
	e.must(t, "reencrypt", "--sk", "bob.sec", "--recipient_pk", "me.pub", "-i", url("small.c4gh"), "-o", "s3://other-bucket/small.c4gh")
	for run := range 2 {
		code, _, stderr := e.run(t, "reencrypt", "--sk", "bob.sec", "--recipient_pk", "me.pub", "--journal", "jcopy", "-o", "s3://other-bucket/", url("small.c4gh"))
		if code != exitUsage || !strings.Contains(stderr, "object exists") {
			t.Errorf("run %d of a batch over an existing object: exit %d\n%s", run+1, code, stderr)
		}
	}
	if _, starts := journalLines(t, filepath.Join(e.dir, "jcopy")); len(starts) != 0 {
		t.Errorf("start lines for an object that was there: %v", starts)
	}

	// Batch: everything ending in .c4gh under the prefix, in place.
	plains := map[string][]byte{}
	for i, n := range []int{0, 1, 65536, 11 * MiB} {
		key := fmt.Sprintf("batch/f%d.c4gh", i)
		if i == 3 {
			key = "batch/sub/deep+1.c4gh" // copied by the server: "+" in x-amz-copy-source
		}
		plains[key] = randomData(n, uint64(50+i))
		e.put(t, key, encryptBytes(t, plains[key], e.sk))
	}
	e.put(t, "batch/other.c4gh", encryptBytes(t, []byte("not for me"), bob))
	e.put(t, "batch/readme.txt", []byte("plain"))
	if code, _, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "carol.pub", url("batch/")); code != exitUsage || !strings.Contains(stderr, "--force") {
		t.Errorf("batch without --force: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "carol.pub", "--force", "local.c4gh"); code != exitUsage || !strings.Contains(stderr, "use -i and -o for a file") {
		t.Errorf("batch of a local file: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "carol.pub", "--recipient_pk", "me.pub", "--force", url("batch/"))
	if code != exitKey {
		t.Errorf("batch with one object for another key: exit %d, want %d\n%s", code, exitKey, stderr)
	}
	if !strings.Contains(stderr, url("batch/other.c4gh")+": ") || strings.Count(stderr, "crypt4gh: error: ") != 2 ||
		!strings.Contains(stderr, "1 of 5 files failed") {
		t.Errorf("stderr:\n%s", stderr)
	}
	for key, plain := range plains {
		if !strings.Contains(stdout, url(key)+": rekeyed\n") {
			t.Errorf("no line for %s:\n%s", key, stdout)
		}
		got := e.get(t, key)
		sameBytes(t, key+" for me", decryptBytes(t, got, e.sk), plain)
		e.write(t, "got.c4gh", got)
		if code, _, _ := e.run(t, "decrypt", "--sk", "carol.sec", "--force", "-i", "got.c4gh", "-o", "got"); code != 0 {
			t.Errorf("%s: carol cannot decrypt it", key)
		}
	}
	if strings.Contains(stdout+stderr, "readme.txt") {
		t.Errorf("an object without .c4gh was taken:\n%s%s", stdout, stderr)
	}

	// A stdout that can no longer be written ends the batch: the rekeys
	// under way finish, and no new one starts. The lines are printed in
	// the order of the inputs, so the break shows when the first input's
	// line is written: while that input ran, the other workers may have
	// finished several each (all of 2 × jobs once, on CI), but not the
	// whole batch.
	const gone = 16 * rekeyJobs
	for i := range gone {
		e.put(t, fmt.Sprintf("gone/f%d.c4gh", i), encryptBytes(t, []byte("for me"), e.sk))
	}
	t.Chdir(e.dir)
	var errs bytes.Buffer
	code = Run([]string{"crypt4gh", "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--drop-self", "--force", url("gone/")}, bytes.NewReader(nil), brokenStdout{}, &errs)
	if code != 128+int(syscall.SIGPIPE) || errs.Len() > 0 {
		t.Errorf("batch to a broken stdout: exit %d, stderr %q", code, errs.String())
	}
	rekeyed := 0
	for i := range gone {
		if c, _, _ := e.run(t, "decrypt", "--sk", "bob.sec", "-i", url(fmt.Sprintf("gone/f%d.c4gh", i))); c == 0 {
			rekeyed++
		}
	}
	if rekeyed < 1 || rekeyed >= gone {
		t.Errorf("%d of %d objects rekeyed after stdout broke; want the first and not all", rekeyed, gone)
	}
	t.Logf("%d of %d objects rekeyed after stdout broke", rekeyed, gone)
	e.noUploads(t)
}

// brokenStdout fails every write as a stdout whose reader went away.
type brokenStdout struct{}

func (brokenStdout) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
}

// TestS3Splice cuts ranges out of an object into another object (the
// segments copied by the server), into a file, and from a file into an
// object.
func TestS3Splice(t *testing.T) {
	e := newS3Env(t)
	e.keygen(t, "bob")
	plain := randomData(12*MiB+5000, 61)
	enc := encryptBytes(t, plain, e.sk)
	e.put(t, "src.c4gh", enc)
	e.write(t, "src.c4gh", enc)
	ranges := []string{"--range", "1000-70000", "--range", fmt.Sprintf("%d-%d", 9*MiB, 11*MiB+3)}
	want := append(append([]byte{}, plain[1000:70000]...), plain[9*MiB:11*MiB+3]...)

	e.px.Zero()
	e.must(t, append([]string{"splice", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-i", url("src.c4gh"), "-o", url("cut.c4gh")}, ranges...)...)
	t.Logf("splice between objects: %d bytes up, %d down", e.px.Up(), e.px.Down())
	if e.px.Up() > 6*MiB {
		t.Errorf("splice between objects sent %d bytes", e.px.Up())
	}
	e.must(t, "decrypt", "--sk", "bob.sec", "-i", url("cut.c4gh"), "-o", "cut")
	sameBytes(t, "spliced object", e.read(t, "cut"), want)

	e.must(t, append([]string{"splice", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-i", url("src.c4gh"), "-o", "cut.c4gh"}, ranges...)...)
	e.must(t, "decrypt", "--sk", "bob.sec", "-i", "cut.c4gh", "-o", "cut2")
	sameBytes(t, "spliced to a file", e.read(t, "cut2"), want)

	e.must(t, append([]string{"splice", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-i", "src.c4gh", "-o", url("cut3.c4gh")}, ranges...)...)
	e.must(t, "decrypt", "--sk", "bob.sec", "-i", url("cut3.c4gh"), "-o", "cut3")
	sameBytes(t, "spliced from a file", e.read(t, "cut3"), want)

	e.must(t, "rearrange", "--sk", "me.sec", "--range", "5-100005", "-i", url("src.c4gh"), "-o", url("re.c4gh"))
	e.must(t, "decrypt", "--sk", "me.sec", "--range", "10-20", "-i", url("re.c4gh"), "-o", "re")
	sameBytes(t, "rearranged object", e.read(t, "re"), plain[15:25])

	// An object cut inside its last segment, at a length a whole one
	// could have: when that segment is kept, it is authenticated before
	// anything is written, on the server's copy as on a download.
	e.put(t, "short.c4gh", enc[:len(enc)-100])
	for _, out := range []string{url("short-cut.c4gh"), "short-cut.c4gh"} {
		code, _, stderr := e.run(t, "splice", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-i", url("short.c4gh"), "-o", out,
			"--range", fmt.Sprintf("%d-%d", 12*MiB-10, 12*MiB+10))
		if code != exitData || !strings.Contains(stderr, "segment 192") {
			t.Errorf("splice of a cut object to %s: exit %d\n%s", out, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "short-cut.c4gh")); e.exists(t, "short-cut.c4gh") || err == nil {
		t.Error("the splice of a cut object left an output")
	}
	e.noUploads(t)
}

// TestS3Presigned reads an object through a presigned URL (http to the
// loopback proxy, as https elsewhere): decrypt, --range and inspect, and
// the query, a bearer credential, is never printed.
func TestS3Presigned(t *testing.T) {
	e := newS3Env(t)
	plain := randomData(3*MiB+10, 71)
	e.put(t, "shared.c4gh", encryptBytes(t, plain, e.sk))
	ps := s3.NewPresignClient(s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(e.px.Endpoint()), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(e.srv.AccessKey, e.srv.SecretKey, ""),
	}))
	req, err := ps.PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: aws.String("shared.c4gh")},
		s3.WithPresignExpires(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	_, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "-i", req.URL, "-o", "whole")
	sameBytes(t, "decrypted from a presigned URL", e.read(t, "whole"), plain)
	e.must(t, "decrypt", "--sk", "me.sec", "--range", "2000000-2100000", "-i", req.URL, "-o", "part")
	sameBytes(t, "a range from a presigned URL", e.read(t, "part"), plain[2000000:2100000])
	out := e.must(t, "inspect", req.URL)
	if strings.Contains(out+stderr, "X-Amz-Signature") || !strings.Contains(out, "/shared.c4gh?...") {
		t.Errorf("inspect printed\n%s", out)
	}
	// A URL that is refused.
	code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "-i", strings.Replace(req.URL, "X-Amz-Signature=", "X-Amz-Signature=0", 1), "-o", "bad")
	if code != exitKey || strings.Contains(stderr, "X-Amz-Signature") {
		t.Errorf("a bad signature: exit %d\n%s", code, stderr)
	}
}
