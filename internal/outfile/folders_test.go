package outfile

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestFoldersFollowPath: a batch holds the folder of its outputs from one
// output to the next, but an output goes where its path leads when it is
// made: after the folder was moved away and another made in its place,
// into the new one; after it was replaced by a symbolic link, nowhere.
func TestFoldersFollowPath(t *testing.T) {
	out := t.TempDir()
	sub := filepath.Join(out, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	var folders Folders
	defer folders.Close()
	write := func(name string) error {
		o, err := Open(filepath.Join(sub, name), nil, Options{Mode: ModeSecret, Beneath: out, Folders: &folders})
		if err != nil {
			return err
		}
		if _, err := o.Write([]byte(name)); err != nil {
			t.Fatal(err)
		}
		return o.Commit()
	}
	if err := write("a"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(sub, filepath.Join(out, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := write("b"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(sub, "b")); err != nil || string(b) != "b" {
		t.Errorf("b not in the folder now at the path: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "old", "b")); err == nil {
		t.Error("b written into the folder moved away")
	}

	// Now a link to a folder elsewhere stands at the path.
	elsewhere := t.TempDir()
	if err := os.Rename(sub, filepath.Join(out, "older")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, sub); err != nil {
		t.Fatal(err)
	}
	if err := write("c"); err == nil {
		t.Error("c written through a link below the output folder")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("%d files written through the link", len(entries))
	}
}

// TestFolderSyncShared: commits into one folder at once share its fsyncs,
// and each returns only after an fsync that began after it was called
// (after its rename); a failed fsync fails those waiting and every later
// commit.
func TestFolderSyncShared(t *testing.T) {
	var (
		mu     sync.Mutex
		clock  int // events in order
		syncs  [][2]int
		failed bool
	)
	tick := func() int {
		mu.Lock()
		defer mu.Unlock()
		clock++
		return clock
	}
	syncFolder = func(*os.File) error {
		start := tick()
		time.Sleep(20 * time.Millisecond)
		end := tick()
		mu.Lock()
		defer mu.Unlock()
		syncs = append(syncs, [2]int{start, end})
		if failed {
			return syscall.EIO
		}
		return nil
	}
	t.Cleanup(func() { syncFolder = (*os.File).Sync })

	f := newFolder(t.TempDir(), nil, nil)
	defer f.close()
	const commits = 16
	called, returned := make([]int, commits), make([]int, commits)
	var wg sync.WaitGroup
	for i := range commits {
		wg.Go(func() {
			called[i] = tick()
			if err := f.sync(); err != nil {
				t.Errorf("commit %d: %v", i, err)
			}
			returned[i] = tick()
		})
	}
	wg.Wait()
	for i := range commits {
		if !slices.ContainsFunc(syncs, func(s [2]int) bool { return s[0] > called[i] && s[1] < returned[i] }) {
			t.Errorf("commit %d returned with no fsync begun after it was called and ended before it returned", i)
		}
	}
	if len(syncs) >= commits/2 {
		t.Errorf("%d fsyncs for %d commits at once, want them shared", len(syncs), commits)
	}

	mu.Lock()
	failed = true
	mu.Unlock()
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = f.sync() })
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("commit %d after a failed fsync: %v", i, err)
		}
	}
	mu.Lock()
	failed = false
	mu.Unlock()
	if err := f.sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("a commit after a failed fsync: %v", err)
	}
}

// TestFolderSyncPath: a folder named by its path is fsynced where the
// path leads: when another folder took its place, the fsync goes to both
// (the renames may have gone into either), then to the new one only. A
// folder that cannot be opened for its fsync, other than for want of
// permission, fails the commit and every later one.
func TestFolderSyncPath(t *testing.T) {
	var synced []os.FileInfo
	syncFolder = func(d *os.File) error {
		fi, err := d.Stat()
		if err != nil {
			return err
		}
		synced = append(synced, fi)
		return nil
	}
	t.Cleanup(func() { syncFolder = (*os.File).Sync })

	dir := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	first, _ := os.Stat(dir)
	f := newFolder(dir, nil, nil)
	defer f.close()
	if err := f.sync(); err != nil || len(synced) != 1 || !os.SameFile(synced[0], first) {
		t.Fatalf("first commit: %v, %d fsyncs", err, len(synced))
	}
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	second, _ := os.Stat(dir)
	synced = nil
	if err := f.sync(); err != nil || len(synced) != 2 || !os.SameFile(synced[0], first) || !os.SameFile(synced[1], second) {
		t.Fatalf("after the folder was replaced: %v, %d fsyncs, want the old folder's and the new one's", err, len(synced))
	}
	synced = nil
	if err := f.sync(); err != nil || len(synced) != 1 || !os.SameFile(synced[0], second) {
		t.Fatalf("the next commit: %v, %d fsyncs, want the new folder's", err, len(synced))
	}

	gone := newFolder(filepath.Join(t.TempDir(), "gone"), nil, nil)
	defer gone.close()
	for i := range 2 {
		if err := gone.sync(); err == nil || !strings.Contains(err.Error(), "failed to sync folder") {
			t.Errorf("commit %d into a folder that cannot be opened: %v", i, err)
		}
	}
}

// TestCommitFolderSyncFails: an output whose folder's fsync fails is
// reported failed and leaves nothing: no output, no temporary file.
func TestCommitFolderSyncFails(t *testing.T) {
	syncFolder = func(*os.File) error { return syscall.EIO }
	t.Cleanup(func() { syncFolder = (*os.File).Sync })
	var folders Folders
	defer folders.Close()
	dir := t.TempDir()
	o, err := Open(filepath.Join(dir, "a"), nil, Options{Mode: ModeSecret, Folders: &folders})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); !errors.Is(err, syscall.EIO) {
		t.Errorf("Commit: %v, want the fsync's error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the folder: %v", entries)
	}
}

// TestAbortCannotRemove: a temporary file that cannot be removed (its
// folder made read-only meanwhile) is named in a warning on stderr.
func TestAbortCannotRemove(t *testing.T) {
	dir := t.TempDir()
	o, err := Open(filepath.Join(dir, "a"), nil, Options{Mode: ModeSecret})
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// Permissions do not stop root: the folder made immutable.
		if out, err := exec.Command(clitest.Tool(t, "chattr"), "+i", dir).CombinedOutput(); err != nil {
			clitest.Missing(t, "chattr +i of a temporary folder: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
	} else {
		os.Chmod(dir, 0o500)
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	o.Abort()
	os.Stderr = stderr
	w.Close()
	got, _ := io.ReadAll(r)
	if !strings.Contains(string(got), "warning: could not remove the temporary file") || !strings.Contains(string(got), dir) {
		t.Errorf("stderr: %q", got)
	}
}
