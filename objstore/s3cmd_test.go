package objstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// An s3cmd configuration of the kind the NeIC sda-cli hands out.
const sdaConfig = `[default]
access_key = someuser@example.org
secret_key = someuser@example.org
access_token = eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJzb21ldXNlciJ9.c2lnbmF0dXJl
check_ssl_certificate = False
check_ssl_hostname = False
encoding = UTF-8
encrypt = False
guess_mime_type = True
host_base = inbox.example.org
host_bucket = inbox.example.org
human_readable_sizes = True
multipart_chunk_size_mb = 50
use_https = True
socket_timeout = 30
`

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s3cmd.conf")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestS3cmdConfig(t *testing.T) {
	c, err := readS3cmdConfig(writeConfig(t, sdaConfig))
	if err != nil {
		t.Fatal(err)
	}
	want := s3cmdConfig{
		accessKey: "someuser@example.org", secretKey: "someuser@example.org",
		token:    "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJzb21ldXNlciJ9.c2lnbmF0dXJl",
		endpoint: "https://inbox.example.org", pathStyle: true,
	}
	if *c != want {
		t.Fatalf("got %+v\nwant %+v", *c, want)
	}

	c, err = readS3cmdConfig(writeConfig(t, `# s3cmd --configure
[other]
access_key = nope
[default]
access_key: AK
secret_key=SK
host_base = localhost:9000
host_bucket = %(bucket)s.localhost:9000
use_https = no
bucket_location = eu-north-1
`))
	if err != nil {
		t.Fatal(err)
	}
	want = s3cmdConfig{accessKey: "AK", secretKey: "SK", endpoint: "http://localhost:9000", region: "eu-north-1"}
	if *c != want {
		t.Fatalf("got %+v\nwant %+v", *c, want)
	}

	secret := "very-secret-value"
	for _, tc := range []struct {
		text string
		want error
		kind errkind.Kind
	}{
		{"[default]\naccess_key = AK\n", ErrNoCredentials, errkind.Key},
		{"[default]\naccess_key = AK\nsecret_key " + secret + "\n", nil, errkind.Usage},
		{"[default\naccess_key = AK\n", nil, errkind.Usage},
		{"[default]\naccess_key = AK\nsecret_key = " + secret + "\nuse_https = maybe\n", nil, errkind.Usage},
		{"[default]\naccess_key = AK\nsecret_key = " + secret + "\nhost_base = https://x\n", nil, errkind.Usage},
	} {
		_, err := readS3cmdConfig(writeConfig(t, tc.text))
		if err == nil {
			t.Errorf("%q: no error", tc.text)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) || errkind.Of(err) != tc.kind {
			t.Errorf("%q: %v (%v)", tc.text, err, errkind.Of(err))
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows the secret: %v", err)
		}
	}
	_, err = readS3cmdConfig(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, os.ErrNotExist) || errkind.Of(err) != errkind.Key {
		t.Errorf("missing file: %v", err)
	}
}
