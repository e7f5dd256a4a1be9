package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestREADMEFirstCommand runs the first command of README.md, as a
// newcomer pastes it: it must print "round trip ok" and nothing else, on
// stdout or stderr.
func TestREADMEFirstCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go run three times")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```sh\n")
	if !ok {
		t.Fatal("README.md has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var first string
	for _, line := range strings.Split(block, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			first = line
			break
		}
	}
	if !strings.HasPrefix(first, "go run . ") {
		t.Fatalf("the first command is %q", first)
	}
	// Its files go to /tmp, where a run of this test in another checkout
	// writes the same names at the same moment: here they go to a
	// folder of this test's own, the command otherwise as pasted.
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(first, " /tmp/", " "+t.TempDir()+"/"))
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stdout.String() != "round trip ok\n" || stderr.Len() != 0 {
		t.Fatalf("%s: %v\nstdout: %q\nstderr: %q", first, err, stdout.String(), stderr.String())
	}
}

// TestREADMEForAPerson checks that README stays short enough to read, and
// that it names what new users looked for in it and could not find.
func TestREADMEForAPerson(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > 250 {
		t.Errorf("README.md has %d lines; at most 250, the rest belongs in docs/", n)
	}
	for _, s := range []string{
		"go test ./...",       // the test command, which CI runs
		"AWS_ENDPOINT_URL_S3", // a store other than AWS
		"--s3-config",         // or an s3cmd file
		"--continue",          // an interrupted download
		"--dir-cache-time",    // what a mount shows of later changes
		"Switching from the Python tool",
	} {
		if !bytes.Contains(readme, []byte(s)) {
			t.Errorf("README.md does not mention %q", s)
		}
	}
}

// TestDocsLinks checks every relative link of README.md and docs/*.md:
// the file it names exists, and a #fragment names a heading there.
func TestDocsLinks(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/: %v", err)
	}
	pages = append(pages, "README.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
			}
			checked++
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", page, target, err)
				continue
			}
			if fragment == "" {
				continue
			}
			if !slices.Contains(anchors(t, path), fragment) {
				t.Errorf("%s: link %s: %s has no heading %q", page, target, path, fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the pattern is wrong")
	}
}

// anchors returns the fragments that GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces as dashes.
func anchors(t *testing.T, path string) []string {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fenced := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// TestReleaseFlags checks that every build of the command that README,
// docs/, .ci/run and the release scripts give passes the flags of a
// release: -trimpath, -ldflags="-s -w" and the tag urfave_cli_no_docs.
func TestReleaseFlags(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	// The files that must build the command at least once.
	want := map[string]bool{"README.md": true, ".ci/run": true, "scripts/release.sh": true, "scripts/check-binary-deps.sh": true}
	for f := range want {
		files = append(files, f)
	}
	goBuild := regexp.MustCompile(`\bgo (build|install)\b(.*)`)
	quoted := regexp.MustCompile(`"[^"]*"`)
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		builds := 0
		// Shell lines continued with a backslash are one command.
		joined := strings.ReplaceAll(string(text), "\\\n", " ")
		for _, line := range strings.Split(joined, "\n") {
			m := goBuild.FindStringSubmatch(line)
			if m == nil || !buildsCommand(quoted.ReplaceAllString(m[2], "Q")) {
				continue
			}
			builds++
			for _, flag := range []string{"-trimpath", `-ldflags="-s -w`, "urfave_cli_no_docs"} {
				if !strings.Contains(m[2], flag) {
					t.Errorf("%s: %q builds crypt4gh without %s", file, strings.TrimSpace(line), flag)
				}
			}
		}
		if want[file] && builds == 0 {
			t.Errorf("%s: no build of crypt4gh found", file)
		}
	}
}

// buildsCommand reports whether the arguments of go build or go install
// (quoted strings replaced) name the crypt4gh command: "." or the module.
func buildsCommand(args string) bool {
	fields := strings.Fields(args)
	for i := 0; i < len(fields); i++ {
		f := strings.TrimRight(fields[i], ")`;")
		switch {
		case f == "&&" || f == "|" || f == "||":
			return false
		case f == "-o" || f == "-tags" || f == "-ldflags":
			i++ // its value
		case strings.HasPrefix(f, "-"):
		case f == "." || strings.HasPrefix(f, "github.com/c4gh-go/crypt4gh@"):
			return true
		}
	}
	return false
}

// TestScaleTestsInCI checks that every test sized by clitest.Size or
// clitest.AtScale is named in the full-scale run of .ci/run: a test left
// out would run only at the developers' sizes, never at the ones its issue
// names.
func TestScaleTestsInCI(t *testing.T) {
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^scale='\^\(([A-Za-z0-9|]+)\)\$'$`).FindSubmatch(ci)
	if m == nil || !regexp.MustCompile(`(?m)^C4GH_TEST_SCALE=full go test .*-run "\$scale"`).Match(ci) {
		t.Fatal(`.ci/run has no full-scale run (scale='^(…)$', then C4GH_TEST_SCALE=full go test … -run "$scale")`)
	}
	listed := strings.Split(string(m[1]), "|")
	fn := regexp.MustCompile(`^func (Test\w+)\(`)
	use := regexp.MustCompile(`clitest\.(Size\(\d|AtScale\(\))`)
	var sized []string
	filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var cur string
		for _, line := range strings.Split(string(data), "\n") {
			if f := fn.FindStringSubmatch(line); f != nil {
				cur = f[1]
			}
			if cur != "" && use.MatchString(line) && !slices.Contains(sized, cur) {
				sized = append(sized, cur)
			}
		}
		return nil
	})
	if len(sized) == 0 {
		t.Fatal("found no test sized by clitest.Size or clitest.AtScale")
	}
	for _, name := range sized {
		if !slices.Contains(listed, name) {
			t.Errorf("%s is sized by clitest but not in the full-scale run of .ci/run", name)
		}
	}
}
