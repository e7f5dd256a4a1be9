//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/ptytest"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The key agent, end to end: the built command, samtools with the
// htslib-crypt4gh plug-in built from ../shared/peers, strace, another
// user, FUSE.

var (
	pluginOnce sync.Once
	pluginDir  string
	pluginErr  error
	pluginOut  []byte
)

// htsPlugin builds samtools' htslib-crypt4gh plug-in and its agent once
// into the user's cache, and returns the folder that holds them (for
// HTS_PATH). A missing source or build script is a missing prerequisite;
// a failing build fails the test.
func htsPlugin(t *testing.T) string {
	t.Helper()
	clitest.Tool(t, "samtools")
	script, err := filepath.Abs(filepath.Join("..", "shared", "peers", "build-htslib-crypt4gh.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("HTSLIB_CRYPT4GH_BUILD"); p != "" {
		script = p
	}
	if _, err := os.Stat(script); err != nil {
		clitest.Missing(t, "the htslib-crypt4gh build script (set HTSLIB_CRYPT4GH_BUILD): %v", err)
	}
	pluginOnce.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		pluginDir = filepath.Join(cache, "crypt4gh-tests", "htslib-crypt4gh")
		// Test binaries of other checkouts may build into the same
		// folder at the same time: the script, which skips a build
		// already there, runs in one of them at a time, so that none
		// takes a plug-in another is still copying in.
		unlock, err := clitest.LockDir(pluginDir)
		if err != nil {
			pluginErr = err
			return
		}
		defer unlock()
		pluginOut, pluginErr = exec.Command("bash", script, pluginDir).CombinedOutput()
	})
	if pluginErr != nil {
		t.Fatalf("building htslib-crypt4gh (needs libhts-dev libsodium-dev autoconf): %v\n%s", pluginErr, pluginOut)
	}
	return pluginDir
}

// agentEnv is the environment of the tests' commands: none of the
// caller's crypt4gh variables, the built command first on PATH.
func agentEnv(bin string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "C4GH_") || strings.HasPrefix(kv, "CRYPT4GH_") || strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "HTS_PATH=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	return append(env, extra...)
}

type agentFixture struct {
	bin, dir, sk, pk string
	plain            []byte
	file             string // plain encrypted for sk
}

// newAgentFixture writes a key without passphrase and a file for it.
func newAgentFixture(t *testing.T) *agentFixture {
	t.Helper()
	f := &agentFixture{bin: clitest.Binary(t), dir: t.TempDir()}
	f.sk, f.pk = filepath.Join(f.dir, "me.sec"), filepath.Join(f.dir, "me.pub")
	f.run(t, nil, "keygen", "--nocrypt", "--sk", f.sk, "--pk", f.pk)
	f.plain = randomBytes(70000, 7)
	os.WriteFile(filepath.Join(f.dir, "plain"), f.plain, 0o600)
	f.file = filepath.Join(f.dir, "plain.c4gh")
	f.run(t, nil, "encrypt", "--recipient_pk", f.pk, "-i", filepath.Join(f.dir, "plain"), "-o", f.file)
	return f
}

// run runs the command and fails the test when it fails.
func (f *agentFixture) run(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, code, stderr := f.try(env, args...)
	if code != 0 {
		t.Fatalf("crypt4gh %v: exit %d\n%s", args, code, stderr)
	}
	return out
}

// try runs the command and returns its stdout, exit code and stderr.
func (f *agentFixture) try(env []string, args ...string) (string, int, string) {
	cmd := exec.Command(f.bin, args...)
	cmd.Env = agentEnv(f.bin, env...)
	cmd.Dir = f.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Run()
	return out.String(), cmd.ProcessState.ExitCode(), errb.String()
}

// daemon starts an agent with --daemon and returns its environment; it is
// stopped when the test ends.
func (f *agentFixture) daemon(t *testing.T, args ...string) []string {
	t.Helper()
	return f.daemonWith(t, nil, args...)
}

