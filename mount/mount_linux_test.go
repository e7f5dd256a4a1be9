package mount_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/mount"
)

const seg = body.SegmentSize

// TestTree mounts a folder of plain and encrypted files and compares every
// mounted file with its plaintext, and the names, sizes and modes with
// what the package promises.
func TestTree(t *testing.T) {
	alice, bob := newKey(t), newKey(t)
	src := t.TempDir()
	want := map[string][]byte{} // mounted name -> content
	for i, n := range []int{0, 1, seg - 1, seg, seg + 1, 2*seg + 500, 1<<20 + 3} {
		plain := random(n, uint64(i))
		name := filepath.Join("sizes", strings.Repeat("x", i+1)+".bin")
		writeFile(t, filepath.Join(src, name+".c4gh"), encrypt(t, plain, nil, alice))
		want[name] = plain
	}
	plain := random(3*seg+7, 100)
	writeFile(t, filepath.Join(src, "a", "b", "deep.bam.c4gh"), encrypt(t, plain, nil, bob, alice))
	want["a/b/deep.bam"] = plain
	index := random(1000, 101)
	writeFile(t, filepath.Join(src, "a", "b", "deep.bam.bai.c4gh"), encrypt(t, index, nil, alice))
	want["a/b/deep.bam.bai"] = index
	want["notes.txt"] = []byte("plain text, shown as it is\n")
	writeFile(t, filepath.Join(src, "notes.txt"), want["notes.txt"])
	// Beside a plain file of the same name, the encrypted one is left out.
	want["x.vcf.gz.tbi"] = []byte("the plain index")
	writeFile(t, filepath.Join(src, "x.vcf.gz.tbi"), want["x.vcf.gz.tbi"])
	writeFile(t, filepath.Join(src, "x.vcf.gz.tbi.c4gh"), encrypt(t, []byte("the encrypted index"), nil, alice))
	// For another reader, and not Crypt4GH at all: left out.
	writeFile(t, filepath.Join(src, "for-bob.c4gh"), encrypt(t, plain, nil, bob))
	writeFile(t, filepath.Join(src, "junk.c4gh"), []byte("not crypt4gh"))
	// A body that ends in fewer bytes than a segment has, after whole
	// ones: no length of plaintext stands for it.
	writeFile(t, filepath.Join(src, "stray.c4gh"), append(encrypt(t, plain[:2*seg], nil, alice), make([]byte, 27)...))
	// A folder keeps its name, suffix or not; so does a file named .c4gh.
	if err := os.MkdirAll(filepath.Join(src, "empty.c4gh"), 0o755); err != nil {
		t.Fatal(err)
	}
	want[".c4gh"] = []byte("odd name")
	writeFile(t, filepath.Join(src, ".c4gh"), want[".c4gh"])
	// Neither pipes nor broken links are shown.
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(src, "broken")); err != nil {
		t.Fatal(err)
	}

	key := *alice
	mp, log := mountDir(t, src, mount.Options{Key: &key})
	key.Zero() // Mount keeps its own copy

	got := map[string][]byte{}
	dirs := map[string]bool{}
	err := filepath.WalkDir(mp, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mp, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
			t.Errorf("%s: owner %d:%d, want %d:%d", rel, st.Uid, st.Gid, os.Getuid(), os.Getgid())
		}
		if d.IsDir() {
			dirs[rel] = true
			if fi.Mode().Perm() != 0o500 {
				t.Errorf("%s: mode %v, want 0500", rel, fi.Mode())
			}
			return nil
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o400 {
			t.Errorf("%s: mode %v, want a regular file 0400", rel, fi.Mode())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		if fi.Size() != int64(len(b)) {
			t.Errorf("%s: size %d, but %d bytes read", rel, fi.Size(), len(b))
		}
		got[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s is not mounted", name)
		} else if !bytes.Equal(g, w) {
			t.Errorf("%s: %d bytes differ from the %d of its plaintext", name, len(g), len(w))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is mounted, but should not be", name)
		}
	}
	wantDirs := []string{".", "a", "a/b", "empty.c4gh", "sizes"}
	if g := slices.Sorted(func(yield func(string) bool) {
		for d := range dirs {
			if !yield(d) {
				return
			}
		}
	}); !slices.Equal(g, wantDirs) {
		t.Errorf("folders %q, want %q", g, wantDirs)
	}

	// Each entry left out is logged once, with its name and the reason.
	for _, c := range [][]string{
		{"for-bob.c4gh", "left out", "no header packet"},
		{"junk.c4gh", "left out", "not a crypt4gh file"},
		{"stray.c4gh", "left out", "segment 2", "truncated"},
		{"x.vcf.gz.tbi.c4gh", "left out", "x.vcf.gz.tbi is beside it"},
		{"pipe", "left out", "a named pipe"},
	} {
		if n := log.count(c...); n != 1 {
			t.Errorf("%d log lines with %q, want 1; log:\n%s", n, c, log)
		}
	}
	if n := strings.Count(log.String(), "\n"); n != 5 {
		t.Errorf("%d log lines, want 5:\n%s", n, log)
	}
	// Inode 0 is a deleted entry to some programs; FUSE's root is 1.
	if fi, err := os.Stat(mp); err != nil || fi.Sys().(*syscall.Stat_t).Ino != 1 {
		t.Errorf("the mount point: %v, inode %d, want 1", err, fi.Sys().(*syscall.Stat_t).Ino)
	}

	// Read-only, default_permissions, not for others.
	_, opts := mountInfo(t, mp)
	for _, o := range []string{"ro", "default_permissions", "type=fuse.crypt4gh"} {
		if !slices.Contains(opts, o) {
			t.Errorf("mount options %q lack %s", opts, o)
		}
	}
	if slices.Contains(opts, "allow_other") {
		t.Errorf("mount options %q have allow_other", opts)
	}
	if _, err := os.OpenFile(filepath.Join(mp, "notes.txt"), os.O_RDWR, 0); err == nil {
		t.Error("a file opened for writing")
	}
	if err := os.WriteFile(filepath.Join(mp, "new"), nil, 0o600); err == nil {
		t.Error("a file was created")
	}
}

