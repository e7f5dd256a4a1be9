package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFlag runs --version through the command line: the version,
// the Go release and platform, and the commit, one line each.
func TestVersionFlag(t *testing.T) {
	code, stdout, stderr := runArgs(t, nil, "--version")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("--version printed %d lines, want 3:\n%s", len(lines), stdout)
	}
	if want := "crypt4gh version " + version(); lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if want := "go version " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH; lines[1] != want {
		t.Errorf("second line %q, want %q", lines[1], want)
	}
	if !strings.HasPrefix(lines[2], "commit ") || len(lines[2]) == len("commit ") {
		t.Errorf("third line %q, want the commit", lines[2])
	}
	// The same version in the man page and for crypt4gh-keygen -v.
	_, keygen, _ := runArgs(t, nil, "keygen", "-v")
	if want := "crypt4gh-keygen version " + version() + "\n"; keygen != want {
		t.Errorf("keygen -v printed %q, want %q", keygen, want)
	}
}

// TestReadBuild checks where each part of --version comes from, for the
// kinds of build there are.
func TestReadBuild(t *testing.T) {
	info := func(v string, settings ...string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/c4gh-go/crypt4gh", Version: v}}
			for i := 0; i+1 < len(settings); i += 2 {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
			}
			return bi, true
		}
	}
	const rev = "03d2698e402cc1f930dfd794413b32defad77cb5"
	noInfo := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		name    string
		stamped build
		info    func() (*debug.BuildInfo, bool)
		version string
		commit  string
	}{
		{"release.sh in a clean worktree", build{version: "v1.2.0-3-g03d2698", commit: rev}, info("(devel)"),
			"v1.2.0-3-g03d2698", rev},
		{"release.sh with uncommitted changes", build{version: "03d2698-dirty", commit: rev, modified: true}, info("(devel)"),
			"03d2698-dirty", rev + " (modified)"},
		{"the stamps win over the build info", build{version: "v1.2.0", commit: rev}, info("v0.0.0-20261201201609-aaaaaaaaaaaa+dirty", "vcs.revision", "aaaa", "vcs.modified", "true"),
			"v1.2.0", rev},
		{"stamped version only", build{version: "v1.2.0"}, info("(devel)", "vcs.revision", rev, "vcs.modified", "false"),
			"v1.2.0", rev},
		{"go build in a checkout", build{}, info("v0.0.0-20261201201609-03d2698e402c+dirty", "vcs.revision", rev, "vcs.modified", "true"),
			"v0.0.0-20261201201609-03d2698e402c+dirty", rev + " (modified)"},
		{"go install of a commit", build{}, info("v0.0.0-20261201201609-03d2698e402c"),
			"v0.0.0-20261201201609-03d2698e402c", "03d2698e402c"},
		{"go install after a tag", build{}, info("v1.2.1-0.20261201201609-03d2698e402c"),
			"v1.2.1-0.20261201201609-03d2698e402c", "03d2698e402c"},
		{"go install of a pre-release", build{}, info("v1.3.0-rc.1.0.20261201201609-03d2698e402c"),
			"v1.3.0-rc.1.0.20261201201609-03d2698e402c", "03d2698e402c"},
		{"go install of a tag", build{}, info("v1.2.0"), "v1.2.0", "unknown"},
		{"a tag that ends like a commit", build{}, info("v1.2.0-beta-03d2698e402c"), "v1.2.0-beta-03d2698e402c", "unknown"},
		{"not hex", build{}, info("v0.0.0-20261201201609-03d2698e402g"), "v0.0.0-20261201201609-03d2698e402g", "unknown"},
		{"go build without VCS", build{}, info("(devel)"), "(devel)", "unknown"},
		{"no module version", build{}, info(""), "(devel)", "unknown"},
		{"no build info", build{}, noInfo, "(devel)", "unknown"},
		{"no build info, stamped", build{version: "v2.0.0", commit: rev}, noInfo, "v2.0.0", rev},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := readBuild(tc.stamped, tc.info)
			want := "crypt4gh version " + tc.version + "\n" +
				"go version " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
				"commit " + tc.commit + "\n"
			if got := b.String(); got != want {
				t.Errorf("got\n%swant\n%s", got, want)
			}
		})
	}
}

// TestReleaseStampsVersion checks that scripts/release.sh sets the
// variables that --version reads: -X of a name that does not exist is
// silently ignored by the linker.
func TestReleaseStampsVersion(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	_ = []*string{&stampedVersion, &stampedCommit, &stampedModified} // they must exist under these names
	for _, name := range []string{"stampedVersion", "stampedCommit", "stampedModified"} {
		if want := "-X github.com/c4gh-go/crypt4gh/internal/cli." + name + "="; !strings.Contains(string(script), want) {
			t.Errorf("scripts/release.sh does not stamp %s with %q", name, want)
		}
	}
}
