//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/ptytest"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The tests in this file run the built crypt4gh binary as a separate
// process, so that signals, exit statuses, terminals and memory use are
// those a user sees. Each hostile input must be refused with a clear error
// and the documented exit code, quickly and in little memory.

const (
	// hangLimit is how long a refusal may take. It is no benchmark, only
	// a hang detector generous enough for a loaded two-core machine under
	// -race: the refusal of 65,536 packets from 1,024 writers took 5.5 s
	// there while other builds ran, and 0.6 s alone.
	hangLimit = 15 * time.Second
	// rssLimit bounds the peak resident memory of a refusing process.
	rssLimit = 64 << 20
)

// safetyEnv is what every safety test needs: the binary and dave's keys
// from the interop vectors (the secret key copied with mode 0600).
type safetyEnv struct {
	bin    string
	dir    string
	sk     string // dave, unprotected
	pk     string
	daveSK keys.SecretKey
	davePK keys.PublicKey
}

func newSafetyEnv(t *testing.T) *safetyEnv {
	t.Helper()
	dir := t.TempDir()
	e := &safetyEnv{bin: clitest.Binary(t), dir: dir}
	skData, err := os.ReadFile(filepath.Join(interopDir, "keys", "dave.sec.pem"))
	if err != nil {
		t.Fatal(err)
	}
	e.sk = filepath.Join(dir, "dave.sec.pem")
	if err := os.WriteFile(e.sk, skData, 0o600); err != nil {
		t.Fatal(err)
	}
	e.pk = filepath.Join(interopDir, "keys", "dave.pub.pem")
	if e.daveSK, err = keys.ParseSecretKey(skData, nil); err != nil {
		t.Fatal(err)
	}
	e.davePK = e.daveSK.Public()
	return e
}

type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
	maxRSS         int64 // bytes
}

// startFed starts the binary with args and a pipe on its stdin, and
// returns the pipe's write end; stderr is collected.
func (e *safetyEnv) startFed(t *testing.T, args ...string) (cmd *exec.Cmd, stdin *os.File, stderr *bytes.Buffer) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(e.bin, args...)
	cmd.Env = cleanEnv()
	cmd.Stdin = pr
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	return cmd, pw, stderr
}

// run runs the binary with stdin (nil: empty) and extra environment
// variables, without any C4GH_ variable of the test's own environment.
func (e *safetyEnv) run(t *testing.T, stdin io.Reader, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(e.bin, args...)
	// On Linux, ru_maxrss survives execve: a child started by os/exec
	// (clone with CLONE_VM) inherits the peak of the test process, so
	// ProcessState only gives an upper bound. GNU time forks from its own
	// small process and reports the command's own peak.
	var timeOut string
	if gnuTime() != "" {
		timeOut = filepath.Join(t.TempDir(), "rss")
		cmd = exec.Command(gnuTime(), append([]string{"-q", "-f", "%M", "-o", timeOut, e.bin}, args...)...)
	}
	cmd.Env = cleanEnv(env...)
	if stdin == nil {
		stdin = bytes.NewReader(nil)
	}
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{elapsed: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", args, err)
	}
	r.code = cmd.ProcessState.ExitCode()
	r.maxRSS = rss(cmd.ProcessState)
	if timeOut != "" {
		out, err := os.ReadFile(timeOut)
		var kib int64
		if _, serr := fmt.Sscan(string(out), &kib); err != nil || serr != nil {
			t.Fatalf("%s: %q %v %v", gnuTime(), out, err, serr)
		}
		r.maxRSS = kib << 10
	}
	return r
}

// gnuTime is the path of GNU time, when it is installed and works. It is
// looked for when first asked: the scripts' every command is this test
// binary, which would otherwise start GNU time (and true) each time.
var gnuTime = sync.OnceValue(func() string {
	path, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		return ""
	}
	if err := exec.Command(path, "-q", "-f", "%M", "-o", os.DevNull, "true").Run(); err != nil {
		return ""
	}
	return path
})

func rss(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10 // kilobytes on Linux
	}
	return 0
}

// encryptFor writes plain encrypted for dave to a new file and returns its
// path and the length of its header.
func (e *safetyEnv) encryptFor(t *testing.T, name string, plain []byte) (string, int64) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := c4gh.Encrypt(&buf, bytes.NewReader(plain), c4gh.EncryptOptions{Recipients: []keys.PublicKey{e.davePK}}); err != nil {
		t.Fatal(err)
	}
	f, err := c4gh.NewReader(bytes.NewReader(buf.Bytes()), &e.daveSK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, f.HeaderSize()
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 1})
	b := make([]byte, n)
	r.Read(b)
	return b
}