// TestAllowOther: the mount is for everybody only when asked, and the
// modes say so.
func TestAllowOther(t *testing.T) {
	if os.Geteuid() != 0 {
		need(t, "allow_other needs root or user_allow_other in /etc/fuse.conf")
	}
	alice := newKey(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "d", "f.c4gh"), encrypt(t, []byte("hello"), nil, alice))
	mp, _ := mountDir(t, src, mount.Options{Key: alice, AllowOther: true})
	_, opts := mountInfo(t, mp)
	if !slices.Contains(opts, "allow_other") || !slices.Contains(opts, "default_permissions") {
		t.Errorf("mount options %q lack allow_other or default_permissions", opts)
	}
	for p, mode := range map[string]fs.FileMode{"d": 0o555, "d/f": 0o444} {
		fi, err := os.Stat(filepath.Join(mp, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), mode)
		}
	}
}

// TestSender shows only the files that the sender wrote.
func TestSender(t *testing.T) {
	alice, sender, other := newKey(t), newKey(t), newKey(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "signed.c4gh"), encrypt(t, []byte("from the sender"), sender, alice))
	writeFile(t, filepath.Join(src, "other.c4gh"), encrypt(t, []byte("from someone else"), other, alice))
	pk := sender.Public()
	mp, log := mountDir(t, src, mount.Options{Key: alice, Sender: &pk})
	entries, err := os.ReadDir(mp)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "signed" {
		t.Errorf("entries %v, want just signed", entries)
	}
	if log.count("other.c4gh", "left out") != 1 {
		t.Errorf("other.c4gh not logged:\n%s", log)
	}
}

