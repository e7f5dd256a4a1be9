package objstore

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/tlserr"
)

// Config says where a Client finds its credentials and endpoint, and how
// patient it is. The zero Config uses the standard AWS sources.
type Config struct {
	// S3Config is the path of an s3cmd configuration file, the format
	// that s3cmd and the NeIC sda-cli read. When it is set, its [default]
	// section alone gives the credentials (access_key, secret_key,
	// access_token), the endpoint (host_base, use_https), the addressing
	// style (host_bucket: virtual-hosted when it contains %(bucket)s, path
	// style otherwise) and the region (bucket_location). Certificates are
	// always verified, whatever check_ssl_certificate says.
	S3Config string

	// Profile names the profile of the AWS shared files to use; "" means
	// $AWS_PROFILE, or "default". Ignored when S3Config is set.
	Profile string

	// Attempts is how many times a request is tried before its error is
	// returned: resets, timeouts, 5xx answers and throttling are retried
	// with exponential backoff. 0 means $AWS_MAX_ATTEMPTS or the
	// profile's max_attempts, or else 8.
	Attempts int

	// IdleTimeout is how long a request may go without progress (no
	// answer to a sent request, no byte of a body being read or written)
	// before it is abandoned and retried. 0 means one minute. Server-side
	// copies and the completion of a multipart upload may take longer to
	// answer and have ten times this.
	IdleTimeout time.Duration
	// AllowInsecureHTTP accepts an S3 endpoint of plain http:// that is
	// not a loopback address. Without it New refuses one: the requests
	// would carry the credentials' signatures and the data in the clear.
	AllowInsecureHTTP bool
	// Notice, when not nil, receives a line (without a newline) when a
	// request has had no answer for half of IdleTimeout (30 s at most),
	// once for each host: a server
	// that accepts connections and never answers otherwise means a
	// silent wait, bounded by IdleTimeout for each of the Attempts.
	Notice func(string)
}

const (
	defaultAttempts    = 8
	defaultIdleTimeout = time.Minute
	defaultRegion      = "us-east-1"
)

// A Client reads, writes, copies and lists objects of one S3 endpoint with
// one set of credentials. It is safe for concurrent use.
type Client struct {
	s3       *s3.Client
	slow     s3.HTTPClient // for copies and completions: a longer wait for an answer
	source   string        // where the credentials came from, for hints
	endpoint string        // for hints: "" means AWS's own
	attempts int
	idle     time.Duration
	checksum bool // send CRC32 checksums with uploads
}