// daemonWith is daemon with the variables extra added to the agent's.
func (f *agentFixture) daemonWith(t *testing.T, extra []string, args ...string) []string {
	t.Helper()
	out := f.run(t, extra, append([]string{"agent", "--daemon"}, args...)...)
	var env []string
	for _, line := range strings.Split(out, "\n") {
		kv, _, ok := strings.Cut(line, ";")
		if ok && strings.HasPrefix(kv, "CRYPT4GH_") {
			name, val, _ := strings.Cut(kv, "=")
			env = append(env, name+"="+strings.Trim(val, "'"))
		}
	}
	if len(env) != 3 {
		t.Fatalf("--daemon printed:\n%s", out)
	}
	t.Cleanup(func() {
		if pid := envValue(env, "CRYPT4GH_AGENT_PID"); pid != "" {
			n, _ := strconv.Atoi(pid)
			syscall.Kill(n, syscall.SIGKILL)
		}
	})
	return env
}

// alive tells whether process pid still runs: a daemon killed after its
// parent exited is a zombie until whoever adopted it reaps it, which a
// sandbox's first process may never do, and signal 0 still reaches it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: signal 0 is all there is
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// samgenBAM writes a BAM of 3000 reads of scripts/samgen at bam, and its
// index beside it.
func samgenBAM(t *testing.T, bam string) {
	t.Helper()
	gen := exec.Command("sh", "-c", "go run ./scripts/samgen -reads 3000 | samtools view -b -o "+bam+" - && samtools index "+bam)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("making the BAM: %v\n%s", err, out)
	}
}

// TestAgentSamtools: inside "crypt4gh agent --sk KEY -- sh -c …", samtools
// reads through the plug-in a BAM and its index that this tool encrypted,
// and writes one that "crypt4gh decrypt --sk KEY" opens; this tool's
// decrypt without --sk gives the plaintext and never opens the key file.
func TestAgentSamtools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the htslib-crypt4gh plug-in and runs samtools")
	}
	t.Parallel()
	f := newAgentFixture(t)
	plugin := htsPlugin(t)
	strace := clitest.Tool(t, "strace")
	samtools := clitest.Tool(t, "samtools")
	bam := filepath.Join(f.dir, "reads.bam")
	samgenBAM(t, bam)
	count := func(args ...string) string {
		out, err := exec.Command(samtools, append([]string{"view", "-c"}, args...)...).Output()
		if err != nil {
			t.Fatalf("samtools view -c %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	wantAll, wantRegion := count(bam), count(bam, "chr1:1-20000000")
	f.run(t, nil, "encrypt", "--recipient_pk", f.pk, "-i", bam, "-o", bam+".c4gh")
	f.run(t, nil, "encrypt", "--recipient_pk", f.pk, "-i", bam+".bai", "-o", bam+".bai.c4gh")

	script := `set -e
samtools view -c crypt4gh:reads.bam.c4gh > all.txt
samtools view -c 'crypt4gh:reads.bam.c4gh##idx##crypt4gh:reads.bam.bai.c4gh' chr1:1-20000000 > region.txt
samtools view -b -o crypt4gh:out.bam.c4gh reads.bam
test -z "$C4GH_PASSPHRASE"
strace -f -e trace=open,openat -o trace.txt crypt4gh decrypt -i plain.c4gh -o plain.out
`
	cmd := exec.Command(f.bin, "agent", "--sk", f.sk, "--", "sh", "-c", script)
	cmd.Dir = f.dir
	cmd.Env = agentEnv(f.bin, "HTS_PATH="+plugin+":", "PATH="+filepath.Dir(f.bin)+":"+filepath.Dir(strace)+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("agent -- sh -c …: %v\n%s", err, out)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(f.dir, name))
		return strings.TrimSpace(string(b))
	}
	if got := read("all.txt"); got != wantAll {
		t.Errorf("samtools view -c through the plug-in: %s reads, the plaintext has %s", got, wantAll)
	}
	if got := read("region.txt"); got != wantRegion || wantRegion == "0" {
		t.Errorf("a region through the plug-in: %s reads, the plaintext has %s", got, wantRegion)
	}
	f.run(t, nil, "decrypt", "--sk", f.sk, "-i", bam+".c4gh", "-o", filepath.Join(f.dir, "back.bam"))
	f.run(t, nil, "decrypt", "--sk", f.sk, "-i", filepath.Join(f.dir, "out.bam.c4gh"), "-o", filepath.Join(f.dir, "out.bam"))
	if got := count(filepath.Join(f.dir, "out.bam")); got != wantAll {
		t.Errorf("the BAM samtools wrote through the plug-in decrypts to %s reads, want %s", got, wantAll)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "plain.out")); !bytes.Equal(got, f.plain) {
		t.Errorf("decrypt through the agent: %d bytes, not the plaintext", len(got))
	}
	trace := read("trace.txt")
	if !strings.Contains(trace, "plain.c4gh") {
		t.Fatalf("the trace does not show the input being opened:\n%s", trace)
	}
	if strings.Contains(trace, "me.sec") {
		t.Errorf("decrypt inside the agent opened the key file:\n%s", trace)
	}
}

