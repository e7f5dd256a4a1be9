package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/s3test"
)

// TestCABundle: a store whose certificate comes from an authority of the
// user's own, as an archive's own store's often does, named by
// AWS_CA_BUNDLE (the SDK's variable): an upload of several parts (their
// completion goes through the client that waits longer for an answer), a
// download, a server-side copy and a listing work. Without the variable
// the certificate is refused, exit 1, and nothing is written.
func TestCABundle(t *testing.T) {
	e := newS3EnvParallel(t, s3test.TLS())
	var env []string
	for _, kv := range e.env {
		if !strings.HasPrefix(kv, "AWS_ENDPOINT_URL_S3=") {
			env = append(env, kv)
		}
	}
	e.env = append(env, "AWS_ENDPOINT_URL_S3="+e.srv.Endpoint)
	plain := randomData(17*MiB, 7)
	e.write(t, "plain", plain)

	code, _, stderr := e.run(t, "encrypt", "--recipient_pk", "me.pub", "-i", "plain", "-o", url("refused.c4gh"))
	if code != exitError || !strings.Contains(stderr, "certificate") || !strings.Contains(stderr, "hint: the server's certificate is not trusted here") || strings.Contains(stderr, "attempts") {
		t.Errorf("without AWS_CA_BUNDLE: exit %d, want %d and the certificate named\n%s", code, exitError, stderr)
	}
	if e.exists(t, "refused.c4gh") {
		t.Error("an object was written through a certificate that was refused")
	}

	e.env = append(e.env, "AWS_CA_BUNDLE="+e.srv.CAFile)
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "-i", "plain", "-o", url("plain.c4gh"))
	e.must(t, "decrypt", "--sk", "me.sec", "-i", url("plain.c4gh"), "-o", "back")
	sameBytes(t, "decrypted through https", e.read(t, "back"), plain)
	e.must(t, "cp", url("plain.c4gh"), url("copy.c4gh"))
	sameBytes(t, "the server-side copy", e.get(t, "copy.c4gh"), e.get(t, "plain.c4gh"))
	if out := e.must(t, "ls", url("")); !strings.Contains(out, "copy.c4gh") || !strings.Contains(out, "plain.c4gh") {
		t.Errorf("ls printed\n%s", out)
	}
	e.noUploads(t)

	// The same authority named by ca_certs_file in an s3cmd
	// configuration file (--s3-config), without the variable.
	e.env = env
	conf := fmt.Sprintf("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\nuse_https = True\nca_certs_file = %s\n",
		e.srv.AccessKey, e.srv.SecretKey, e.srv.Addr, e.srv.Addr, e.srv.CAFile)
	e.write(t, "s3cmd.conf", []byte(conf))
	os.Chmod(filepath.Join(e.dir, "s3cmd.conf"), 0o600)
	e.must(t, "decrypt", "--s3-config", "s3cmd.conf", "--sk", "me.sec", "-i", url("copy.c4gh"), "-o", "back2")
	sameBytes(t, "decrypted with ca_certs_file", e.read(t, "back2"), plain)

	// An https:// input trusts the system's authorities, and
	// SSL_CERT_FILE's (Go's variable): refused at once without it, with
	// the hint; with it, the store answers (403: the URL is not
	// presigned).
	u := e.srv.Endpoint + "/" + testBucket + "/plain.c4gh"
	code, _, stderr = e.run(t, "inspect", u)
	if code != exitError || !strings.Contains(stderr, "SSL_CERT_FILE") || strings.Contains(stderr, "attempts") {
		t.Errorf("an https:// input of an authority not trusted: exit %d\n%s", code, stderr)
	}
	e.env = append(env, "SSL_CERT_FILE="+e.srv.CAFile)
	if code, _, stderr = e.run(t, "inspect", u); code != exitKey || strings.Contains(stderr, "certificate") {
		t.Errorf("an https:// input with SSL_CERT_FILE: exit %d, want %d (403)\n%s", code, exitKey, stderr)
	}

	// A bundle that holds no certificate, or is not there: a one-line
	// error that names it, before any request.
	e.write(t, "empty.pem", []byte("no certificate here\n"))
	for _, bundle := range []string{"empty.pem", "missing.pem"} {
		e.env = append(env, "AWS_CA_BUNDLE="+filepath.Join(e.dir, bundle))
		code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "-i", url("plain.c4gh"), "-o", "never")
		if code == 0 || !strings.Contains(stderr, "AWS_CA_BUNDLE") || strings.Count(strings.TrimSpace(stderr), "\n") > 1 {
			t.Errorf("AWS_CA_BUNDLE=%s: exit %d\n%s", bundle, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(e.dir, "never")); err == nil {
			t.Errorf("AWS_CA_BUNDLE=%s: an output was written", bundle)
		}
	}
	// The same named by ca_bundle in the profile: a usage error (exit
	// 2) with the same hint, not one about keys.
	config := filepath.Join(e.dir, "ca-config")
	if err := os.WriteFile(config, []byte("[default]\nregion = us-east-1\nca_bundle = "+filepath.Join(e.dir, "missing.pem")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = append(env, "AWS_CONFIG_FILE="+config)
	code, _, stderr = e.run(t, "decrypt", "--sk", "me.sec", "-i", url("plain.c4gh"), "-o", "never")
	if code != exitUsage || !strings.Contains(stderr, "missing.pem") || !strings.Contains(stderr, "ca_bundle in the profile") {
		t.Errorf("ca_bundle of a file that is not there: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
}
