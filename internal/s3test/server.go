// Package s3test runs a real S3 server for tests: versitygw, an
// Apache-2.0 S3 gateway, serving a temporary directory on 127.0.0.1, and
// a TCP proxy that counts the bytes between a client and the server and
// injects faults (resets, stalls, 503 answers).
//
// [Start] finds the versitygw binary of [Version] in $VERSITYGW, on PATH,
// in $(go env GOPATH)/bin or in the user cache, and installs it into the
// cache with go install when it is nowhere (about a minute and a half the
// first time). With -short every test that starts the server is skipped;
// with CI=true a missing binary or a server that does not start fails the
// test, never skips it.
// To install it ahead (as CI does):
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
package s3test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// Version is the versitygw release the tests run.
const Version = "v1.8.0"

// Module is the package that go install builds.
const Module = "github.com/versity/versitygw/cmd/versitygw"

// Server is a running versitygw.
type Server struct {
	Addr      string // 127.0.0.1:PORT
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Dir       string // the directory served: one subdirectory per bucket
	// CAFile, with the TLS option, is the PEM certificate of the
	// server's own authority (for AWS_CA_BUNDLE): the Endpoint is then
	// https://.
	CAFile string

	sdkOnce sync.Once
	sdk     *s3.Client
}

// missing skips the test, or fails it under CI.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	clitest.Missing(t, format, args...)
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// Binary returns the path of versitygw Version, installing it if needed.
func Binary(t testing.TB) string {
	t.Helper()
	binaryOnce.Do(func() { binaryPath, binaryErr = findOrInstall() })
	if binaryErr != nil {
		missing(t, "versitygw %s: %v", Version, binaryErr)
	}
	return binaryPath
}

// isVersion reports whether path is a versitygw built from Version.
func isVersion(path string) bool {
	info, err := buildinfo.ReadFile(path)
	return err == nil && info.Main.Path == "github.com/versity/versitygw" && info.Main.Version == Version
}

func cacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "crypt4gh-s3test", "versitygw-"+Version), nil
}

func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

func findOrInstall() (string, error) {
	var candidates []string
	if p := os.Getenv("VERSITYGW"); p != "" {
		if !isVersion(p) {
			return "", fmt.Errorf("$VERSITYGW=%s is not versitygw %s", p, Version)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		candidates = append(candidates, p)
	}
	if out, err := exec.Command(goBinary(), "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			candidates = append(candidates, filepath.Join(dir, "bin", "versitygw"))
		}
	}
	cache, err := cacheDir()
	if err == nil {
		candidates = append(candidates, filepath.Join(cache, "versitygw"))
	}
	for _, p := range candidates {
		if isVersion(p) {
			return p, nil
		}
	}
	if cache == "" {
		return "", fmt.Errorf("not found and no cache directory to install it in: %v", err)
	}
	return install(cache)
}

// install builds versitygw into dir, once even when several test binaries
// try at the same time.
func install(dir string) (string, error) {
	unlock, err := clitest.LockDir(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	bin := filepath.Join(dir, "versitygw")
	if isVersion(bin) {
		return bin, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBinary(), "install", Module+"@"+Version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %v\n%s", Module, Version, err, out)
	}
	if !isVersion(bin) {
		return "", fmt.Errorf("go install did not leave versitygw %s in %s", Version, dir)
	}
	return bin, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Start runs a versitygw on 127.0.0.1 at a free port, serving a new
// temporary directory, until the test ends. With -short it skips the
// test: -short runs the unit tests and the local end-to-end tests, and
// leaves the object-storage ones to the full run.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if testing.Short() {
		t.Skip("-short: an S3 end-to-end test (starts versitygw)")
	}
	bin := Binary(t)
	var root string
	if o.disk {
		root = t.TempDir()
	} else {
		root = serverRoot(t)
	}
	s := &Server{
		AccessKey: "AK" + strings.ToUpper(randomHex(9)),
		SecretKey: randomHex(20),
		Dir:       filepath.Join(root, "data"),
	}
	meta := filepath.Join(root, "meta")
	dirs := []string{s.Dir, meta}
	posix := []string{"posix", "--sidecar", meta}
	if o.versioning {
		versions := filepath.Join(root, "versions")
		dirs = append(dirs, versions)
		posix = append(posix, "--versioning-dir", versions)
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var tlsArgs []string
	scheme := "http://"
	if o.tls {
		cert, key, err := writeCertificate(root)
		if err != nil {
			t.Fatal(err)
		}
		s.CAFile, scheme = cert, "https://"
		tlsArgs = []string{"--cert", cert, "--key", key}
	}
	var lastErr error
	for try := 0; try < 5; try++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		log := &clitest.SyncBuffer{}
		args := append([]string{"--port", addr, "--access", s.AccessKey, "--secret", s.SecretKey,
			"--quiet", "--keep-alive"}, tlsArgs...)
		args = append(args, posix...)
		cmd := exec.Command(bin, append(args, s.Dir)...)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			missing(t, "versitygw: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		err = waitListening(addr, exited)
		if err == nil {
			// The port was free when freeAddr looked; another test
			// process (another package's versitygw) may have taken it
			// since, and this one failed to listen while that one
			// answers. Only this server knows these keys.
			s.Addr, s.Endpoint = addr, scheme+addr
			err = s.answers()
		}
		if err != nil {
			cmd.Process.Kill()
			<-exited
			lastErr = fmt.Errorf("%v\n%s", err, log)
			continue
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("versitygw output:\n%s", log)
			}
		})
		return s
	}
	missing(t, "versitygw did not start: %v", lastErr)
	return nil
}

// An Option changes how Start runs the server.
type Option func(*options)