// TestAgentPluginKeys: a key file as htslib-crypt4gh writes it (a bare
// 32-byte key) is read by the commands and converted by keygen; and this
// tool's commands talk to the plug-in's own agent.
func TestAgentPluginKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the htslib-crypt4gh plug-in")
	}
	t.Parallel()
	f := newAgentFixture(t)
	plugin := htsPlugin(t)
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(f.dir, "bare.sec")
	os.WriteFile(bare, pem.EncodeToMemory(&pem.Block{Type: "CRYPT4GH PRIVATE KEY", Bytes: sk[:]}), 0o600)
	if got := f.run(t, nil, "pubkey", "--sk", bare); !strings.Contains(got, sk.Public().String()) {
		t.Errorf("pubkey of a bare key: %s, want %s", got, sk.Public())
	}
	conv := filepath.Join(f.dir, "conv.sec")
	f.run(t, nil, "keygen", "--convert", "--sk", bare, "-o", conv, "--pk", conv+".pub", "--nocrypt")
	file := filepath.Join(f.dir, "bare.c4gh")
	f.run(t, nil, "encrypt", "--recipient_pk", conv+".pub", "-i", filepath.Join(f.dir, "plain"), "-o", file)
	for _, k := range []string{bare, conv} {
		if got := f.run(t, nil, "decrypt", "--sk", k, "-i", file); got != string(f.plain) {
			t.Errorf("decrypt --sk %s: not the plaintext", filepath.Base(k))
		}
	}
	// The plug-in's agent holds the bare key; this tool's decrypt asks it.
	// Its server, a child that keeps stderr, lingers after the command:
	// stderr goes to a file, and the process group is killed after.
	// A time limit: a request that the plug-in's agent never answers
	// fails the test instead of holding it up.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	underPlugin := func(name string, args ...string) (string, int, string) {
		cmd := exec.CommandContext(ctx, filepath.Join(plugin, "crypt4gh-agent"), append([]string{"-k", bare, "--", f.bin}, args...)...)
		cmd.Env = agentEnv(f.bin)
		errf, err := os.Create(filepath.Join(f.dir, name+".err"))
		if err != nil {
			t.Fatal(err)
		}
		defer errf.Close()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, errf
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Run()
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		msg, _ := os.ReadFile(errf.Name())
		return out.String(), cmd.ProcessState.ExitCode(), string(msg)
	}
	if out, code, msg := underPlugin("decrypt", "decrypt", "-i", file); code != 0 || out != string(f.plain) {
		t.Errorf("decrypt through htslib-crypt4gh's agent: exit %d, %d bytes\n%s", code, len(out), msg)
	}
	// It only opens packets: a command that needs it to seal as its key
	// is told so, at once.
	re := filepath.Join(f.dir, "re.c4gh")
	if _, code, msg := underPlugin("reencrypt", "reencrypt", "--recipient_pk", f.pk, "-i", file, "-o", re); code != 3 || !strings.Contains(msg, "not crypt4gh's own") {
		t.Errorf("reencrypt through htslib-crypt4gh's agent: exit %d\n%s", code, msg)
	}
	if _, err := os.Stat(re); !os.IsNotExist(err) {
		t.Errorf("reencrypt through htslib-crypt4gh's agent left its output: %v", err)
	}
}

