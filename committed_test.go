//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/ptytest"
)

// The tests in this file check, on the built binary, how outputs are
// committed: never over a file that appeared meanwhile, durably, with the
// modes the umask allows, removed on every signal; and that the terminal
// survives an interrupted passphrase prompt.

// slowDecrypt starts "decrypt -o out" of a file fed slowly on stdin and
// returns once a partial output holds plaintext. finish feeds the rest
// and waits for the process.
func slowDecrypt(t *testing.T, e *safetyEnv, out string, extra ...string) (cmd *exec.Cmd, stderr *bytes.Buffer, finish func()) {
	t.Helper()
	plain := randomBytes(2<<20, 9)
	enc, hdrLen := e.encryptFor(t, "slow.c4gh", plain)
	data, err := os.ReadFile(enc)
	if err != nil {
		t.Fatal(err)
	}
	cmd, pw, stderr := e.startFed(t, append([]string{"decrypt", "--sk", e.sk, "-o", out}, extra...)...)
	first := hdrLen + 9*body.EncryptedSegmentSize
	if _, err := pw.Write(data[:first]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		matches, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.partial-*"))
		if len(matches) > 0 {
			if fi, err := os.Stat(matches[0]); err == nil && fi.Size() > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no partial output appeared; stderr:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd, stderr, func() {
		pw.Write(data[first:])
		pw.Close()
		cmd.Wait()
	}
}

// TestNoClobberAtCommit: a file that appears at the output path while a
// decrypt runs is not replaced; the decrypt exits 2 and leaves nothing of
// its own. With --force it is replaced.
func TestNoClobberAtCommit(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cmd, stderr, finish := slowDecrypt(t, e, out)
	if err := os.WriteFile(out, []byte("written meanwhile"), 0o600); err != nil {
		t.Fatal(err)
	}
	finish()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
	}
	if !strings.Contains(stderr.String(), "already exists (it appeared while this command ran)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "written meanwhile" {
		t.Errorf("the file that appeared was replaced")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the folder, want only the file that appeared", len(entries))
	}

	// --force replaces it.
	cmd, stderr, finish = slowDecrypt(t, e, out, "--force")
	finish()
	if code := cmd.ProcessState.ExitCode(); code != exitOK {
		t.Fatalf("--force: exit %d; stderr:\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(out); len(b) != 2<<20 {
		t.Errorf("--force: output of %d bytes", len(b))
	}

	// Not even with --force over a secret key put there meanwhile: the
	// key is checked again at the commit, as at the start.
	os.Remove(out)
	key, err := os.ReadFile(e.sk)
	if err != nil {
		t.Fatal(err)
	}
	cmd, stderr, finish = slowDecrypt(t, e, out, "--force")
	if err := os.WriteFile(out, key, 0o600); err != nil {
		t.Fatal(err)
	}
	finish()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(stderr.String(), "holds a secret key (it appeared while this command ran)") {
		t.Errorf("--force over a key that appeared: exit %d; stderr:\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, key) {
		t.Errorf("--force replaced a secret key that appeared meanwhile")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the folder, want only the key", len(entries))
	}
}

// TestDurableCommit traces the system calls of a decrypt -o and of a
// keygen: the file is fsynced before it gets its name, and the folder
// after.
func TestDurableCommit(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	strace := clitest.Tool(t, "strace")
	enc, _ := e.encryptFor(t, "in.c4gh", randomBytes(100000, 3))
	dir := t.TempDir()
	for _, args := range [][]string{
		{"decrypt", "--sk", e.sk, "-i", enc, "-o", filepath.Join(dir, "out")},
		{"encrypt", "--recipient_pk", e.pk, "-i", enc, "-o", filepath.Join(dir, "out.c4gh")},
		{"keygen", "--sk", filepath.Join(dir, "k.sec"), "--pk", filepath.Join(dir, "k.pub"), "--nocrypt"},
	} {
		log := filepath.Join(t.TempDir(), "trace")
		cmd := exec.Command(strace, append([]string{"-f", "-qq", "-o", log, "-e", "trace=fsync,fdatasync,rename,renameat,renameat2,link,linkat", e.bin}, args...)...)
		cmd.Env = cleanEnv()
		if msg, err := cmd.CombinedOutput(); err != nil {
			if strings.Contains(string(msg), "ptrace") {
				clitest.Missing(t, "strace cannot trace here: %s", msg)
			}
			t.Fatalf("%v: %v\n%s", args, err, msg)
		}
		trace, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		// Per commit: fsync(file), renameat2/link, fsync(folder).
		var calls []string
		for _, line := range strings.Split(string(trace), "\n") {
			for _, name := range []string{"fsync(", "renameat2(", "linkat(", "link(", "rename("} {
				if i := strings.Index(line, name); i >= 0 && !strings.Contains(line, "= -1") {
					calls = append(calls, strings.TrimSuffix(name, "("))
					break
				}
			}
		}
		seq := strings.Join(calls, " ")
		want := "fsync renameat2 fsync"
		if args[0] == "keygen" {
			want = "fsync renameat2 fsync fsync renameat2 fsync"
		}
		if !strings.Contains(seq, want) {
			t.Errorf("%s: calls %q, want %q", args[0], seq, want)
		}
	}
}

// TestDurableBatchJournal traces a batch decrypt, and a batch rearrange,
// into a folder with a journal: each output is fsynced before its rename, and its rename is
// covered by an fsync of the folder that began after it and ended before
// the journal's line that records the output done was written: a crash
// cannot leave a journal entry for an output that is not durable under its
// name. Every output is made in the folder held open
// (through /proc/self/fd), so that a link planted below the output folder
// during the batch changes nothing (see outfile.Options.Beneath).
func TestDurableBatchJournal(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	strace := clitest.Tool(t, "strace")
	in := t.TempDir()
	var files []string
	for i := range 40 {
		enc, _ := e.encryptFor(t, fmt.Sprintf("f%02d.c4gh", i), randomBytes(100000+i, uint64(40+i)))
		p := filepath.Join(in, filepath.Base(enc))
		if err := os.Rename(enc, p); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	for _, command := range [][]string{{"decrypt", "--jobs", "2"}, {"rearrange", "--range", "1000-90000"}} {
		t.Run(command[0], func(t *testing.T) { durableBatch(t, e, strace, files, command) })
	}
}

// durableBatch is TestDurableBatchJournal for one command.
func durableBatch(t *testing.T, e *safetyEnv, strace string, files, command []string) {
	dir, err := filepath.EvalSymlinks(t.TempDir()) // strace -y names files by their real path
	if err != nil {
		t.Fatal(err)
	}
	out, journal := filepath.Join(dir, "out"), filepath.Join(dir, "journal")
	log := filepath.Join(t.TempDir(), "trace")
	args := append([]string{"-f", "-qq", "-y", "-s", "1000", "-o", log, "-e", "trace=openat,fsync,fdatasync,renameat2,rename,link,linkat,write", e.bin},
		command...)
	args = append(append(args, "-q", "--sk", e.sk, "-o", out+"/", "--journal", journal), files...)
	cmd := exec.Command(strace, args...)
	cmd.Env = cleanEnv()
	if msg, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(msg), "ptrace") {
			clitest.Missing(t, "strace cannot trace here: %s", msg)
		}
		t.Fatalf("%v\n%s", err, msg)
	}
	calls := straceCalls(t, log)

	// The events of each output, by its name: where its temporary file's
	// fsync ended, where its rename began and ended, where its done line
	// began.
	type events struct{ fileSynced, renameStart, renameEnd, done int }
	byName := map[string]*events{}
	of := func(name string) *events {
		if byName[name] == nil {
			byName[name] = &events{-1, -1, -1, -1}
		}
		return byName[name]
	}
	type span struct{ start, end int }
	var folderSyncs []span
	for _, c := range calls {
		switch {
		case c.name == "fsync" && c.fdPath == out:
			folderSyncs = append(folderSyncs, span{c.start, c.end})
		case c.name == "fsync" && filepath.Dir(c.fdPath) == out && strings.Contains(c.fdPath, ".partial-"):
			base := strings.TrimPrefix(filepath.Base(c.fdPath), ".")
			of(base[:strings.Index(base, ".partial-")]).fileSynced = c.end
		case c.name == "openat" && strings.Contains(c.args, ".partial-") && strings.Contains(c.args, "O_CREAT"):
			if !strings.Contains(c.args, `"/proc/self/fd/`) {
				t.Errorf("output made by its path, not in the folder held: %s", c.args)
			}
		case c.name == "renameat2" && c.ret == "0":
			// renameat2(AT_FDCWD, "…/.f01.partial-…", AT_FDCWD, "…/f01", …)
			q := strings.Split(c.args, `"`)
			if len(q) < 4 {
				t.Fatalf("rename: %s", c.args)
			}
			ev := of(filepath.Base(q[3]))
			ev.renameStart, ev.renameEnd = c.start, c.end
		case c.name == "write" && c.fdPath == journal && strings.Contains(c.args, `{\"done\":`):
			_, rest, _ := strings.Cut(c.args, `\"output\":\"`)
			name, _, _ := strings.Cut(rest, `\"`)
			of(filepath.Base(name)).done = c.start
		}
	}
	if len(byName) != len(files) || len(files) == 0 {
		t.Fatalf("%d outputs traced, want %d", len(byName), len(files))
	}
	for name, ev := range byName {
		switch {
		case ev.fileSynced < 0 || ev.renameStart < 0 || ev.done < 0:
			t.Errorf("%s: fsync, rename or done line missing: %+v", name, *ev)
		case ev.fileSynced > ev.renameStart:
			t.Errorf("%s: renamed before its fsync ended", name)
		case !slices.ContainsFunc(folderSyncs, func(s span) bool { return s.start > ev.renameEnd && s.end < ev.done }):
			t.Errorf("%s: recorded done with no fsync of the folder between its rename and its done line", name)
		}
	}
	t.Logf("%d outputs, %d fsyncs of their folder", len(byName), len(folderSyncs))
}

// straceCall is one system call in a trace of strace -f -y: its name, its
// arguments, the path of its first argument's file descriptor, its
// result, and the lines where it began and ended.
type straceCall struct {
	name, args, fdPath, ret string
	start, end              int
}

// straceCalls reads the trace at path, joining the calls that other
// threads interrupted (<unfinished ...> / <... resumed>).
func straceCalls(t *testing.T, path string) []straceCall {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type open struct {
		text  string
		start int
	}
	pending := map[string]open{} // by thread
	var calls []straceCall
	for i, line := range strings.Split(string(data), "\n") {
		tid, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		rest = strings.TrimLeft(rest, " ")
		start := i
		switch {
		case strings.HasSuffix(rest, " <unfinished ...>"):
			pending[tid] = open{strings.TrimSuffix(rest, " <unfinished ...>"), i}
			continue
		case strings.HasPrefix(rest, "<... "):
			p := pending[tid]
			delete(pending, tid)
			_, tail, _ := strings.Cut(rest, " resumed>")
			rest, start = p.text+tail, p.start
		}
		name, args, ok := strings.Cut(rest, "(")
		if !ok || strings.HasPrefix(name, "+++") || strings.HasPrefix(name, "---") {
			continue
		}
		eq := strings.LastIndex(args, " = ")
		if eq < 0 {
			continue
		}
		c := straceCall{name: name, args: args[:eq], ret: strings.Fields(args[eq+3:])[0], start: start, end: i}
		if lt := strings.Index(c.args, "<"); lt >= 0 && !strings.HasPrefix(c.args, "AT_FDCWD") {
			if gt := strings.Index(c.args[lt:], ">"); gt > 0 {
				c.fdPath = c.args[lt+1 : lt+gt]
			}
		}
		calls = append(calls, c)
	}
	return calls
}

// TestUmask: outputs that are not secret get 0666 minus the umask;
// plaintext and secret keys stay 0600.
func TestUmask(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	enc, _ := e.encryptFor(t, "in.c4gh", randomBytes(1000, 4))
	for _, tc := range []struct {
		umask          string
		public, secret os.FileMode
	}{{"077", 0o600, 0o600}, {"022", 0o644, 0o600}, {"027", 0o640, 0o600}, {"000", 0o666, 0o600}} {
		dir := t.TempDir()
		in := func(n string) string { return filepath.Join(dir, n) }
		script := fmt.Sprintf(`umask %s
set -e
"$BIN" encrypt --recipient_pk "$PK" -i "$ENC" -o %[2]s/enc --header %[2]s/hdr
"$BIN" reencrypt --sk "$SK" --recipient_pk "$PK" -i "$ENC" -o %[2]s/re
"$BIN" rearrange --sk "$SK" --range 0-10 -i "$ENC" -o %[2]s/rearranged
"$BIN" splice --sk "$SK" --range 0-10 -i "$ENC" -o %[2]s/spliced
"$BIN" pubkey --sk "$SK" -o %[2]s/pub
"$BIN" keygen --sk %[2]s/k.sec --pk %[2]s/k.pub --nocrypt
"$BIN" decrypt --sk "$SK" -i "$ENC" -o %[2]s/plain
`, tc.umask, dir)
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = cleanEnv("BIN="+e.bin, "PK="+e.pk, "SK="+e.sk, "ENC="+enc)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("umask %s: %v\n%s", tc.umask, err, msg)
		}
		for name, want := range map[string]os.FileMode{
			"enc": tc.public, "hdr": tc.public, "re": tc.public, "rearranged": tc.public, "spliced": tc.public,
			"pub": tc.public, "k.pub": tc.public, "k.sec": tc.secret, "plain": tc.secret,
		} {
			fi, err := os.Stat(in(name))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != want {
				t.Errorf("umask %s: %s has mode %04o, want %04o", tc.umask, name, fi.Mode().Perm(), want)
			}
		}
	}
}

// TestStdoutAliases: /dev/stdout, /dev/fd/1 and - are standard output,
// written in place: a file that stdout is redirected to (even >>) is
// appended to, not replaced.
func TestStdoutAliases(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	plain := randomBytes(70000, 5)
	enc, _ := e.encryptFor(t, "in.c4gh", plain)
	for _, name := range []string{"/dev/stdout", "/dev/fd/1", "-"} {
		target := filepath.Join(t.TempDir(), "target")
		if err := os.WriteFile(target, []byte("before\n"), 0o640); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Stat(target)
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(e.bin, "decrypt", "--sk", e.sk, "-i", enc, "-o", name, "--force")
		cmd.Env = cleanEnv()
		cmd.Stdout = f
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		msg := stderr.Bytes()
		f.Close()
		if err != nil {
			t.Fatalf("-o %s: %v\n%s", name, err, msg)
		}
		after, _ := os.Stat(target)
		got, _ := os.ReadFile(target)
		if !os.SameFile(before, after) || !bytes.Equal(got, append([]byte("before\n"), plain...)) {
			t.Errorf("-o %s: the file stdout goes to was replaced or not appended to (%d bytes)", name, len(got))
		}
		if after.Mode().Perm() != 0o640 {
			t.Errorf("-o %s: mode changed to %04o", name, after.Mode().Perm())
		}
	}

	// Binary output to a terminal is refused whatever names it.
	ptmx, pts := ptytest.Open(t)
	go io.Copy(io.Discard, ptmx)
	for _, name := range []string{"/dev/stdout", "/dev/fd/1", pts.Name()} {
		cmd := exec.Command(e.bin, "encrypt", "--recipient_pk", e.pk, "-i", enc, "-o", name)
		cmd.Env = cleanEnv()
		cmd.Stdout = pts
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(stderr.String(), "refusing to write binary data to") {
			t.Errorf("-o %s on a terminal: exit %d, stderr %q", name, code, stderr.String())
		}
	}
}

// checksumBatch makes four files of size bytes and returns the command
// "encrypt --checksum --jobs 1" of them, not started.
func (e *safetyEnv) checksumBatch(t *testing.T, size int) (dir string, files []string, cmd *exec.Cmd) {
	t.Helper()
	dir = t.TempDir()
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(p, randomBytes(size, uint64(10+i)), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	cmd = exec.Command(e.bin, append([]string{"encrypt", "--recipient_pk", e.pk, "--checksum", "--jobs", "1"}, files...)...)
	cmd.Env = cleanEnv()
	return dir, files, cmd
}

// TestSIGPIPE: "encrypt --checksum a b c | head -1" ends quietly with
// 128+SIGPIPE once the reader is gone, and leaves no temporary file.
func TestSIGPIPE(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	dir, _, cmd := e.checksumBatch(t, 8<<20)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	stdout.Close() // as head -1 does
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGPIPE) {
		t.Errorf("exit %d (%v), want %d", code, err, 128+int(syscall.SIGPIPE))
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %q, want nothing", stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.partial-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestSIGPIPEStopsBatch: a batch whose stdout can no longer be written
// starts no new file: with one job and a stdout whose reader is gone from
// the start, the first file is written (its checksum line is what fails)
// and no other.
func TestSIGPIPEStopsBatch(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	_, files, cmd := e.checksumBatch(t, 1<<20)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close() // the reader is gone before the command starts
	cmd.Stdout = pw
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	pw.Close()
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGPIPE) || stderr.Len() != 0 {
		t.Errorf("exit %d (%v), stderr %q; want %d and nothing", code, err, stderr.String(), 128+int(syscall.SIGPIPE))
	}
	var written []string
	for _, f := range files {
		if _, err := os.Stat(f + ".c4gh"); err == nil {
			written = append(written, filepath.Base(f)+".c4gh")
		}
	}
	if len(written) != 1 || written[0] != "f0.c4gh" {
		t.Errorf("written: %v, want only f0.c4gh", written)
	}
}

// TestRelockThroughStdout: keygen --relock --sk /dev/stdout, with stdout
// appending to a key file, is refused (it dereferenced a nil stdout) and
// leaves the key as it was.
func TestRelockThroughStdout(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "k.sec")
	if r := e.run(t, nil, nil, "keygen", "--nocrypt", "--sk", key, "--pk", filepath.Join(dir, "k.pub")); r.code != 0 {
		t.Fatalf("keygen: %s", r.stderr)
	}
	before, _ := os.ReadFile(key)
	f, err := os.OpenFile(key, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(e.bin, "keygen", "--relock", "--nocrypt", "--sk", "/dev/stdout")
	cmd.Env = cleanEnv()
	cmd.Stdout = f
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage || stderr.String() != "crypt4gh: error: keys are written to files, not to stdout (/dev/stdout)\n" {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if after, _ := os.ReadFile(key); !bytes.Equal(after, before) {
		t.Error("the key changed")
	}
}

// TestKeygenForceKeepsOldKey: keygen -f whose write fails (here the file
// size limit, as a full disk would) leaves the old key as it was.
func TestKeygenForceKeepsOldKey(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	dir := t.TempDir()
	sk, pk := filepath.Join(dir, "k.sec"), filepath.Join(dir, "k.pub")
	cmd := exec.Command(e.bin, "keygen", "--sk", sk, "--pk", pk, "--nocrypt")
	cmd.Env = cleanEnv()
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	old, _ := os.ReadFile(sk)
	oldPub, _ := os.ReadFile(pk)
	cmd = exec.Command("sh", "-c", `trap "" XFSZ; ulimit -f 0; exec "$BIN" keygen --sk "$SK" --pk "$PK" --nocrypt -f`)
	cmd.Env = cleanEnv("BIN="+e.bin, "SK="+sk, "PK="+pk)
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("keygen -f under ulimit -f 0 succeeded:\n%s", msg)
	}
	if !strings.Contains(string(msg), "file too large") {
		t.Errorf("stderr: %s", msg)
	}
	if b, _ := os.ReadFile(sk); !bytes.Equal(b, old) {
		t.Error("the old secret key was lost")
	}
	if b, _ := os.ReadFile(pk); !bytes.Equal(b, oldPub) {
		t.Error("the old public key was lost")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d entries in the folder, want the two keys", len(entries))
	}
}

// TestPromptRestoresTerminal interrupts a passphrase prompt with SIGTERM
// and SIGINT: the terminal has its echo back.
func TestPromptRestoresTerminal(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	dir := t.TempDir()
	sk := filepath.Join(dir, "locked.sec")
	cmd := exec.Command(e.bin, "keygen", "--sk", sk, "--pk", sk+".pub")
	cmd.Env = cleanEnv("C4GH_PASSPHRASE=pw")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	enc, _ := e.encryptFor(t, "in.c4gh", randomBytes(100, 6))
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		ptmx, pts := ptytest.Open(t)
		go io.Copy(io.Discard, ptmx)
		cmd := exec.Command(e.bin, "decrypt", "--sk", sk, "-i", enc, "-o", filepath.Join(dir, "out"))
		cmd.Env = cleanEnv()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for the prompt to turn echo off.
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			if st.Lflag&unix.ECHO == 0 {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("echo never turned off")
			}
			time.Sleep(5 * time.Millisecond)
		}
		cmd.Process.Signal(sig)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) {
			t.Errorf("%v: exit %d, want %d", sig, code, 128+int(sig))
		}
		st, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if st.Lflag&unix.ECHO == 0 {
			t.Errorf("%v at the prompt left the terminal with echo off", sig)
		}
	}
}