// New returns a Client for cfg. It resolves the credentials once, so that
// missing or unusable credentials are reported here (as ErrNoCredentials,
// with a hint naming the sources tried) rather than at the first request.
// No secret appears in any error.
func New(ctx context.Context, cfg Config) (*Client, error) {
	c := &Client{attempts: cfg.Attempts, idle: cfg.IdleTimeout}
	if c.idle <= 0 {
		c.idle = defaultIdleTimeout
	}
	var opts []func(*config.LoadOptions) error
	var s3opts []func(*s3.Options)
	var sc *s3cmdConfig
	if cfg.S3Config != "" {
		var err error
		if sc, err = readS3cmdConfig(cfg.S3Config); err != nil {
			return nil, err
		}
		opts = append(opts,
			config.WithCredentialsProvider(credentials.StaticCredentialsProvider{Value: aws.Credentials{
				AccessKeyID: sc.accessKey, SecretAccessKey: sc.secretKey, SessionToken: sc.token,
				Source: "s3cmd configuration file " + cfg.S3Config,
			}}),
			// The AWS files must not add to or override what the file says.
			config.WithSharedConfigFiles([]string{}),
			config.WithSharedCredentialsFiles([]string{}),
		)
		if sc.region != "" {
			opts = append(opts, config.WithRegion(sc.region))
		}
		if sc.caFile != "" {
			pemCerts, err := readCABundle(sc.caFile)
			if err != nil {
				return nil, &Error{Op: "read", Location: "ca_certs_file of s3cmd configuration file " + cfg.S3Config, Err: err}
			}
			opts = append(opts, config.WithCustomCABundle(bytes.NewReader(pemCerts)))
		}
		c.endpoint = sc.endpoint
		s3opts = append(s3opts, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(sc.endpoint)
			o.UsePathStyle = sc.pathStyle
		})
	} else if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	// The configuration is given the SDK's own kind of client, which it
	// can add a CA bundle to (AWS_CA_BUNDLE, ca_bundle in a profile): it
	// then returns a copy with the bundle's roots.
	opts = append(opts, config.WithHTTPClient(newHTTPClient(c.idle)),
		// The SDK's own log lines (such as its warnings about
		// checksums) never reach the user's stderr: errors do.
		config.WithLogger(logging.Nop{}), config.WithClientLogMode(0))

	awscfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		kind, hint := errkind.Key, "check AWS_PROFILE, AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE"
		var pe *fs.PathError
		bundle := os.Getenv("AWS_CA_BUNDLE")
		switch {
		case strings.Contains(err.Error(), "CA bundle"), bundle != "" && strings.Contains(err.Error(), bundle),
			// A file that cannot be opened while the configuration
			// loads, other than the configuration's own (which may be
			// missing): the profile's ca_bundle.
			errors.As(err, &pe) && !isSharedConfigFile(pe.Path):
			kind, hint = errkind.Usage, "check AWS_CA_BUNDLE, ca_bundle in the profile, or ca_certs_file of --s3-config: a file of PEM certificates"
		}
		return nil, &Error{Op: "load", Location: "the AWS configuration", Err: errkind.Wrap(kind, err), hint: hint}
	}
	hc, ok := awscfg.HTTPClient.(*awshttp.BuildableClient)
	if !ok {
		return nil, &Error{Op: "load", Location: "the AWS configuration", Err: fmt.Errorf("unexpected HTTP client %T", awscfg.HTTPClient)}
	}
	// Copies and completions wait longer for an answer, trusting the
	// same roots (nil: the system's).
	var roots *x509.CertPool
	if tc := hc.GetTransport().TLSClientConfig; tc != nil {
		roots = tc.RootCAs
	}
	c.slow = newHTTPClient(10 * c.idle).WithTransportOptions(func(tr *http.Transport) {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{}
		}
		tr.TLSClientConfig.RootCAs = roots
	})
	nt := newNotifier(cfg.Notice, c.idle, 0) // its attempts are known below
	if nt != nil {
		awscfg.HTTPClient = watchedClient{c: hc, n: nt}
	}
	if awscfg.Region == "" {
		awscfg.Region = defaultRegion
	}
	if c.attempts <= 0 {
		c.attempts = awscfg.RetryMaxAttempts
	}
	if c.attempts <= 0 {
		c.attempts = defaultAttempts
	}
	attempts := c.attempts
	if nt != nil {
		nt.attempts = attempts
	}
	awscfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = 10 * time.Second
			// The token bucket would fail requests outright after a burst
			// of errors across parallel parts; backoff alone paces them.
			o.RateLimiter = ratelimit.None
			// A certificate that is not trusted stays so: no retry.
			o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
				if tlserr.Untrusted(err) {
					return aws.FalseTernary
				}
				return aws.UnknownTernary
			})}, o.Retryables...)
		})
	}
	c.checksum = awscfg.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired

	s3opts = append(s3opts, func(o *s3.Options) {
		if sc == nil && o.BaseEndpoint != nil {
			// A custom endpoint (AWS_ENDPOINT_URL_S3, endpoint_url in a
			// profile) is addressed in path style: few such servers have
			// a DNS name for every bucket.
			o.UsePathStyle = true
			c.endpoint = *o.BaseEndpoint
		}
		// Ranged reads have no whole-object checksum to validate; the
		// SDK would log that on every read.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	c.s3 = s3.NewFromConfig(awscfg, s3opts...)
	if _, err := url.Parse(c.endpoint); c.endpoint != "" && (err != nil || strings.Contains(c.endpoint, "@")) {
		// Hints name the endpoint, so a password in it would be
		// printed; one with a / in it does not even parse as user info.
		// Such an endpoint is not shown at all.
		const where = "the S3 endpoint (AWS_ENDPOINT_URL_S3, or endpoint_url of the profile)"
		if strings.Contains(c.endpoint, "@") {
			return nil, &Error{Op: "use", Location: where,
				Err:  errkind.New(errkind.Usage, "an endpoint URL with credentials in it (user:password@) is refused"),
				hint: "give the credentials as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or in a profile"}
		}
		return nil, &Error{Op: "use", Location: where, Err: errkind.New(errkind.Usage, "not a URL")}
	}
	if err := checkEndpoint(c.endpoint); err != nil {
		return nil, &Error{Op: "use", Location: "the S3 endpoint (AWS_ENDPOINT_URL_S3, or endpoint_url of the profile)", Err: err}
	}
	if u, err := url.Parse(c.endpoint); c.endpoint != "" && err == nil && strings.EqualFold(u.Scheme, "http") &&
		!loopback(u.Hostname()) && !cfg.AllowInsecureHTTP {
		return nil, &Error{Op: "use", Location: "the S3 endpoint " + display(u),
			Err:  errkind.New(errkind.Usage, "plain http is accepted only to a loopback address: credentials and data would cross the network in the clear"),
			hint: "use an https:// endpoint, or --allow-insecure-http when the network is yours"}
	}

	creds, err := awscfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, &Error{Op: "load", Location: "credentials", Err: &detailed{sentinel: ErrNoCredentials, detail: lookedIn(cfg), cause: err},
			hint: noCredentialsHint(cfg)}
	}
	c.source = describeSource(creds, cfg)
	return c, nil
}

