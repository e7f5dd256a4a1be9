//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// makeFIFO makes a named pipe at path.
func makeFIFO(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRegionsFileFIFO: a named pipe as --regions-file is refused at once,
// not waited on for a writer that never comes.
func TestRegionsFileFIFO(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt")
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("not a BAM"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, dir, "encrypt", "--recipient_pk", "me.pub", "-i", "plain", "-o", "x.bam.c4gh")
	makeFIFO(t, filepath.Join(dir, "regions.bed"))
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := runAt(t, dir, "decrypt", "--sk", "me.sec", "--regions-file", "regions.bed", "-i", "x.bam.c4gh", "-o", "out")
		done <- result{code, stderr}
	}()
	select {
	case r := <-done:
		if r.code != exitUsage || !strings.Contains(r.stderr, "not a regular file") {
			t.Errorf("exit %d: %s", r.code, r.stderr)
		}
	case <-time.After(20 * time.Second):
		// Let the command end: a writer that closes at once.
		if f, err := os.OpenFile(filepath.Join(dir, "regions.bed"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("the command waited for a writer of the pipe")
	}
}