// TestControlCharactersEscaped: a crafted file name cannot make a failed
// verify look like a success on a terminal.
func TestControlCharactersEscaped(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	good, _ := e.encryptFor(t, "good.c4gh", randomBytes(100, 7))
	dir := t.TempDir()
	evil := filepath.Join(dir, "x\r\x1b[2Kgood.c4gh: OK\x1b[8m")
	data, _ := os.ReadFile(good)
	data[len(data)-1] ^= 1
	if err := os.WriteFile(evil, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, nil, nil, "verify", "--sk", e.sk, good, evil)
	for _, out := range []string{r.stdout, r.stderr} {
		if strings.ContainsAny(out, "\r\x1b") {
			t.Errorf("raw control characters printed: %q", out)
		}
	}
	if !strings.Contains(r.stderr, `x\x0d\x1b[2Kgood.c4gh: OK\x1b[8m`) || !strings.Contains(r.stderr, "1 of 2 files failed") {
		t.Errorf("stderr: %q", r.stderr)
	}
	r = e.run(t, nil, nil, "inspect", evil)
	if strings.ContainsAny(r.stdout+r.stderr, "\r\x1b") {
		t.Errorf("inspect printed raw control characters: %q", r.stdout)
	}
}

// TestStaleTemporaryWarned: a temporary file of this tool older than a day
// in the output folder (a run killed with SIGKILL leaves it) is named in
// a warning, and not removed.
func TestStaleTemporaryWarned(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	enc, _ := e.encryptFor(t, "in.c4gh", randomBytes(100, 8))
	dir := t.TempDir()
	stale := filepath.Join(dir, ".old.partial-0123456789abcdef")
	if err := os.WriteFile(stale, []byte("plaintext"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(stale, old, old)
	r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", enc, "-o", filepath.Join(dir, "out"))
	if r.code != exitOK || !strings.Contains(r.stderr, "warning: "+stale+" was left by an interrupted run") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("the stale file was removed: %v", err)
	}
}

// TestWriteErrorNamesOutput: a failed write names the output the user
// gave, not the temporary file, and leaves nothing.
func TestWriteErrorNamesOutput(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	enc, _ := e.encryptFor(t, "in.c4gh", randomBytes(200000, 11))
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `trap "" XFSZ; ulimit -f 64; exec "$BIN" decrypt --sk "$SK" -i "$ENC" -o "$OUT"`)
	cmd.Env = cleanEnv("BIN="+e.bin, "SK="+e.sk, "ENC="+enc, "OUT="+filepath.Join(dir, "out"))
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("decrypt under ulimit -f 64 succeeded")
	}
	if !strings.Contains(string(msg), "write "+filepath.Join(dir, "out")+": file too large") || strings.Contains(string(msg), "partial") {
		t.Errorf("stderr: %s", msg)
	}
	clitest.EmptyDir(t, dir)
}