// checkEndpoint refuses a custom endpoint that is not an http:// or
// https:// URL of a host, with a port that is one, and no query or
// fragment (a query may hold a signature: it is not shown). The SDK would
// take some of these, retry the rest as network failures, and print them
// whole.
func checkEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return errkind.New(errkind.Usage, "not a URL")
	case !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https"):
		return errkind.Errorf(errkind.Usage, "not an http:// or https:// URL")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return errkind.New(errkind.Usage, "an endpoint URL with a query or a fragment is refused (it is not shown: a query may hold a signature)")
	case u.Hostname() == "":
		return errkind.New(errkind.Usage, "no host in the endpoint URL")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errkind.Errorf(errkind.Usage, "port %q of the endpoint URL is not a port (1 to 65535)", p)
		}
	}
	return nil
}

// Endpoint returns the URL of the S3 endpoint the client uses, "" for
// AWS's own.
func (c *Client) Endpoint() string { return c.endpoint }

// isSharedConfigFile reports whether path is the AWS configuration or
// credentials file that the SDK reads.
func isSharedConfigFile(path string) bool {
	for _, f := range []string{os.Getenv("AWS_CONFIG_FILE"), os.Getenv("AWS_SHARED_CREDENTIALS_FILE"),
		config.DefaultSharedConfigFilename(), config.DefaultSharedCredentialsFilename()} {
		if f != "" && filepath.Clean(f) == filepath.Clean(path) {
			return true
		}
	}
	return false
}

// maxCABundle bounds a CA bundle read: a system's whole bundle is a few
// hundred kB.
const maxCABundle = 16 << 20

