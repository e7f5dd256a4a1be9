package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestSparseInputNotReserved: the size of a sparse input says nothing of
// what it holds: no output is reserved for it.
func TestSparseInputNotReserved(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 40); err != nil {
		clitest.Missing(t, "no sparse files here: %v", err)
	}
	if n := reservable(f); n != -1 {
		t.Errorf("reservable(sparse 1 TiB) = %d, want -1", n)
	}
	g, err := os.Create(filepath.Join(t.TempDir(), "dense"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Write(make([]byte, 1<<20))
	g.Seek(0, 0)
	if n := reservable(g); n != 1<<20 {
		t.Errorf("reservable(dense 1 MiB) = %d", n)
	}
}