func wantLines(t *testing.T, r result, code int, fragments ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d; stderr:\n%s", r.code, code, r.stderr)
	}
	if code != 0 && strings.Count(r.stderr, "crypt4gh: error: ") != 1 {
		t.Errorf("want exactly one error line; stderr:\n%s", r.stderr)
	}
	for _, f := range fragments {
		if !strings.Contains(r.stderr, f) {
			t.Errorf("stderr lacks %q:\n%s", f, r.stderr)
		}
	}
}

// TestSafety builds the binary once and runs the checks below on it.
func TestSafety(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	t.Run("Signals", func(t *testing.T) { safetySignals(t, e) })
	t.Run("TamperedToStdout", func(t *testing.T) { safetyTamperedToStdout(t, e) })
	t.Run("TruncatedSegments", func(t *testing.T) { safetyTruncatedSegments(t, e) })
	t.Run("HostileHeaders", func(t *testing.T) { safetyHostileHeaders(t, e) })
	t.Run("MaxPackets", func(t *testing.T) { safetyMaxPackets(t, e) })
	t.Run("Outputs", func(t *testing.T) { safetyOutputs(t, e) })
	t.Run("Messages", func(t *testing.T) { safetyMessages(t, e) })
}

// safetySignals interrupts a decrypt -o of a large file that arrives
// slowly on stdin: the partial output must be gone, the exit non-zero.
func safetySignals(t *testing.T, e *safetyEnv) {
	plain := randomBytes(8<<20, 1)
	enc, hdrLen := e.encryptFor(t, "big.c4gh", plain)
	data, err := os.ReadFile(enc)
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			outDir := t.TempDir()
			out := filepath.Join(outDir, "plain.out")
			cmd, pw, stderr := e.startFed(t, "decrypt", "--sk", e.sk, "-o", out)
			// The header and nine segments at once (more than the eight
			// that decrypt reads at a time, so that a partial output comes
			// at once), then the rest slowly until the process is gone
			// (the write fails with EPIPE).
			first := hdrLen + 9*body.EncryptedSegmentSize
			writerDone := make(chan struct{})
			go func() {
				defer close(writerDone)
				defer pw.Close()
				if _, err := pw.Write(data[:first]); err != nil {
					return
				}
				for off := first; off < int64(len(data)); off += 4096 {
					if _, err := pw.Write(data[off:min(off+4096, int64(len(data)))]); err != nil {
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()

			// Wait for a partial output with plaintext in it.
			var partial string
			deadline := time.Now().Add(20 * time.Second)
			for partial == "" && time.Now().Before(deadline) {
				matches, _ := filepath.Glob(filepath.Join(outDir, ".plain.out.partial-*"))
				if len(matches) == 1 {
					if fi, err := os.Stat(matches[0]); err == nil && fi.Size() > 0 {
						partial = matches[0]
						break
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			if partial == "" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no partial output appeared; stderr:\n%s", stderr.String())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(hangLimit):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running %v after %v", hangLimit, sig)
			}
			<-writerDone
			if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) {
				t.Errorf("exit %d (%v), want %d", code, cmd.ProcessState, 128+int(sig))
			}
			if !strings.Contains(stderr.String(), "crypt4gh: error: interrupted") {
				t.Errorf("stderr:\n%s", stderr.String())
			}
			if _, err := os.Stat(partial); !os.IsNotExist(err) {
				t.Errorf("partial output %s left behind", partial)
			}
			clitest.EmptyDir(t, outDir)
		})
	}
}

// safetyTamperedToStdout decrypts a file whose segment 3 was altered:
// the error names the segment, the exit is 4, and stdout holds exactly the
// segments before it (a pipe cannot take them back).
func safetyTamperedToStdout(t *testing.T, e *safetyEnv) {
	plain := randomBytes(5*body.SegmentSize+100, 2)
	enc, hdrLen := e.encryptFor(t, "tampered.c4gh", plain)
	data, err := os.ReadFile(enc)
	if err != nil {
		t.Fatal(err)
	}
	data[hdrLen+3*body.EncryptedSegmentSize+body.NonceSize+5] ^= 0x40
	if err := os.WriteFile(enc, data, 0o644); err != nil {
		t.Fatal(err)
	}

	r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", enc)
	wantLines(t, r, exitData, "segment 3 failed authentication", "crypt4gh: hint: ")
	if !bytes.Equal([]byte(r.stdout), plain[:3*body.SegmentSize]) {
		t.Errorf("stdout holds %d bytes, want the %d bytes of segments 0-2", len(r.stdout), 3*body.SegmentSize)
	}

	outDir := t.TempDir()
	r = e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", enc, "-o", filepath.Join(outDir, "out"))
	wantLines(t, r, exitData, "segment 3 failed authentication")
	clitest.EmptyDir(t, outDir)
}

