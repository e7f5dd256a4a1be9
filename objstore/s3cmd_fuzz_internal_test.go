package objstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzS3cmdConfig reads s3cmd configuration files: never a panic, and
// never an error that shows the secret key or the token, wherever in the
// file they are and whatever else it holds.
func FuzzS3cmdConfig(f *testing.F) {
	f.Add(sdaConfig, "secret", "token", uint(1))
	f.Add("[default]\naccess_key = a\nhost_base = h:9000\nuse_https = no\n", "s", "", uint(2))
	f.Add("[other]\naccess_key = a\n[default]\n", "s", "t", uint(1))
	f.Add("[default\n", "s", "t", uint(1))
	f.Add("[default]\naccess_key = a\nhost_base = u:pa/ss@h\n", "pa/ss", "t", uint(1))
	f.Add("[default]\naccess_key = a\nuse_https = maybe\n", "x", "", uint(2))
	f.Add("[default]\naccess_key = a\nhost_base = h\nbucket_location = EU\nhost_bucket = %(bucket)s.h\n", "=:#", "", uint(4))
	path := filepath.Join(f.TempDir(), "s3cfg")
	f.Fuzz(func(t *testing.T, text, secret, token string, at uint) {
		// The secrets are marked at both ends; the marks are nowhere else.
		const first, last = "Zq9", "Xj7"
		if strings.Contains(text, first) || strings.Contains(text, last) || strings.ContainsAny(secret+token, "\r\n") {
			return
		}
		// Their lines go in at line at of text.
		lines := strings.Split(text, "\n")
		at %= uint(len(lines)) + 1
		lines = append(lines[:at], append([]string{"secret_key = " + first + secret + last, "access_token = " + first + token + last}, lines[at:]...)...)
		text = strings.Join(lines, "\n")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := readS3cmdConfig(path)
		if err != nil {
			if strings.Contains(err.Error(), first) || strings.Contains(err.Error(), last) {
				t.Fatalf("the error shows a secret: %v", err)
			}
			return
		}
		if c.accessKey == "" || c.secretKey == "" || !strings.HasPrefix(c.endpoint, "http") {
			t.Fatalf("accepted %q as %+v", text, c)
		}
	})
}