// TestAgentOtherUser: a process of another user that connects to the
// socket, its mode and its folder's loosened, is refused.
func TestAgentOtherUser(t *testing.T) {
	if testing.Short() {
		t.Skip("creates a user")
	}
	if os.Geteuid() != 0 {
		clitest.Missing(t, "creating another user needs root")
	}
	clitest.Tool(t, "useradd")
	t.Parallel()
	const user = "c4ghagenttest"
	if err := exec.Command("id", user).Run(); err != nil {
		// A run of this test in another checkout may create it at the
		// same moment: useradd's exit 9 says it exists now.
		out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/sh", user).CombinedOutput()
		if err != nil && exec.Command("id", user).Run() != nil {
			t.Fatalf("useradd: %v\n%s", err, out)
		}
	}
	uidOut, _ := exec.Command("id", "-u", user).Output()
	gidOut, _ := exec.Command("id", "-g", user).Output()
	uid, _ := strconv.Atoi(strings.TrimSpace(string(uidOut)))
	gid, _ := strconv.Atoi(strings.TrimSpace(string(gidOut)))

	f := newAgentFixture(t)
	// A folder the other user can read, with the binary and the file.
	pub, err := os.MkdirTemp("", "crypt4gh-agent-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pub) })
	os.Chmod(pub, 0o755)
	bin := filepath.Join(pub, "crypt4gh")
	data, _ := os.ReadFile(f.bin)
	os.WriteFile(bin, data, 0o755)
	enc, _ := os.ReadFile(f.file)
	os.WriteFile(filepath.Join(pub, "plain.c4gh"), enc, 0o644)

	// The agent makes its folder in $XDG_RUNTIME_DIR when that is set,
	// which the other user cannot enter (/run/user/0, mode 0700, where
	// CI logs in): here in pub, so that what refuses the other user is
	// the agent, not a folder on the way.
	env := f.daemonWith(t, []string{"XDG_RUNTIME_DIR=" + pub}, "--sk", f.sk)
	sock := envValue(env, "CRYPT4GH_AGENT")
	if filepath.Dir(filepath.Dir(sock)) != pub {
		t.Fatalf("the agent's socket %s is not in %s", sock, pub)
	}
	os.Chmod(filepath.Dir(sock), 0o777)
	os.Chmod(sock, 0o666)
	cmd := exec.Command(bin, "decrypt", "-i", filepath.Join(pub, "plain.c4gh"))
	cmd.Env = agentEnv(bin, env...)
	cmd.Dir = pub
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 3 || out.Len() != 0 || !strings.Contains(errb.String(), "closed the connection") {
		t.Errorf("another user: exit %d, %d bytes out\n%s", code, out.Len(), errb.String())
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("the refusal took %v", time.Since(start))
	}
	// The agent's own user is still served.
	if got, code, stderr := f.try(env, "decrypt", "-i", f.file); code != 0 || got != string(f.plain) {
		t.Errorf("the agent's user: exit %d\n%s", code, stderr)
	}
}

// TestAgentLifetime: after -t 2s a request fails with exit 3 at once;
// --list says the key expired; --stop removes the socket.
func TestAgentLifetime(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a key lifetime of 2 s")
	}
	t.Parallel()
	f := newAgentFixture(t)
	// The request within the lifetime must come within it: a loaded
	// machine may take longer than 2 s to start the agent and then the
	// command. When the request failed after the lifetime could have
	// ended, it showed nothing, and the agent is started again with a
	// lifetime four times as long; a failure sooner fails the test.
	var env []string
	var lifetime time.Duration
	var started time.Time
	for lifetime = 2 * time.Second; ; lifetime *= 4 {
		before := time.Now()
		env = f.daemon(t, "--sk", f.sk, "-t", lifetime.String())
		// The lifetime began before --daemon returned.
		started = time.Now()
		got, code, stderr := f.try(env, "decrypt", "-i", f.file)
		if code == 0 && got == string(f.plain) {
			break
		}
		if took := time.Since(before); took < lifetime || lifetime >= 32*time.Second {
			t.Fatalf("within the lifetime of %v (%v after the agent's start): exit %d\n%s", lifetime, took, code, stderr)
		}
		t.Logf("the request came %v after the agent's start, past its lifetime of %v: again with a longer one", time.Since(before), lifetime)
	}
	time.Sleep(time.Until(started.Add(lifetime + 200*time.Millisecond)))
	// At once: the fastest of three tries, each of which starts a
	// process on a machine that other tests may be loading.
	var fastest time.Duration
	for try := 0; try < 3; try++ {
		t0 := time.Now()
		_, code, stderr := f.try(env, "decrypt", "-i", f.file)
		d := time.Since(t0)
		if code != 3 || !strings.Contains(stderr, "lifetime") || strings.Count(stderr, "crypt4gh: error:") != 1 {
			t.Errorf("after the lifetime: exit %d\n%s", code, stderr)
			break
		}
		if try == 0 || d < fastest {
			fastest = d
		}
		if fastest <= time.Second {
			break
		}
	}
	if fastest > time.Second {
		t.Errorf("the expired request took %v, the fastest of three", fastest)
	}
	if out := f.run(t, env, "agent", "--list"); !strings.Contains(out, "(expired)") {
		t.Errorf("--list after the lifetime:\n%s", out)
	}
	if out := f.run(t, env, "agent", "--stop"); !strings.Contains(out, "unset CRYPT4GH_AGENT") {
		t.Errorf("--stop printed %q", out)
	}
	sock := envValue(env, "CRYPT4GH_AGENT")
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Dir(sock)); os.IsNotExist(err) {
			return
		}
	}
	t.Errorf("the socket's folder is left after --stop")
}