// TestKernelCopies traces reencrypt and splice between files: the body is
// copied by the kernel (copy_file_range), never read into the process.
func TestKernelCopies(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	strace := clitest.Tool(t, "strace")
	enc, _ := e.encryptFor(t, "in.c4gh", randomBytes(3<<20, 12))
	dir := t.TempDir()
	for _, args := range [][]string{
		{"reencrypt", "--sk", e.sk, "--recipient_pk", e.pk, "-i", enc, "-o", filepath.Join(dir, "re.c4gh")},
		{"splice", "--sk", e.sk, "--range", "100000-2000000", "-i", enc, "-o", filepath.Join(dir, "sp.c4gh")},
	} {
		log := filepath.Join(t.TempDir(), "trace")
		cmd := exec.Command(strace, append([]string{"-f", "-qq", "-o", log, "-e", "trace=copy_file_range", e.bin}, args...)...)
		cmd.Env = cleanEnv()
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, msg)
		}
		trace, _ := os.ReadFile(log)
		if !strings.Contains(string(trace), "copy_file_range(") {
			t.Errorf("%s: no copy_file_range in the trace:\n%s", args[0], trace)
		}
	}
}

// TestSignalWithoutOutput: a command that has created no file yet (decrypt
// to stdout) also ends on SIGQUIT with 131 and one line, no goroutine dump.
func TestSignalWithoutOutput(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	plain := randomBytes(1<<20, 13)
	enc, hdrLen := e.encryptFor(t, "q.c4gh", plain)
	data, _ := os.ReadFile(enc)
	for _, sig := range []syscall.Signal{syscall.SIGQUIT, syscall.SIGINT} {
		pr, pw, _ := os.Pipe()
		cmd := exec.Command(e.bin, "decrypt", "--sk", e.sk)
		cmd.Env = cleanEnv()
		cmd.Stdin = pr
		stdout, _ := cmd.StdoutPipe()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pr.Close()
		pw.Write(data[:hdrLen+9*body.EncryptedSegmentSize])
		// The first batch comes out: the command is running.
		if _, err := io.ReadFull(stdout, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(sig)
		go io.Copy(io.Discard, stdout)
		cmd.Wait()
		pw.Close()
		if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) {
			t.Errorf("%v: exit %d, want %d", sig, code, 128+int(sig))
		}
		if strings.Contains(stderr.String(), "goroutine") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: stderr %q, want one line", sig, stderr.String())
		}
	}
}

