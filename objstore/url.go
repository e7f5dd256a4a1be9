package objstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Location names an object (s3://BUCKET/KEY), a prefix of objects
// (s3://BUCKET/ or s3://BUCKET/PREFIX/), or a resource on a web server
// (https://..., or http:// to a loopback address) read with range
// requests, such as a presigned URL.
type Location struct {
	Bucket string // for s3:// locations
	Key    string // for s3:// locations: the key, or a prefix ending in "/" (or "")
	URL    string // for http(s):// locations: the whole URL, query included
}

// IsURL reports whether s is meant as a URL rather than a file name: it
// starts with s3://, https:// or http:// (in any case). Parse says whether
// it is a valid one.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "s3", "https", "http":
		return true
	}
	return false
}

// maxKeyLen is the longest key S3 accepts, in bytes.
const maxKeyLen = 1024

// Parse parses s3://BUCKET/KEY, s3://BUCKET/PREFIX/, s3://BUCKET,
// https://HOST/PATH and http://LOOPBACK/PATH. The key of an s3:// URL is
// taken as it is written, without percent-decoding, as the AWS command
// line does. A URL with credentials in it (user:password@) is refused, and
// so is plain http to anything but a loopback address, so that neither a
// secret nor the data crosses a network in the clear. Errors wrap
// ErrInvalidURL and never repeat a password.
func Parse(s string) (Location, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return Location{}, invalidURL(shownRaw(s), "no scheme: want s3://, https:// or http://")
	}
	switch strings.ToLower(scheme) {
	case "s3":
		return parseS3(s, rest)
	case "https", "http":
		return parseHTTP(s)
	}
	return Location{}, invalidURL(shownRaw(s), fmt.Sprintf("unsupported scheme %q: want s3://, https:// or http://", scheme))
}

func parseS3(s, rest string) (Location, error) {
	bucket, key, _ := strings.Cut(rest, "/")
	// user:password@ before the bucket; a / in the password ends the
	// bucket inside it (no bucket name holds a colon).
	if s3Credentials(rest) {
		return Location{}, invalidURL(displayS3(s), "credentials in a URL are refused: use the environment, the AWS files or an s3cmd configuration file")
	}
	if bucket == "" {
		return Location{}, invalidURL(shownRaw(s), "no bucket name")
	}
	if err := checkBucket(bucket); err != nil {
		return Location{}, invalidURL(shownRaw(s), err.Error())
	}
	if len(key) > maxKeyLen {
		return Location{}, invalidURL(shownRaw(s), fmt.Sprintf("key longer than %d bytes", maxKeyLen))
	}
	if !utf8.ValidString(key) {
		return Location{}, invalidURL(shownRaw(s), "key is not valid UTF-8")
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return Location{}, invalidURL(shownRaw(s), "key has a control character")
		}
	}
	return Location{Bucket: bucket, Key: key}, nil
}

// s3Credentials reports whether rest, an s3:// URL after its scheme, may
// start with user:password@: its bucket holds an @, or a colon (no bucket
// name holds either) with an @ after it (a / in the password ends the
// bucket inside it).
func s3Credentials(rest string) bool {
	bucket, key, _ := strings.Cut(rest, "/")
	return strings.Contains(bucket, "@") || (strings.Contains(bucket, ":") && strings.Contains(key, "@"))
}

// checkBucket accepts the names S3 and the common S3-compatible stores
// accept: 3 to 63 letters, digits, dots, hyphens and underscores (the
// last two and capitals only for older buckets), starting and ending with
// a letter or digit.
func checkBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must be 3 to 63 characters long", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && c != '.' && c != '-' && c != '_' {
			return fmt.Errorf("bucket name %q has a character that is not a letter, digit, '.', '-' or '_'", b)
		}
		if !alnum && (i == 0 || i == len(b)-1) {
			return fmt.Errorf("bucket name %q must start and end with a letter or a digit", b)
		}
	}
	return nil
}

func parseHTTP(s string) (Location, error) {
	u, err := url.Parse(s)
	if err != nil {
		// A url.Error repeats the URL, password included: give only why,
		// unless that may show a part of a password (a port that is
		// none: user:pa/ss@host).
		var ue *url.Error
		if errors.As(err, &ue) && !strings.Contains(s, "@") {
			return Location{}, invalidURL(displayRaw(s), ue.Err.Error())
		}
		return Location{}, invalidURL(displayRaw(s), "malformed URL")
	}
	if u.User != nil || portPassword(s, u) {
		return Location{}, invalidURL(shown(u, s), "credentials in a URL are refused")
	}
	if u.Host == "" || u.Hostname() == "" {
		return Location{}, invalidURL(shown(u, s), "no host")
	}
	if strings.EqualFold(u.Scheme, "http") && !loopback(u.Hostname()) {
		return Location{}, invalidURL(shown(u, s), "plain http is accepted only to a loopback address: use https")
	}
	u.Fragment = ""
	return Location{URL: u.String()}, nil
}

// portPassword reports whether u, parsed from s, may be user:password@host
// whose password starts with digits and then a / ? or #: url.Parse takes
// user:1234 for a host and its port, and the rest, password and real host,
// for the path (or the query, or the fragment). It is taken to be one when
// an @ comes before the next / after the port: a bucket name, the first
// part of the path of an S3 URL, holds no @.
func portPassword(s string, u *url.URL) bool {
	if u.Port() == "" {
		return false
	}
	_, rest, _ := strings.Cut(s, "://")
	i := strings.IndexAny(rest, "/?#")
	if i < 0 {
		return false
	}
	after := strings.TrimLeft(rest[i:], "/?#")
	if j := strings.Index(after, "/"); j >= 0 {
		after = after[:j]
	}
	return strings.Contains(after, "@")
}

