package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/agent"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/kdfcost"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// childEnv makes the test binary run the command line of its arguments
// instead of the tests, so that a test can watch a real process.
const childEnv = "CRYPT4GH_TEST_CHILD"

// storeEnv sets a child's idle timeout for object stores, and its
// attempts if given ("2s,2"), as shortIdle and storeAttempts do in
// process.
const storeEnv = "CRYPT4GH_TEST_STORE"

// caughtEnv names a file that a child creates once its signal handler has
// taken a signal (cleanup.caught), for a test that must act after that.
const caughtEnv = "CRYPT4GH_TEST_CAUGHT"

func TestMain(m *testing.M) {
	// The keys that these tests make are read by these tests only: they
	// are written with the lowest KDF cost (the vectors keep theirs).
	kdfcost.LowerForTests()
	if os.Getenv(childEnv) != "" {
		if path := os.Getenv(caughtEnv); path != "" {
			go func() {
				<-outfile.Signals.Caught()
				os.WriteFile(path, nil, 0o600)
			}()
		}
		if v := os.Getenv(storeEnv); v != "" {
			idle, attempts, many := strings.Cut(v, ",")
			d, err := time.ParseDuration(idle)
			if err != nil {
				panic(storeEnv + "=" + v + ": want DURATION[,ATTEMPTS]")
			}
			storeIdleTimeout = d
			if many {
				if storeAttempts, err = strconv.Atoi(attempts); err != nil {
					panic(storeEnv + "=" + v + ": want DURATION[,ATTEMPTS]")
				}
			}
		}
		name := "crypt4gh"
		if filepath.Base(os.Args[0]) == "crypt4gh-keygen" {
			name = os.Args[0] // started as the keygen link
		}
		code := Run(append([]string{name}, os.Args[1:]...), os.Stdin, os.Stdout, os.Stderr)
		if report := os.Getenv(childEnv); report != "1" {
			// Report what the process read, before anything else reads.
			if io, err := os.ReadFile("/proc/self/io"); err == nil {
				os.WriteFile(report, io, 0o600)
			}
		}
		os.Exit(code)
	}
	// No test reads the keys of the environment it was started in (a
	// developer's C4GH_SECRET_KEY, an agent's socket): a test that wants
	// one of these variables sets it, and the tests that run in parallel
	// (runAt), which set none, find them unset.
	for _, name := range []string{secretKeyEnv, publicKeyEnv, passphraseEnv, agent.SocketEnv, agent.PKEnv, agent.SecretEnv} {
		os.Unsetenv(name)
	}
	code := m.Run()
	clitest.Cleanup()
	if sharedRegions.dir != "" {
		os.RemoveAll(sharedRegions.dir)
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "FAIL")
	}
	os.Exit(code)
}