// TestAgentKilled: the agent killed while a command waits for its answer:
// the command fails at once with a clear message.
func TestAgentKilled(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	env := f.daemon(t, "--sk", f.sk)
	pid, _ := strconv.Atoi(envValue(env, "CRYPT4GH_AGENT_PID"))
	syscall.Kill(pid, syscall.SIGSTOP) // it accepts nothing, answers nothing
	cmd := exec.Command(f.bin, "decrypt", "-i", f.file)
	cmd.Env = agentEnv(f.bin, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	// Killed once decrypt waits for its answer: connected (a socket among
	// its files; a loaded machine may take a while to start it), and
	// still running a moment later. The 2 s below are then the reaction
	// to the kill alone.
	for deadline := time.Now().Add(20 * time.Second); !hasSocket(cmd.Process.Pid) && time.Now().Before(deadline); {
		select {
		case <-done:
			t.Fatalf("decrypt did not wait for the stopped agent:\n%s", errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case <-done:
		t.Fatalf("decrypt did not wait for the stopped agent:\n%s", errb.String())
	case <-time.After(500 * time.Millisecond):
	}
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		cmd.Process.Kill()
		t.Fatal("decrypt hangs after the agent was killed")
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 || out.Len() != 0 || !strings.Contains(errb.String(), "the key agent cannot be reached") {
		t.Errorf("after the agent was killed: exit %d\n%s", code, errb.String())
	}
}

// hasSocket reports whether the process pid has a socket open.
func hasSocket(pid int) bool {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			return true
		}
	}
	return false
}

// TestAgentProtectedKey: the passphrase is read once, by the agent, from
// C4GH_PASSPHRASE, which COMMAND does not see (nor C4GH_SECRET_KEY); the
// commands inside ask for none (stdin is not a terminal: they would fail
// if they asked).
func TestAgentProtectedKey(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	sk := filepath.Join(f.dir, "locked.sec")
	f.run(t, []string{"C4GH_PASSPHRASE=s3cret-pass"}, "keygen", "--sk", sk, "--pk", sk+".pub")
	file := filepath.Join(f.dir, "locked.c4gh")
	f.run(t, nil, "encrypt", "--recipient_pk", sk+".pub", "-i", filepath.Join(f.dir, "plain"), "-o", file)
	script := `test -z "$C4GH_PASSPHRASE$C4GH_SECRET_KEY" || { echo "C4GH_PASSPHRASE or C4GH_SECRET_KEY reached the command" >&2; exit 9; }
crypt4gh decrypt -i locked.c4gh -o a.out </dev/null && crypt4gh verify locked.c4gh </dev/null && crypt4gh cat locked.c4gh > b.out </dev/null &&
crypt4gh reencrypt --recipient_pk me.pub -i locked.c4gh -o re.c4gh </dev/null && crypt4gh rearrange --range 10-60000 -i locked.c4gh -o r.c4gh </dev/null`
	// The key named by C4GH_SECRET_KEY, as --sk.
	out, code, stderr := f.try([]string{"C4GH_PASSPHRASE=s3cret-pass", "C4GH_SECRET_KEY=" + sk}, "agent", "-q", "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("agent: exit %d\n%s%s", code, out, stderr)
	}
	for _, name := range []string{"a.out", "b.out"} {
		if got, _ := os.ReadFile(filepath.Join(f.dir, name)); !bytes.Equal(got, f.plain) {
			t.Errorf("%s: not the plaintext", name)
		}
	}
	// reencrypt and rearrange wrote packets sealed by the agent with the
	// protected key as their writer.
	if got := f.run(t, nil, "decrypt", "--sk", f.sk, "--sender_pk", sk+".pub", "-i", "re.c4gh"); got != string(f.plain) {
		t.Error("reencrypt inside the agent: not the plaintext for the recipient")
	}
	if got := f.run(t, []string{"C4GH_PASSPHRASE=s3cret-pass"}, "decrypt", "--sk", sk, "-i", "r.c4gh"); got != string(f.plain[10:60000]) {
		t.Error("rearrange inside the agent: not the range for the agent's key")
	}
	// The exit status of COMMAND is the agent's.
	if _, code, _ := f.try(nil, "agent", "--sk", f.sk, "--", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("agent -- sh -c 'exit 7': exit %d", code)
	}
	// A command that needs the key itself says so.
	_, code, stderr = f.try(nil, "agent", "--sk", f.sk, "--", "crypt4gh", "pubkey")
	if code != 2 || !strings.Contains(stderr, "needs the secret key itself") {
		t.Errorf("pubkey inside the agent: exit %d\n%s", code, stderr)
	}
}

// TestAgentLock: --lock refuses every request until --unlock gives the
// same passphrase.
func TestAgentLock(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	env := f.daemon(t, "--sk", f.sk)
	pk, _ := os.ReadFile(f.pk)
	pub, _ := keys.ParsePublicKey(pk)
	if out := f.run(t, env, "agent", "--list"); !strings.Contains(out, pub.String()) || !strings.Contains(out, "me.sec") {
		t.Errorf("--list:\n%s", out)
	}
	pass := filepath.Join(f.dir, "lock")
	os.WriteFile(pass, []byte("lock-pass\n"), 0o600)
	bad := filepath.Join(f.dir, "bad")
	os.WriteFile(bad, []byte("wrong\n"), 0o600)
	f.run(t, env, "agent", "--lock", "--passphrase-file", pass)
	if _, code, stderr := f.try(env, "decrypt", "-i", f.file); code != 3 || !strings.Contains(stderr, "locked") {
		t.Errorf("decrypt while locked: exit %d\n%s", code, stderr)
	}
	if _, code, _ := f.try(env, "agent", "--unlock", "--passphrase-file", bad); code != 3 {
		t.Errorf("--unlock with the wrong passphrase: exit %d", code)
	}
	f.run(t, env, "agent", "--unlock", "--passphrase-file", pass)
	if got, code, stderr := f.try(env, "decrypt", "-i", f.file); code != 0 || got != string(f.plain) {
		t.Errorf("decrypt after --unlock: exit %d\n%s", code, stderr)
	}
}

// TestAgentMount: "crypt4gh mount" inside the agent, without --sk.
func TestAgentMount(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	requireFUSE(t)
	src, mp := filepath.Join(f.dir, "src"), filepath.Join(f.dir, "mnt")
	os.Mkdir(src, 0o700)
	os.Mkdir(mp, 0o700)
	enc, _ := os.ReadFile(f.file)
	os.WriteFile(filepath.Join(src, "reads.bam.c4gh"), enc, 0o600)
	env := f.daemon(t, "--sk", f.sk)
	m, got := startMount(t, f.bin, agentEnv(f.bin, env...), mp, "reads.bam", src, mp)
	if !bytes.Equal(got, f.plain) {
		t.Errorf("reads.bam through the agent: %d bytes, not the plaintext", len(got))
	}
	m.stop(t)
}

// TestAgentUsage: the mistakes of the command line are usage errors.
func TestAgentUsage(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "--", "true"}, "no secret key for the agent"},
		{[]string{"agent", "--sk", "me.sec"}, "give the agent a COMMAND"},
		{[]string{"agent", "--sk", "me.sec", "-t", "soon", "--", "true"}, "not a duration"},
		{[]string{"agent", "--list"}, "CRYPT4GH_AGENT is not set"},
		{[]string{"agent", "--list", "--stop"}, "exclude each other"},
		{[]string{"agent", "--sk", "me.sec", "--daemon", "--confirm"}, "--confirm needs"},
	} {
		_, code, stderr := f.try(nil, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, code, stderr)
		}
	}
	// An agent's variables that point nowhere: exit 3, one line.
	env := []string{"CRYPT4GH_AGENT=" + filepath.Join(f.dir, "nosocket"), "CRYPT4GH_PK=" + strings.Repeat("A", 43) + "="}
	if _, code, stderr := f.try(env, "decrypt", "-i", f.file); code != 3 || !strings.Contains(stderr, "cannot be reached") {
		t.Errorf("decrypt with a missing agent: exit %d\n%s", code, stderr)
	}
	var junk [8]byte
	rand.Read(junk[:])
	env = []string{"CRYPT4GH_AGENT=" + filepath.Join(f.dir, "nosocket"), "CRYPT4GH_PK=" + fmt.Sprintf("%x", junk)}
	if _, code, stderr := f.try(env, "decrypt", "-i", f.file); code != 3 || !strings.Contains(stderr, "CRYPT4GH_PK") {
		t.Errorf("decrypt with a bad CRYPT4GH_PK: exit %d\n%s", code, stderr)
	}
}