// loopback reports whether host is localhost or a loopback IP address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsPrefix reports whether l names a prefix of objects (s3://BUCKET/ or
// s3://BUCKET/PREFIX/) rather than one object.
func (l Location) IsPrefix() bool {
	return l.URL == "" && (l.Key == "" || strings.HasSuffix(l.Key, "/"))
}

// Join returns the object named name under the prefix l, as batch mode
// names its outputs. It does not check that l is a prefix.
func (l Location) Join(name string) Location {
	return Location{Bucket: l.Bucket, Key: l.Key + name}
}

// String returns the location for messages: s3://BUCKET/KEY, or the URL
// without its query and fragment (a presigned URL's query is a bearer
// credential).
func (l Location) String() string {
	if l.URL == "" {
		return "s3://" + l.Bucket + "/" + l.Key
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		return displayRaw(l.URL)
	}
	return display(u)
}

// Shown returns s, an argument meant as a URL (see IsURL), as messages
// show it: the location as Location.String shows it, or for a string that
// Parse refuses, as its error shows it (without what may be a password).
func Shown(s string) string {
	l, err := Parse(s)
	if err == nil {
		return l.String()
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Location
	}
	return "URL"
}

// display shows u without password, query and fragment.
func display(u *url.URL) string {
	v := *u
	v.User = nil
	s := (&url.URL{Scheme: v.Scheme, Host: v.Host, Path: v.Path, RawPath: v.RawPath}).String()
	if u.RawQuery != "" {
		s += "?..."
	}
	return s
}

// displayRaw shows a string that did not parse as a URL, cut before
// anything that may hold a secret.
func displayRaw(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "URL"
	}
	// Whatever comes before the last @ may be a password, with a /, ? or
	// # in it written as it is, when a colon comes before that @.
	if c := strings.Index(rest, ":"); c >= 0 && strings.Contains(rest[c:], "@") {
		rest = rest[strings.LastIndex(rest, "@")+1:]
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:] // a user name without a password
	}
	return scheme + "://" + rest + "/..."
}

// shown is u, parsed from s, as an error shows it: as display shows it,
// unless an @ in s may follow a password.
func shown(u *url.URL, s string) string {
	if strings.Contains(s, "@") {
		return displayRaw(s)
	}
	return display(u)
}

// shownRaw is s as an error shows it: whole, unless an @ in it may follow
// a password (a colon before it), as displayRaw or displayS3 show it then.
func shownRaw(s string) string {
	scheme, rest, _ := strings.Cut(s, "://")
	c := strings.Index(rest, ":")
	switch {
	case !strings.Contains(s, "@"):
		return s
	case !strings.EqualFold(scheme, "s3"):
		return displayRaw(s)
	case s3Credentials(rest) || (c >= 0 && strings.Contains(rest[c:], "@")):
		return displayS3(s)
	}
	return s // an @ in a key, and no colon before it
}

// displayS3 shows an s3:// URL with all before its last @ replaced: a
// password may hold a / or an @ as it is written.
func displayS3(s string) string {
	_, rest, _ := strings.Cut(s, "://")
	return "s3://REDACTED@" + rest[strings.LastIndex(rest, "@")+1:]
}

func invalidURL(shown, why string) error {
	return &Error{Op: "parse", Location: shown, Err: &detailed{sentinel: ErrInvalidURL, detail: why}}
}

// ObjectOfURL returns the object of the S3 store at endpoint (its URL, ""
// for AWS) that the http(s) URL u addresses, in path style
// (https://HOST/BUCKET/KEY) or virtual-hosted style
// (https://BUCKET.HOST/KEY), and whether u addresses one. The query (of a
// presigned URL, say) plays no part. It tells that an https:// input and
// an s3:// output are one object.
func ObjectOfURL(u, endpoint string) (Location, bool) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") {
		return Location{}, false
	}
	host := strings.ToLower(p.Host)
	path := strings.TrimPrefix(p.Path, "/")
	var hosts []string
	if endpoint != "" {
		e, err := url.Parse(endpoint)
		if err != nil || e.Host == "" {
			return Location{}, false
		}
		hosts = []string{strings.ToLower(e.Host)}
	} else if strings.HasSuffix(host, ".amazonaws.com") {
		hosts = awsHosts(host)
	}
	for _, h := range hosts {
		if host == h {
			bucket, key, ok := strings.Cut(path, "/")
			if ok && bucket != "" && key != "" {
				return Location{Bucket: bucket, Key: key}, true
			}
		}
		if bucket, ok := strings.CutSuffix(host, "."+h); ok && bucket != "" && path != "" {
			return Location{Bucket: bucket, Key: path}, true
		}
	}
	return Location{}, false
}

// awsHosts returns the S3 endpoints of AWS that host may be or end in:
// s3.amazonaws.com, s3.REGION.amazonaws.com, s3-REGION.amazonaws.com and
// s3.dualstack.REGION.amazonaws.com, the region taken from host.
func awsHosts(host string) []string {
	labels := strings.Split(strings.TrimSuffix(host, ".amazonaws.com"), ".")
	out := []string{"s3.amazonaws.com"}
	for i, l := range labels {
		rest := strings.Join(labels[i:], ".")
		if l == "s3" || strings.HasPrefix(l, "s3-") {
			out = append(out, rest+".amazonaws.com")
		}
	}
	return out
}
