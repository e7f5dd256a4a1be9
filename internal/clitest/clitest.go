// Package clitest holds helpers shared by the tests that run the crypt4gh
// command: in process or as the built binary.
package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// EmptyDir fails the test for every entry left in dir: a command that
// failed must leave no output and no temporary file.
func EmptyDir(t testing.TB, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in the output folder: %s", e.Name())
	}
}

var (
	buildOnce sync.Once
	buildDir  string
	built     string
	buildErr  error
	buildOut  []byte
)

// Binary builds the crypt4gh command once per test process and returns the
// path of the binary. Call Cleanup from TestMain to remove it.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "crypt4gh-bin-")
		if buildErr != nil {
			return
		}
		built = filepath.Join(buildDir, "crypt4gh")
		if runtime.GOOS == "windows" {
			built += ".exe"
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		// Built as README builds it and as it ships: static, without
		// cgo (a dynamically linked binary would also start slower,
		// and the tests start it some thousand times).
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-tags", "urfave_cli_no_docs", "-o", built, ".")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return built
}

// Cleanup removes the binary built by Binary.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Missing reports a prerequisite of a test that this machine lacks (a
// pseudo-terminal, FUSE, a server, a tool): the test is skipped with the
// reason, except in CI (CI=true), where a missing prerequisite fails it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("missing prerequisite (CI=true): "+format, args...)
	}
	t.Skipf("skipped, missing prerequisite: "+format, args...)
}

// Tool returns the path of the program name, or reports it Missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed: %v", name, err)
	}
	return p
}

// ScaleEnv, set to "full", makes the tests of archive scale run at the
// sizes their issues name (50 Snakemake jobs, 10,000 objects, 2,000
// inputs, 200 MiB objects, 100 MiB downloads). .ci/run sets it for one
// run of those tests. Without it they run at smaller sizes that exercise
// the same behaviour in seconds, so that go test ./... stays a command a
// developer runs often.
const ScaleEnv = "C4GH_TEST_SCALE"

// AtScale reports whether the tests run at full scale (ScaleEnv=full).
func AtScale() bool { return os.Getenv(ScaleEnv) == "full" }

// Size returns full at full scale, small otherwise.
func Size(full, small int) int {
	if AtScale() {
		return full
	}
	return small
}

// LockDir makes the folder dir if needed and waits for an exclusive lock
// of it (a file .lock inside) shared with every other process: test
// binaries of several packages, or of several checkouts, that fill one
// cache folder at once take turns. It returns the function that releases
// the lock.
func LockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		unlockFile(f)
		f.Close()
	}, nil
}