// readCABundle reads a file of PEM certificates.
func readCABundle(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errkind.Wrap(errkind.Usage, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCABundle+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCABundle {
		return nil, errkind.Errorf(errkind.Usage, "%s is larger than %d bytes", path, maxCABundle)
	}
	return b, nil
}

// newHTTPClient returns the SDK's HTTP client with room for parallel
// transfers, a limit on the wait for an answer, and a limit on how long a
// write may block.
func newHTTPClient(idle time.Duration) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = 64
		tr.ResponseHeaderTimeout = idle
		dial := tr.DialContext
		if dial == nil {
			dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &writeDeadlineConn{Conn: conn, idle: idle}, nil
		}
	})
}

// writeDeadlineConn fails a write that makes no progress for idle. Writes
// happen only while a request is sent, so unlike a read deadline this
// never fires on a connection waiting in the pool.
type writeDeadlineConn struct {
	net.Conn
	idle time.Duration
}

func (c *writeDeadlineConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// describeSource names where creds came from, without the secret, for a
// person reading a hint.
func describeSource(creds aws.Credentials, cfg Config) string {
	src := creds.Source
	switch {
	case src == config.CredentialsSourceName:
		src = "environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
	case strings.HasPrefix(src, "SharedConfigCredentials: "):
		profile := cfg.Profile
		if profile == "" {
			profile = os.Getenv("AWS_PROFILE")
		}
		if profile == "" {
			profile = "default"
		}
		src = fmt.Sprintf("profile %q in %s", profile, strings.TrimPrefix(src, "SharedConfigCredentials: "))
	case src == "":
		src = "the AWS credential chain"
	}
	if id := creds.AccessKeyID; len(id) > 4 {
		src += " (access key ending in " + id[len(id)-4:] + ")"
	}
	return src
}

// lookedIn says where the AWS credential chain looked.
func lookedIn(cfg Config) string {
	profile := cfg.Profile
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	if profile == "" {
		profile = "default"
	}
	return fmt.Sprintf("looked in the environment, profile %q of the AWS files, and the container and instance metadata", profile)
}

func noCredentialsHint(cfg Config) string {
	if cfg.S3Config != "" {
		return "set access_key and secret_key in the [default] section of " + cfg.S3Config
	}
	return "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, configure a profile in ~/.aws/credentials (AWS_PROFILE), or use an s3cmd configuration file"
}

// hint returns the advice that goes with err from this client: the
// credential source for a refusal, the endpoint for a missing bucket.
func (c *Client) hint(err error) string {
	endpoint := c.endpoint
	if endpoint == "" {
		endpoint = "AWS S3"
	}
	switch {
	case errors.Is(err, ErrAccessDenied):
		return "credentials from " + c.source + ", endpoint " + endpoint
	case errors.Is(err, ErrNoBucket):
		return "endpoint " + endpoint
	case tlserr.Untrusted(err):
		return "the server's certificate is not trusted here: name the certificate of its authority in AWS_CA_BUNDLE (or ca_bundle in the profile; ca_certs_file with --s3-config)"
	case c.endpoint == "" && unreached(err):
		// The usual cause: a store of one's own, and no word of it.
		return "no endpoint was given, so this went to AWS S3; for another store set AWS_ENDPOINT_URL_S3 (or use --s3-config)"
	}
	return ""
}

// unreached reports whether err is a failure to reach the server at all:
// no answer of HTTP came back (a name that does not resolve, a refused or
// reset connection, a time-out), as opposed to an answer that refuses.
func unreached(err error) bool {
	if err == nil || statusOf(err) != 0 || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	var de *net.DNSError
	var oe *net.OpError
	return errors.As(err, &de) || errors.As(err, &oe) || errors.As(err, &ne)
}

// fail wraps err from operation op on bucket/key as an *Error.
func (c *Client) fail(op, bucket, key string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		return e
	}
	err = classify(err)
	return &Error{Op: op, Location: Location{Bucket: bucket, Key: key}.String(), Err: err, hint: c.hint(err)}
}

// slowOp makes an operation wait longer for its answer: the server may
// work for a while before it says anything.
func (c *Client) slowOp(o *s3.Options) { o.HTTPClient = c.slow }