// safetyTruncatedSegments ends a body with a segment of 5 and of 27
// bytes: too short to hold a nonce and a tag.
func safetyTruncatedSegments(t *testing.T, e *safetyEnv) {
	one, _ := e.encryptFor(t, "one.c4gh", randomBytes(body.SegmentSize, 3))
	short, hdrShort := e.encryptFor(t, "short.c4gh", randomBytes(1000, 4))
	oneData, _ := os.ReadFile(one)
	shortData, _ := os.ReadFile(short)
	for _, n := range []int{5, 27} {
		cases := map[string][]byte{
			// A second segment of n bytes after a full one.
			fmt.Sprintf("extra_%d", n): append(bytes.Clone(oneData), randomBytes(n, uint64(n))...),
			// The only segment cut to n bytes.
			fmt.Sprintf("cut_%d", n): shortData[:hdrShort+int64(n)],
		}
		wantSeg := map[string]int{fmt.Sprintf("extra_%d", n): 1, fmt.Sprintf("cut_%d", n): 0}
		for name, in := range cases {
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), name+".c4gh")
				if err := os.WriteFile(path, in, 0o644); err != nil {
					t.Fatal(err)
				}
				outDir := t.TempDir()
				r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", path, "-o", filepath.Join(outDir, "out"))
				wantLines(t, r, exitData, fmt.Sprintf("segment %d is truncated", wantSeg[name]),
					"crypt4gh: hint: the file is truncated inside a segment")
				clitest.EmptyDir(t, outDir)
				if r.elapsed > hangLimit {
					t.Errorf("took %v", r.elapsed)
				}
			})
		}
	}
}

// Hostile headers, built by hand.

func hdrLE32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func hdrLE64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func hdrPreamble(count uint32) []byte { return hdrLE32(hdrLE32([]byte(header.Magic), 1), count) }

// sealedHeader seals each payload for dave in its own packet.
func (e *safetyEnv) sealedHeader(t *testing.T, payloads ...[]byte) []byte {
	t.Helper()
	writer, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &header.Header{}
	for _, pl := range payloads {
		p, err := header.SealPacket(&writer, e.davePK, pl, nil)
		if err != nil {
			t.Fatal(err)
		}
		h.Packets = append(h.Packets, p)
	}
	return h.Marshal()
}

