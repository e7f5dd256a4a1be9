package storesource_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/memstore"
	"github.com/c4gh-go/crypt4gh/mount"
	"github.com/c4gh-go/crypt4gh/mount/storesource"
	"github.com/c4gh-go/crypt4gh/objstore"
)

func at(key string) objstore.Location { return objstore.Location{Bucket: "b", Key: key} }

// TestSource lists the keys under a prefix as folders, the folder winning
// over an object of the same name, and opens the objects listed, pinned
// to the ETag they were listed with.
func TestSource(t *testing.T) {
	ctx := context.Background()
	st := &memstore.Store{}
	st.Put(at("data/a.c4gh"), []byte("first bytes, then more"))
	st.Put(at("data/x"), []byte("hidden by the folder"))
	st.Put(at("data/x/y"), []byte("y"))
	st.Put(at("other/z"), []byte("z"))
	src := storesource.New(st, at("data")) // taken as data/

	entries, err := src.ReadDir(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var listed string // the version of a.c4gh
	for _, e := range entries {
		names = append(names, e.Name)
		if e.Name == "x" && !e.Dir {
			t.Errorf("x shown as the object, not the folder")
		}
		if e.Name == "a.c4gh" && e.Size != int64(len("first bytes, then more")) {
			t.Errorf("a.c4gh listed with %d bytes", e.Size)
		}
		if e.Name == "a.c4gh" {
			listed = e.Version
		}
	}
	slices.Sort(names)
	if want := []string{"a.c4gh", "x"}; !slices.Equal(names, want) {
		t.Fatalf("ReadDir: %q, want %q", names, want)
	}
	sub, err := src.ReadDir(ctx, "x")
	if err != nil || len(sub) != 1 || sub[0] != (mount.Entry{Name: "y", Size: 1, ModTime: sub[0].ModTime, Version: sub[0].Version}) || sub[0].Version == "" {
		t.Fatalf("ReadDir x: %+v, %v", sub, err)
	}

	f, err := src.Open(ctx, "a.c4gh")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 11)
	if n, err := f.ReadAt(head, 0); n != 11 || err != nil || string(head) != "first bytes" {
		t.Errorf("ReadAt at 0: %d, %v, %q", n, err, head)
	}
	all := make([]byte, 100)
	if n, err := f.ReadAt(all, 0); n != 22 || err != io.EOF {
		t.Errorf("ReadAt past the end: %d, %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	st.Put(at("data/a.c4gh"), []byte("replaced since the listing"))
	if _, err := src.Open(ctx, "a.c4gh"); !errors.Is(err, objstore.ErrChanged) {
		t.Errorf("Open of an object replaced since it was listed: %v, want ErrChanged", err)
	}
	// Asked first (the mount does, with Options.Refresh), the new
	// version is described and then opened.
	e, err := src.(mount.Stater).Stat(ctx, "a.c4gh")
	if err != nil || e.Size != int64(len("replaced since the listing")) || e.Version == "" || e.Version == listed {
		t.Errorf("Stat of the replaced object: %+v, %v", e, err)
	}
	if f, err := src.Open(ctx, "a.c4gh"); err != nil {
		t.Errorf("Open after Stat: %v", err)
	} else {
		f.Close()
	}
}