// TestAgentConfirm: with --confirm the agent asks on its terminal before a
// command uses a key; "y" lets the command decrypt, anything else refuses
// it with exit 3.
func TestAgentConfirm(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	ptmx, pts := ptytest.Open(t)
	script := `crypt4gh decrypt -i plain.c4gh -o a.out; echo "first $?" >&2
crypt4gh decrypt -i plain.c4gh -o b.out; echo "second $?" >&2`
	cmd := exec.Command(f.bin, "agent", "--sk", f.sk, "--confirm", "--", "sh", "-c", script)
	cmd.Dir = f.dir
	cmd.Env = agentEnv(f.bin)
	cmd.Stdin = pts
	var stderr clitest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	prompts := make(chan string, 4)
	go func() {
		var seen bytes.Buffer
		buf := make([]byte, 512)
		asked := 0
		for {
			n, err := ptmx.Read(buf)
			seen.Write(buf[:n])
			for strings.Count(seen.String(), "? [y/N]") > asked {
				asked++
				prompts <- seen.String()
			}
			if err != nil {
				close(prompts)
				return
			}
		}
	}()
	for i, answer := range []string{"y\n", "n\n"} {
		select {
		case p := <-prompts:
			if !strings.Contains(p, "allow process") || !strings.Contains(p, "decrypt") || !strings.Contains(p, "me.sec") {
				t.Errorf("prompt %d: %q", i+1, p)
			}
			ptmx.Write([]byte(answer))
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("no prompt %d; output:\n%s", i+1, stderr.String())
		}
	}
	cmd.Wait()
	out := stderr.String()
	if !strings.Contains(out, "first 0") || !strings.Contains(out, "second 3") || !strings.Contains(out, "refused") {
		t.Errorf("output:\n%s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "a.out")); !bytes.Equal(got, f.plain) {
		t.Error("the confirmed decrypt did not give the plaintext")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "b.out")); !os.IsNotExist(err) {
		t.Errorf("the refused decrypt left b.out: %v", err)
	}
}

