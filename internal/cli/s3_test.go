package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/resume"
	"github.com/c4gh-go/crypt4gh/internal/s3test"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The tests of this file run the command in process against a real S3
// server (versitygw, see internal/s3test), through a proxy that counts
// the bytes and injects faults. The command finds the server as a user
// does: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_ENDPOINT_URL_S3
// (or --s3-config).

const testBucket = "test-bucket"

const MiB = 1 << 20

// s3env is a server with a bucket, a proxy in front of it, a folder with
// a key pair (me.sec, me.pub) and the environment that points the command
// at the proxy.
type s3env struct {
	srv  *s3test.Server
	px   *s3test.Proxy
	sdk  *s3.Client // straight to the server
	dir  string
	sk   *keys.SecretKey
	conf string // an s3cmd configuration file for the proxy
	// env, when set, holds the variables that point the command at the
	// proxy, and the commands run as processes of their own with them
	// (newS3EnvParallel); else they are the test's (newS3Env).
	env []string
}

func newS3Env(t *testing.T, opts ...s3test.Option) *s3env {
	t.Helper()
	s3test.IsolateEnv(t)
	srv := s3test.Start(t, opts...)
	srv.Bucket(t, testBucket)
	px := s3test.NewProxy(t, srv.Addr)
	e := &s3env{srv: srv, px: px, sdk: srv.SDK(), dir: t.TempDir(), conf: srv.S3Config(t, px.Addr)}
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_ENDPOINT_URL_S3", px.Endpoint())
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv(secretKeyEnv, "")
	t.Setenv(passphraseEnv, "")
	e.sk = e.keygen(t, "me")
	return e
}

// newS3EnvParallel is newS3Env for a test that runs in parallel with
// others: the variables are not the test process's but each command's,
// which runs as a child process (run, must, child). The test must not
// run the command in process.
func newS3EnvParallel(t *testing.T, opts ...s3test.Option) *s3env {
	t.Helper()
	t.Parallel()
	srv := s3test.Start(t, opts...)
	srv.Bucket(t, testBucket)
	px := s3test.NewProxy(t, srv.Addr)
	e := &s3env{srv: srv, px: px, sdk: srv.SDK(), dir: t.TempDir(), conf: srv.S3Config(t, px.Addr)}
	aws := t.TempDir()
	e.env = []string{
		"AWS_CONFIG_FILE=" + filepath.Join(aws, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(aws, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + srv.SecretKey,
		"AWS_ENDPOINT_URL_S3=" + px.Endpoint(),
		"AWS_REGION=us-east-1",
		secretKeyEnv + "=",
		passphraseEnv + "=",
	}
	e.sk = e.keygen(t, "me")
	return e
}

// environ is the environment of a child command: the test process's
// without its AWS settings, then e.env.
func (e *s3env) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(append(env, childEnv+"=1"), e.env...)
}

// shortIdle makes the commands give up on a request after 2 s without
// an answer (shortIdle for the test's own process).
func (e *s3env) shortIdle(t *testing.T) {
	if e.env == nil {
		shortIdle(t)
		return
	}
	e.env = append(e.env, storeEnv+"=2s")
}

// keygen makes the key pair NAME.sec, NAME.pub in the folder.
func (e *s3env) keygen(t *testing.T, name string) *keys.SecretKey {
	t.Helper()
	if e.env == nil {
		return keygenIn(t, e.dir, name)
	}
	mustRun(t, e.dir, "keygen", "--sk", name+".sec", "--pk", name+".pub", "--nocrypt")
	return readKey(t, e.dir, name)
}

// keygenIn makes the key pair NAME.sec, NAME.pub, without passphrase, in
// dir and returns the secret key.
func keygenIn(t *testing.T, dir, name string) *keys.SecretKey {
	t.Helper()
	if code, _, stderr := runIn(t, dir, "keygen", "--sk", name+".sec", "--pk", name+".pub", "--nocrypt"); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	return readKey(t, dir, name)
}

// run runs the command in the folder.
func (e *s3env) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	if e.env == nil {
		return runIn(t, e.dir, args...)
	}
	cmd := e.child(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return exitOf(t, cmd), stdout.String(), stderr.String()
}

// must runs the command and fails the test unless it succeeds.
func (e *s3env) must(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := e.run(t, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return stdout
}

// url is the s3:// URL of key in the bucket.
func url(key string) string { return "s3://" + testBucket + "/" + key }

// put stores data at key with the plain SDK.
func (e *s3env) put(t *testing.T, key string, data []byte) string {
	t.Helper()
	return e.srv.Put(t, testBucket, key, data)
}

// get reads key with the plain SDK; nil if it does not exist.
func (e *s3env) get(t *testing.T, key string) []byte {
	t.Helper()
	return e.srv.Get(t, testBucket, key)
}

// exists reports whether key exists.
func (e *s3env) exists(t *testing.T, key string) bool {
	t.Helper()
	_, err := e.sdk.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: &key})
	return err == nil
}

