package mount_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/internal/s3test"
	"github.com/c4gh-go/crypt4gh/mount"
	"github.com/c4gh-go/crypt4gh/mount/storesource"
	"github.com/c4gh-go/crypt4gh/objstore"
)

const testBucket = "mount-bucket"

// objectsEnv is a versitygw with a bucket, a proxy in front of it and a
// client through the proxy.
type objectsEnv struct {
	srv *s3test.Server
	px  *s3test.Proxy
	sdk *s3.Client
	c   *objstore.Client
}

func newObjectsEnv(t *testing.T) *objectsEnv {
	t.Helper()
	requireFUSE(t)
	s3test.IsolateEnv(t)
	srv := s3test.Start(t)
	srv.Bucket(t, testBucket)
	px := s3test.NewProxy(t, srv.Addr)
	c, err := objstore.New(context.Background(), objstore.Config{S3Config: srv.S3Config(t, px.Addr)})
	if err != nil {
		t.Fatal(err)
	}
	return &objectsEnv{srv: srv, px: px, sdk: srv.SDK(), c: c}
}

func (e *objectsEnv) put(t *testing.T, key string, data []byte) {
	t.Helper()
	if _, err := e.sdk.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(testBucket), Key: &key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
}

// mountObjects mounts the objects under prefix until the end of the test.
func (e *objectsEnv) mountObjects(t *testing.T, prefix string, opts mount.Options) (string, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	opts.Log = log
	mp := t.TempDir()
	srv, err := mount.Mount(storesource.New(e.c.Store(), objstore.Location{Bucket: testBucket, Key: prefix}), mp, opts)
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("Unmount: %v", err)
		}
	})
	return mp, log
}

// TestObjects mounts a prefix of objects: keys cut at "/" are folders,
// encrypted objects show decrypted, and an object replaced since it was
// listed does not open.
func TestObjects(t *testing.T) {
	e := newObjectsEnv(t)
	alice := newKey(t)
	want := map[string][]byte{
		"top.bin":         random(2*seg+5, 1),
		"a/b/deep.bin":    random(seg, 2),
		"a/plain.txt":     []byte("shown as it is"),
		"a/b/c/empty.bin": {},
	}
	for name, b := range want {
		if strings.HasSuffix(name, ".bin") {
			e.put(t, "data/"+name+".c4gh", encrypt(t, b, nil, alice))
		} else {
			e.put(t, "data/"+name, b)
		}
	}
	e.put(t, "data/a/", nil) // a folder object, as some tools make
	e.put(t, "elsewhere/x.bin.c4gh", encrypt(t, []byte("not under the prefix"), nil, alice))
	mp, log := e.mountObjects(t, "data", mount.Options{Key: alice})

	var got []string
	filepath.WalkDir(mp, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		rel, _ := filepath.Rel(mp, p)
		if !d.IsDir() {
			got = append(got, filepath.ToSlash(rel))
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(b, want[filepath.ToSlash(rel)]) {
				t.Errorf("%s: %d bytes, %v; want %d", rel, len(b), err, len(want[filepath.ToSlash(rel)]))
			}
		}
		return nil
	})
	var names []string
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Errorf("files shown: %v, want %v", got, names)
	}
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}

	// Replaced since the listing: the open fails, and never shows the
	// new bytes at the old size.
	mp2, _ := e.mountObjects(t, "data", mount.Options{Key: alice})
	if _, err := os.Stat(filepath.Join(mp2, "a", "plain.txt")); err != nil {
		t.Fatal(err)
	}
	e.put(t, "data/a/plain.txt", []byte("replaced, and longer than before"))
	if b, err := os.ReadFile(filepath.Join(mp2, "a", "plain.txt")); err == nil {
		t.Errorf("a replaced object opened: %q", b)
	}
}

// TestObjectsSamtools runs samtools view on regions of a BAM file kept
// encrypted in a bucket and mounted from it, and compares the output with
// samtools on the plaintext. One region query fetches at most the head of
// the BAM object (64 KiB, where its header is), the index object, and for
// each of the two places samtools reads (the BAM header, the region) what
// the kernel asks, max_read, and objstore's read-ahead window, in whole
// segments, plus the HTTP headers of the requests.
func TestObjectsSamtools(t *testing.T) {
	requireTools(t, "samtools")
	e := newObjectsEnv(t)
	alice := newKey(t)
	plain := t.TempDir()
	makeSAM(t, filepath.Join(plain, "x.sam"), 150000)
	run(t, plain, "samtools", "sort", "-o", "x.bam", "x.sam")
	run(t, plain, "samtools", "index", "x.bam")
	bam, err := os.ReadFile(filepath.Join(plain, "x.bam"))
	if err != nil {
		t.Fatal(err)
	}
	bai, err := os.ReadFile(filepath.Join(plain, "x.bam.bai"))
	if err != nil {
		t.Fatal(err)
	}
	encBAM := encrypt(t, bam, nil, alice)
	encBAI := encrypt(t, bai, nil, alice)
	e.put(t, "reads/x.bam.c4gh", encBAM)
	e.put(t, "reads/x.bam.bai.c4gh", encBAI)
	t.Logf("BAM %d bytes, index %d", len(bam), len(bai))

	mp, log := e.mountObjects(t, "reads/", mount.Options{Key: alice})
	e.px.Zero()
	region := "chr1:700000-700100"
	want := run(t, plain, "samtools", "view", "x.bam", region)
	if got := run(t, mp, "samtools", "view", "x.bam", region); !bytes.Equal(got, want) || len(want) == 0 {
		t.Errorf("samtools view x.bam %s: %d bytes, want %d", region, len(got), len(want))
	}
	requests := int64(len(e.px.Requests()))
	perPlace := int64(mount.MaxRead()+objstore.ReadAheadSize) + 2*body.EncryptedSegmentSize
	bound := 64<<10 + int64(len(encBAI)) + 2*perPlace + requests*4096
	t.Logf("one region query: %d bytes down in %d requests, of a %d-byte object (bound %d)", e.px.Down(), requests, len(encBAM), bound)
	if e.px.Down() > bound {
		t.Errorf("one region query fetched %d bytes, more than %d", e.px.Down(), bound)
	}

	for _, reg := range []string{"chr1:1-1000", "chr1:1999000-2000000", "chr2:1234567-1300000"} {
		want := run(t, plain, "samtools", "view", "x.bam", reg)
		if got := run(t, mp, "samtools", "view", "x.bam", reg); !bytes.Equal(got, want) {
			t.Errorf("samtools view x.bam %s: %d bytes, want %d", reg, len(got), len(want))
		}
	}
	if got, want := run(t, mp, "samtools", "view", "-c", "x.bam"), run(t, plain, "samtools", "view", "-c", "x.bam"); !bytes.Equal(got, want) {
		t.Errorf("samtools view -c: %q, want %q", got, want)
	}
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}