// TestAgentStaleSocket: at a path of the user's (--socket), an agent
// refuses a socket that a live agent listens on, and replaces one that a
// killed agent left behind, in both forms (--daemon and COMMAND); it
// never removes what is not a socket, and leaves the folder when it ends.
func TestAgentStaleSocket(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	dir := filepath.Join(f.dir, "run")
	sock := filepath.Join(dir, "agent.sock")
	decrypts := func(env []string) bool {
		out, code, _ := f.try(env, "decrypt", "-i", f.file)
		return code == 0 && out == string(f.plain)
	}
	kill := func(env []string) {
		pid, _ := strconv.Atoi(envValue(env, "CRYPT4GH_AGENT_PID"))
		syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 100 && alive(pid); i++ {
			time.Sleep(20 * time.Millisecond)
		}
		// The leader can be a zombie while its other threads still
		// exit, the listening socket open until the last one has: wait
		// until it refuses, as a dead agent's does.
		for i := 0; i < 100; i++ {
			c, err := net.Dial("unix", sock)
			if err != nil {
				break
			}
			c.Close()
			time.Sleep(20 * time.Millisecond)
		}
	}
	env := f.daemon(t, "--sk", f.sk, "--socket", sock)
	if envValue(env, "CRYPT4GH_AGENT") != sock || !decrypts(env) {
		t.Fatalf("an agent at --socket %s: %v", sock, env)
	}
	for _, args := range [][]string{
		{"agent", "--sk", f.sk, "--socket", sock, "--daemon"},
		{"agent", "--sk", f.sk, "--socket", sock, "--", "true"},
	} {
		if _, code, stderr := f.try(nil, args...); code != 2 || !strings.Contains(stderr, "an agent listens there already") {
			t.Errorf("%v on a live agent's socket: exit %d\n%s", args, code, stderr)
		}
	}
	if !decrypts(env) {
		t.Fatal("the live agent no longer answers after the refusals")
	}

	kill(env)
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("the killed agent's socket is not left behind: %v", err)
	}
	if decrypts(env) {
		t.Fatal("a killed agent answers")
	}
	env = f.daemon(t, "--sk", f.sk, "--socket", sock)
	if !decrypts(env) {
		t.Fatal("--daemon did not replace the stale socket")
	}
	kill(env)
	out, code, stderr := f.try(nil, "agent", "--sk", f.sk, "--socket", sock, "--", "sh", "-c", `test "$CRYPT4GH_AGENT" = "$0" && crypt4gh decrypt -i plain.c4gh`, sock)
	if code != 0 || out != string(f.plain) {
		t.Fatalf("agent -- COMMAND on the stale socket: exit %d\n%s", code, stderr)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket outlives its agent: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the folder of --socket was removed: %v", err)
	}

	os.WriteFile(sock, []byte("mine"), 0o600)
	if _, code, stderr := f.try(nil, "agent", "--sk", f.sk, "--socket", sock, "--", "true"); code != 2 || !strings.Contains(stderr, "not a socket") {
		t.Errorf("--socket on a file: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(sock); string(b) != "mine" {
		t.Error("the file at --socket was replaced")
	}
	shared := filepath.Join(f.dir, "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	if _, code, stderr := f.try(nil, "agent", "--sk", f.sk, "--socket", filepath.Join(shared, "s"), "--", "true"); code != 2 || !strings.Contains(stderr, "not this user's alone") {
		t.Errorf("--socket in a folder others may write: exit %d\n%s", code, stderr)
	}
}