// noUploads fails the test if a multipart upload is pending.
func (e *s3env) noUploads(t *testing.T) {
	t.Helper()
	e.srv.NoUploads(t, testBucket)
}

// write writes data to name in the folder.
func (e *s3env) write(t *testing.T, name string, data []byte) {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// read reads name in the folder.
func (e *s3env) read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decryptBytes decrypts a crypt4gh file with sk.
func decryptBytes(t *testing.T, file []byte, sk *keys.SecretKey) []byte {
	t.Helper()
	r, err := c4gh.NewReader(bytes.NewReader(file), sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// encryptBytes encrypts plain for sk's public key.
func encryptBytes(t *testing.T, plain []byte, sk *keys.SecretKey) []byte {
	t.Helper()
	var out bytes.Buffer
	if _, err := c4gh.Encrypt(&out, bytes.NewReader(plain), c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// randomData returns n bytes that depend on seed only.
func randomData(n int, seed uint64) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 's', '3'}).Read(b)
	return b
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %d bytes, want %d; first difference at %d", what, len(got), len(want), i)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestS3RoundTrip encrypts files to objects and decrypts them back, at
// the sizes around a segment and a part: local → s3 → local. It checks
// the cross paths too: an object that encrypt wrote decrypts after a plain
// download, and a file encrypted locally and uploaded plainly decrypts
// from s3://; and --checksum prints the sums of the bytes on both sides.
//
// 200 MiB runs only without -race and -short: the race detector makes it
// take minutes on the 2 cores of CI.
func TestS3RoundTrip(t *testing.T) {
	e := newS3EnvParallel(t)
	sizes := []int{0, 1, 65536, 65537, 5*MiB - 1, 5 * MiB, 5*MiB + 1, 17 * MiB}
	if !raceEnabled && clitest.AtScale() {
		sizes = append(sizes, 200*MiB)
	}
	for i, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			plain := randomData(n, uint64(i))
			name := fmt.Sprintf("plain-%d", n)
			e.write(t, name, plain)
			key := name + ".c4gh"
			out := e.must(t, "encrypt", "--recipient_pk", "me.pub", "--checksum", "-i", name, "-o", url(key))
			stored := e.get(t, key)
			if want := sha256Hex(plain) + "  " + name + "\n" + sha256Hex(stored) + "  " + url(key) + "\n"; out != want {
				t.Errorf("encrypt --checksum printed\n%swant\n%s", out, want)
			}
			// Downloaded plainly, it decrypts.
			sameBytes(t, "plain download, decrypted", decryptBytes(t, stored, e.sk), plain)
			back := name + ".back"
			out = e.must(t, "decrypt", "--sk", "me.sec", "--checksum", "-i", url(key), "-o", back)
			if want := sha256Hex(plain) + "  " + back + "\n" + sha256Hex(stored) + "  " + url(key) + "\n"; out != want {
				t.Errorf("decrypt --checksum printed\n%swant\n%s", out, want)
			}
			sameBytes(t, "decrypted from s3", e.read(t, back), plain)
			if fi, err := os.Stat(filepath.Join(e.dir, back)); err != nil || fi.Mode().Perm() != outfile.ModeSecret {
				t.Errorf("decrypted file: %v, %v", fi.Mode(), err)
			}
			if n > 20*MiB {
				return
			}
			// Encrypted here, uploaded plainly: it decrypts from s3://.
			e.put(t, "plain-upload-"+key, encryptBytes(t, plain, e.sk))
			e.must(t, "decrypt", "--sk", "me.sec", "-i", url("plain-upload-"+key), "-o", back+"2")
			sameBytes(t, "plain upload, decrypted from s3", e.read(t, back+"2"), plain)
		})
	}
	e.noUploads(t)
}

// TestS3Exists checks that an object is not replaced without --force, and
// is with it.
func TestS3Exists(t *testing.T) {
	e := newS3Env(t)
	e.write(t, "p", []byte("plaintext"))
	e.put(t, "x.c4gh", []byte("there before"))
	code, _, stderr := e.run(t, "encrypt", "--recipient_pk", "me.pub", "-i", "p", "-o", url("x.c4gh"))
	if code != exitUsage || !strings.Contains(stderr, "object exists") || !strings.Contains(stderr, "crypt4gh: hint: use --force") {
		t.Errorf("encrypt over an object: exit %d\n%s", code, stderr)
	}
	if got := e.get(t, "x.c4gh"); string(got) != "there before" {
		t.Errorf("the object was replaced: %q", got)
	}
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "--force", "-i", "p", "-o", url("x.c4gh"))
	sameBytes(t, "replaced", decryptBytes(t, e.get(t, "x.c4gh"), e.sk), []byte("plaintext"))
	e.noUploads(t)
}

