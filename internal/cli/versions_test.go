package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/c4gh-go/crypt4gh/internal/s3test"
)

// versionsOf lists the version ids of key, newest first.
func versionsOf(t *testing.T, e *s3env, key string) []string {
	t.Helper()
	out, err := e.sdk.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(testBucket), Prefix: &key})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range out.Versions {
		if aws.ToString(v.Key) == key {
			ids = append(ids, aws.ToString(v.VersionId))
		}
	}
	return ids
}

// getVersion reads one version of key.
func getVersion(t *testing.T, e *s3env, key, id string) []byte {
	t.Helper()
	out, err := e.sdk.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(testBucket), Key: &key, VersionId: &id})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := out.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return []byte(b.String())
}

// TestVersionedRekey: a rekey in place with --trim, in a bucket that
// keeps versions, leaves the previous version, which the removed key
// still opens: the command says so, and with --delete-previous-version
// deletes exactly the version it read, after the new one is committed.
func TestVersionedRekey(t *testing.T) {
	e := newS3Env(t, s3test.Versioning())
	if _, err := e.sdk.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{
		Bucket:                  aws.String(testBucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled},
	}); err != nil {
		t.Fatal(err)
	}
	e.keygen(t, "bob")
	plain := randomData(3*65536+5, 71)
	e.write(t, "plain", plain)
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "--recipient_pk", "bob.pub", "-i", "plain", "-o", url("f.c4gh"))
	first := versionsOf(t, e, "f.c4gh")
	if len(first) != 1 {
		t.Fatalf("versions after the upload: %q", first)
	}

	// --trim in place drops bob's packet: the old version still opens for bob.
	code, _, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "me.pub", "--trim", "--force", "-i", url("f.c4gh"), "-o", url("f.c4gh"))
	if code != 0 || !strings.Contains(stderr, "keeps versions") || !strings.Contains(stderr, "--delete-previous-version") || !strings.Contains(stderr, first[0]) {
		t.Fatalf("rekey in place: exit %d\n%s", code, stderr)
	}
	second := versionsOf(t, e, "f.c4gh")
	if len(second) != 2 {
		t.Fatalf("versions after the rekey: %q", second)
	}
	e.write(t, "old.c4gh", getVersion(t, e, "f.c4gh", first[0]))
	if got := e.must(t, "decrypt", "--sk", "bob.sec", "-i", "old.c4gh"); got != string(plain) {
		t.Error("the previous version does not open for bob: the test shows nothing")
	}
	if code, _, _ := e.run(t, "decrypt", "--sk", "bob.sec", "-i", url("f.c4gh"), "-o", "x"); code != 3 {
		t.Errorf("bob opens the rekeyed object: exit %d", code)
	}

	// With --delete-previous-version: the version read is deleted, the
	// new one kept, the others left alone.
	e.keygen(t, "carol")
	code, _, stderr = e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "me.pub", "--recipient_pk", "carol.pub", "--force",
		"--delete-previous-version", "-i", url("f.c4gh"), "-o", url("f.c4gh"))
	if code != 0 || !strings.Contains(stderr, "deleted the previous version "+second[0]) {
		t.Fatalf("rekey with --delete-previous-version: exit %d\n%s", code, stderr)
	}
	third := versionsOf(t, e, "f.c4gh")
	if len(third) != 2 || third[1] != first[0] || third[0] == second[0] {
		t.Errorf("versions %q after deleting %s of %q", third, second[0], second)
	}
	if got := e.must(t, "decrypt", "--sk", "carol.sec", "-i", url("f.c4gh")); got != string(plain) {
		t.Error("the new version does not open for carol")
	}

	// --add removes nothing: no word about the previous version.
	e.keygen(t, "dave")
	code, _, stderr = e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "dave.pub", "--add", "--force", "-i", url("f.c4gh"), "-o", url("f.c4gh"))
	if code != 0 || strings.Contains(stderr, "previous version") {
		t.Errorf("--add in place: exit %d\n%s", code, stderr)
	}
}

// TestUnversionedRekey: a bucket without versions gets no warning.
func TestUnversionedRekey(t *testing.T) {
	e := newS3Env(t)
	e.write(t, "plain", randomData(1000, 72))
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "plain", "-o", url("f.c4gh"))
	code, _, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "me.pub", "--trim", "--force", "-i", url("f.c4gh"), "-o", url("f.c4gh"))
	if code != 0 || strings.Contains(stderr, "version") {
		t.Errorf("rekey in place, no versions: exit %d\n%s", code, stderr)
	}
}