// safetyHostileHeaders feeds crafted headers to decrypt: each must be
// refused with exit 4 and a clear message, fast and in little memory.
func safetyHostileHeaders(t *testing.T, e *safetyEnv) {
	var dataKey [32]byte
	dataKeyPl := header.DataKeyPayload(&dataKey)
	editPl, err := header.EditListPayload([]uint64{0, 10})
	if err != nil {
		t.Fatal(err)
	}
	hugeEditList := hdrLE32(hdrLE32(nil, header.PacketTypeEditList), edit.MaxEntries+1)
	hugeEditList = append(hugeEditList, make([]byte, 8*(edit.MaxEntries+1))...)

	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"packets_2^32-1", append(hdrPreamble(0xFFFFFFFF), make([]byte, 1<<20)...),
			"too many header packets: 4294967295 (limit 65536)"},
		{"packet_length_0xFFFFFFFF", append(hdrLE32(hdrPreamble(1), 0xFFFFFFFF), make([]byte, 1<<20)...),
			"invalid header packet"},
		{"packet_length_below_fixed_part", append(hdrLE32(hdrPreamble(1), 7), make([]byte, 100)...),
			"invalid header packet"},
		{"method0_length_below_fixed_part", append(hdrLE32(hdrLE32(hdrPreamble(1), 60), 0), make([]byte, 100)...),
			"invalid header packet"},
		{"edit_list_2^32-1_entries", e.sealedHeader(t, dataKeyPl, hdrLE64(hdrLE32(hdrLE32(nil, header.PacketTypeEditList), 0xFFFFFFFF), 7)),
			"edit list claims 4294967295 lengths"},
		{"edit_list_above_MaxEntries", e.sealedHeader(t, dataKeyPl, hugeEditList),
			"edit list too long"},
		{"data_key_packet_too_short", e.sealedHeader(t, hdrLE32(hdrLE32(nil, header.PacketTypeDataKey), 0)[:6]),
			"data key payload of 6 bytes"},
		{"data_key_packet_short_key", e.sealedHeader(t, append(hdrLE32(hdrLE32(nil, header.PacketTypeDataKey), 0), 1, 2, 3)),
			"data key payload of 11 bytes (need 40)"},
		{"two_edit_lists", e.sealedHeader(t, dataKeyPl, editPl, editPl),
			"more than one edit list"},
		{"packet_count_above_packets", append(hdrPreamble(3), e.sealedHeader(t, dataKeyPl)[16:]...),
			"header truncated: packet 2 of 3 is missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outDir := t.TempDir()
			r := e.run(t, bytes.NewReader(tc.input), nil, "decrypt", "--sk", e.sk, "-o", filepath.Join(outDir, "out"))
			wantLines(t, r, exitData, tc.want)
			t.Logf("%d bytes in, %v, max RSS %d KiB: %s", len(tc.input), r.elapsed.Round(time.Millisecond),
				r.maxRSS>>10, strings.TrimSpace(r.stderr))
			if r.elapsed > hangLimit {
				t.Errorf("took %v", r.elapsed)
			}
			if r.maxRSS > rssLimit {
				t.Errorf("max RSS %d MiB", r.maxRSS>>20)
			}
			// Inputs of at most 2 MiB claim far more than they hold; the
			// process must not grow beyond a small Go program (8 MiB).
			if gnuTime() != "" && len(tc.input) <= 2<<20 && r.maxRSS > 16<<20 {
				t.Errorf("max RSS %d MiB for %d bytes of input", r.maxRSS>>20, len(tc.input))
			}
			clitest.EmptyDir(t, outDir)
		})
	}
}

// safetyMaxPackets gives decrypt headers of MaxPackets packets, none
// for dave: the most work a header may ask for. From MaxPackets different
// writers it is refused before any key exchange (exit 4); from
// MaxWriterKeys writers every packet is tried and none opens (exit 3).
func safetyMaxPackets(t *testing.T, e *safetyEnv) {
	if testing.Short() {
		t.Skip("the most work a header may ask for: 2.4 s, in the full run")
	}
	for _, tc := range []struct {
		writers int
		code    int
		want    string
	}{
		{header.MaxPackets, exitData, "packets from more than 1024 different writer keys"},
		{header.MaxWriterKeys, exitKey, "no header packet can be decrypted with this key"},
	} {
		t.Run(fmt.Sprint(tc.writers, "_writers"), func(t *testing.T) {
			rng := rand.NewChaCha8([32]byte{9})
			writers := make([][32]byte, tc.writers)
			for i := range writers {
				rng.Read(writers[i][:])
			}
			in := hdrPreamble(header.MaxPackets)
			for i := range header.MaxPackets {
				var pkt [4 + 4 + 32 + 12 + 16 + 40]byte
				binary.LittleEndian.PutUint32(pkt[:], uint32(len(pkt)))
				copy(pkt[8:], writers[i%tc.writers][:])
				rng.Read(pkt[8+32:])
				in = append(in, pkt[:]...)
			}
			r := e.run(t, bytes.NewReader(in), nil, "decrypt", "--sk", e.sk, "-o", filepath.Join(t.TempDir(), "out"))
			wantLines(t, r, tc.code, tc.want)
			t.Logf("%d bytes in, %v, max RSS %d KiB: %s", len(in), r.elapsed.Round(time.Millisecond), r.maxRSS>>10,
				strings.TrimSpace(r.stderr))
			if r.elapsed > hangLimit {
				t.Errorf("took %v", r.elapsed)
			}
			if r.maxRSS > rssLimit {
				t.Errorf("max RSS %d MiB", r.maxRSS>>20)
			}
		})
	}
}