// TestS3Errors checks the exit codes and hints of object storage errors,
// and that no secret is printed.
func TestS3Errors(t *testing.T) {
	e := newS3Env(t)
	e.write(t, "p", []byte("plaintext"))
	e.put(t, "x.c4gh", encryptBytes(t, []byte("plaintext"), e.sk))
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		code  int
		wants []string
	}{
		{"missing object", nil, []string{"decrypt", "--sk", "me.sec", "-i", url("nothing.c4gh"), "-o", "out"}, exitUsage,
			[]string{"no such object", url("nothing.c4gh")}},
		{"missing bucket", nil, []string{"decrypt", "--sk", "me.sec", "-i", "s3://no-such-bucket/x.c4gh", "-o", "out"}, exitUsage,
			[]string{"no such bucket", "crypt4gh: hint: endpoint "}},
		{"wrong secret", []string{"AWS_SECRET_ACCESS_KEY=wrong-secret-value"}, []string{"decrypt", "--sk", "me.sec", "-i", url("x.c4gh"), "-o", "out"}, exitKey,
			[]string{"access denied", "crypt4gh: hint: credentials from environment variables"}},
		{"unknown access key", []string{"AWS_ACCESS_KEY_ID=AKNOSUCHKEY0000"}, []string{"encrypt", "--recipient_pk", "me.pub", "-i", "p", "-o", url("y.c4gh")}, exitKey,
			[]string{"access denied", "crypt4gh: hint: credentials from"}},
		{"no credentials", []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY="}, []string{"inspect", url("x.c4gh")}, exitKey,
			[]string{"no credentials found", "crypt4gh: hint: set AWS_ACCESS_KEY_ID"}},
		{"credentials in the URL", nil, []string{"inspect", "s3://AKID:supersecret@" + testBucket + "/x.c4gh"}, exitUsage,
			[]string{"credentials in a URL are refused"}},
		{"password in an https URL", nil, []string{"decrypt", "--sk", "me.sec", "-i", "https://user:supersecret@example.com/x.c4gh", "-o", "out"}, exitUsage,
			[]string{"credentials in a URL are refused"}},
		{"password in the endpoint", []string{"AWS_ENDPOINT_URL_S3=http://user:supersecret@127.0.0.1:1"}, []string{"inspect", url("x.c4gh")}, exitUsage,
			[]string{"an endpoint URL with credentials in it (user:password@) is refused"}},
		{"password with a / in the endpoint", []string{"AWS_ENDPOINT_URL_S3=http://AKIDEXAMPLE:supersecret/wJalr@127.0.0.1:1"}, []string{"inspect", url("x.c4gh")}, exitUsage,
			[]string{"an endpoint URL with credentials in it (user:password@) is refused"}},
		{"a signature in the endpoint's query", []string{"AWS_ENDPOINT_URL_S3=http://127.0.0.1:1/?X-Amz-Signature=supersecret"}, []string{"inspect", url("x.c4gh")}, exitUsage,
			[]string{"an endpoint URL with a query or a fragment is refused"}},
		{"an ftp endpoint", []string{"AWS_ENDPOINT_URL_S3=ftp://127.0.0.1:1"}, []string{"inspect", url("x.c4gh")}, exitUsage,
			[]string{"not an http:// or https:// URL"}},
		{"an endpoint's port out of range", []string{"AWS_ENDPOINT_URL_S3=http://127.0.0.1:99999"}, []string{"inspect", url("x.c4gh")}, exitUsage,
			[]string{`port "99999" of the endpoint URL is not a port`}},
		{"plain http elsewhere", nil, []string{"inspect", "http://example.com/x.c4gh"}, exitUsage,
			[]string{"plain http is accepted only to a loopback address"}},
		{"prefix as -i", nil, []string{"decrypt", "--sk", "me.sec", "-i", url("dir/"), "-o", "out"}, exitUsage,
			[]string{"is a prefix, not an object"}},
		{"network down", []string{"AWS_ENDPOINT_URL_S3=http://127.0.0.1:1", "AWS_MAX_ATTEMPTS=2"}, []string{"decrypt", "--sk", "me.sec", "-i", url("x.c4gh"), "-o", "out"}, exitError,
			[]string{"connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range tc.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			code, stdout, stderr := e.run(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			for _, w := range tc.wants {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, secret := range []string{e.srv.SecretKey, "supersecret", "wrong-secret-value"} {
				if strings.Contains(stdout+stderr, secret) {
					t.Errorf("a secret was printed:\n%s%s", stdout, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(e.dir, "out")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("an output was left: %v", err)
			}
		})
	}
}