type options struct{ versioning, tls, disk bool }

// OnDisk keeps the server's buckets in the test's temporary folder (on
// the disk where TMPDIR is not a tmpfs), not in /dev/shm, for a test that
// lists objects while they are replaced:
// on tmpfs (Linux 6.18) a directory read while its files are renamed
// over can give some names twice and miss others, and versitygw lists a
// bucket by reading its directories.
func OnDisk() Option { return func(o *options) { o.disk = true } }

// Versioning lets the server's buckets keep versions (a bucket has them
// once versioning is enabled on it).
func Versioning() Option { return func(o *options) { o.versioning = true } }

// TLS serves https with a certificate for 127.0.0.1 from an authority of
// the test's own, whose certificate is in the Server's CAFile.
func TLS() Option { return func(o *options) { o.tls = true } }

// writeCertificate writes a self-signed certificate for 127.0.0.1 and
// its key into dir, and returns their paths: the certificate is its own
// authority.
func writeCertificate(dir string) (cert, key string, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "s3test authority"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", "", err
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	return cert, key, nil
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitListening waits until addr accepts connections, or the server exits.
func waitListening(addr string, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("versitygw exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("versitygw not listening on %s after 30s", addr)
}

// answers checks that the server at s.Endpoint is this one: it lists
// the buckets with this server's keys.
func (s *Server) answers() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Not s.SDK(), which keeps its client: a try that fails is followed
	// by one on another port.
	if _, err := s.newSDK().ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
		return fmt.Errorf("the server on %s does not take its keys (another's?): %w", s.Addr, err)
	}
	return nil
}

// S3Config writes an s3cmd configuration file for the server reached at
// addr (the server's own Addr, or a Proxy's) and returns its path.
func (s *Server) S3Config(t testing.TB, addr string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s3cmd.conf")
	conf := fmt.Sprintf(`[default]
access_key = %s
secret_key = %s
host_base = %s
host_bucket = %s
use_https = False
check_ssl_certificate = True
multipart_chunk_size_mb = 50
`, s.AccessKey, s.SecretKey, addr, addr)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// SDK returns a plain SDK client of the server, for a test to arrange and
// inspect what the code under test does not.
//
// It is one client for the server's life: a client per call kept a
// connection open per call, and the 10,000 objects of a scale test ran the
// test process out of file descriptors on a machine whose limit is lower
// than that (CI: "socket: too many open files").
func (s *Server) SDK() *s3.Client {
	s.sdkOnce.Do(func() { s.sdk = s.newSDK() })
	return s.sdk
}

func (s *Server) newSDK() *s3.Client {
	o := s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	}
	if s.CAFile != "" {
		if pemCert, err := os.ReadFile(s.CAFile); err == nil {
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(pemCert)
			o.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
		}
	}
	return s3.New(o)
}

// Put stores data at bucket/key with the plain SDK and returns its ETag.
func (s *Server) Put(t testing.TB, bucket, key string, data []byte) string {
	t.Helper()
	out, err := s.SDK().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ETag)
}

// Get reads bucket/key with the plain SDK; nil if it does not exist.
func (s *Server) Get(t testing.TB, bucket, key string) []byte {
	t.Helper()
	out, err := s.SDK().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		if strings.Contains(err.Error(), "NoSuchKey") {
			return nil
		}
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// NoUploads fails t for each multipart upload pending in bucket.
func (s *Server) NoUploads(t testing.TB, bucket string) {
	t.Helper()
	out, err := s.SDK().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range out.Uploads {
		t.Errorf("pending upload %s of %s", aws.ToString(u.UploadId), aws.ToString(u.Key))
	}
}

// Bucket creates a bucket named name.
func (s *Server) Bucket(t testing.TB, name string) {
	t.Helper()
	if _, err := s.SDK().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
}

// serverRoot returns a new folder for the server's buckets, removed when
// the test ends: in /dev/shm where that is a folder with room for the
// tests' objects (Linux, not a container's 64 MiB), else in the test's
// temporary folder. What the tests test is the client; the server's
// store is not made to last, and on a disk the file system's work for
// versitygw's many small files (an object, its sidecar, the parts of an
// upload) was a seventh of the CPU of the CLI package's tests. A folder
// is named after its test process, and those of processes that are gone
// (killed by a timeout: no cleanup ran) are removed.
func serverRoot(t testing.TB) string {
	t.Helper()
	const shm, room = "/dev/shm", 4 << 30
	if shmRoom(shm) >= room {
		removeStale.Do(func() { removeStaleRoots(shm) })
		if dir, err := os.MkdirTemp(shm, fmt.Sprintf("s3test-%d-", os.Getpid())); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

var removeStale sync.Once

// removeStaleRoots removes the folders of serverRoot in dir whose test
// process is gone.
func removeStaleRoots(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "s3test-%d-", &pid); err != nil || !e.IsDir() || pid <= 0 {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// IsolateProcess clears the AWS settings of the environment for the
// whole test binary, as IsolateEnv does for one test; call it from
// TestMain before the tests run. A test that then needs no variable of
// its own can run in parallel. The returned function removes the folder
// of the (absent) configuration files.
func IsolateProcess() (cleanup func(), err error) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AWS_") {
			os.Unsetenv(name)
		}
	}
	dir, err := os.MkdirTemp("", "s3test-")
	if err != nil {
		return nil, err
	}
	os.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	os.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return func() { os.RemoveAll(dir) }, nil
}

// IsolateEnv clears the AWS settings of the environment for the rest of
// the test, so that nothing of the developer's is used and no request
// goes to the EC2 instance metadata service.
func IsolateEnv(t testing.TB) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AWS_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}
