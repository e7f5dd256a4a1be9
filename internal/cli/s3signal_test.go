//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/resume"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// sequentialEnv makes a child process read objects one chunk at a time,
// so that a stalled response stops a download at a known chunk.
const sequentialEnv = "CRYPT4GH_TEST_S3_SEQUENTIAL"

func init() {
	if os.Getenv(sequentialEnv) != "" {
		readChunks = 1
	}
}

// uploads returns the keys of the pending multipart uploads.
func (e *s3env) uploads(t *testing.T) []string {
	t.Helper()
	out, err := e.sdk.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(testBucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

// exitOf waits for cmd and returns its exit status (128+signal when a
// signal ended it).
func exitOf(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// TestS3InterruptUpload sends SIGINT to an encrypt to an object while its
// multipart upload is under way: when the command waits for more input,
// and when a part is being sent and its answer does not come. Either way
// it exits 130 and leaves no object and no pending upload.
func TestS3InterruptUpload(t *testing.T) {
	e := newS3EnvParallel(t)
	data := randomData(40*MiB, 21)
	for _, tc := range []struct {
		name  string
		stall bool
	}{{"waiting for input", false}, {"during a part", true}} {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.name, " ", "-") + ".c4gh"
			cmd := e.child("encrypt", "--recipient_pk", "me.pub", "-o", url(key))
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			if _, err := stdin.Write(data); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a multipart upload", func() bool { return len(e.uploads(t)) > 0 })
			if tc.stall {
				// The answers stop coming; the next part hangs.
				// (Written before the signal: a write to the pipe of
				// a process that is gone would be a SIGPIPE for the
				// test, whose in-process runs catch it.)
				stalls := e.px.Stalls()
				e.px.StallDownAfter(0)
				if _, err := stdin.Write(data); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "a part whose answer does not come", func() bool { return e.px.Stalls() > stalls })
			}
			cmd.Process.Signal(os.Interrupt)
			if code := exitOf(t, cmd); code != 130 {
				t.Errorf("exit %d after SIGINT, want 130\n%s", code, stderr.String())
			}
			stdin.Close()
			e.px.StallDownAfter(-1)
			if e.exists(t, key) {
				t.Errorf("%s exists after SIGINT", key)
			}
			if u := e.uploads(t); len(u) > 0 {
				t.Errorf("pending uploads after SIGINT: %v\n%s", u, stderr.String())
			}
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("stderr:\n%s", stderr.String())
			}
		})
	}
}