// safetyOutputs checks the rules for -o: an existing file is kept
// without --force, the input is never the output, and binary data does
// not go to a terminal unless -o - says so.
func safetyOutputs(t *testing.T, e *safetyEnv) {
	plain := randomBytes(1000, 5)
	enc, _ := e.encryptFor(t, "in.c4gh", plain)
	orig, _ := os.ReadFile(enc)

	t.Run("output_is_input", func(t *testing.T) {
		link := filepath.Join(filepath.Dir(enc), "link.c4gh")
		if err := os.Symlink(enc, link); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"decrypt", "--sk", e.sk, "-i", enc, "-o", enc},
			{"decrypt", "--sk", e.sk, "-i", enc, "-o", enc, "--force"},
			{"decrypt", "--sk", e.sk, "-i", enc, "-o", link, "--force"},
			{"encrypt", "--recipient_pk", e.pk, "-i", enc, "-o", enc, "--force"},
			{"reencrypt", "--sk", e.sk, "--recipient_pk", e.pk, "-i", enc, "-o", enc, "--force"},
		} {
			r := e.run(t, nil, nil, args...)
			wantLines(t, r, exitUsage, "is the input file")
			if got, _ := os.ReadFile(enc); !bytes.Equal(got, orig) {
				t.Fatalf("%v changed the input", args)
			}
		}
		// The input on stdin, redirected from the output file.
		in, err := os.Open(enc)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		r := e.run(t, in, nil, "decrypt", "--sk", e.sk, "-o", enc, "--force")
		wantLines(t, r, exitUsage, "is the input file")
		if got, _ := os.ReadFile(enc); !bytes.Equal(got, orig) {
			t.Fatal("decrypt -o FILE < FILE changed the input")
		}
	})

	t.Run("existing_output", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		if err := os.WriteFile(out, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", enc, "-o", out)
		wantLines(t, r, exitUsage, "already exists", "crypt4gh: hint: use --force")
		if got, _ := os.ReadFile(out); string(got) != "keep me" {
			t.Fatal("existing output replaced without --force")
		}
		r = e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", enc, "-o", out, "--force")
		wantLines(t, r, exitOK)
		if got, _ := os.ReadFile(out); !bytes.Equal(got, plain) {
			t.Fatal("--force did not replace the output")
		}
		if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("decrypted output mode %v, want 0600", fi.Mode().Perm())
		}
	})

	t.Run("io_error", func(t *testing.T) {
		r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", enc, "-o", filepath.Join(t.TempDir(), "missing", "out"))
		wantLines(t, r, exitError, "failed to create output")
	})

	t.Run("terminal", func(t *testing.T) {
		ptmx, pts := ptytest.Open(t)
		go io.Copy(io.Discard, ptmx)
		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"encrypt", "--recipient_pk", e.pk, "-i", enc}, exitUsage},
			{[]string{"reencrypt", "--sk", e.sk, "--recipient_pk", e.pk, "-i", enc}, exitUsage},
			{[]string{"encrypt", "--recipient_pk", e.pk, "-i", enc, "-o", "-"}, exitOK},
		} {
			cmd := exec.Command(e.bin, tc.args...)
			cmd.Env = cleanEnv()
			cmd.Stdout = pts
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			r := result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String()}
			if tc.code == exitOK {
				wantLines(t, r, exitOK)
				continue
			}
			wantLines(t, r, tc.code, "refusing to write binary data to a terminal", "crypt4gh: hint: use -o FILE, or -o -")
		}
	})
}