// TestSIGPIPEAlone: a SIGPIPE that is not about stdout does not end a
// command, which finishes its output. (One comes when a connection to an
// object store breaks while a request is written; the write then fails
// with EPIPE, as any broken connection, and the request is retried. Here
// the signal is sent with kill.)
func TestSIGPIPEAlone(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	plain := randomBytes(3<<20, 14)
	out := filepath.Join(t.TempDir(), "out.c4gh")
	cmd, pw, stderr := e.startFed(t, "encrypt", "--recipient_pk", e.pk, "-o", out)
	pw.Write(plain[:1<<20])
	// The temporary output exists: the command is running, its signals
	// are caught.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.partial-*")); len(tmp) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no temporary output after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 3 {
		cmd.Process.Signal(syscall.SIGPIPE)
		time.Sleep(20 * time.Millisecond)
	}
	pw.Write(plain[1<<20:])
	pw.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGPIPE: %v\n%s", err, stderr.String())
	}
	r := e.run(t, nil, nil, "decrypt", "--sk", e.sk, "-i", out)
	if r.code != 0 || r.stdout != string(plain) {
		t.Errorf("decrypt after SIGPIPE: exit %d, %d bytes of %d, stderr %q", r.code, len(r.stdout), len(plain), r.stderr)
	}
}

