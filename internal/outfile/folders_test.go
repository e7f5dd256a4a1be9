package outfile

import (
	"os"
	"path/filepath"
	"testing"
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
