package mount_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/keys"
)

// BenchmarkMount measures the mount against what it stands in for, each
// figure a ratio of two things measured in the same run:
//
//   - seq: `cat` of a mounted 1 GiB file to /dev/null against decrypting
//     the file to /dev/null with c4gh.NewReader (parallel, as the decrypt
//     command does), both from the page cache; for max_read 128 KiB (the
//     default) and 1 MiB, with the lengths of the reads that the kernel
//     sent
//   - rand: 4 KiB preads at random offsets, single-threaded, against the
//     same on the plaintext file in the page cache: warm (the mount's page
//     cache holds the file, as after a first read) and cold (every read
//     reaches the file system and decrypts)
//   - RSS: peak resident memory of the mounting process (the test binary
//     run as a mounter) after 100 files were opened and read in part, all
//     open at once, and the 1 GiB file read
//
// It makes 2 GiB of files in TMPDIR and takes about a minute. Run it with
//
//	go test -run '^$' -bench Mount -benchtime 1x ./mount
func BenchmarkMount(b *testing.B) {
	requireFUSE(b)
	if b.N > 1 {
		b.Skip("run with -benchtime 1x: one run does every measurement")
	}
	key := newKey(b)
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	plainPath := filepath.Join(dir, "plain")
	encPath := filepath.Join(src, "big.c4gh")
	makeBig(b, plainPath, encPath, key, 1<<30)
	for i := range 100 {
		writeFile(b, filepath.Join(src, "many", fmt.Sprintf("f%03d.c4gh", i)), encrypt(b, random(1<<20, uint64(1000+i)), nil, key))
	}

	// Decrypting to /dev/null and cat of the mounted file, in turns so
	// that other load on the machine slows both alike: the best of 3 of
	// each, with the CPU time that each took.
	cat(b, encPath) // into the page cache
	configs := []struct{ maxRead, blksize int }{{128 << 10, 128 << 10}, {512 << 10, 128 << 10}, {1 << 20, 128 << 10}}
	type mounted struct {
		cmd    *exec.Cmd
		mp     string
		stderr *bytes.Buffer
		wall   time.Duration
		cpu    time.Duration
	}
	ms := make([]*mounted, len(configs))
	for i, c := range configs {
		cmd, mp, stderr := startMounter(b, src, key, "C4GH_TEST_READSIZES=1",
			"C4GH_TEST_MAXREAD="+strconv.Itoa(c.maxRead), "C4GH_TEST_BLKSIZE="+strconv.Itoa(c.blksize))
		ms[i] = &mounted{cmd: cmd, mp: mp, stderr: stderr}
	}
	var dec, decCPU time.Duration
	for round := range 3 {
		c0 := selfCPU(b)
		t0 := time.Now()
		decryptToNull(b, encPath, key)
		if d := time.Since(t0); round == 0 || d < dec {
			dec, decCPU = d, selfCPU(b)-c0
		}
		for _, m := range ms {
			big := filepath.Join(m.mp, "big")
			dropCache(b, big)
			c0 := procCPU(b, m.cmd.Process.Pid)
			t0 := time.Now()
			cat(b, big)
			if d := time.Since(t0); round == 0 || d < m.wall {
				m.wall, m.cpu = d, procCPU(b, m.cmd.Process.Pid)-c0
			}
		}
	}
	b.ReportMetric(float64(1<<30)/dec.Seconds()/(1<<20), "decrypt-MiB/s")
	for i, m := range ms {
		m.cmd.Process.Signal(syscall.SIGTERM)
		waitExit(b, m.cmd, m.mp, m.stderr)
		sizes := ""
		for _, line := range strings.Split(m.stderr.String(), "\n") {
			if s, ok := strings.CutPrefix(line, "readsizes: "); ok {
				sizes = s
			}
		}
		name := fmt.Sprintf("maxread%dk-blksize%dk", configs[i].maxRead>>10, configs[i].blksize>>10)
		b.ReportMetric(dec.Seconds()/m.wall.Seconds(), "seq-ratio-"+name)
		b.ReportMetric(decCPU.Seconds()/m.cpu.Seconds(), "seq-cpu-ratio-"+name)
		b.Logf("%s: cat %v (mounter CPU %v), decrypt %v (CPU %v); kernel reads (length:count): %s",
			name, m.wall.Round(time.Millisecond), m.cpu, dec.Round(time.Millisecond), decCPU.Round(time.Millisecond), topSizes(sizes, 4))
	}

	cmd, mp, stderr := startMounter(b, src, key)
	big := filepath.Join(mp, "big")
	cat(b, plainPath)
	cat(b, big) // now in the mount's page cache
	const reads = 200_000
	plainRate := randomReads(b, plainPath, 1<<30, reads)
	warm := randomReads(b, big, 1<<30, reads)
	dropCache(b, big)
	cold := randomReads(b, big, 1<<30, 20_000)
	b.ReportMetric(warm, "rand-warm-reads/s")
	b.ReportMetric(warm/plainRate, "rand-warm-ratio")
	b.ReportMetric(cold, "rand-cold-reads/s")
	b.ReportMetric(cold/plainRate, "rand-cold-ratio")
	b.Logf("random 4 KiB reads/s: plaintext file %.0f, mount warm %.0f, mount cold %.0f", plainRate, warm, cold)

	// 100 files open at once, each read in part at random offsets.
	var open []*os.File
	r := rand.New(rand.NewPCG(7, 8))
	buf := make([]byte, 10000)
	for i := range 100 {
		f, err := os.Open(filepath.Join(mp, "many", fmt.Sprintf("f%03d", i)))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		open = append(open, f)
	}
	for range 5 {
		for _, f := range open {
			if _, err := f.ReadAt(buf, r.Int64N(1<<20-int64(len(buf)))); err != nil {
				b.Fatal(err)
			}
		}
	}
	rss := peakRSS(b, cmd.Process.Pid)
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
	b.Logf("peak RSS of the mounter with 100 files open: %.1f MiB", float64(rss)/(1<<20))
	for _, f := range open {
		f.Close()
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(b, cmd, mp, stderr)
}

// makeBig writes size random bytes to plainPath and their encryption to
// encPath.
func makeBig(b *testing.B, plainPath, encPath string, key *keys.SecretKey, size int64) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(encPath), 0o755); err != nil {
		b.Fatal(err)
	}
	pf, err := os.Create(plainPath)
	if err != nil {
		b.Fatal(err)
	}
	defer pf.Close()
	if _, err := io.CopyN(pf, rand.NewChaCha8([32]byte{'b', 'i', 'g'}), size); err != nil {
		b.Fatal(err)
	}
	if _, err := pf.Seek(0, io.SeekStart); err != nil {
		b.Fatal(err)
	}
	ef, err := os.Create(encPath)
	if err != nil {
		b.Fatal(err)
	}
	defer ef.Close()
	w := bufio.NewWriterSize(ef, 1<<20)
	if _, err := c4gh.Encrypt(w, pf, c4gh.EncryptOptions{Recipients: []keys.PublicKey{key.Public()}}); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}

