package cli

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/agent"
	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/htsget/client"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/mount"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/c4gh-go/crypt4gh/reencrypt"
	"github.com/c4gh-go/crypt4gh/region"
)

// sentinelCodes is the exit code of every exported sentinel error of the
// library, as the table of docs/exit-codes.md gives it.
var sentinelCodes = map[string]struct {
	err  error
	code int
}{
	"agent.ErrUnreachable":          {agent.ErrUnreachable, exitKey},
	"agent.ErrExpired":              {agent.ErrExpired, exitKey},
	"agent.ErrLocked":               {agent.ErrLocked, exitKey},
	"agent.ErrRefused":              {agent.ErrRefused, exitKey},
	"agent.ErrNoKey":                {agent.ErrNoKey, exitKey},
	"agent.ErrNotOwnAgent":          {agent.ErrNotOwnAgent, exitKey},
	"agent.ErrLive":                 {agent.ErrLive, exitUsage},
	"keys.ErrPacketAuth":            {keys.ErrPacketAuth, exitKey},
	"body.ErrAuth":                  {body.ErrAuth, exitData},
	"body.ErrTruncated":             {body.ErrTruncated, exitData},
	"c4gh.ErrMissingData":           {c4gh.ErrMissingData, exitData},
	"c4gh.ErrResumeEditList":        {c4gh.ErrResumeEditList, exitUsage},
	"edit.ErrTooLong":               {edit.ErrTooLong, exitData},
	"edit.ErrEmpty":                 {edit.ErrEmpty, exitUsage},
	"edit.ErrInvalidRange":          {edit.ErrInvalidRange, exitUsage},
	"edit.ErrBeyondEnd":             {edit.ErrBeyondEnd, exitUsage},
	"edit.ErrDone":                  {edit.ErrDone, exitError},
	"edit.ErrOutOfRange":            {edit.ErrOutOfRange, exitUsage},
	"header.ErrEmptyInput":          {header.ErrEmptyInput, exitData},
	"header.ErrNotCrypt4GH":         {header.ErrNotCrypt4GH, exitData},
	"header.ErrUnsupportedVersion":  {header.ErrUnsupportedVersion, exitData},
	"header.ErrTruncated":           {header.ErrTruncated, exitData},
	"header.ErrTooManyPackets":      {header.ErrTooManyPackets, exitData},
	"header.ErrInvalidPacket":       {header.ErrInvalidPacket, exitData},
	"header.ErrPacketAuth":          {header.ErrPacketAuth, exitKey},
	"header.ErrNoDecryptablePacket": {header.ErrNoDecryptablePacket, exitKey},
	"header.ErrNoDataKey":           {header.ErrNoDataKey, exitKey},
	"header.ErrWrongSender":         {header.ErrWrongSender, exitKey},
	"header.ErrNoPackets":           {header.ErrNoPackets, exitData},
	"header.ErrMultipleEditLists":   {header.ErrMultipleEditLists, exitData},
	"header.ErrMixedDataMethods":    {header.ErrMixedDataMethods, exitData},
	"keys.ErrLowOrderPoint":         {keys.ErrLowOrderPoint, exitKey},
	"keys.ErrZeroKey":               {keys.ErrZeroKey, exitKey},
	"keys.ErrWrongPassphrase":       {keys.ErrWrongPassphrase, exitKey},
	"keys.ErrMalformedKey":          {keys.ErrMalformedKey, exitKey},
	"keys.ErrUnsupportedKey":        {keys.ErrUnsupportedKey, exitKey},
	"keys.ErrPassphraseRequired":    {keys.ErrPassphraseRequired, exitKey},
	"keys.ErrMultipleKeys":          {keys.ErrMultipleKeys, exitKey},
	"mount.ErrNotSupported":         {mount.ErrNotSupported, exitError},
	"region.ErrUnknownReference":    {region.ErrUnknownReference, exitUsage},
	"region.ErrFormat":              {region.ErrFormat, exitUsage},
	"region.ErrData":                {region.ErrData, exitData},
	"region.ErrNoIndex":             {region.ErrNoIndex, exitUsage},
	"region.ErrInvalidRegion":       {region.ErrInvalidRegion, exitUsage},
	"htsget.ErrBadTicket":           {htsget.ErrBadTicket, exitData},
	"htsget.ErrBadDataURL":          {htsget.ErrBadDataURL, exitData},
	"htsget.ErrBadPublicKey":        {htsget.ErrBadPublicKey, exitKey},
	"objstore.ErrInvalidURL":        {objstore.ErrInvalidURL, exitUsage},
	"objstore.ErrNotFound":          {objstore.ErrNotFound, exitUsage},
	"objstore.ErrNoBucket":          {objstore.ErrNoBucket, exitUsage},
	"objstore.ErrExists":            {objstore.ErrExists, exitUsage},
	"objstore.ErrAccessDenied":      {objstore.ErrAccessDenied, exitKey},
	"objstore.ErrNoCredentials":     {objstore.ErrNoCredentials, exitKey},
	"objstore.ErrChanged":           {objstore.ErrChanged, exitError},
	"objstore.ErrNoRange":           {objstore.ErrNoRange, exitUsage},
	"objstore.ErrAborted":           {objstore.ErrAborted, exitError},
	"objstore.ErrTooLarge":          {objstore.ErrTooLarge, exitUsage},
	"objstore.ErrUnsupported":       {objstore.ErrUnsupported, exitUsage},
	"reencrypt.ErrNothingToAdd":     {reencrypt.ErrNothingToAdd, exitUsage},
	"client.ErrBadURL":              {client.ErrBadURL, exitUsage},
	"reencrypt.ErrTooManyPackets":   {reencrypt.ErrTooManyPackets, exitData},
	"reencrypt.ErrTwoEditLists":     {reencrypt.ErrTwoEditLists, exitUsage},
	"reencrypt.ErrLocksOut":         {reencrypt.ErrLocksOut, exitUsage},
}

