package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/s3test"
	"github.com/c4gh-go/crypt4gh/objstore"
)

const bucket = "test-bucket"

// TestMain clears the AWS settings of the environment once for every
// test (s3test.IsolateProcess): the tests that start a server run in
// parallel, each with its server, and the Clients read their
// configuration file, not the environment.
func TestMain(m *testing.M) {
	cleanup, err := s3test.IsolateProcess()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// env is a versitygw with a bucket, a proxy in front of it and a Client
// that goes through the proxy.
type env struct {
	srv    *s3test.Server
	px     *s3test.Proxy
	c      *objstore.Client
	sdk    *s3.Client // straight to the server
	config string     // the s3cmd configuration file of c
}

// newEnv starts a server and a proxy. idle is the Client's IdleTimeout:
// short where a test stalls a request, generous otherwise (a 2-core
// machine under -race is slow). The environment has no AWS settings
// (TestMain).
func newEnv(t *testing.T, idle time.Duration) *env {
	t.Helper()
	srv := s3test.Start(t)
	srv.Bucket(t, bucket)
	px := s3test.NewProxy(t, srv.Addr)
	e := &env{srv: srv, px: px, sdk: srv.SDK(), config: srv.S3Config(t, px.Addr)}
	e.c = e.client(t, objstore.Config{IdleTimeout: idle})
	return e
}

// client makes another Client through the proxy.
func (e *env) client(t *testing.T, cfg objstore.Config) *objstore.Client {
	t.Helper()
	cfg.S3Config = e.config
	c, err := objstore.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// random returns n reproducible bytes.
func random(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 42))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

// put stores data at key with the plain SDK.
func (e *env) put(t *testing.T, key string, data []byte) string {
	t.Helper()
	return e.srv.Put(t, bucket, key, data)
}

// get reads key with the plain SDK; nil if it does not exist.
func (e *env) get(t *testing.T, key string) []byte {
	t.Helper()
	return e.srv.Get(t, bucket, key)
}

// noUploads fails the test if a multipart upload is pending in the bucket.
func (e *env) noUploads(t *testing.T) {
	t.Helper()
	e.srv.NoUploads(t, bucket)
}

// write writes data to key with a Writer, in writes of step bytes.
func write(t testing.TB, c *objstore.Client, key string, data []byte, step int, opts *objstore.WriterOptions) error {
	t.Helper()
	w, err := c.NewWriter(context.Background(), bucket, key, opts)
	if err != nil {
		return err
	}
	for off := 0; off < len(data); off += step {
		if _, err := w.Write(data[off:min(off+step, len(data))]); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}

// readAll reads all of key with a parallel Reader.
func readAll(t testing.TB, c *objstore.Client, key string, opts *objstore.ReaderOptions) ([]byte, error) {
	t.Helper()
	o, err := c.Open(context.Background(), bucket, key)
	if err != nil {
		return nil, err
	}
	r, err := o.NewReader(0, -1, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func same(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: got %d bytes, want %d; first difference at %d", what, len(got), len(want), i)
	}
}

// isKind checks that err wraps target and has kind k.
func isKind(t *testing.T, err, target error, k errkind.Kind) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got %v, want %v", err, target)
	}
	if got := errkind.Of(err); got != k {
		t.Fatalf("kind of %v is %v, want %v", err, got, k)
	}
}

// count returns how many of the request lines contain s.
func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func getenv(name string) string { return os.Getenv(name) }

// sentAgain checks that an upload of size bytes in parts of partSize,
// broken once by a reset, sent a part again. How much of the part had
// passed before the reset depends on timing: the part the reset hit may
// have only just started, so only the request count is certain.
func sentAgain(t *testing.T, e *env, size int, partSize int64) {
	t.Helper()
	parts := (int64(size) + partSize - 1) / partSize
	if n := count(e.px.Requests(), "partNumber="); int64(n) <= parts {
		t.Errorf("%d part requests for %d parts: no part was sent again (%d bytes up)", n, parts, e.px.Up())
	}
	if e.px.Up() <= int64(size) {
		t.Errorf("%d bytes up for %d bytes: no part was sent again", e.px.Up(), size)
	}
}

// streamed returns what a Reader of o gives of n bytes at off (to the
// end when n is negative).
func streamed(t *testing.T, o *objstore.Object, off, n int64, opts *objstore.ReaderOptions) []byte {
	t.Helper()
	r, err := o.NewReader(off, n, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
