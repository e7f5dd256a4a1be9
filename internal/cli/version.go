package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// The version and commit of a release build, set by scripts/release.sh
// with -ldflags "-X github.com/c4gh-go/crypt4gh/internal/cli.stampedVersion=…"
// (the output of git describe), stampedCommit (the full revision) and
// stampedModified ("true" when the checkout had uncommitted changes). The
// go command records the commit itself (vcs.revision) only in a checkout
// whose .git is a folder, not in a git worktree. Other builds leave them
// empty and take what they can from the module's build info.
var stampedVersion, stampedCommit, stampedModified string

func init() {
	// urfave/cli prints only the app's name and version for --version;
	// the build's Go version and commit go with it. The printer is
	// urfave/cli's, process-wide, and the same for every run.
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprint(c.App.Writer, readBuild(stamped(), debug.ReadBuildInfo).String())
	}
}

// stamped is what the linker set.
func stamped() build {
	return build{version: stampedVersion, commit: stampedCommit, modified: stampedModified == "true"}
}

// build is what a binary knows of how it was made.
type build struct {
	version  string // the stamped or module version, or "(devel)"
	goVer    string // the Go release that built it, as runtime.Version
	platform string // GOOS/GOARCH
	commit   string // the VCS revision, "" when unknown
	modified bool   // the checkout had uncommitted changes
}

// readBuild completes the build of this binary from what the linker
// stamped: the version, else the module version of the build info (a
// release's tag for go install …@vX.Y.Z, a pseudo-version for a commit or
// a build in a git checkout), else "(devel)"; the commit, else the VCS
// stamp of a build in a checkout, else the end of a pseudo-version.
func readBuild(b build, buildInfo func() (*debug.BuildInfo, bool)) build {
	b.goVer, b.platform = runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
	info, ok := buildInfo()
	if ok && b.version == "" {
		b.version = info.Main.Version
	}
	if b.version == "" {
		b.version = "(devel)"
	}
	if !ok || b.commit != "" {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.commit = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	if b.commit == "" {
		b.commit = pseudoRevision(info.Main.Version)
		b.modified = strings.HasSuffix(info.Main.Version, "+dirty")
	}
	return b
}

// String is the text of --version: three lines.
func (b build) String() string {
	commit := "unknown"
	if b.commit != "" {
		commit = b.commit
		if b.modified {
			commit += " (modified)"
		}
	}
	return fmt.Sprintf("crypt4gh version %s\ngo version %s %s\ncommit %s\n", b.version, b.goVer, b.platform, commit)
}

// pseudoRevision returns the commit prefix at the end of a pseudo-version
// (v0.0.0-20261201201609-03d2698e402c, v1.2.4-0.20261201201609-03d2698e402c,
// with an optional +incompatible or +dirty), or "" for any other version.
func pseudoRevision(v string) string {
	v, _, _ = strings.Cut(v, "+")
	i := strings.LastIndexByte(v, '-')
	if i < 15 {
		return ""
	}
	rev, stamp := v[i+1:], v[i-14:i]
	if len(rev) != 12 || !isDigits(stamp) || (v[i-15] != '-' && v[i-15] != '.') {
		return ""
	}
	for _, r := range rev {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return ""
		}
	}
	return rev
}

// isDigits reports whether s is all ASCII digits.
func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// version is the version of this build, one word: for the man page and
// crypt4gh-keygen -v.
func version() string {
	return readBuild(stamped(), debug.ReadBuildInfo).version
}