// preadCheck reads len bytes at off from f and compares them with plain.
func preadCheck(t *testing.T, f *os.File, plain []byte, off int64, n int) {
	t.Helper()
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	wantN := max(0, min(n, len(plain)-int(off)))
	if got != wantN {
		t.Fatalf("pread(%d, %d): %d bytes, want %d (%v)", off, n, got, wantN, err)
	}
	if err != nil && !(err == io.EOF && wantN < n) {
		t.Fatalf("pread(%d, %d): %v", off, n, err)
	}
	if got > 0 && !bytes.Equal(buf[:got], plain[off:off+int64(got)]) {
		t.Fatalf("pread(%d, %d): wrong bytes", off, n)
	}
}

// TestPread reads a mounted file at the edges of segments, at its end and
// past it, and at random offsets, through the page cache and around it
// (O_DIRECT, so that every read reaches the file system as it is).
func TestPread(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(5*seg+1234, 7)
	writeFile(t, filepath.Join(src, "f.c4gh"), encrypt(t, plain, nil, alice))
	mp, log := mountDir(t, src, mount.Options{Key: alice})
	size := int64(len(plain))
	for _, direct := range []bool{false, true} {
		flags := os.O_RDONLY
		if direct {
			flags |= syscall.O_DIRECT
		}
		f, err := os.OpenFile(filepath.Join(mp, "f"), flags, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, off := range []int64{0, seg - 1, seg, seg + 1, size - 1, size, size + 1, size + seg} {
			for _, n := range []int{1, 2, 4096, seg, 3 * seg} {
				preadCheck(t, f, plain, off, n)
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 300 {
			off := r.Int64N(size + 100)
			n := 1 + r.IntN(3*seg)
			preadCheck(t, f, plain, off, n)
		}
	}
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}

// TestEditList mounts files cut with reencrypt.Splice: each reads as what
// it stands for.
func TestEditList(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(9*seg+999, 9)
	enc := encrypt(t, plain, nil, alice)
	cases := map[string][]edit.Range{
		"one":      {{Start: seg + 10, End: 4*seg - 3}},
		"several":  {{Start: 5, End: 6}, {Start: seg - 2, End: seg + 2}, {Start: 3 * seg, End: 5*seg + 77}, {Start: 8*seg + 1, End: edit.Unbounded}},
		"open":     {{Start: 2*seg + 1, End: edit.Unbounded}},
		"segments": {{Start: seg, End: 3 * seg}},
	}
	for name, ranges := range cases {
		writeFile(t, filepath.Join(src, name+".c4gh"), splice(t, enc, alice, ranges...))
	}
	mp, log := mountDir(t, src, mount.Options{Key: alice})
	for name, ranges := range cases {
		want := pick(plain, ranges...)
		got, err := os.ReadFile(filepath.Join(mp, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, not the %d it stands for", name, len(got), len(want))
		}
		f, err := os.OpenFile(filepath.Join(mp, name), os.O_RDONLY|syscall.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r := rand.New(rand.NewPCG(3, 4))
		for range 100 {
			preadCheck(t, f, want, r.Int64N(int64(len(want))+10), 1+r.IntN(2*seg))
		}
	}
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}

// pread reads n bytes at off of the file at p with O_DIRECT, so that the
// read reaches the file system whatever the kernel has cached.
func pread(t *testing.T, p string, off int64, n int) ([]byte, error) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := f.ReadAt(buf, off)
	return buf[:m], err
}

// TestTampered: a read that touches a damaged segment fails with EIO and
// is logged once with the file and the segment; the other segments read
// as they should.
func TestTampered(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(5*seg+100, 11)
	enc := encrypt(t, plain, nil, alice)
	bodyStart := len(enc) - int(body.EncryptedSize(int64(len(plain))))
	enc[bodyStart+2*body.EncryptedSegmentSize+500] ^= 1 // in segment 2
	writeFile(t, filepath.Join(src, "t.c4gh"), enc)
	mp, log := mountDir(t, src, mount.Options{Key: alice})
	p := filepath.Join(mp, "t")

	for _, off := range []int64{2 * seg, 2*seg + 1, 3*seg - 1} {
		if b, err := pread(t, p, off, 10); !errors.Is(err, syscall.EIO) {
			t.Errorf("pread at %d in the damaged segment: %d bytes, %v; want EIO", off, len(b), err)
		}
	}
	// A read that ends in the damaged segment fails too.
	if b, err := pread(t, p, 2*seg-5, 10); !errors.Is(err, syscall.EIO) {
		t.Errorf("pread across into the damaged segment: %d bytes, %v; want EIO", len(b), err)
	}
	for _, off := range []int64{0, seg, 2*seg - 10, 3 * seg, 5 * seg} {
		b, err := pread(t, p, off, 10)
		if err != nil || !bytes.Equal(b, plain[off:off+10]) {
			t.Errorf("pread at %d: %v, or wrong bytes", off, err)
		}
	}
	// Through the page cache: whatever a read returns is right, and the
	// damaged segment is never returned.
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("reading the whole file: %v, want EIO", err)
	}
	if len(got) > 2*seg || !bytes.Equal(got, plain[:len(got)]) {
		t.Errorf("reading the whole file gave %d bytes before the error, or wrong ones", len(got))
	}
	buf := make([]byte, 100)
	if _, err := f.ReadAt(buf, 4*seg); err != nil || !bytes.Equal(buf, plain[4*seg:4*seg+100]) {
		t.Errorf("read after the damaged segment: %v, or wrong bytes", err)
	}
	if n := log.count("t.c4gh", "segment 2 failed authentication", "EIO"); n != 1 {
		t.Errorf("%d log lines for segment 2, want 1:\n%s", n, log)
	}
	if n := strings.Count(log.String(), "\n"); n != 1 {
		t.Errorf("%d log lines, want 1:\n%s", n, log)
	}
}

// TestMissingData: a file whose edit list reaches past its body (segments
// were cut off its end, or the writer described more than it wrote) is
// valid, as decrypt takes it: it shows and reads the bytes that are there,
// and the log says once that the edit list describes more.
func TestMissingData(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(6*seg, 13)
	ranges := []edit.Range{{Start: 100, End: 2 * seg}, {Start: 3*seg + 5, End: 5*seg + 9}}
	spliced := splice(t, encrypt(t, plain, nil, alice), alice, ranges...)
	// The spliced body holds segments 0, 1, 3, 4 and 5; drop the last,
	// which holds the last 9 bytes that the edit list keeps.
	cut := spliced[:len(spliced)-body.EncryptedSegmentSize]
	writeFile(t, filepath.Join(src, "cut.c4gh"), cut)
	mp, log := mountDir(t, src, mount.Options{Key: alice})
	want := pick(plain, ranges...)
	want = want[:len(want)-9]
	p := filepath.Join(mp, "cut")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(want)) {
		t.Errorf("size %d, want %d, what the body holds of the edit list", fi.Size(), len(want))
	}
	if n := log.count("cut.c4gh", "the edit list describes", "the file holds"); n != 1 {
		t.Errorf("%d log lines about the edit list, want 1:\n%s", n, log)
	}
	if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, want) {
		t.Errorf("the file: %d bytes, %v; want the %d bytes that are there", len(b), err, len(want))
	}
	if b, err := pread(t, p, int64(len(want))-5, 5); err != nil || !bytes.Equal(b, want[len(want)-5:]) {
		t.Errorf("end of the file: %d bytes, %v", len(b), err)
	}
}

// TestManyOpen keeps many files open at once and reads them all, partly,
// in turns: the shared cache runs out and every read is still right.
func TestManyOpen(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	const files = 40
	plains := make([][]byte, files)
	for i := range plains {
		plains[i] = random(3*seg+i, uint64(200+i))
		writeFile(t, filepath.Join(src, "d", "f"+string(rune('A'+i))+".c4gh"), encrypt(t, plains[i], nil, alice))
	}
	mp, _ := mountDir(t, src, mount.Options{Key: alice})
	open := make([]*os.File, files)
	for i := range open {
		f, err := os.OpenFile(filepath.Join(mp, "d", "f"+string(rune('A'+i))), os.O_RDONLY|syscall.O_DIRECT, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		open[i] = f
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 400 {
		i := r.IntN(files)
		preadCheck(t, open[i], plains[i], r.Int64N(int64(len(plains[i]))), 1+r.IntN(seg/2))
	}
}

// TestConcurrentReads reads one file from several goroutines at once, each
// with its own descriptor and one shared, around the page cache.
func TestConcurrentReads(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(8*seg+321, 17)
	writeFile(t, filepath.Join(src, "f.c4gh"), encrypt(t, plain, nil, alice))
	mp, log := mountDir(t, src, mount.Options{Key: alice})
	shared, err := os.OpenFile(filepath.Join(mp, "f"), os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			f, err := os.OpenFile(filepath.Join(mp, "f"), os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			r := rand.New(rand.NewPCG(uint64(g), 99))
			buf := make([]byte, 3*seg)
			for i := range 200 {
				use := f
				if i%2 == 1 {
					use = shared
				}
				off, n := r.Int64N(int64(len(plain))), 1+r.IntN(len(buf))
				got, err := use.ReadAt(buf[:n], off)
				if want := min(n, len(plain)-int(off)); got != want || (err != nil && err != io.EOF) {
					t.Errorf("pread(%d, %d): %d bytes, %v; want %d", off, n, got, err, want)
					return
				}
				if !bytes.Equal(buf[:got], plain[off:off+int64(got)]) {
					t.Errorf("pread(%d, %d): wrong bytes", off, n)
					return
				}
			}
		})
	}
	wg.Wait()
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}

// TestMountErrors: Mount fails before mounting anything when it cannot
// work, and says why.
func TestMountErrors(t *testing.T) {
	alice := newKey(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFile(t, file, []byte("x"))
	for _, c := range []struct {
		src, mp string
		opts    mount.Options
		want    string
	}{
		{dir, t.TempDir(), mount.Options{}, "no secret key"},
		{dir, filepath.Join(dir, "nowhere"), mount.Options{Key: alice}, "no such file"},
		{dir, file, mount.Options{Key: alice}, "is not a folder"},
		{filepath.Join(dir, "nowhere"), t.TempDir(), mount.Options{Key: alice}, "failed to read source"},
	} {
		srv, err := mount.Mount(mount.Dir(c.src), c.mp, c.opts)
		if err == nil {
			srv.Unmount()
			t.Errorf("Mount(%s, %s) succeeded", c.src, c.mp)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Mount(%s, %s): %v, want %q", c.src, c.mp, err, c.want)
		}
		if m, _ := mountInfo(t, c.mp); m {
			t.Errorf("%s mounted after an error", c.mp)
		}
	}
}

// TestLinkOutOfSource: a symbolic link in SOURCE that points outside it,
// as another user of a shared folder could plant, is left out; one that
// points inside is served.
func TestLinkOutOfSource(t *testing.T) {
	alice := newKey(t)
	src, elsewhere := t.TempDir(), t.TempDir()
	plain := random(1000, 14)
	writeFile(t, filepath.Join(src, "a.c4gh"), encrypt(t, plain, nil, alice))
	writeFile(t, filepath.Join(elsewhere, "secret.c4gh"), encrypt(t, plain, nil, alice))
	if err := os.Symlink("a.c4gh", filepath.Join(src, "in.c4gh")); err != nil {
		t.Fatal(err)
	}
	// An absolute link to a place inside is inside too.
	if err := os.Symlink(filepath.Join(src, "a.c4gh"), filepath.Join(src, "abs.c4gh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "secret.c4gh"), filepath.Join(src, "out.c4gh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(src, "outdir")); err != nil {
		t.Fatal(err)
	}
	mp, log := mountDir(t, src, mount.Options{Key: alice})
	entries, err := os.ReadDir(mp)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"out.c4gh", "outdir"} {
		if n := log.count(name, "left out", "points out of the mounted folder"); n != 1 {
			t.Errorf("%d log lines for %s, want 1:\n%s", n, name, log)
		}
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"a", "abs", "in"}) {
		t.Errorf("the mount shows %v, want [a abs in]", names)
	}
	for _, name := range []string{"in", "abs"} {
		if b, err := os.ReadFile(filepath.Join(mp, name)); err != nil || !bytes.Equal(b, plain) {
			t.Errorf("the link inside, %s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(mp, "out")); err == nil {
		t.Error("the link out of the folder is served")
	}
}

// TestIndexTime: an index is shown no older than its data file, so that
// htslib does not warn that the index is older; other files keep theirs.
func TestIndexTime(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "reads.bam.bai"), []byte("index"))
	writeFile(t, filepath.Join(src, "reads.bai"), []byte("index"))
	writeFile(t, filepath.Join(src, "reads.bam.c4gh"), encrypt(t, random(100, 15), nil, alice))
	writeFile(t, filepath.Join(src, "other.txt"), []byte("x"))
	old, data := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []string{"reads.bam.bai", "reads.bai", "other.txt"} {
		os.Chtimes(filepath.Join(src, n), old, old)
	}
	os.Chtimes(filepath.Join(src, "reads.bam.c4gh"), data, data)
	mp, _ := mountDir(t, src, mount.Options{Key: alice})
	for name, want := range map[string]time.Time{"reads.bam.bai": data, "reads.bai": data, "reads.bam": data, "other.txt": old} {
		fi, err := os.Stat(filepath.Join(mp, name))
		if err != nil || !fi.ModTime().Equal(want) {
			t.Errorf("%s: %v, %v; want %v", name, fi.ModTime(), err, want)
		}
	}
}

// TestLinkSwapRace: a file of SOURCE swapped, again and again, with a
// link that points outside it (renameat2 RENAME_EXCHANGE, as another
// user of a shared folder could) is never opened through the link: the
// source opens beneath its root in one step, not by checking a path and
// opening it after.
func TestLinkSwapRace(t *testing.T) {
	src, elsewhere, links := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(src, "leak.txt"), []byte("inside\n"))
	writeFile(t, filepath.Join(elsewhere, "o.txt"), []byte("OUTSIDE\n"))
	if err := os.Symlink(filepath.Join(elsewhere, "o.txt"), filepath.Join(links, "l")); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(src, "leak.txt"), unix.AT_FDCWD, filepath.Join(links, "l"), unix.RENAME_EXCHANGE)
		}
	})
	s := mount.Dir(src)
	leaks, opened := 0, 0
	buf := make([]byte, 8)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		f, err := s.Open(context.Background(), "leak.txt")
		if err != nil {
			continue // the link, refused
		}
		opened++
		if n, _ := f.ReadAt(buf, 0); string(buf[:n]) == "OUTSIDE\n" {
			leaks++
		}
		f.Close()
	}
	close(stop)
	wg.Wait()
	if leaks > 0 {
		t.Errorf("%d opens of %d read the file outside the source", leaks, opened)
	}
	if opened == 0 {
		t.Error("the file inside was never opened")
	}
}

// TestLinkLoop: a link in SOURCE to a folder that holds it (., .., or
// further up, within SOURCE) is left out with a reason, so that the tree
// does not go on without end; a link to another folder is followed.
func TestLinkLoop(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"sub/deeper", "other"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"self": ".", "sub/up": "..", "sub/deeper/top": "../..", "sub/side": "../other"} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := mount.Dir(src)
	for dir, want := range map[string]map[string]string{
		"":           {"self": "loop", "sub": "", "other": ""},
		"sub":        {"up": "loop", "side": "", "deeper": ""},
		"sub/deeper": {"top": "loop"},
	} {
		entries, err := s.ReadDir(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range entries {
			got[e.Name] = ""
			if strings.Contains(e.Other, "(a loop)") {
				got[e.Name] = "loop"
			} else if e.Other != "" || !e.Dir {
				got[e.Name] = e.Other
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%q: %v, want %v", dir, got, want)
		}
	}
}
