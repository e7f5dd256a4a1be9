package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The housekeeping commands against a real S3 server: ls of a prefix,
// ls --pending and cleanup, the warning when a write meets a pending
// upload, and cp in every direction.

// beginUpload leaves an upload of key with one part of n bytes pending,
// as an interrupted client would.
func (e *s3env) beginUpload(t *testing.T, key string, n int) string {
	t.Helper()
	ctx := context.Background()
	out, err := e.sdk.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(testBucket), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sdk.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(testBucket), Key: &key, UploadId: out.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(randomData(n, 5)), ContentLength: aws.Int64(int64(n))}); err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.UploadId)
}

// pendingKeys are the keys of the uploads in progress in the bucket.
func (e *s3env) pendingKeys(t *testing.T) []string {
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

// jsonLines decodes one JSON object a line into a slice of T.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var all []T
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	for dec.More() {
		var v T
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("bad JSON: %v\n%s", err, out)
		}
		all = append(all, v)
	}
	return all
}

// TestS3Ls lists a prefix with crypt4gh objects for one key or the
// other, a plain object and a deeper "folder", reading one small range
// of each object.
func TestS3Ls(t *testing.T) {
	e := newS3Env(t)
	other := e.keygen(t, "other")
	plain := randomData(200000, 1)
	mine := encryptBytes(t, plain, e.sk)
	e.put(t, "run/a.c4gh", mine)
	e.put(t, "run/b.c4gh", encryptBytes(t, plain[:1000], other))
	e.put(t, "run/notes.txt", []byte("not encrypted"))
	e.put(t, "run/sub/c.c4gh", mine)
	// The body ends 10 bytes into its second segment: no segment is that short.
	e.put(t, "run/cut.c4gh", mine[:len(mine)-(3*65564+3392+28)+65564+10])

	e.px.Zero()
	code, out, stderr := e.run(t, "ls", "--json", "--sk", "me.sec", "--sk", "other.sec", url("run/"))
	if code != exitData || !strings.Contains(stderr, "cut.c4gh") || strings.Count(stderr, "crypt4gh: error:") != 2 {
		t.Errorf("a cut object: exit %d\n%s", code, stderr)
	}
	gets := 0
	for _, r := range e.px.Requests() {
		if strings.HasPrefix(r, "GET ") && !strings.Contains(r, "list-type") {
			gets++
		}
	}
	if gets != 4 {
		t.Errorf("%d GETs of objects for 4 objects: %v", gets, e.px.Requests())
	}
	type entry struct {
		Name              string   `json:"name"`
		Kind              string   `json:"kind"`
		Size              *int64   `json:"size"`
		BodyPlaintextSize *int64   `json:"body_plaintext_size"`
		PlaintextSize     *int64   `json:"plaintext_size"`
		OpenedBy          []string `json:"opened_by"`
		Error             *string  `json:"error"`
	}
	got := map[string]entry{}
	for _, en := range jsonLines[entry](t, out) {
		got[strings.TrimPrefix(en.Name, url("run/"))] = en
	}
	if len(got) != 5 {
		t.Fatalf("ls printed\n%s", out)
	}
	if a := got["a.c4gh"]; a.Kind != "crypt4gh" || *a.Size != int64(len(mine)) || *a.PlaintextSize != 200000 || strings.Join(a.OpenedBy, ",") != "me.sec" {
		t.Errorf("a.c4gh: %+v", a)
	}
	if b := got["b.c4gh"]; *b.BodyPlaintextSize != 1000 || strings.Join(b.OpenedBy, ",") != "other.sec" {
		t.Errorf("b.c4gh: %+v", b)
	}
	if n := got["notes.txt"]; n.Kind != "other" || n.OpenedBy != nil {
		t.Errorf("notes.txt: %+v", n)
	}
	if s := got["sub/"]; s.Kind != "folder" {
		t.Errorf("sub/: %+v", s)
	}
	if c := got["cut.c4gh"]; c.Error == nil || c.Kind != "error" {
		t.Errorf("cut.c4gh: %+v", c)
	}

	// People's columns, at all depths, and one object by name.
	out = e.must(t, "ls", "-R", "--sk", "other.sec", url("run/sub/"), url("run/b.c4gh"))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "SIZE") || !strings.Contains(lines[1], "none") || !strings.Contains(lines[1], "≤200000") ||
		!strings.Contains(lines[2], "other.sec") || !strings.HasSuffix(lines[2], url("run/b.c4gh")) {
		t.Errorf("ls -R printed\n%s", out)
	}
	if code, _, stderr := e.run(t, "ls", url("run")); code != exitUsage || !strings.Contains(stderr, "with the slash") {
		t.Errorf("ls of a prefix without its slash: exit %d\n%s", code, stderr)
	}
}

