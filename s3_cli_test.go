//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/internal/s3test"
)

// s3Env starts a versitygw with a bucket and returns the environment that
// points the built command at it, as a user sets it.
func s3Env(t *testing.T) (*s3test.Server, []string) {
	t.Helper()
	s3test.IsolateEnv(t)
	srv := s3test.Start(t)
	srv.Bucket(t, "cli-bucket")
	var env []string
	for _, kv := range cleanEnv() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	dir := t.TempDir()
	return srv, append(env,
		"AWS_ACCESS_KEY_ID="+srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY="+srv.SecretKey,
		"AWS_ENDPOINT_URL_S3="+srv.Endpoint,
		"AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE="+filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
	)
}

// TestS3Command runs the built binary against versitygw: encrypt a file
// to an object, decrypt it back, and mount the prefix, where the object
// reads as its plaintext, until SIGTERM unmounts it.
func TestS3Command(t *testing.T) {
	// The server first: with -short it skips the test before the binary
	// is built, which the parallel tests would otherwise wait for.
	srv, env := s3Env(t)
	e := newSafetyEnv(t)
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(e.bin, args...)
		cmd.Env = env
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		return string(out)
	}
	pk, err := filepath.Abs(e.pk)
	if err != nil {
		t.Fatal(err)
	}
	e.pk = pk
	plain := randomBytes(3<<20+17, 41)
	os.WriteFile(filepath.Join(dir, "plain"), plain, 0o600)
	run("encrypt", "--recipient_pk", e.pk, "-i", "plain", "-o", "s3://cli-bucket/data/reads.bam.c4gh")
	run("decrypt", "--sk", e.sk, "-i", "s3://cli-bucket/data/reads.bam.c4gh", "-o", "back")
	if got, _ := os.ReadFile(filepath.Join(dir, "back")); !bytes.Equal(got, plain) {
		t.Fatalf("round trip through s3: %d bytes, not the plaintext", len(got))
	}
	if _, err := srv.SDK().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("cli-bucket"),
		Key: aws.String("data/sub/notes.txt"), Body: strings.NewReader("plain notes")}); err != nil {
		t.Fatal(err)
	}

	requireFUSE(t)
	mp := filepath.Join(dir, "mnt")
	os.Mkdir(mp, 0o700)
	m, got := startMount(t, e.bin, env, mp, "reads.bam", "--sk", e.sk, "s3://cli-bucket/data/", mp)
	if !bytes.Equal(got, plain) {
		t.Errorf("mounted reads.bam: %d bytes, not the plaintext", len(got))
	}
	if b, err := os.ReadFile(filepath.Join(mp, "sub", "notes.txt")); err != nil || string(b) != "plain notes" {
		t.Errorf("sub/notes.txt: %q, %v", b, err)
	}
	m.stop(t)
	if strings.Contains(m.stderr.String(), srv.SecretKey) {
		t.Errorf("the secret key was printed:\n%s", m.stderr.String())
	}
}
