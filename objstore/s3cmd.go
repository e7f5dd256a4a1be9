package objstore

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// s3cmdConfig is what a Client takes from an s3cmd configuration file.
type s3cmdConfig struct {
	accessKey, secretKey, token string
	endpoint                    string // scheme://host[:port]
	pathStyle                   bool
	region                      string
	caFile                      string // ca_certs_file: PEM roots for https
}

// maxS3cmdConfig bounds the file read: real ones are a few hundred bytes.
const maxS3cmdConfig = 1 << 20

// readS3cmdConfig reads the [default] section of an s3cmd configuration
// file. Errors name the file and the line, never a value.
func readS3cmdConfig(path string) (*s3cmdConfig, error) {
	fail := func(err error) error {
		return &Error{Op: "read", Location: "s3cmd configuration file " + path, Err: err}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fail(errkind.Wrap(errkind.Key, err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxS3cmdConfig+1))
	if err != nil {
		return nil, fail(err)
	}
	if len(b) > maxS3cmdConfig {
		return nil, fail(errkind.Errorf(errkind.Usage, "larger than %d bytes", maxS3cmdConfig))
	}
	values, err := parseS3cmdConfig(b)
	if err != nil {
		return nil, fail(err)
	}
	c := &s3cmdConfig{
		accessKey: values["access_key"],
		secretKey: values["secret_key"],
		token:     values["access_token"],
	}
	if c.token == "" {
		c.token = values["security_token"]
	}
	if c.accessKey == "" || c.secretKey == "" {
		return nil, fail(&detailed{sentinel: ErrNoCredentials, detail: "no access_key or secret_key in the [default] section"})
	}
	host := values["host_base"]
	if host == "" {
		host = "s3.amazonaws.com"
	}
	if strings.Contains(host, "://") || strings.ContainsAny(host, "/@ ") {
		// The value is not shown: a user name and password before
		// an @ are secrets.
		return nil, fail(errkind.Errorf(errkind.Usage, "host_base is not a host name with an optional port (it holds %s)", oddPart(host)))
	}
	https := true
	if v, ok := values["use_https"]; ok {
		if https, ok = parseBool(v); !ok {
			return nil, fail(errkind.Errorf(errkind.Usage, "use_https %q is not True or False", v))
		}
	}
	c.endpoint = "https://" + host
	if !https {
		c.endpoint = "http://" + host
	}
	c.caFile = values["ca_certs_file"]
	c.pathStyle = !strings.Contains(values["host_bucket"], "%(bucket)s")
	switch r := values["bucket_location"]; r {
	case "", "US", "us":
	case "EU":
		c.region = "eu-west-1"
	default:
		c.region = r
	}
	return c, nil
}

// parseS3cmdConfig returns the key = value pairs of the [default] section,
// the section s3cmd reads. Lines are "key = value" (or "key: value"),
// comments start with # or ;.
func parseS3cmdConfig(b []byte) (map[string]string, error) {
	values := map[string]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxS3cmdConfig)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return nil, errkind.Errorf(errkind.Usage, "line %d: malformed section header", n)
			}
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		if section != "default" {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			return nil, errkind.Errorf(errkind.Usage, "line %d: want key = value", n)
		}
		key := strings.ToLower(strings.TrimSpace(line[:i]))
		values[key] = strings.TrimSpace(line[i+1:])
	}
	if err := sc.Err(); err != nil {
		return nil, errkind.Errorf(errkind.Usage, "failed to parse: %w", err)
	}
	return values, nil
}

func parseBool(s string) (v, ok bool) {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

// oddPart names what makes host_base no host name, without its value.
func oddPart(host string) string {
	switch {
	case strings.Contains(host, "@"):
		return "a user name or password before an @"
	case strings.Contains(host, "://"):
		return "a scheme: use use_https for it"
	case strings.Contains(host, "/"):
		return "a path"
	}
	return "a space"
}
