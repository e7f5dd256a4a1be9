package mount_test

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/mount"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// need fails the test in CI (CI=true), where every prerequisite must be
// there, and skips it elsewhere, with the reason.
func need(t testing.TB, format string, args ...any) {
	t.Helper()
	clitest.Missing(t, format, args...)
}

// requireFUSE stops the test when this machine cannot mount a FUSE file
// system.
func requireFUSE(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		need(t, "FUSE is not available: %v", err)
		return
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			need(t, "fusermount3 is needed to mount as a user (Debian: apt-get install fuse3): %v", err)
		}
	}
}

// requireTools stops the test when a command is missing.
func requireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			need(t, "%s is not installed (Debian: apt-get install samtools bcftools tabix): %v", n, err)
		}
	}
}

func newKey(t testing.TB) *keys.SecretKey {
	t.Helper()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sk
}

// random returns n bytes that depend on seed only.
func random(n int, seed uint64) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 'm', 't'}).Read(b)
	return b
}

func writeFile(t testing.TB, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// encrypt returns plain encrypted for the recipients.
func encrypt(t testing.TB, plain []byte, writer *keys.SecretKey, recipients ...*keys.SecretKey) []byte {
	t.Helper()
	var pks []keys.PublicKey
	for _, r := range recipients {
		pks = append(pks, r.Public())
	}
	var out bytes.Buffer
	if _, err := c4gh.Encrypt(&out, bytes.NewReader(plain), c4gh.EncryptOptions{Writer: writer, Recipients: pks}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// splice returns enc cut down to the ranges with reencrypt.Splice.
func splice(t testing.TB, enc []byte, key *keys.SecretKey, ranges ...edit.Range) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := reencrypt.Splice(&out, bytes.NewReader(enc), reencrypt.SpliceOptions{Reader: key, Ranges: ranges}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// pick returns the bytes of plain in the ranges, as a spliced file stands
// for them.
func pick(plain []byte, ranges ...edit.Range) []byte {
	var out []byte
	for _, r := range ranges {
		out = append(out, plain[r.Start:min(r.End, int64(len(plain)))]...)
	}
	return out
}

// syncBuffer is a log that tests read while the mount writes to it.
type syncBuffer struct{ clitest.SyncBuffer }

// count returns how many lines of the log contain all the parts.
func (s *syncBuffer) count(parts ...string) int {
	n := 0
	for _, line := range strings.Split(s.String(), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// mountDir mounts the folder src with opts (a new log unless opts.Log is
// set) and unmounts it at the end of the test, checking that nothing stays
// mounted.
func mountDir(t testing.TB, src string, opts mount.Options) (string, *syncBuffer) {
	t.Helper()
	requireFUSE(t)
	log := &syncBuffer{}
	if opts.Log == nil {
		opts.Log = log
	}
	mp := t.TempDir()
	srv, err := mount.Mount(mount.Dir(src), mp, opts)
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			t.Errorf("Unmount: %v", err)
		}
		if m, _ := mountInfo(t, mp); m {
			t.Errorf("%s is still mounted after Unmount", mp)
		}
	})
	return mp, log
}

// mountInfo reports whether mp is a mount point, and the options of that
// mount (those of the mount and of its super block).
func mountInfo(t testing.TB, mp string) (bool, []string) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[4] != mp {
			continue
		}
		opts := strings.Split(fields[5], ",")
		for i, f := range fields {
			if f == "-" && i+3 < len(fields) {
				opts = append(opts, "type="+fields[i+1])
				opts = append(opts, strings.Split(fields[i+3], ",")...)
			}
		}
		return true, opts
	}
	return false, nil
}

// waitUnmounted waits up to 10 s for mp to be no mount point.
func waitUnmounted(t testing.TB, mp string) {
	t.Helper()
	for range 200 {
		if m, _ := mountInfo(t, mp); !m {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s is still mounted", mp)
}
