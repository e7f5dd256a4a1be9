package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/objstore"
)

const MiB = 1 << 20

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	for i, size := range []int{0, 1, 65536, 65537, 5*MiB - 1, 5 * MiB, 5*MiB + 1, 17 * MiB} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			key := fmt.Sprintf("dir/round-%d", size)
			data := random(size, uint64(i))
			e.px.Zero()
			// Odd write sizes, parts of the minimum size, fewer buffers
			// than parts: every path of the Writer.
			opts := &objstore.WriterOptions{PartSize: objstore.MinPartSize, Concurrency: 3}
			if err := write(t, e.c, key, data, 65537+i, opts); err != nil {
				t.Fatal(err)
			}
			reqs := e.px.Requests()
			wantParts := 0
			if size > objstore.MinPartSize {
				wantParts = (size + objstore.MinPartSize - 1) / objstore.MinPartSize
			}
			if got := count(reqs, "partNumber="); got != wantParts {
				t.Errorf("%d parts sent, want %d: %q", got, wantParts, reqs)
			}
			same(t, "stored", e.get(t, key), data)

			got, err := readAll(t, e.c, key, &objstore.ReaderOptions{ChunkSize: MiB + 3, Concurrency: 3})
			if err != nil {
				t.Fatal(err)
			}
			same(t, "Reader", got, data)

			o, err := e.c.Open(context.Background(), bucket, key)
			if err != nil {
				t.Fatal(err)
			}
			if o.Size() != int64(size) || o.ETag() == "" {
				t.Fatalf("Size %d, ETag %q", o.Size(), o.ETag())
			}
			if size <= 65537 {
				if err := iotest.TestReader(io.NewSectionReader(o, 0, o.Size()), data); err != nil {
					t.Fatal(err)
				}
			}
			// Reads straddling the ends of windows and the object.
			for _, r := range [][2]int{{0, 1}, {size / 3, 70000}, {size - 10, 10}, {size - 5, 20}} {
				off, n := max(r[0], 0), r[1]
				if off > size {
					continue
				}
				p := make([]byte, n)
				m, err := o.ReadAt(p, int64(off))
				want := data[off:min(off+n, size)]
				if m != len(want) || (m < n) != (err == io.EOF) || m == n && err != nil {
					t.Fatalf("ReadAt(%d, %d) = %d, %v", n, off, m, err)
				}
				same(t, fmt.Sprintf("ReadAt(%d, %d)", n, off), p[:m], want)
			}
		})
	}
	e.noUploads(t)
}

func TestReaderRanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	data := random(3*MiB+17, 7)
	e.put(t, "r", data)
	o, err := e.c.Open(context.Background(), bucket, "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, 0}, {5, 1}, {MiB - 1, MiB + 2}, {100, -1}, {int64(len(data)), -1}} {
		rd, err := o.NewReader(r[0], r[1], &objstore.ReaderOptions{ChunkSize: 256 << 10, Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := rd.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		rd.Close()
		end := int64(len(data))
		if r[1] >= 0 {
			end = r[0] + r[1]
		}
		same(t, fmt.Sprint(r), buf.Bytes(), data[r[0]:end])
		if _, err := rd.Read(make([]byte, 1)); err == nil {
			t.Fatal("Read after Close succeeded")
		}
	}
	if _, err := o.NewReader(10, int64(len(data)), nil); errkind.Of(err) != errkind.Usage {
		t.Fatalf("range beyond the end: %v", err)
	}
}

func TestAbort(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	w, err := e.c.NewWriter(context.Background(), bucket, "aborted", &objstore.WriterOptions{PartSize: objstore.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(random(12*MiB, 1)); err != nil {
		t.Fatal(err)
	}
	if n := count(e.px.Requests(), "?uploads"); n != 1 {
		t.Fatalf("multipart upload not started (%d)", n)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	e.noUploads(t)
	if e.get(t, "aborted") != nil {
		t.Fatal("object exists after Abort")
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, objstore.ErrAborted) {
		t.Fatalf("Write after Abort: %v", err)
	}
	if err := w.Close(); !errors.Is(err, objstore.ErrAborted) {
		t.Fatalf("Close after Abort: %v", err)
	}
}

func TestFailureAborts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.NewWriter(ctx, bucket, "canceled", &objstore.WriterOptions{PartSize: objstore.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(random(11*MiB, 2)); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = w.Write(random(10*MiB, 3))
	if err == nil {
		err = w.Close()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// The failure aborted the upload by itself; Abort has nothing to do.
	e.noUploads(t)
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if e.get(t, "canceled") != nil {
		t.Fatal("object exists")
	}
}

func TestExists(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	e.put(t, "old", []byte("old"))
	// The check before the upload.
	_, err := e.c.NewWriter(context.Background(), bucket, "old", nil)
	isKind(t, err, objstore.ErrExists, errkind.Usage)
	// Force replaces.
	if err := write(t, e.c, "old", []byte("new"), 10, &objstore.WriterOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	same(t, "forced", e.get(t, "old"), []byte("new"))

	// An object that appears during the upload is not replaced either:
	// versitygw supports If-None-Match on PutObject and on
	// CompleteMultipartUpload.
	for _, size := range []int{100, 7 * MiB} {
		key := fmt.Sprint("race-", size)
		w, err := e.c.NewWriter(context.Background(), bucket, key, &objstore.WriterOptions{PartSize: objstore.MinPartSize})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(random(size, 4)); err != nil {
			t.Fatal(err)
		}
		e.put(t, key, []byte("first"))
		isKind(t, w.Close(), objstore.ErrExists, errkind.Usage)
		same(t, key, e.get(t, key), []byte("first"))
	}
	e.noUploads(t)
}

func TestChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	e.put(t, "obj", random(3*MiB, 5))
	o, err := e.c.Open(context.Background(), bucket, "obj")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.ReadAt(make([]byte, 10), 0); err != nil {
		t.Fatal(err)
	}
	e.put(t, "obj", random(3*MiB, 6))
	_, err = o.ReadAt(make([]byte, 10), 2*MiB)
	isKind(t, err, objstore.ErrChanged, errkind.Other)
	r, err := o.NewReader(0, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = io.ReadAll(r)
	isKind(t, err, objstore.ErrChanged, errkind.Other)
}

func TestList(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	want := map[string]int{"a/1": 1, "a/2": 22, "a/b/3": 333}
	for k, n := range want {
		e.put(t, k, make([]byte, n))
	}
	e.put(t, "b/4", nil)
	e.put(t, "a/dir/", nil)
	got := map[string]int{}
	for info, err := range e.c.List(context.Background(), bucket, "a/") {
		if err != nil {
			t.Fatal(err)
		}
		if info.ETag == "" || info.LastModified.IsZero() {
			t.Errorf("%s: %+v", info.Key, info)
		}
		got[info.Key] = int(info.Size)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, err := range e.c.List(context.Background(), "no-such-bucket", "") {
		isKind(t, err, objstore.ErrNoBucket, errkind.Usage)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	_, err := e.c.Open(ctx, "no-such-bucket", "k")
	isKind(t, err, objstore.ErrNoBucket, errkind.Usage)
	if h := hint(err); h == "" {
		t.Errorf("no hint for %v", err)
	}
	_, err = e.c.Open(ctx, bucket, "no-such-key")
	isKind(t, err, objstore.ErrNotFound, errkind.Usage)
	_, err = e.c.NewWriter(ctx, "no-such-bucket", "k", nil)
	isKind(t, err, objstore.ErrNoBucket, errkind.Usage)

	// A wrong secret: Key kind, a hint naming the file, never the secret.
	bad := e.srv.S3Config(t, e.px.Addr)
	conf := readFile(t, bad)
	wrong := "not-the-right-secret-0123456789"
	writeFile(t, bad, bytes.Replace(conf, []byte(e.srv.SecretKey), []byte(wrong), 1))
	c, err := objstore.New(ctx, objstore.Config{S3Config: bad})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Open(ctx, bucket, "k")
	isKind(t, err, objstore.ErrAccessDenied, errkind.Key)
	msg := err.Error() + " " + hint(err)
	if !bytes.Contains([]byte(msg), []byte(bad)) || bytes.Contains([]byte(msg), []byte(wrong)) {
		t.Errorf("message and hint: %s", msg)
	}
	t.Log(msg)

	// A server that does not answer: Other kind, after the retries.
	c = e.client(t, objstore.Config{Attempts: 2})
	e.px.Close()
	_, err = c.Open(ctx, bucket, "k")
	if err == nil || errkind.Of(err) != errkind.Other {
		t.Fatalf("closed port: %v (%v)", err, errkind.Of(err))
	}
}

func hint(err error) string {
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}

func TestRandomAccessCost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	data := random(8*MiB, 9)
	e.put(t, "big", data)
	o, err := e.c.Open(context.Background(), bucket, "big")
	if err != nil {
		t.Fatal(err)
	}
	// 2000 sequential reads of 100 bytes: one read-ahead window.
	e.px.Zero()
	p := make([]byte, 100)
	for off := int64(0); off < 200000; off += 100 {
		if _, err := o.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
		same(t, "sequential", p, data[off:off+100])
	}
	gets := count(e.px.Requests(), "GET ")
	if gets != 1 || e.px.Down() > objstore.ReadAheadSize+8192 {
		t.Errorf("sequential reads: %d GETs, %d bytes down", gets, e.px.Down())
	}
	t.Logf("2000 sequential reads of 100 bytes: %d GET, %d bytes down", gets, e.px.Down())
	// Reads at scattered offsets cost what they read, plus a request.
	e.px.Zero()
	offs := []int64{7 * MiB, 3 * MiB, 5*MiB + 12345, 1*MiB + 999999}
	for _, off := range offs {
		if _, err := o.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
		same(t, "scattered", p, data[off:off+100])
	}
	perRead := e.px.Down() / int64(len(offs))
	if perRead > 100+4096 {
		t.Errorf("scattered reads of 100 bytes: %d bytes down each", perRead)
	}
	t.Logf("scattered reads of 100 bytes: %d bytes down each", perRead)
	// A large read goes in one request of its own size.
	e.px.Zero()
	big := make([]byte, 3*MiB)
	if _, err := o.ReadAt(big, 4*MiB+1); err != nil {
		t.Fatal(err)
	}
	same(t, "large", big, data[4*MiB+1:7*MiB+1])
	if d := e.px.Down(); d > 3*MiB+8192 {
		t.Errorf("large read: %d bytes down", d)
	}
}

func TestCompose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	src := random(24*MiB, 10)
	e.put(t, "src", src)
	o, err := e.c.Open(ctx, bucket, "src")
	if err != nil {
		t.Fatal(err)
	}
	header := random(1000, 11)
	const skip = 5000
	opts := &objstore.ComposeOptions{CopyPartSize: 8 * MiB}

	// A new header and the old body: only about 5 MiB passes the client.
	e.px.Zero()
	if err := e.c.Compose(ctx, bucket, "dst", []objstore.Part{objstore.Bytes(header), objstore.Range(o, skip, o.Size()-skip)}, opts); err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte{}, header...), src[skip:]...)
	same(t, "composed", e.get(t, "dst"), want)
	copies := count(e.px.Requests(), "x-id=UploadPartCopy")
	t.Logf("compose of %d bytes: %d bytes up, %d bytes down, %d copies: %q", len(want), e.px.Up(), e.px.Down(), copies, e.px.Requests())
	if e.px.Up() > 5*MiB+64<<10 || e.px.Down() > 5*MiB+64<<10 {
		t.Errorf("%d bytes up, %d bytes down through the client", e.px.Up(), e.px.Down())
	}
	if copies != 3 {
		t.Errorf("%d server-side copies", copies)
	}

	// Splice: pieces of two objects around inline bytes.
	other := random(6*MiB, 12)
	e.put(t, "other", other)
	o2, err := e.c.Open(ctx, bucket, "other")
	if err != nil {
		t.Fatal(err)
	}
	mid := []byte("middle")
	parts := []objstore.Part{objstore.Range(o, 0, 7*MiB), objstore.Bytes(mid), objstore.Range(o2, 1, 6*MiB-1), objstore.Range(o, 20*MiB, 100)}
	if err := e.c.Compose(ctx, bucket, "spliced", parts, nil); err != nil {
		t.Fatal(err)
	}
	want = bytes.Join([][]byte{src[:7*MiB], mid, other[1:], src[20*MiB : 20*MiB+100]}, nil)
	same(t, "spliced", e.get(t, "spliced"), want)

	// Too small for copies: fetched and written whole.
	e.px.Zero()
	if err := e.c.Compose(ctx, bucket, "small", []objstore.Part{objstore.Bytes(mid), objstore.Range(o, 10, 3*MiB)}, nil); err != nil {
		t.Fatal(err)
	}
	same(t, "small", e.get(t, "small"), append(append([]byte{}, mid...), src[10:10+3*MiB]...))
	if n := count(e.px.Requests(), "uploads"); n != 0 {
		t.Errorf("multipart upload for a small object: %q", e.px.Requests())
	}

	// Without Force an existing destination stays.
	err = e.c.Compose(ctx, bucket, "small", []objstore.Part{objstore.Bytes(mid)}, nil)
	isKind(t, err, objstore.ErrExists, errkind.Usage)
	e.noUploads(t)
}

func TestComposeInPlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	old := random(13*MiB, 13)
	e.put(t, "file.c4gh", old)
	o, err := e.c.Open(ctx, bucket, "file.c4gh")
	if err != nil {
		t.Fatal(err)
	}
	header := random(300, 14)
	const oldHeader = 124
	parts := []objstore.Part{objstore.Bytes(header), objstore.Range(o, oldHeader, o.Size()-oldHeader)}
	if err := e.c.Compose(ctx, bucket, "file.c4gh", parts, nil); err != nil {
		t.Fatal(err)
	}
	same(t, "rekeyed", e.get(t, "file.c4gh"), append(append([]byte{}, header...), old[oldHeader:]...))

	// The source changed since it was opened: the copies fail, nothing is
	// left behind and the new version stays.
	newer := random(13*MiB, 15)
	e.put(t, "file.c4gh", newer)
	err = e.c.Compose(ctx, bucket, "file.c4gh", parts, nil)
	isKind(t, err, objstore.ErrChanged, errkind.Other)
	same(t, "after a failed compose", e.get(t, "file.c4gh"), newer)
	e.noUploads(t)
}

func TestFaults(t *testing.T) {
	e := newEnv(t, 2*time.Second)
	ctx := context.Background()
	data := random(17*MiB, 16)
	opts := &objstore.WriterOptions{PartSize: objstore.MinPartSize, Concurrency: 2}
	e.put(t, "src", data)

	t.Run("reset during a part", func(t *testing.T) {
		e.px.Zero()
		e.px.ResetUpAfter(7 * MiB)
		if err := write(t, e.c, "reset", data, 1<<20, opts); err != nil {
			t.Fatal(err)
		}
		same(t, "stored", e.get(t, "reset"), data)
		sentAgain(t, e, len(data), opts.PartSize)
	})
	t.Run("503s", func(t *testing.T) {
		// A burst of 503s while parts are being sent, and while chunks
		// are being read.
		w, err := e.c.NewWriter(ctx, bucket, "slowdown", opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data[:6*MiB]); err != nil {
			t.Fatal(err)
		}
		e.px.Zero()
		e.px.Fail503(4)
		if _, err := w.Write(data[6*MiB:]); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if n := count(e.px.Requests(), "partNumber="); n < 3+4 {
			t.Errorf("%d requests for parts 2 to 4 and 4 refusals", n)
		}
		o, err := e.c.Open(ctx, bucket, "slowdown")
		if err != nil {
			t.Fatal(err)
		}
		e.px.Zero()
		e.px.Fail503(4)
		got := streamed(t, o, 0, -1, &objstore.ReaderOptions{ChunkSize: 4 * MiB, Concurrency: 2})
		same(t, "read back", got, data)
		if n := count(e.px.Requests(), "GET "); n < 5+4 {
			t.Errorf("%d GETs for 5 chunks and 4 refusals", n)
		}
	})
	t.Run("reset during a read", func(t *testing.T) {
		// One chunk of the whole object, broken at 12 MiB: fetched again
		// from where it broke, it costs what the lost socket buffers
		// held (a few MiB on loopback), not the 12 MiB again.
		e.px.Zero()
		e.px.ResetDownAfter(12 * MiB)
		got, err := readAll(t, e.c, "src", &objstore.ReaderOptions{ChunkSize: int64(len(data)), Concurrency: 1})
		if err != nil {
			t.Fatal(err)
		}
		same(t, "read back", got, data)
		gets := count(e.px.Requests(), "GET ")
		t.Logf("%d bytes down for %d, %d GETs", e.px.Down(), len(data), gets)
		if d := e.px.Down(); d > int64(len(data))+7*MiB || gets != 2 {
			t.Errorf("%d bytes down for %d in %d GETs", d, len(data), gets)
		}
	})
	t.Run("stalled body", func(t *testing.T) {
		e.px.Zero()
		e.px.StallDownAfter(5 * MiB)
		got, err := readAll(t, e.c, "src", &objstore.ReaderOptions{ChunkSize: 4 * MiB, Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		same(t, "read back", got, data)
	})
	t.Run("stalled answer to a PUT", func(t *testing.T) {
		// The first PUT succeeds but its answer never comes; the retry
		// finds the object there (If-None-Match) and that it is ours.
		w, err := e.c.NewWriter(ctx, bucket, "stalled-put", nil)
		if err != nil {
			t.Fatal(err)
		}
		small := random(100000, 17)
		w.Write(small)
		e.px.StallDownAfter(0)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		same(t, "stored", e.get(t, "stalled-put"), small)
	})
	t.Run("stalled answer to the start of an upload", func(t *testing.T) {
		// The upload the lost answer created is aborted.
		w, err := e.c.NewWriter(ctx, bucket, "stalled-create", opts)
		if err != nil {
			t.Fatal(err)
		}
		e.px.StallDownAfter(0)
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		e.px.StallDownAfter(-1)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		same(t, "stored", e.get(t, "stalled-create"), data)
		e.noUploads(t)
	})
	e.noUploads(t)
}

func TestCredentialSources(t *testing.T) {
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	e.put(t, "k", []byte("hello"))

	// Environment variables and AWS_ENDPOINT_URL_S3, in path style.
	t.Setenv("AWS_ACCESS_KEY_ID", e.srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", e.srv.SecretKey)
	t.Setenv("AWS_ENDPOINT_URL_S3", e.srv.Endpoint)
	c, err := objstore.New(ctx, objstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := readAllWith(c, "k"); string(got) != "hello" {
		t.Fatalf("environment: %q", got)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value-xyz")
	c, err = objstore.New(ctx, objstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = readAllWith(c, "k")
	isKind(t, err, objstore.ErrAccessDenied, errkind.Key)
	if h := hint(err); !bytes.Contains([]byte(h), []byte("AWS_ACCESS_KEY_ID")) || bytes.Contains([]byte(h+err.Error()), []byte("wrong-secret")) {
		t.Errorf("hint %q for %v", h, err)
	}

	// A profile of the shared files, with its endpoint in the config file.
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	creds := fmt.Sprintf("[archive]\naws_access_key_id = %s\naws_secret_access_key = %s\n", e.srv.AccessKey, e.srv.SecretKey)
	conf := fmt.Sprintf("[profile archive]\nregion = us-east-1\nendpoint_url = %s\n", e.srv.Endpoint)
	writeFile(t, getenv("AWS_SHARED_CREDENTIALS_FILE"), []byte(creds))
	writeFile(t, getenv("AWS_CONFIG_FILE"), []byte(conf))
	c, err = objstore.New(ctx, objstore.Config{Profile: "archive"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAllWith(c, "k"); string(got) != "hello" {
		t.Fatalf("profile: %q, %v", got, err)
	}

	// A profile that is not there.
	_, err = objstore.New(ctx, objstore.Config{Profile: "missing"})
	if err == nil || errkind.Of(err) != errkind.Key {
		t.Errorf("missing profile: %v", err)
	}

	// No credentials anywhere.
	_, err = objstore.New(ctx, objstore.Config{})
	isKind(t, err, objstore.ErrNoCredentials, errkind.Key)
	if hint(err) == "" {
		t.Errorf("no hint for %v", err)
	}
}

func readAllWith(c *objstore.Client, key string) ([]byte, error) {
	o, err := c.Open(context.Background(), bucket, key)
	if err != nil {
		return nil, err
	}
	p := make([]byte, o.Size())
	_, err = o.ReadAt(p, 0)
	return p, err
}

// TestMemory checks the bound on memory of the Writer and the Reader: the
// bytes allocated while 48 MiB pass are about Concurrency buffers, not the
// data.
func TestMemory(t *testing.T) {
	e := newEnv(t, time.Minute)
	data := random(48*MiB, 30)
	var err error
	n := allocated(func() {
		err = write(t, e.c, "mem", data, 1<<20, &objstore.WriterOptions{PartSize: objstore.MinPartSize, Concurrency: 2, Size: int64(len(data))})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Writer, 2 buffers of 5 MiB: %.1f MiB allocated for 48 MiB", float64(n)/MiB)
	if n > 2*objstore.MinPartSize+8*MiB {
		t.Errorf("Writer: %d bytes allocated", n)
	}
	// A size of 75 GB makes the parts 8 MiB (10,000 at most): with room
	// for 4 parts of 5 MiB, the Writer holds two of them, not four.
	n = allocated(func() {
		w, err := e.c.NewWriter(context.Background(), bucket, "grown", &objstore.WriterOptions{PartSize: objstore.MinPartSize, Concurrency: 4, Size: 75e9})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		for off := 0; off < len(data); off += MiB {
			if _, err := w.Write(data[off : off+MiB]); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Logf("Writer, 75 GB in parts of 8 MiB within 4 × 5 MiB: %.1f MiB allocated for 48 MiB", float64(n)/MiB)
	if n > 2*8*MiB+8*MiB {
		t.Errorf("Writer with grown parts: %d bytes allocated", n)
	}
	n = allocated(func() {
		o, err := e.c.Open(context.Background(), bucket, "mem")
		if err != nil {
			t.Fatal(err)
		}
		r, err := o.NewReader(0, -1, &objstore.ReaderOptions{ChunkSize: 4 * MiB, Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		h := crc32.NewIEEE()
		if _, err := io.Copy(h, r); err != nil {
			t.Fatal(err)
		}
		if h.Sum32() != crc32.ChecksumIEEE(data) {
			t.Fatal("read back different data")
		}
	})
	t.Logf("Reader, 2 chunks of 4 MiB: %.1f MiB allocated for 48 MiB", float64(n)/MiB)
	if n > 2*4*MiB+8*MiB {
		t.Errorf("Reader: %d bytes allocated", n)
	}
}

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestSpool: parts too large for two of them to fit in Memory are written
// to spool files, not held in memory; no spool file is ever seen in
// SpoolDir (each is removed once open), a part that broke off is sent
// again from its file, and the object is right: as parts, as a single
// PUT, and after an abort nothing is left.
func TestSpool(t *testing.T) {
	e := newEnv(t, 2*time.Second)
	dir := t.TempDir()
	opts := &objstore.WriterOptions{PartSize: objstore.MinPartSize, Concurrency: 2, Memory: objstore.MinPartSize, SpoolDir: dir}
	data := random(23*MiB+17, 31)
	empty := func(t *testing.T, when string) {
		t.Helper()
		if names, err := os.ReadDir(dir); err != nil || len(names) > 0 {
			t.Errorf("%s: %v in the spool folder (%v)", when, names, err)
		}
	}
	t.Run("parts", func(t *testing.T) {
		var err error
		n := allocated(func() {
			var w *objstore.Writer
			w, err = e.c.NewWriter(context.Background(), bucket, "spooled", opts)
			if err != nil {
				return
			}
			for off := 0; off < len(data) && err == nil; off += MiB {
				_, err = w.Write(data[off:min(off+MiB, len(data))])
				if off == 12*MiB {
					empty(t, "during the upload")
				}
			}
			if err != nil {
				w.Abort()
				return
			}
			err = w.Close()
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("spooled Writer: %.1f MiB allocated for %.1f MiB in parts of 5 MiB", float64(n)/MiB, float64(len(data))/MiB)
		if n >= objstore.MinPartSize {
			t.Errorf("%d bytes allocated: a part was held in memory", n)
		}
		same(t, "stored", e.get(t, "spooled"), data)
		empty(t, "after Close")
	})
	t.Run("reset during a part", func(t *testing.T) {
		e.px.Zero()
		e.px.ResetUpAfter(7 * MiB)
		if err := write(t, e.c, "spooled-reset", data, 1<<20, opts); err != nil {
			t.Fatal(err)
		}
		same(t, "stored", e.get(t, "spooled-reset"), data)
		sentAgain(t, e, len(data), opts.PartSize)
		empty(t, "after Close")
	})
	t.Run("single PUT", func(t *testing.T) {
		small := data[:3*MiB]
		e.px.Zero()
		if err := write(t, e.c, "spooled-small", small, 1<<20, opts); err != nil {
			t.Fatal(err)
		}
		same(t, "stored", e.get(t, "spooled-small"), small)
		if n := count(e.px.Requests(), "uploadId="); n > 0 {
			t.Errorf("%d multipart requests for an object under one part", n)
		}
		empty(t, "after Close")
	})
	t.Run("no folder", func(t *testing.T) {
		// A folder that cannot take the parts is found out when the
		// Writer is made (a stream may come to spool only after many
		// gigabytes): the parts are then held in memory.
		missing := *opts
		missing.SpoolDir = filepath.Join(dir, "missing")
		if err := write(t, e.c, "spooled-nowhere", data, 1<<20, &missing); err != nil {
			t.Fatal(err)
		}
		same(t, "stored", e.get(t, "spooled-nowhere"), data)
	})
	t.Run("abort", func(t *testing.T) {
		w, err := e.c.NewWriter(context.Background(), bucket, "spooled-aborted", opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data[:13*MiB]); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		e.noUploads(t)
		empty(t, "after Abort")
	})
}

// TestNotImported keeps the rule of the layout: nothing at or below the
// front door depends on object storage (or on the AWS SDK).
func TestNotImported(t *testing.T) {
	mod := "github.com/c4gh-go/crypt4gh/"
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	for _, p := range []string{"c4gh", "header", "body", "edit", "keys", "reencrypt"} {
		args = append(args, mod+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == mod+"objstore" || strings.HasPrefix(dep, "github.com/aws/") {
			t.Errorf("%s is imported by the library", dep)
		}
	}
}

// TestSmallObjectOneGet: the Head of an object that holds all of it is
// the last GET of it: ReadAt, a Reader and a Compose of its bytes are
// served from what it fetched. An object larger than its head is read
// again.
func TestSmallObjectOneGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	ctx := context.Background()
	data := random(3000, 40)
	e.put(t, "small", data)
	e.put(t, "large", random(3000, 41))
	e.px.Zero()
	o, err := e.c.Open(ctx, bucket, "small")
	if err != nil {
		t.Fatal(err)
	}
	head, err := o.Head(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "head", head, data)
	head[0] ^= 1 // the caller's to change: the copy kept is not
	p := make([]byte, 100)
	if _, err := o.ReadAt(p, 2900); err != nil {
		t.Fatal(err)
	}
	same(t, "ReadAt", p, data[2900:])
	got := streamed(t, o, 10, 2000, nil)
	same(t, "Reader", got, data[10:2010])
	parts := []objstore.Part{objstore.Bytes([]byte("new head")), objstore.Range(o, 0, 3000)}
	if err := e.c.Compose(ctx, bucket, "small", parts, nil); err != nil {
		t.Fatal(err)
	}
	if n := count(e.px.Requests(), "GET "); n != 1 {
		t.Errorf("%d GETs, want 1:\n%s", n, strings.Join(e.px.Requests(), "\n"))
	}
	same(t, "composed", e.get(t, "small"), append([]byte("new head"), data...))

	// Replaced after its head was read, the object still reads as the
	// version opened, and a rewrite in place of it is refused: the
	// commit is conditional on that version.
	o, err = e.c.Open(ctx, bucket, "small")
	if err != nil {
		t.Fatal(err)
	}
	old, err := o.Head(64 << 10)
	if err != nil {
		t.Fatal(err)
	}
	newer := random(2000, 42)
	e.put(t, "small", newer)
	if _, err := o.ReadAt(p, 100); err != nil {
		t.Fatal(err)
	}
	same(t, "ReadAt after the object was replaced", p, old[100:200])
	err = e.c.Compose(ctx, bucket, "small", []objstore.Part{objstore.Bytes([]byte("x")), objstore.Range(o, 0, o.Size())}, nil)
	isKind(t, err, objstore.ErrChanged, errkind.Other)
	same(t, "after a refused rewrite", e.get(t, "small"), newer)

	e.px.Zero()
	o, err = e.c.Open(ctx, bucket, "large")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Head(1000); err != nil {
		t.Fatal(err)
	}
	if _, err := o.ReadAt(p, 2900); err != nil {
		t.Fatal(err)
	}
	if n := count(e.px.Requests(), "GET "); n != 2 {
		t.Errorf("large: %d GETs, want 2", n)
	}
}
