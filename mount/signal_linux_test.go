package mount_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/mount"
)

// The signal tests run this test binary again as a mounter: with
// C4GH_TEST_MOUNTER set it mounts the folder C4GH_TEST_SOURCE at
// C4GH_TEST_MOUNTPOINT with the secret key C4GH_TEST_KEY (hex), prints
// "mounted", and waits as a command would: until unmounted or a signal.
// C4GH_TEST_KEYFILE may name an unlocked key file instead,
// C4GH_TEST_DIRECTIO=1 sets Options.DirectIO, and C4GH_TEST_CPUPROFILE
// names a file for a CPU profile of the mounter.
func TestMain(m *testing.M) {
	if os.Getenv("C4GH_TEST_MOUNTER") == "1" {
		os.Exit(mounter())
	}
	os.Exit(m.Run())
}

func mounter() (code int) {
	var sk keys.SecretKey
	if kf := os.Getenv("C4GH_TEST_KEYFILE"); kf != "" {
		// An unlocked key file, for a mounter run by hand to profile
		// it (with C4GH_TEST_CPUPROFILE=FILE).
		data, err := os.ReadFile(kf)
		if err == nil {
			sk, err = keys.ParseSecretKey(data, nil)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mounter:", err)
			return 2
		}
	} else if b, err := hex.DecodeString(os.Getenv("C4GH_TEST_KEY")); err != nil || len(b) != len(sk) {
		fmt.Fprintln(os.Stderr, "mounter: bad C4GH_TEST_KEY")
		return 2
	} else {
		copy(sk[:], b)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if n, err := strconv.Atoi(os.Getenv("C4GH_TEST_MAXREAD")); err == nil {
		mount.SetMaxRead(n)
	}
	if n, err := strconv.Atoi(os.Getenv("C4GH_TEST_BLKSIZE")); err == nil {
		mount.SetBlksize(n)
	}
	if os.Getenv("C4GH_TEST_NOREADAHEAD") == "1" {
		mount.SetReadAhead(false)
	}
	if prof := os.Getenv("C4GH_TEST_CPUPROFILE"); prof != "" {
		// Where the mounter's time goes, for profiling by hand.
		f, err := os.Create(prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mounter:", err)
			return 2
		}
		pprof.StartCPUProfile(f)
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if os.Getenv("C4GH_TEST_READSIZES") == "1" {
		// For the benchmarks: how long are the reads that the kernel
		// sends? Printed on stderr at the end.
		var mu sync.Mutex
		sizes := map[int]int{}
		mount.ObserveReads(func(n int) {
			mu.Lock()
			sizes[n]++
			mu.Unlock()
		})
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(os.Stderr, "readsizes:")
			for _, n := range slices.Sorted(maps.Keys(sizes)) {
				fmt.Fprintf(os.Stderr, " %d:%d", n, sizes[n])
			}
			fmt.Fprintln(os.Stderr)
		}()
	}
	srv, err := mount.Mount(mount.Dir(os.Getenv("C4GH_TEST_SOURCE")), os.Getenv("C4GH_TEST_MOUNTPOINT"), mount.Options{Key: &sk, DirectIO: os.Getenv("C4GH_TEST_DIRECTIO") == "1"})
	sk.Zero()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mounter:", err)
		return 1
	}
	fmt.Println("mounted")
	if err := srv.Wait(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "mounter:", err)
		return 1
	}
	return 0
}

// startMounter runs the mounter on src and returns once it has mounted.
func startMounter(t testing.TB, src string, key *keys.SecretKey, env ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	requireFUSE(t)
	mp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		"C4GH_TEST_MOUNTER=1",
		"C4GH_TEST_SOURCE="+src,
		"C4GH_TEST_MOUNTPOINT="+mp,
		"C4GH_TEST_KEY="+hex.EncodeToString(key[:]),
	)
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Should the test die, the mounter unmounts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "mounted\n" {
		cmd.Wait()
		t.Fatalf("mounter: %q, %v; stderr:\n%s", line, err, &stderr)
	}
	if m, _ := mountInfo(t, mp); !m {
		t.Fatalf("mounter said it mounted, but %s is no mount point", mp)
	}
	return cmd, mp, &stderr
}

// waitExit waits up to 20 s for the mounter to end, and checks that it
// ended well and left nothing mounted.
func waitExit(t testing.TB, cmd *exec.Cmd, mp string, stderr *bytes.Buffer) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("mounter: %v; stderr:\n%s", err, stderr)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("mounter still running 20 s later; stderr:\n%s", stderr)
	}
	if m, _ := mountInfo(t, mp); m {
		t.Errorf("%s is still mounted after the mounter ended", mp)
	}
}

func signalSource(t *testing.T, key *keys.SecretKey) string {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "f.c4gh"), encrypt(t, []byte("plaintext\n"), nil, key))
	return src
}

// TestSignals: SIGINT and SIGTERM unmount and end the mounter cleanly,
// also while a file is open in the mount.
func TestSignals(t *testing.T) {
	key := newKey(t)
	src := signalSource(t, key)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		busy bool
	}{
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGINT", syscall.SIGINT, false},
		{"SIGTERM busy", syscall.SIGTERM, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, mp, stderr := startMounter(t, src, key)
			b, err := os.ReadFile(filepath.Join(mp, "f"))
			if err != nil || string(b) != "plaintext\n" {
				t.Fatalf("read %q, %v", b, err)
			}
			if tc.busy {
				f, err := os.Open(filepath.Join(mp, "f"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			waitExit(t, cmd, mp, stderr)
		})
	}
}

// TestExternalUnmount: fusermount3 -u ends the mounter cleanly.
func TestExternalUnmount(t *testing.T) {
	requireFUSE(t)
	requireTools(t, "fusermount3")
	key := newKey(t)
	cmd, mp, stderr := startMounter(t, signalSource(t, key), key)
	if out, err := exec.Command("fusermount3", "-u", mp).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u: %v: %s", err, out)
	}
	waitExit(t, cmd, mp, stderr)
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Errorf("mounter stderr: %s", s)
	}
}