// killedDownload starts decrypt --continue of key to out in a child that
// reads one chunk at a time, stalls the response of the chunk at byte
// stallAt, waits until the partial output holds the chunks before it, and
// kills the child with SIGKILL. It returns the size of the partial output.
func (e *s3env) killedDownload(t *testing.T, key, out string, stallAt int64) int64 {
	t.Helper()
	partial := filepath.Join(e.dir, "."+out+resume.Suffix)
	cmd := e.child("decrypt", "--sk", "me.sec", "--continue", "-i", url(key), "-o", out)
	cmd.Env = append(cmd.Env, sequentialEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	e.px.Zero()
	stalls := e.px.Stalls()
	e.px.StallDownAfter(stallAt)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The chunks before the stalled one, decrypted: whole chunks of
	// 128 segments; and the child waits for the rest of the stalled one.
	want := (stallAt - objio.HeadSize) / readChunk * 128 * body.SegmentSize
	waitFor(t, "the partial output", func() bool {
		fi, err := os.Stat(partial)
		return err == nil && fi.Size() >= want
	})
	waitFor(t, "the stalled chunk", func() bool { return e.px.Stalls() > stalls })
	cmd.Process.Kill()
	if code := exitOf(t, cmd); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit %d, want SIGKILL\n%s", code, stderr.String())
	}
	e.px.StallDownAfter(-1)
	fi, err := os.Stat(partial)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != outfile.ModeSecret {
		t.Errorf("partial output mode %v", fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(e.dir, "."+out+resume.RecordSuffix)); err != nil {
		t.Errorf("no record: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, out)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the kill: %v", out, err)
	}
	return fi.Size()
}

// TestS3Resume kills a download with SIGKILL and resumes it with
// --continue: the result is byte-identical, the resumed run fetches only
// what was missing, and nothing is left beside the output. An object
// replaced between the two runs is detected by its ETag and decrypted
// from the start.
func TestS3Resume(t *testing.T) {
	e := newS3EnvParallel(t)
	plain := randomData(40*MiB+777, 31)
	enc := encryptBytes(t, plain, e.sk)
	e.put(t, "r.c4gh", enc)

	kept := e.killedDownload(t, "r.c4gh", "out", 20*MiB)
	t.Logf("killed with %d bytes of plaintext written", kept)
	if kept < 16*MiB || kept%body.SegmentSize != 0 {
		t.Errorf("partial output of %d bytes", kept)
	}
	e.px.Zero()
	_, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("r.c4gh"), "-o", "out")
	sameBytes(t, "resumed download", e.read(t, "out"), plain)
	if !strings.Contains(stderr, "crypt4gh: resuming "+url("r.c4gh")) {
		t.Errorf("stderr:\n%s", stderr)
	}
	segs := kept / body.SegmentSize
	if max := int64(len(enc)) - segs*body.EncryptedSegmentSize + 256<<10; e.px.Down() > max {
		t.Errorf("the resumed run fetched %d bytes, more than %d", e.px.Down(), max)
	}
	t.Logf("resumed run: %d bytes down of %d", e.px.Down(), len(enc))
	for _, suffix := range []string{resume.Suffix, resume.RecordSuffix} {
		if _, err := os.Stat(filepath.Join(e.dir, ".out"+suffix)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf(".out%s left after the resumed run: %v", suffix, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(e.dir, "out")); err != nil || fi.Mode().Perm() != outfile.ModeSecret {
		t.Errorf("out: %v, %v", fi.Mode(), err)
	}

	// Replaced between the runs: detected, and started again.
	e.killedDownload(t, "r.c4gh", "out2", 20*MiB)
	other := randomData(30*MiB, 32)
	e.put(t, "r.c4gh", encryptBytes(t, other, e.sk))
	_, _, stderr = e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("r.c4gh"), "-o", "out2")
	sameBytes(t, "download of the replaced object", e.read(t, "out2"), other)
	if !strings.Contains(stderr, "changed since the interrupted download") || strings.Contains(stderr, "resuming") {
		t.Errorf("stderr:\n%s", stderr)
	}

	// Without --continue, a run says that the partial output is there.
	e.killedDownload(t, "r.c4gh", "out3", 12*MiB)
	if _, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "-i", url("r.c4gh"), "-o", "out3"); !strings.Contains(stderr, "add --continue to resume it") {
		t.Errorf("no word of the partial output:\n%s", stderr)
	}
	os.Remove(filepath.Join(e.dir, "out3"))
	// An existing output is not replaced without --force, and the
	// interrupted download stays for the run that has it.
	e.write(t, "out3", []byte("mine"))
	if code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("r.c4gh"), "-o", "out3"); code != exitUsage || !strings.Contains(stderr, "already exists") {
		t.Errorf("over an existing file: exit %d\n%s", code, stderr)
	}
	e.must(t, "decrypt", "--sk", "me.sec", "--continue", "--force", "-i", url("r.c4gh"), "-o", "out3")
	sameBytes(t, "out3", e.read(t, "out3"), other)
}

