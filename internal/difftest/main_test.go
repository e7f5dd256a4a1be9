package difftest

import (
	"os"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/kdfcost"
)

// TestMain lowers the KDF cost of the keys that these tests write (both
// implementations read them with the rounds stored in the file); the
// vectors keep theirs.
func TestMain(m *testing.M) {
	kdfcost.LowerForTests()
	os.Exit(m.Run())
}
