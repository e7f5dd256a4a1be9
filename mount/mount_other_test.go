//go:build !linux

package mount_test

import (
	"errors"
	"testing"

	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/mount"
)

func TestNotSupported(t *testing.T) {
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mount.Mount(mount.Dir(t.TempDir()), t.TempDir(), mount.Options{Key: &sk}); !errors.Is(err, mount.ErrNotSupported) {
		t.Fatalf("Mount: %v, want ErrNotSupported", err)
	}
}