// safetyMessages checks the hint lines of the common failures and that
// a passphrase never shows up in what the command prints.
func safetyMessages(t *testing.T, e *safetyEnv) {
	vec := func(name string) string { return filepath.Join(interopDir, "enc", name) }
	alice := filepath.Join(interopDir, "keys", "alice.sec.pem")
	aliceCopy := filepath.Join(t.TempDir(), "alice.sec.pem")
	if data, err := os.ReadFile(alice); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(aliceCopy, data, 0o600); err != nil {
		t.Fatal(err)
	}
	hankCopy := filepath.Join(t.TempDir(), "hank.sec.pem")
	if data, err := os.ReadFile(filepath.Join(interopDir, "keys", "hank.sec.pem")); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(hankCopy, data, 0o600); err != nil {
		t.Fatal(err)
	}

	const wrong = "Zx9-not-Alices-passphrase"
	passFile := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(passFile, []byte(wrong+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	goodPassFile := filepath.Join(t.TempDir(), "goodpass")
	if err := os.WriteFile(goodPassFile, []byte("alice-A-scrypt\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("wrong_passphrase_env", func(t *testing.T) {
		r := e.run(t, nil, []string{"C4GH_PASSPHRASE=" + wrong}, "decrypt", "--sk", aliceCopy, "-i", vec("kdf_scrypt_65537.c4gh"))
		wantLines(t, r, exitKey, "wrong passphrase", "crypt4gh: hint: check the passphrase",
			"crypt4gh: warning: using the passphrase in C4GH_PASSPHRASE")
		if strings.Contains(r.stderr+r.stdout, wrong) || r.stdout != "" {
			t.Errorf("the passphrase or data was printed:\nstdout %q\nstderr %s", r.stdout, r.stderr)
		}
	})
	t.Run("wrong_passphrase_file", func(t *testing.T) {
		r := e.run(t, nil, nil, "decrypt", "--sk", aliceCopy, "--passphrase-file", passFile, "-i", vec("kdf_scrypt_65537.c4gh"))
		wantLines(t, r, exitKey, "wrong passphrase", "crypt4gh: hint: check the passphrase")
		if strings.Contains(r.stderr+r.stdout, wrong) || r.stdout != "" {
			t.Errorf("the passphrase or data was printed:\nstdout %q\nstderr %s", r.stdout, r.stderr)
		}
		if strings.Contains(r.stderr, "warning") {
			t.Errorf("unexpected warning:\n%s", r.stderr)
		}
	})
	t.Run("no_terminal", func(t *testing.T) {
		// A new session: no controlling terminal to ask on.
		cmd := exec.Command(e.bin, "decrypt", "--sk", aliceCopy, "-i", vec("kdf_scrypt_65537.c4gh"))
		cmd.Env = cleanEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		want := "crypt4gh: error: failed to read secret key " + aliceCopy + ": passphrase required: there is no terminal to ask for it\n" +
			"crypt4gh: hint: set C4GH_PASSPHRASE or use --passphrase-file\n"
		if code := cmd.ProcessState.ExitCode(); code != exitKey || stderr.String() != want || stdout.Len() != 0 {
			t.Errorf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr.String(), exitKey, want)
		}
	})
	t.Run("passphrase_file_ok", func(t *testing.T) {
		r := e.run(t, nil, []string{"C4GH_PASSPHRASE=" + wrong}, "decrypt", "--sk", aliceCopy, "--passphrase-file", goodPassFile,
			"-i", vec("kdf_scrypt_65537.c4gh"), "-o", filepath.Join(t.TempDir(), "out"))
		wantLines(t, r, exitOK)
		if r.stderr != "" {
			t.Errorf("stderr:\n%s", r.stderr)
		}
	})
	t.Run("key_readable_by_others", func(t *testing.T) {
		loose := filepath.Join(t.TempDir(), "loose.sec.pem")
		data, _ := os.ReadFile(e.sk)
		if err := os.WriteFile(loose, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(loose, 0o640); err != nil {
			t.Fatal(err)
		}
		r := e.run(t, nil, nil, "decrypt", "--sk", loose, "-i", vec("reject_base.c4gh"), "-o", filepath.Join(t.TempDir(), "out"))
		wantLines(t, r, exitOK)
		if !strings.Contains(r.stderr, "crypt4gh: warning: secret key "+loose+" is readable by others (mode 0640)") {
			t.Errorf("no warning about the key's mode:\n%s", r.stderr)
		}
	})
	t.Run("no_packet", func(t *testing.T) {
		r := e.run(t, nil, nil, "decrypt", "--sk", hankCopy, "-i", vec("reject_base.c4gh"))
		wantLines(t, r, exitKey, "no header packet can be decrypted with this key",
			"crypt4gh: hint: the file has no packet for the public key Bw81znSw1Gn4BCTDZo4S6CBvaBoXxTzWnwpWGqQRNxI=")
	})
	t.Run("not_crypt4gh", func(t *testing.T) {
		r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", vec("reject_bad_magic.c4gh"))
		wantLines(t, r, exitData, "not a crypt4gh file", "crypt4gh: hint: the input does not start with a crypt4gh header")
	})
	t.Run("truncated_mid_segment", func(t *testing.T) {
		r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", vec("reject_truncated_mid_segment.c4gh"))
		wantLines(t, r, exitData, "segment 0 failed authentication", "crypt4gh: hint: the encrypted data was modified or damaged")
	})
	t.Run("body_flip", func(t *testing.T) {
		r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", vec("reject_body_flip.c4gh"))
		wantLines(t, r, exitData, "segment 0 failed authentication", "crypt4gh: hint: ")
	})
	t.Run("usage", func(t *testing.T) {
		r := e.run(t, nil, nil, "decrypt", "--no-such-flag")
		wantLines(t, r, exitUsage, "unknown flag --", "crypt4gh: hint: run 'crypt4gh decrypt --help'")
		if r.stdout != "" {
			t.Errorf("a usage error printed on stdout:\n%s", r.stdout)
		}
	})
}
