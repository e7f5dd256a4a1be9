package mount_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestNoStore checks that package mount shows any Source without linking
// a store: no objstore, no AWS package (the S3 source is in
// mount/storesource).
func TestNoStore(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		clitest.Missing(t, "no go command: %v", err)
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/c4gh-go/crypt4gh/mount").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/c4gh-go/crypt4gh/objstore" || strings.HasPrefix(dep, "github.com/aws/") {
			t.Errorf("mount imports %s", dep)
		}
	}
}
