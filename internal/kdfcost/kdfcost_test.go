package kdfcost

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLowerForTests(t *testing.T) {
	if Bcrypt() != 100 || PBKDF2() != 100000 {
		t.Fatalf("before LowerForTests: bcrypt %d, pbkdf2 %d rounds; want crypt4gh 1.8.6's 100 and 100000", Bcrypt(), PBKDF2())
	}
	LowerForTests()
	if Bcrypt() >= 100 || PBKDF2() >= 100000 || Bcrypt() < 1 || PBKDF2() < 1 {
		t.Errorf("after LowerForTests: bcrypt %d, pbkdf2 %d rounds", Bcrypt(), PBKDF2())
	}
}

// TestOnlyTestsLower fails for every Go file of the module, outside this
// package, that calls LowerForTests without being a _test.go file: the
// command and the library must write keys at the real cost.
func TestOnlyTestsLower(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	self, _ := filepath.Abs(".")
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == self {
			return nil
		}
		checked++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), "LowerForTests") {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s calls kdfcost.LowerForTests: only a TestMain may", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Errorf("only %d Go files checked under %s", checked, root)
	}
}