// TestSentinelExitCodes checks the exit code of every sentinel, alone and
// wrapped as the commands wrap them.
func TestSentinelExitCodes(t *testing.T) {
	for name, s := range sentinelCodes {
		for _, err := range []error{s.err, fmt.Errorf("failed to read x: %w", s.err), withHint(fmt.Errorf("%w: more", s.err), "hint")} {
			if got := exitCode(err); got != s.code {
				t.Errorf("%s: exit code %d for %q, want %d", name, got, err, s.code)
			}
		}
	}
}

// TestEverySentinelHasAClass walks the exported variables named Err… of
// every library package (every top-level folder with Go code but the
// scripts) and fails for one that is not made with errkind.New, or that
// sentinelCodes does not list.
func TestEverySentinelHasAClass(t *testing.T) {
	root := filepath.Join("..", "..")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	// The top-level folders and the packages inside them (htsget/client).
	var pkgDirs []string
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "scripts" || d.Name() == "internal" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		filepath.WalkDir(filepath.Join(root, d.Name()), func(path string, e os.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case e.IsDir() && e.Name() == "testdata":
				return filepath.SkipDir
			case e.IsDir():
				pkgDirs = append(pkgDirs, path)
			}
			return nil
		})
	}
	for _, dir := range pkgDirs {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			for _, f := range pkg.Files {
				for _, decl := range f.Decls {
					gd, ok := decl.(*ast.GenDecl)
					if !ok || gd.Tok != token.VAR {
						continue
					}
					for _, spec := range gd.Specs {
						vs := spec.(*ast.ValueSpec)
						for i, n := range vs.Names {
							if !n.IsExported() || !strings.HasPrefix(n.Name, "Err") {
								continue
							}
							found++
							name := pkg.Name + "." + n.Name
							if _, ok := sentinelCodes[name]; !ok {
								t.Errorf("%s is not in sentinelCodes: give it its exit code", name)
							}
							if i >= len(vs.Values) || !isErrkindNew(vs.Values[i]) {
								t.Errorf("%s is not made with errkind.New: it has no class", name)
							}
						}
					}
				}
			}
		}
	}
	if found < len(sentinelCodes) {
		t.Errorf("found %d sentinels, sentinelCodes lists %d: a sentinel was removed or renamed", found, len(sentinelCodes))
	}
}

func isErrkindNew(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "errkind" && sel.Sel.Name == "New"
}

// TestDocsExitCodes checks that the table of exit codes in
// docs/exit-codes.md has one row per code the command uses, with the
// words of its class.
func TestDocsExitCodes(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "exit-codes.md"))
	if err != nil {
		t.Fatal(err)
	}
	for code, word := range map[int]string{exitOK: "success", exitError: "I/O", exitUsage: "usage", exitKey: "keys", exitData: "data"} {
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^\| %d \| %s`, code, regexp.QuoteMeta(word)))
		if !row.Match(page) {
			t.Errorf("docs/exit-codes.md has no exit code row \"| %d | %s…\"", code, word)
		}
	}
}

// TestBatchErrorCounts: a target that fails before any file is counted
// (ls --pending or cleanup of a missing bucket) is one of the files, not
// "1 of 0 files failed".
func TestBatchErrorCounts(t *testing.T) {
	for _, tc := range []struct {
		e    batchError
		want string
	}{
		{batchError{failed: 1, total: 0}, "1 of 1 files failed"},
		{batchError{failed: 2, total: 5}, "2 of 5 files failed"},
		{batchError{failed: 1, total: 3, shard: "0/2"}, "1 of 3 files of shard 0/2 failed"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}