// waitFor waits up to 20 s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s", what)
		}
	}
}

// TestAgentSignals: SIGTERM to an agent running a COMMAND is passed on to
// it, and the agent ends with its status once it has ended, its socket
// removed; a daemon stopped by SIGTERM, SIGHUP or SIGINT removes its
// socket. The process's own cleanup on signals once exited at once with
// 143, leaving COMMAND running and the socket behind.
func TestAgentSignals(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	for i := range 3 {
		sock := filepath.Join(f.dir, fmt.Sprintf("fg%d.sock", i))
		ready, trapped := filepath.Join(f.dir, fmt.Sprintf("ready%d", i)), filepath.Join(f.dir, fmt.Sprintf("trapped%d", i))
		script := fmt.Sprintf(`trap 'sleep 0.3; echo got > %s; exit 9' TERM; echo > %s; while :; do sleep 0.05; done`, trapped, ready)
		cmd := exec.Command(f.bin, "agent", "--sk", f.sk, "--socket", sock, "--", "sh", "-c", script)
		cmd.Env = agentEnv(f.bin)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the command to start", func() bool { _, err := os.Stat(ready); return err == nil })
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 9 {
			t.Errorf("agent of a COMMAND that exits 9 on SIGTERM: exit %d\n%s", code, errb.String())
		}
		if _, err := os.Stat(trapped); err != nil {
			t.Errorf("the command did not get SIGTERM, or the agent did not wait for it: %v", err)
		}
		if _, err := os.Lstat(sock); err == nil {
			t.Errorf("the socket %s is left after SIGTERM", sock)
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		env := f.daemon(t, "--sk", f.sk)
		pid, _ := strconv.Atoi(envValue(env, "CRYPT4GH_AGENT_PID"))
		sock := envValue(env, "CRYPT4GH_AGENT")
		f.run(t, env, "agent", "--list") // serving
		syscall.Kill(pid, sig)
		waitFor(t, "the daemon to exit", func() bool { return !alive(pid) })
		if _, err := os.Lstat(filepath.Dir(sock)); err == nil {
			t.Errorf("after %v, the daemon's folder %s is left", sig, filepath.Dir(sock))
		}
	}
}

// TestAgentEnviron: a daemon does not keep C4GH_PASSPHRASE or
// C4GH_SECRET_KEY in its environment, which lasts as long as it runs.
func TestAgentEnviron(t *testing.T) {
	t.Parallel()
	f := newAgentFixture(t)
	env := f.daemonWith(t, []string{"C4GH_PASSPHRASE=not-to-be-kept", "C4GH_SECRET_KEY=" + f.sk}, "--sk", f.sk)
	pid := envValue(env, "CRYPT4GH_AGENT_PID")
	data, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if bytes.HasPrefix(kv, []byte("C4GH_")) {
			t.Errorf("the daemon's environment holds %s", kv)
		}
	}
}