// TestS3PendingCleanup lists the uploads an interrupted run left, and
// aborts them: none that are younger than --older-than, none outside the
// prefix, nothing with -n.
func TestS3PendingCleanup(t *testing.T) {
	e := newS3Env(t)
	id := e.beginUpload(t, "run/big.c4gh", 1000)
	e.beginUpload(t, "keep/other.c4gh", 10)

	out := e.must(t, "ls", "--pending", url("run/"))
	if !strings.Contains(out, url("run/big.c4gh")) || strings.Contains(out, "other.c4gh") || !strings.Contains(out, shortID(id)) ||
		!strings.Contains(out, "  1  ") || !strings.Contains(out, "1000") {
		t.Errorf("ls --pending printed\n%s", out)
	}
	type upload struct {
		Key      string `json:"key"`
		UploadID string `json:"upload_id"`
		Started  string `json:"started"`
		Parts    int    `json:"parts"`
		Bytes    int64  `json:"bytes"`
	}
	ups := jsonLines[upload](t, e.must(t, "ls", "--pending", "--json", url("run/big.c4gh")))
	if len(ups) != 1 || ups[0].UploadID != id || ups[0].Parts != 1 || ups[0].Bytes != 1000 || ups[0].Started == "" {
		t.Errorf("ls --pending --json: %+v", ups)
	}

	if out := e.must(t, "cleanup", url("run/")); out != "" {
		t.Errorf("cleanup at the default 24h aborted a new upload:\n%s", out)
	}
	out = e.must(t, "cleanup", "-n", "--older-than", "0", url("run/"))
	if !strings.HasPrefix(out, "would abort "+url("run/big.c4gh")) || len(e.pendingKeys(t)) != 2 {
		t.Errorf("cleanup -n printed\n%s", out)
	}
	out = e.must(t, "cleanup", "--older-than", "0", url("run/"))
	if !strings.HasPrefix(out, "aborted "+url("run/big.c4gh")) || strings.Count(out, "\n") != 1 {
		t.Errorf("cleanup printed\n%s", out)
	}
	if keys := e.pendingKeys(t); len(keys) != 1 || keys[0] != "keep/other.c4gh" {
		t.Errorf("pending after cleanup: %v", keys)
	}
	if code, _, stderr := e.run(t, "cleanup", "--older-than", "soon", url("keep/")); code != exitUsage || !strings.Contains(stderr, "--older-than") {
		t.Errorf("a bad duration: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := e.run(t, "cleanup", "localdir/"); code != exitUsage || !strings.Contains(stderr, "s3://") {
		t.Errorf("cleanup of a folder: exit %d\n%s", code, stderr)
	}
}

// TestS3PendingWarning: writing an object that has an older upload in
// progress warns once and names cleanup; no warning otherwise.
func TestS3PendingWarning(t *testing.T) {
	e := newS3Env(t)
	e.write(t, "p", randomData(1000, 2))
	_, _, stderr := e.run(t, "encrypt", "--recipient_pk", "me.pub", "-i", "p", "-o", url("w.c4gh"))
	if strings.Contains(stderr, "pending") {
		t.Errorf("a warning without a pending upload:\n%s", stderr)
	}
	e.beginUpload(t, "x.c4gh", 10)
	_, _, stderr = e.run(t, "encrypt", "--recipient_pk", "me.pub", "-i", "p", "-o", url("x.c4gh"))
	if strings.Count(stderr, "warning:") != 1 || !strings.Contains(stderr, "1 pending upload") || !strings.Contains(stderr, "crypt4gh cleanup s3://"+testBucket+"/") {
		t.Errorf("encrypt over a pending upload:\n%s", stderr)
	}
	// A server-side write too (cp between objects), and only the one.
	e.beginUpload(t, "y.c4gh", 10)
	_, _, stderr = e.run(t, "cp", url("x.c4gh"), url("y.c4gh"))
	if strings.Count(stderr, "warning:") != 1 || !strings.Contains(stderr, "y.c4gh") {
		t.Errorf("cp over a pending upload:\n%s", stderr)
	}
}

// TestS3Cp copies a crypt4gh file local → S3 → S3 → local, byte for
// byte, the S3 → S3 copy made by the server; refuses to replace without
// --force, to copy an object onto itself, or a file that is not
// crypt4gh; and with --verify writes nothing of a tampered file.
func TestS3Cp(t *testing.T) {
	e := newS3EnvParallel(t)
	enc := encryptBytes(t, randomData(12*MiB, 3), e.sk)
	e.write(t, "f.c4gh", enc)

	e.must(t, "cp", "f.c4gh", url("cp/"))
	sameBytes(t, "local → s3", e.get(t, "cp/f.c4gh"), enc)
	e.px.Zero()
	e.must(t, "cp", "--verify", "--sk", "me.sec", url("cp/f.c4gh"), "back.c4gh")
	sameBytes(t, "s3 → local", e.read(t, "back.c4gh"), enc)
	if down := e.px.Down(); down < int64(len(enc)) || down > int64(len(enc))+MiB {
		t.Errorf("s3 → local with --verify: %d bytes down for %d", down, len(enc))
	}
	e.px.Zero()
	e.must(t, "cp", url("cp/f.c4gh"), url("copy/f.c4gh"))
	sameBytes(t, "s3 → s3", e.get(t, "copy/f.c4gh"), enc)
	if through := e.px.Up() + e.px.Down(); through > 256<<10 {
		t.Errorf("server-side copy of %d bytes: %d bytes through the client", len(enc), through)
	}

	// Refusals, before anything is written.
	e.put(t, "there.c4gh", []byte("there before"))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cp", "f.c4gh", url("there.c4gh")}, exitUsage, "use --force"},
		{[]string{"cp", url("cp/f.c4gh"), url("there.c4gh")}, exitUsage, "use --force"},
		{[]string{"cp", url("cp/f.c4gh"), url("cp/f.c4gh")}, exitUsage, "SRC itself"},
		{[]string{"cp", "--force", url("cp/f.c4gh"), url("cp/f.c4gh")}, exitUsage, "SRC itself"},
		{[]string{"cp", url("there.c4gh"), url("plain-copy")}, exitData, "not a crypt4gh file"},
		{[]string{"cp", url("there.c4gh"), "plain-copy"}, exitData, "not a crypt4gh file"},
	} {
		code, _, stderr := e.run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q\n%s", tc.args, code, tc.code, tc.want, stderr)
		}
	}
	if got := e.get(t, "there.c4gh"); string(got) != "there before" || e.exists(t, "plain-copy") {
		t.Errorf("a refused cp wrote: %q", got)
	}
	e.must(t, "cp", "--force", url("cp/f.c4gh"), url("there.c4gh"))
	sameBytes(t, "--force", e.get(t, "there.c4gh"), enc)

	// A tampered segment in the middle: --verify fails with exit 4, in
	// every direction, and no copy is committed.
	bad := bytes.Clone(enc)
	bad[len(bad)/2] ^= 1
	e.put(t, "bad.c4gh", bad)
	e.write(t, "bad.c4gh", bad)
	for _, args := range [][]string{
		{url("bad.c4gh"), url("bad-copy.c4gh")},
		{url("bad.c4gh"), "bad-copy.c4gh"},
		{"bad.c4gh", url("bad-copy.c4gh")},
		{"bad.c4gh", "bad-copy.c4gh"},
	} {
		code, _, stderr := e.run(t, append([]string{"cp", "--verify", "--sk", "me.sec"}, args...)...)
		if code != exitData || !strings.Contains(stderr, "segment") {
			t.Errorf("cp --verify %v of a tampered file: exit %d\n%s", args, code, stderr)
		}
	}
	if e.exists(t, "bad-copy.c4gh") {
		t.Error("a tampered object was copied")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "bad-copy.c4gh")); !os.IsNotExist(err) {
		t.Errorf("a tampered file was copied: %v", err)
	}
	// Without --verify the bytes are copied as they are.
	e.must(t, "cp", "bad.c4gh", url("bad-copy.c4gh"))
	e.noUploads(t)
}