// best runs f n times and returns the least wall time.
func best(n int, f func()) time.Duration {
	var min time.Duration
	for i := range n {
		t0 := time.Now()
		f()
		if d := time.Since(t0); i == 0 || d < min {
			min = d
		}
	}
	return min
}

// cat runs cat p > /dev/null.
func cat(b *testing.B, p string) {
	b.Helper()
	if out, err := exec.Command("sh", "-c", `cat "$1" >/dev/null`, "sh", p).CombinedOutput(); err != nil {
		b.Fatalf("cat %s: %v: %s", p, err, out)
	}
}

func decryptToNull(b *testing.B, p string, key *keys.SecretKey) {
	b.Helper()
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	r, err := c4gh.NewReader(bufio.NewReaderSize(f, 1<<20), key, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.WriteTo(null); err != nil {
		b.Fatal(err)
	}
}

// dropCache drops the pages of p from the page cache.
func dropCache(b *testing.B, p string) {
	b.Helper()
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}

// randomReads makes n preads of 4 KiB at random offsets of the file p of
// size bytes and returns how many it made per second.
func randomReads(b *testing.B, p string, size int64, n int) float64 {
	b.Helper()
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(9, 10))
	buf := make([]byte, 4096)
	t0 := time.Now()
	for range n {
		if _, err := f.ReadAt(buf, r.Int64N(size-int64(len(buf)))); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(t0).Seconds()
}

// selfCPU returns the CPU time (user and system) of this process so far.
func selfCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU returns the CPU time (user and system) of process pid so far.
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses:
	// utime and stime are fields 14 and 15 of the line.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		b.Fatalf("short /proc/%d/stat", pid)
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / 100 // USER_HZ
}

// peakRSS returns the peak resident memory of process pid (VmHWM).
func peakRSS(b *testing.B, pid int) int64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// topSizes returns the n most frequent read lengths of a "len:count ..."
// list.
func topSizes(list string, n int) string {
	type sc struct{ size, count int }
	var all []sc
	for _, f := range strings.Fields(list) {
		s, c, _ := strings.Cut(f, ":")
		size, _ := strconv.Atoi(s)
		count, _ := strconv.Atoi(c)
		all = append(all, sc{size, count})
	}
	var out bytes.Buffer
	for range n {
		best := -1
		for i := range all {
			if all[i].count > 0 && (best < 0 || all[i].count > all[best].count) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		fmt.Fprintf(&out, "%d KiB:%d ", all[best].size>>10, all[best].count)
		all[best].count = 0
	}
	return strings.TrimSpace(out.String())
}
