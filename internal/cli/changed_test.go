package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInputChangedWhileEncrypted: a file that shrinks or grows while it is
// encrypted fails the command (exit 1, "changed while it was read") and
// leaves no output, alone and in batch mode. The input is changed once the
// output holds a few MiB, long before its end is read.
func TestInputChangedWhileEncrypted(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 256 MiB")
	}
	dir := t.TempDir()
	t.Setenv(passphraseEnv, "")
	t.Setenv(secretKeyEnv, "")
	runOK(t, "keygen", "--sk", filepath.Join(dir, "me.sec"), "--pk", filepath.Join(dir, "me.pub"), "--nocrypt")
	const size = 256 << 20
	writeAt := func(p string) error { // the same size, other bytes
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		time.Sleep(10 * time.Millisecond) // a later mtime on coarse clocks
		_, err = f.WriteAt([]byte("changed"), size-7)
		return err
	}
	for _, tc := range []struct {
		name   string
		change func(path string) error
		batch  bool
		rng    string
	}{
		{"shrinks", func(p string) error { return os.Truncate(p, 1<<20) }, false, ""},
		{"grows", func(p string) error { return os.Truncate(p, 2*size) }, false, ""},
		{"shrinks, batch", func(p string) error { return os.Truncate(p, 1<<20) }, true, ""},
		{"written to, same size", writeAt, false, ""},
		{"shrinks, with --range", func(p string) error { return os.Truncate(p, 1<<20) }, false, "0-200000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			in := filepath.Join(work, "in")
			if err := os.WriteFile(in, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(in, size); err != nil { // sparse: reads fast
				t.Fatal(err)
			}
			args := []string{"encrypt", "--recipient_pk", filepath.Join(dir, "me.pub"), "-q", "-i", in, "-o", in + ".c4gh"}
			if tc.batch {
				args = []string{"encrypt", "--recipient_pk", filepath.Join(dir, "me.pub"), "-q", in}
			}
			if tc.rng != "" {
				args = append(args, "--range", tc.rng)
			}
			type result struct {
				code   int
				stderr string
			}
			done := make(chan result)
			go func() {
				code, _, stderr := runArgs(t, nil, args...)
				done <- result{code, stderr}
			}()
			changed := false
			var res result
		wait:
			for {
				select {
				case res = <-done:
					break wait
				case <-time.After(time.Millisecond):
				}
				if !changed && outputBytes(work) > 4<<20 {
					if err := tc.change(in); err != nil {
						t.Fatal(err)
					}
					changed = true
				}
			}
			if !changed {
				t.Fatal("the command ended before the input could be changed")
			}
			if res.code != exitError || !strings.Contains(res.stderr, "changed while it was read") {
				t.Errorf("exit %d, stderr:\n%s", res.code, res.stderr)
			}
			entries, _ := os.ReadDir(work)
			for _, e := range entries {
				if e.Name() != "in" {
					t.Errorf("%s left behind", e.Name())
				}
			}
		})
	}
}

// outputBytes is the size of the largest file in dir other than "in".
func outputBytes(dir string) int64 {
	entries, _ := os.ReadDir(dir)
	var n int64
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && e.Name() != "in" {
			n = max(n, fi.Size())
		}
	}
	return n
}