// TestS3CpContinue: cp --continue goes on with the upload an earlier run
// left, sending only what it lacks; an interrupted cp --continue leaves
// its upload for the next one; a part of other bytes is sent again.
func TestS3CpContinue(t *testing.T) {
	e := newS3Env(t)
	enc := encryptBytes(t, randomData(40*MiB, 9), e.sk)
	e.write(t, "f.c4gh", enc)
	ctx := context.Background()
	const part = 16 * MiB // the part size of an upload of this size

	// An earlier run stored the first part, and a wrong second one.
	key := "r.c4gh"
	out, err := e.sdk.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(testBucket), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range [][]byte{enc[:part], randomData(part, 10)} {
		if _, err := e.sdk.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(testBucket), Key: &key, UploadId: out.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(body), ContentLength: aws.Int64(part)}); err != nil {
			t.Fatal(err)
		}
	}
	e.px.Zero()
	_, _, stderr := e.run(t, "cp", "--continue", "--verify", "--sk", "me.sec", "f.c4gh", url(key))
	sameBytes(t, "resumed copy", e.get(t, key), enc)
	if up := e.px.Up(); !strings.Contains(stderr, "resuming") || up > int64(len(enc)-part+MiB) {
		t.Errorf("%d bytes up to finish %d of %d\n%s", up, len(enc)-part, len(enc), stderr)
	}
	e.noUploads(t)

	// Interrupted (a reset that is not retried): the upload stays, and
	// the next run completes it.
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	e.px.ResetUpAfter(20 * MiB)
	if code, _, stderr := e.run(t, "cp", "--continue", "f.c4gh", url("s.c4gh")); code != exitError || !strings.Contains(stderr, "same command goes on") {
		t.Fatalf("an interrupted cp --continue: exit %d\n%s", code, stderr)
	}
	if keys := e.pendingKeys(t); len(keys) != 1 || keys[0] != "s.c4gh" || e.exists(t, "s.c4gh") {
		t.Fatalf("after the interruption: pending %v", keys)
	}
	t.Setenv("AWS_MAX_ATTEMPTS", "")
	e.must(t, "cp", "--continue", "f.c4gh", url("s.c4gh"))
	sameBytes(t, "copy after an interruption", e.get(t, "s.c4gh"), enc)
	e.noUploads(t)

	if code, _, stderr := e.run(t, "cp", "--continue", url("s.c4gh"), "back.c4gh"); code != exitUsage || !strings.Contains(stderr, "--continue") {
		t.Errorf("cp --continue of a download: exit %d\n%s", code, stderr)
	}
}