// TestS3ContinueRefusals checks what --continue does not do.
func TestS3ContinueRefusals(t *testing.T) {
	e := newS3Env(t)
	plain := randomData(200000, 33)
	enc := encryptBytes(t, plain, e.sk)
	e.put(t, "x.c4gh", enc)
	var spliced bytes.Buffer
	if err := reencrypt.Splice(&spliced, bytes.NewReader(enc), reencrypt.SpliceOptions{Reader: e.sk, Ranges: []edit.Range{{Start: 100, End: 150000}}}); err != nil {
		t.Fatal(err)
	}
	e.put(t, "edited.c4gh", spliced.Bytes())
	e.write(t, "x.c4gh", enc)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-i", url("edited.c4gh"), "-o", "out"}, "has an edit list: --continue cannot resume it"},
		{[]string{"-i", url("x.c4gh"), "-o", "out", "--range", "0-10"}, "--continue cannot be used with --range"},
		{[]string{"-i", url("x.c4gh"), "-o", "out", "--checksum"}, "--continue cannot be used with --checksum"},
		{[]string{"-i", "x.c4gh", "-o", "out"}, "--continue resumes the download of an object"},
		{[]string{"-i", url("x.c4gh")}, "--continue needs an output file"},
		{[]string{"-i", url("x.c4gh"), "-o", url("y")}, "--continue writes a local file"},
		{[]string{"x.c4gh"}, "--continue cannot be used with FILE arguments"},
	} {
		code, _, stderr := e.run(t, append([]string{"decrypt", "--sk", "me.sec", "--continue"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d\n%s", tc.args, code, stderr)
		}
	}
	entries, _ := os.ReadDir(e.dir)
	for _, en := range entries {
		if strings.Contains(en.Name(), "resume") || en.Name() == "out" {
			t.Errorf("left behind: %s", en.Name())
		}
	}
}

// TestS3InterruptResumable: SIGINT during decrypt --continue keeps the
// partial output with a record of all of it, and the next run finishes.
func TestS3InterruptResumable(t *testing.T) {
	e := newS3Env(t)
	plain := randomData(30*MiB, 34)
	e.put(t, "i.c4gh", encryptBytes(t, plain, e.sk))
	cmd := e.child("decrypt", "--sk", "me.sec", "--continue", "-i", url("i.c4gh"), "-o", "out")
	cmd.Env = append(cmd.Env, sequentialEnv+"=1")
	e.px.StallDownAfter(20 * MiB)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	partial := filepath.Join(e.dir, ".out"+resume.Suffix)
	waitFor(t, "the partial output", func() bool {
		fi, err := os.Stat(partial)
		return err == nil && fi.Size() >= 16*MiB
	})
	cmd.Process.Signal(os.Interrupt)
	if code := exitOf(t, cmd); code != 130 {
		t.Errorf("exit %d after SIGINT", code)
	}
	e.px.StallDownAfter(-1)
	rec, err := os.ReadFile(filepath.Join(e.dir, ".out"+resume.RecordSuffix))
	if err != nil || !bytes.Contains(rec, []byte(`"plaintext":16777216`)) {
		t.Errorf("record after SIGINT: %s, %v", rec, err)
	}
	e.must(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("i.c4gh"), "-o", "out")
	sameBytes(t, "finished after SIGINT", e.read(t, "out"), plain)
}

// TestS3InterruptRekey sends SIGINT to a rekey in place of a 256 MiB
// object while the server copies its body: the upload is aborted (again,
// when the copy lands after the abort) and the object is as it was.
func TestS3InterruptRekey(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads a 256 MiB object")
	}
	e := newS3EnvParallel(t)
	e.keygen(t, "bob")
	e.putBig(t, "k.c4gh", 256*MiB, e.sk)
	before, err := e.sdk.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("k.c4gh")})
	if err != nil {
		t.Fatal(err)
	}
	cmd := e.child("reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--trim", "--drop-self", "--force", "-i", url("k.c4gh"), "-o", url("k.c4gh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, "a multipart upload", func() bool { return len(e.uploads(t)) > 0 })
	cmd.Process.Signal(os.Interrupt)
	code := exitOf(t, cmd)
	after, err := e.sdk.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String("k.c4gh")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(after.ETag) != aws.ToString(before.ETag) {
		// The copy was done and committed before the signal came: then
		// it is the new object, whole.
		t.Logf("the rekey was committed before SIGINT (exit %d)", code)
		e.must(t, "decrypt", "--sk", "bob.sec", "--range", "0-1000", "-i", url("k.c4gh"), "-o", "check")
		return
	}
	if code != 130 {
		t.Errorf("exit %d after SIGINT, want 130\n%s", code, stderr.String())
	}
	if u := e.uploads(t); len(u) > 0 {
		t.Errorf("pending uploads after SIGINT: %v\n%s", u, stderr.String())
	}
	e.must(t, "decrypt", "--sk", "me.sec", "--range", "1000-2000", "-i", url("k.c4gh"), "-o", "check")
	sameBytes(t, "the object after SIGINT", e.read(t, "check"), patternRange(1000, 2000))
}

// A signal that comes while the upload of an object is being completed
// cannot stop the store from writing the object: the command waits for
// the answer, and its message says that the object was written (here the
// proxy keeps the completion until after the signal, so the store writes
// it whatever the command does). Exit 130 all the same: the run was
// interrupted.
func TestS3InterruptAtCompletion(t *testing.T) {
	e := newS3Env(t)
	e.keygen(t, "bob")
	e.write(t, "plain", randomData(20*MiB, 33))
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "plain", "-o", url("old.c4gh"))
	for _, tc := range []struct {
		name string
		args []string
		key  string
	}{
		{"upload", []string{"encrypt", "--recipient_pk", "bob.pub", "-i", "plain", "-o", url("new.c4gh")}, "new.c4gh"},
		{"rekey in place", []string{"reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--trim", "--drop-self", "--force", "-i", url("old.c4gh"), "-o", url("old.c4gh")}, "old.c4gh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := interruptAtHeld(t, e, func(r *http.Request) bool {
				return r.Method == http.MethodPost && r.URL.Query().Has("uploadId")
			}, tc.args...)
			if want := url(tc.key) + " was written before the interrupt"; !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
			e.must(t, "decrypt", "--sk", "bob.sec", "-i", url(tc.key), "-o", tc.key+".out")
			sameBytes(t, "the object written at the interrupt", e.read(t, tc.key+".out"), e.read(t, "plain"))
			e.noUploads(t)
		})
	}
}