// TestHeaderCommittedWithBody: encrypt -o BODY --header HDR whose BODY
// appears while it runs fails and leaves no header of its own either.
func TestHeaderCommittedWithBody(t *testing.T) {
	t.Parallel()
	e := newSafetyEnv(t)
	dir := t.TempDir()
	bodyPath, hdrPath := filepath.Join(dir, "b.c4gh"), filepath.Join(dir, "h.c4gh")
	cmd, pw, stderr := e.startFed(t, "encrypt", "--recipient_pk", e.pk, "-o", bodyPath, "--header", hdrPath)
	pw.Write(randomBytes(1000, 14))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(dir, ".*.partial-*")); len(m) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no temporary outputs; stderr %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.WriteFile(bodyPath, []byte("appeared"), 0o600)
	pw.Close()
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage {
		t.Errorf("exit %d, want %d; stderr %s", code, exitUsage, stderr.String())
	}
	if _, err := os.Stat(hdrPath); err == nil {
		t.Error("the header was left without its body")
	}
	if b, _ := os.ReadFile(bodyPath); string(b) != "appeared" {
		t.Error("the file that appeared was replaced")
	}
}

// TestBatchOpenFileLimit runs a batch of many files, 16 jobs, on a disk
// made slow (each fsync delayed by strace), so that outputs pile up
// waiting for their commit, under an open-file limit of 128: every file
// is written all the same, the files under way bounded by the limit.
func TestBatchOpenFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("200 files with delayed fsyncs: a few seconds")
	}
	t.Parallel()
	e := newSafetyEnv(t)
	strace := clitest.Tool(t, "strace")
	in, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	var files []string
	for i := range 200 {
		p := filepath.Join(in, fmt.Sprintf("f%03d", i))
		if err := os.WriteFile(p, randomBytes(100+i, uint64(i)), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	script := `ulimit -n 128 && exec "$@"`
	args := append([]string{"-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync", "-e", "inject=fsync:delay_exit=20000",
		"sh", "-c", script, "sh", e.bin, "encrypt", "-q", "--jobs", "16", "--recipient_pk", e.pk, "-o", out + "/"}, files...)
	cmd := exec.Command(strace, args...)
	cmd.Env = cleanEnv()
	msg, err := cmd.CombinedOutput()
	if strings.Contains(string(msg), "ptrace") {
		clitest.Missing(t, "strace cannot trace here: %s", msg)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(files) {
		t.Errorf("%d outputs for %d files", len(entries), len(files))
	}
}

// TestUnreadableNotReplaced: a file that the user may replace (its folder
// is theirs) but not read may be a secret key kept from them: --force
// does not replace it with an output that is not a key (exit 2), as it
// does not replace a key it can read.
func TestUnreadableNotReplaced(t *testing.T) {
	e := newSafetyEnv(t)
	// Out of the test's own folder, which other users cannot enter.
	dir, err := os.MkdirTemp("", "c4gh-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	locked := filepath.Join(dir, "locked.sec")
	sk, _ := os.ReadFile(e.sk)
	if err := os.WriteFile(locked, sk, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "crypt4gh")
	data, _ := os.ReadFile(e.bin)
	os.WriteFile(bin, data, 0o755)
	pk, _ := os.ReadFile(e.pk)
	pub := filepath.Join(dir, "me.pub")
	os.WriteFile(pub, pk, 0o644)
	cmd := exec.Command(bin, "encrypt", "--recipient_pk", pub, "-i", pub, "-o", locked, "-f")
	cmd.Dir = dir
	if os.Getuid() == 0 {
		// root reads every file: run as nobody, to whom it is unreadable.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(stderr.String(), "to tell that it is no secret key") {
		t.Errorf("exit %d\n%s", code, stderr.String())
	}
	os.Chmod(locked, 0o600)
	if got, _ := os.ReadFile(locked); !bytes.Equal(got, sk) {
		t.Error("the unreadable secret key was replaced")
	}
}
