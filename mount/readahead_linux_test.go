package mount_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/mount"
)

// mountServer is mountDir that also returns the server.
func mountServer(t *testing.T, src string, opts mount.Options) (*mount.Server, string, *syncBuffer) {
	t.Helper()
	requireFUSE(t)
	log := &syncBuffer{}
	opts.Log = log
	mp := t.TempDir()
	srv, err := mount.Mount(mount.Dir(src), mp, opts)
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("Unmount: %v", err)
		}
	})
	return srv, mp, log
}

// openDirect opens p with O_DIRECT, so that every read reaches the file
// system as it was made.
func openDirect(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readSteps reads f from off to its end in reads of step bytes and
// compares each with want.
func readSteps(t *testing.T, f *os.File, want []byte, off int64, step int) {
	t.Helper()
	buf := make([]byte, step)
	for off < int64(len(want)) {
		n, err := f.ReadAt(buf, off)
		wantN := min(step, len(want)-int(off))
		if n != wantN || (err != nil && !(err == io.EOF && wantN < step)) {
			t.Fatalf("step %d: pread at %d: %d bytes, %v; want %d", step, off, n, err, wantN)
		}
		if !bytes.Equal(buf[:n], want[off:off+int64(n)]) {
			t.Fatalf("step %d: pread at %d: wrong bytes", step, off)
		}
		off += int64(n)
	}
}

// waitBudget waits until every block read ahead was given back, which
// the workers do as they finish the blocks that a closed handle forgot.
func waitBudget(t *testing.T, srv *mount.Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		free, _ := mount.ReadAhead(srv)
		if free == mount.ReadAheadBudget {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d blocks of read-ahead still held with no file open", mount.ReadAheadBudget-free)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The read-ahead serves the handles of mounts with Options.DirectIO.

// TestSequential reads a mounted file from start to end in steps of many
// lengths, around the page cache and through it, from the start and from
// the middle: the reads find the blocks read ahead and every byte is
// right; once the files are closed, the read-ahead holds nothing.
func TestSequential(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(40*seg+1234, 31)
	writeFile(t, filepath.Join(src, "f.c4gh"), encrypt(t, plain, nil, alice))
	srv, mp, log := mountServer(t, src, mount.Options{Key: alice, DirectIO: true})
	p := filepath.Join(mp, "f")
	for _, step := range []int{1000, 4096, seg - 1, seg, seg + 1, 3*seg + 5, 256 << 10} {
		t.Run(fmt.Sprint(step), func(t *testing.T) {
			f := openDirect(t, p)
			readSteps(t, f, plain, 0, step)
			// A read elsewhere, then sequential reads from there.
			preadCheck(t, f, plain, 7, 100)
			readSteps(t, f, plain, 17*seg+333, step)
			f.Close()
		})
	}
	if _, used := mount.ReadAhead(srv); used == 0 {
		t.Error("no read found a block read ahead")
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("through the page cache: %d bytes, %v", len(got), err)
	}
	waitBudget(t, srv)
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}

// TestSequentialEdited reads files cut with an edit list sequentially, in
// steps that end inside and across the edges of the kept ranges.
func TestSequentialEdited(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(30*seg+999, 32)
	enc := encrypt(t, plain, nil, alice)
	ranges := []edit.Range{{Start: 5, End: 6}, {Start: seg - 2, End: 3*seg + 2}, {Start: 5*seg + 11, End: 20*seg + 77}, {Start: 25*seg + 1, End: edit.Unbounded}}
	writeFile(t, filepath.Join(src, "e.c4gh"), splice(t, enc, alice, ranges...))
	srv, mp, log := mountServer(t, src, mount.Options{Key: alice, DirectIO: true})
	want := pick(plain, ranges...)
	for _, step := range []int{4096, seg - 3, seg, 2*seg + 7, 256 << 10} {
		f := openDirect(t, filepath.Join(mp, "e"))
		readSteps(t, f, want, 0, step)
		f.Close()
	}
	waitBudget(t, srv)
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}

// TestSequentialTampered reads a file with a damaged segment sequentially:
// only the reads that need that segment fail, with EIO, including the one
// that finds it read ahead; the reads after it succeed; it is logged once.
func TestSequentialTampered(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(20*seg+100, 33)
	enc := encrypt(t, plain, nil, alice)
	bodyStart := len(enc) - int(body.EncryptedSize(int64(len(plain))))
	enc[bodyStart+9*body.EncryptedSegmentSize+77] ^= 1 // in segment 9
	writeFile(t, filepath.Join(src, "t.c4gh"), enc)
	srv, mp, log := mountServer(t, src, mount.Options{Key: alice, DirectIO: true})
	for _, step := range []int{seg / 2, seg, 3 * seg} {
		f := openDirect(t, filepath.Join(mp, "t"))
		buf := make([]byte, step)
		for off := int64(0); off < int64(len(plain)); off += int64(step) {
			n, err := f.ReadAt(buf, off)
			end := min(off+int64(step), int64(len(plain)))
			if off < 10*seg && end > 9*seg {
				if !errors.Is(err, syscall.EIO) {
					t.Errorf("step %d: pread at %d over the damaged segment: %d bytes, %v; want EIO", step, off, n, err)
				}
				continue
			}
			if n != int(end-off) || (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], plain[off:end]) {
				t.Errorf("step %d: pread at %d: %d bytes, %v, or wrong bytes", step, off, n, err)
			}
		}
		f.Close()
	}
	if n := log.count("t.c4gh", "segment 9 failed authentication", "EIO"); n != 1 {
		t.Errorf("%d log lines for segment 9, want 1:\n%s", n, log)
	}
	waitBudget(t, srv)
}

// TestConcurrentSequential reads one file sequentially from several
// goroutines at once, each with its own descriptor, while others read it
// at random through one shared descriptor: each handle has its own
// read-ahead, and random reads on a shared one forget it.
func TestConcurrentSequential(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(48*seg+555, 34)
	writeFile(t, filepath.Join(src, "f.c4gh"), encrypt(t, plain, nil, alice))
	srv, mp, log := mountServer(t, src, mount.Options{Key: alice, DirectIO: true})
	p := filepath.Join(mp, "f")
	shared := openDirect(t, p)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			step := []int{4096, seg, 200 << 10, 3*seg + 1}[g]
			buf := make([]byte, step)
			for off := int64(g * 1000); off < int64(len(plain)); {
				n, err := f.ReadAt(buf, off)
				want := min(step, len(plain)-int(off))
				if n != want || (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], plain[off:off+int64(n)]) {
					t.Errorf("goroutine %d: pread at %d: %d bytes, %v, or wrong bytes", g, off, n, err)
					return
				}
				off += int64(n)
			}
		})
	}
	for g := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 35))
			buf := make([]byte, 2*seg)
			for range 150 {
				off, n := r.Int64N(int64(len(plain))), 1+r.IntN(len(buf))
				if r.IntN(3) == 0 {
					// A short run of sequential reads on the shared handle.
					off = off / seg * seg
				}
				got, err := shared.ReadAt(buf[:n], off)
				if want := min(n, len(plain)-int(off)); got != want || (err != nil && err != io.EOF) || !bytes.Equal(buf[:got], plain[off:off+int64(got)]) {
					t.Errorf("shared: pread(%d, %d): %d bytes, %v, or wrong bytes", off, n, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	shared.Close()
	waitBudget(t, srv)
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}

// TestDirectIO mounts with Options.DirectIO: encrypted files read right
// sequentially, at random and through mmap (where the kernel allows it),
// stat reports blocks of 512 KiB for them, and plain files are served as
// before.
func TestDirectIO(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(20*seg+4321, 36)
	writeFile(t, filepath.Join(src, "f.c4gh"), encrypt(t, plain, nil, alice))
	writeFile(t, filepath.Join(src, "notes.txt"), []byte("plain\n"))
	srv, mp, log := mountServer(t, src, mount.Options{Key: alice, DirectIO: true})
	p := filepath.Join(mp, "f")
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("ReadFile: %d bytes, %v", len(got), err)
	}
	if got, err := os.ReadFile(filepath.Join(mp, "notes.txt")); err != nil || string(got) != "plain\n" {
		t.Errorf("the plain file: %q, %v", got, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if bs := fi.Sys().(*syscall.Stat_t).Blksize; bs != 512<<10 {
		t.Errorf("blksize %d, want 512 KiB", bs)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, step := range []int{4096, seg + 1, 512 << 10} {
		readSteps(t, f, plain, 0, step)
	}
	r := rand.New(rand.NewPCG(37, 38))
	for range 200 {
		preadCheck(t, f, plain, r.Int64N(int64(len(plain))+10), 1+r.IntN(3*seg))
	}
	f.Close()
	waitBudget(t, srv)
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}

	// mmap, from a mount in another process: a page fault on a mount
	// that this process serves would stop it (the Go runtime cannot
	// stop a thread in a fault to collect garbage).
	cmd, mp2, stderr := startMounter(t, src, alice, "C4GH_TEST_DIRECTIO=1")
	g, err := os.Open(filepath.Join(mp2, "f"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(g.Fd()), 0, len(plain), syscall.PROT_READ, syscall.MAP_SHARED)
	switch {
	case errors.Is(err, syscall.ENODEV):
		t.Logf("mmap: %v (a kernel before 6.6)", err)
	case err != nil:
		t.Errorf("mmap: %v", err)
	default:
		if !bytes.Equal(m, plain) {
			t.Error("mmap: wrong bytes")
		}
		syscall.Munmap(m)
	}
	g.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd, mp2, stderr)
}

// TestReadAheadRuns reads a file on several handles at once in runs of
// sequential reads, each run from a random offset and each read of a
// random length, so that replies mix blocks read ahead (sent as they are)
// with bytes decrypted for the read, and blocks are reused by other
// handles as soon as they are given back (and overwritten then, so that a
// reply sent from a block given back too early fails): every byte is the
// plaintext's.
func TestReadAheadRuns(t *testing.T) {
	mount.PoisonFreed(true)
	t.Cleanup(func() { mount.PoisonFreed(false) })
	alice := newKey(t)
	src := t.TempDir()
	plain := random(60*seg+777, 39)
	writeFile(t, filepath.Join(src, "f.c4gh"), encrypt(t, plain, nil, alice))
	srv, mp, log := mountServer(t, src, mount.Options{Key: alice, DirectIO: true})
	p := filepath.Join(mp, "f")
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			r := rand.New(rand.NewPCG(uint64(g), 40))
			buf := make([]byte, 5*seg)
			for range 12 {
				off := r.Int64N(int64(len(plain)))
				for range 1 + r.IntN(12) {
					n := 1 + r.IntN(len(buf))
					got, err := f.ReadAt(buf[:n], off)
					want := min(n, max(len(plain)-int(off), 0))
					if got != want || (err != nil && err != io.EOF) || !bytes.Equal(buf[:got], plain[off:off+int64(got)]) {
						t.Errorf("handle %d: pread(%d, %d): %d bytes, %v, or wrong bytes", g, off, n, got, err)
						return
					}
					off += int64(got)
				}
			}
		})
	}
	wg.Wait()
	if _, used := mount.ReadAhead(srv); used == 0 {
		t.Error("no read found a block read ahead")
	}
	waitBudget(t, srv)
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}

// TestKernelReadAhead checks that a mount made by root sets the kernel's
// read-ahead of its files (sysfs, the mount's device) past the 128 KiB
// that FUSE gets by default, and that its files read right with it.
func TestKernelReadAhead(t *testing.T) {
	alice := newKey(t)
	src := t.TempDir()
	plain := random(40*seg+77, 11)
	writeFile(t, filepath.Join(src, "f.c4gh"), encrypt(t, plain, nil, alice))
	_, mp, log := mountServer(t, src, mount.Options{Key: alice})
	var st unix.Stat_t
	if err := unix.Stat(mp, &st); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if want := fmt.Sprint(mount.KernelReadAheadKB()); string(bytes.TrimSpace(got)) != want {
			t.Errorf("read_ahead_kb %s, want %s", bytes.TrimSpace(got), want)
		}
	} else {
		t.Logf("not root: read_ahead_kb left at %s", bytes.TrimSpace(got))
	}
	b, err := os.ReadFile(filepath.Join(mp, "f"))
	if err != nil || !bytes.Equal(b, plain) {
		t.Fatalf("read %d bytes (%v), want the %d of the plaintext", len(b), err, len(plain))
	}
	if log.String() != "" {
		t.Errorf("log:\n%s", log)
	}
}