// TestS3Config reads the credentials and endpoint from --s3-config alone.
func TestS3Config(t *testing.T) {
	e := newS3Env(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	plain := randomData(300000, 7)
	e.write(t, "p", plain)
	e.must(t, "encrypt", "--s3-config", e.conf, "--recipient_pk", "me.pub", "-i", "p", "-o", url("conf.c4gh"))
	e.must(t, "decrypt", "--s3-config", e.conf, "--sk", "me.sec", "-i", url("conf.c4gh"), "-o", "back")
	sameBytes(t, "round trip with --s3-config", e.read(t, "back"), plain)
	out := e.must(t, "inspect", "--s3-config", e.conf, url("conf.c4gh"))
	if !strings.Contains(out, "file:") || !strings.Contains(out, url("conf.c4gh")) || !strings.Contains(out, "body:") {
		t.Errorf("inspect printed\n%s", out)
	}
	if code, _, stderr := e.run(t, "inspect", url("conf.c4gh")); code != exitKey {
		t.Errorf("without --s3-config or AWS variables: exit %d\n%s", code, stderr)
	}
}

// runChild starts the command as a process of the test binary, in the
// folder of e, with the environment of the test.
func (e *s3env) child(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), childEnv+"=1")
	if e.env != nil {
		cmd.Env = e.environ()
	}
	return cmd
}

// waitFor polls cond every 10 ms for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestS3Streams covers the other ways in and out of objects: stdin to an
// object (of unknown size), encrypt --range of an object, --header to an
// object, decrypt of an object to stdout, and an object that is not a
// crypt4gh file.
func TestS3Streams(t *testing.T) {
	e := newS3Env(t)
	plain := randomData(300000, 81)
	t.Chdir(e.dir)
	var stdout, stderr bytes.Buffer
	code := Run([]string{"crypt4gh", "encrypt", "--recipient_pk", "me.pub", "-o", url("stdin.c4gh")}, bytes.NewReader(plain), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("encrypt from stdin: exit %d\n%s", code, stderr.String())
	}
	sameBytes(t, "from stdin", decryptBytes(t, e.get(t, "stdin.c4gh"), e.sk), plain)

	e.put(t, "plain", plain)
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "--range", "1000-200000", "-i", url("plain"), "-o", url("ranged.c4gh"))
	sameBytes(t, "encrypt --range of an object", decryptBytes(t, e.get(t, "ranged.c4gh"), e.sk), plain[1000:200000])
	if code, _, stderr := e.run(t, "encrypt", "--recipient_pk", "me.pub", "--range", "300000-300001", "-i", url("plain"), "-o", "x"); code != exitUsage || !strings.Contains(stderr, "beyond") {
		t.Errorf("encrypt --range past the end of an object: exit %d\n%s", code, stderr)
	}

	e.must(t, "encrypt", "--recipient_pk", "me.pub", "--header", url("split.hdr"), "-i", url("plain"), "-o", url("split.body"))
	sameBytes(t, "--header to an object", decryptBytes(t, append(e.get(t, "split.hdr"), e.get(t, "split.body")...), e.sk), plain)

	out := e.must(t, "decrypt", "--sk", "me.sec", "-i", url("stdin.c4gh"), "-o", "-")
	sameBytes(t, "decrypted to stdout", []byte(out), plain)

	code, _, errOut := e.run(t, "decrypt", "--sk", "me.sec", "-i", url("plain"), "-o", "out")
	if code != exitData || !strings.Contains(errOut, "not a crypt4gh file") {
		t.Errorf("decrypt of a plain object: exit %d\n%s", code, errOut)
	}
}

// TestS3ResumeComplete: a partial output that holds all of the plaintext
// (the run was stopped before its commit) is committed as it is.
func TestS3ResumeComplete(t *testing.T) {
	e := newS3Env(t)
	plain := randomData(3*65536, 82) // whole segments
	enc := encryptBytes(t, plain, e.sk)
	etag := e.put(t, "full.c4gh", enc)
	h := len(enc) - (len(plain)/65536)*65564
	e.write(t, ".out"+resume.Suffix, plain)
	urlSum := sha256.Sum256([]byte(url("full.c4gh")))
	e.write(t, ".out"+resume.RecordSuffix, []byte(fmt.Sprintf(`{"source":%q,"url_sha256":"%x","etag":%q,"strong":true,"size":%d,"header_size":%d,"plaintext":%d,"boot_id":""}`,
		url("full.c4gh"), urlSum, etag, len(enc), h, len(plain))))
	e.px.Zero()
	_, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("full.c4gh"), "-o", "out")
	sameBytes(t, "committed", e.read(t, "out"), plain)
	if !strings.Contains(stderr, "resuming") || e.px.Down() > 256<<10 {
		t.Errorf("%d bytes fetched to finish; stderr:\n%s", e.px.Down(), stderr)
	}
}
