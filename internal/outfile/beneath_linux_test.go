package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBeneathRace: while another user swaps a folder below the output
// folder for a link to a folder of the victim's, again and again (an
// atomic exchange, as fast as it goes), outputs made with Beneath are
// either refused or written below the output folder: none ever lands in
// the victim's folder, and none replaces the victim's file, with Force.
// A check of the path before the output is made (which this package did
// before) loses this race within a few hundred tries.
func TestBeneathRace(t *testing.T) {
	dir := t.TempDir()
	out, victim := filepath.Join(dir, "out"), filepath.Join(dir, "victim")
	for _, d := range []string{out, victim, filepath.Join(out, "sub")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	own := filepath.Join(victim, "f")
	if err := os.WriteFile(own, []byte("the victim's own"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(out, "link")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(out, "sub"), unix.AT_FDCWD, filepath.Join(out, "link"), unix.RENAME_EXCHANGE)
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
				return // no RENAME_EXCHANGE here
			}
		}
	}()
	written, refused := 0, 0
	for i := range 3000 {
		o, err := Open(filepath.Join(out, "sub", "f"), nil, Options{Mode: ModePublic, Force: true, Beneath: out})
		if err != nil {
			refused++
			continue
		}
		if _, err := o.Write([]byte("attacker's luck")); err != nil {
			t.Fatal(err)
		}
		if err := o.Commit(); err != nil {
			refused++
			continue
		}
		written++
		if i%100 == 0 {
			if entries, _ := os.ReadDir(victim); len(entries) != 1 {
				break
			}
		}
	}
	stop.Store(true)
	<-done
	if b, err := os.ReadFile(own); err != nil || string(b) != "the victim's own" {
		t.Errorf("the victim's file: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(victim); len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the victim's folder holds %v", names)
	}
	t.Logf("%d written below the output folder, %d refused", written, refused)
	if written == 0 {
		t.Error("nothing written: the race was not run")
	}
}
