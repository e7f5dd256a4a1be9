package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// regionObjectFixture makes a BAM of about 6 MiB with its index in the
// folder of e, both encrypted for me.pub.
func regionObjectFixture(t *testing.T, dir string) {
	t.Helper()
	regionObjectFixtureOf(t, dir, 200000)
}

// regionObjectFixtureOf is regionObjectFixture with reads records.
func regionObjectFixtureOf(t *testing.T, dir string, reads int) {
	t.Helper()
	writeSAM(t, dir, reads)
	tool(t, dir, "samtools", "sort", "-o", "big.bam", "reads.sam")
	tool(t, dir, "samtools", "index", "big.bam")
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "big.bam", "-o", "big.bam.c4gh")
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "big.bam.bai", "-o", "big.bam.bai.c4gh")
}

// plannedBytes is what inspect --region says the regions read of the
// encrypted file.
func plannedBytes(t *testing.T, dir, file, region string) int64 {
	t.Helper()
	out := mustRun(t, dir, "inspect", "--sk", "me.sec", "--region", region, file)
	m := regexp.MustCompile(`read: (\d+) bytes`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("inspect --region printed:\n%s", out)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// regionCount checks that the BAM out holds as many records of region as
// big.bam.
func regionCount(t *testing.T, dir, out, region string) {
	t.Helper()
	samIndex(t, dir, out)
	if n, want := samCount(t, dir, out, region), samCount(t, dir, "big.bam", region); n != want || want == 0 {
		t.Errorf("%s: %d records in %s, want %d", out, n, region, want)
	}
}

// TestRegionObject decrypts and splices a region of an object whose
// index (encrypted too) lies beside it: the bytes that cross the network
// are the index, the header and the planned segments, at most twice the
// planned bytes and a bounded read-ahead, not the object.
func TestRegionObject(t *testing.T) {
	e := newS3EnvParallel(t)
	regionObjectFixture(t, e.dir)
	for _, name := range []string{"big.bam.c4gh", "big.bam.bai.c4gh"} {
		e.put(t, "runs/"+name, e.read(t, name))
	}
	const region = "chr1:100000-110000"
	planned := plannedBytes(t, e.dir, "big.bam.c4gh", region)
	fi, _ := os.Stat(filepath.Join(e.dir, "big.bam.c4gh"))
	idx, _ := os.Stat(filepath.Join(e.dir, "big.bam.bai.c4gh"))

	e.px.Zero()
	e.must(t, "decrypt", "--sk", "me.sec", "--region", region, "-i", url("runs/big.bam.c4gh"), "-o", "r.bam")
	down := e.px.Down()
	t.Logf("decrypt --region of an object of %d bytes: %d bytes down for %d planned, %d requests", fi.Size(), down, planned, len(e.px.Requests()))
	regionCount(t, e.dir, "r.bam", region)
	limit := 2*planned + idx.Size() + 2<<20
	if down > limit || down > fi.Size()/2 {
		t.Errorf("decrypt --region of an object of %d bytes: %d bytes down, planned %d (limit %d)", fi.Size(), down, planned, limit)
	}

	// Spliced for a recipient, object to object.
	e.keygen(t, "them")
	e.px.Zero()
	e.must(t, "splice", "--sk", "me.sec", "--recipient_pk", "them.pub", "--region", region,
		"-i", url("runs/big.bam.c4gh"), "-o", url("out/r.bam.c4gh"))
	if down := e.px.Down(); down > limit {
		t.Errorf("splice --region: %d bytes down, planned %d (limit %d)", down, planned, limit)
	}
	e.noUploads(t)
	e.write(t, "s.bam.c4gh", e.get(t, "out/r.bam.c4gh"))
	e.must(t, "decrypt", "--sk", "them.sec", "-i", "s.bam.c4gh", "-o", "s.bam")
	regionCount(t, e.dir, "s.bam", region)

	// No index beside it: the error names the objects tried.
	e.put(t, "alone/big.bam.c4gh", e.read(t, "big.bam.c4gh"))
	code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--region", region, "-i", url("alone/big.bam.c4gh"), "-o", "x.bam")
	if code != 2 || !strings.Contains(stderr, "s3://"+testBucket+"/alone/big.bam.bai") {
		t.Errorf("no index: exit %d, %q", code, stderr)
	}
}

// TestRegionHTTPS reads a region of a file on a web server, its index
// beside it: with range requests, not the whole file.
func TestRegionHTTPS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	reads := 200000
	if testing.Short() {
		reads = 50000 // 1.9 MB, of which the region reads 0.3
	}
	regionObjectFixtureOf(t, dir, reads)
	web := t.TempDir()
	for _, name := range []string{"big.bam.c4gh", "big.bam.bai.c4gh"} {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(web, name)); err != nil {
			t.Fatal(err)
		}
	}
	var sent atomic.Int64
	files := http.FileServer(http.Dir(web))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		files.ServeHTTP(countingWriter{w, &sent}, r)
	}))
	defer srv.Close()
	const region = "chr2:50000-52000"
	mustRun(t, dir, "decrypt", "--sk", "me.sec", "--region", region, "-i", srv.URL+"/big.bam.c4gh", "-o", "w.bam")
	regionCount(t, dir, "w.bam", region)
	fi, _ := os.Stat(filepath.Join(web, "big.bam.c4gh"))
	if n := sent.Load(); n > fi.Size()/2 {
		t.Errorf("%d bytes served for a region of a file of %d bytes", n, fi.Size())
	}
}

// countingWriter counts the bytes of the bodies a server sends.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.ResponseWriter.Write(p)
}