// TestS3InterruptRekeyBatch: SIGINT to a rekey in place of a prefix of
// small objects starts no object after it: those under way end, and the
// batch stops there (it went on to the end before, exit 130 only then).
func TestS3InterruptRekeyBatch(t *testing.T) {
	e := newS3Env(t)
	e.keygen(t, "bob")
	const n = 60
	etags := map[string]string{}
	for i := range n {
		k := fmt.Sprintf("ib/o%03d.c4gh", i)
		e.put(t, k, encryptBytes(t, randomData(1000, uint64(i)), e.sk))
		o, err := e.sdk.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		etags[k] = aws.ToString(o.ETag)
	}
	interruptAtHeld(t, e, func(r *http.Request) bool {
		return r.Method == http.MethodPost && r.URL.Query().Has("uploadId") || r.Method == http.MethodPut
	}, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--add", "--force", url("ib/"))
	rekeyed := 0
	for k, before := range etags {
		o, err := e.sdk.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(o.ETag) != before {
			rekeyed++
		}
	}
	if rekeyed > 2*rekeyJobs {
		t.Errorf("%d of %d objects rekeyed after SIGINT, more than were under way (%d workers)", rekeyed, n, rekeyJobs)
	}
	t.Logf("%d of %d objects rekeyed (the ones under way at SIGINT)", rekeyed, n)
	e.noUploads(t)
}

// interruptAtHeld runs the command of args, holds the first request that
// match accepts at the proxy, sends SIGINT, lets the request go once the
// handler has the signal (from then on an upload cannot forget its hook,
// which waits), and checks the exit 130. It returns stderr.
func interruptAtHeld(t *testing.T, e *s3env, match func(*http.Request) bool, args ...string) string {
	t.Helper()
	held, release := e.px.Hold(match)
	defer release()
	cmd := e.child(args...)
	caught := filepath.Join(t.TempDir(), "caught")
	cmd.Env = append(cmd.Env, caughtEnv+"="+caught)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatalf("no request to hold came\n%s", stderr.String())
	}
	cmd.Process.Signal(os.Interrupt)
	waitFor(t, "the signal handler", func() bool {
		_, err := os.Stat(caught)
		return err == nil
	})
	release()
	if code := exitOf(t, cmd); code != 130 {
		t.Errorf("exit %d after SIGINT, want 130\n%s", code, stderr.String())
	}
	return stderr.String()
}
