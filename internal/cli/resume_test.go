package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/clitest"
)

// TestContinueOwnFiles: the partial output and the record of --continue
// are the caller's own. A partial output that another user could have
// made, or could read, is refused (the plaintext never goes into it, and
// its bytes never start the output); a record that is not private is not
// trusted: the download starts again.
func TestContinueOwnFiles(t *testing.T) {
	e := newS3Env(t)
	plain := randomData(3*65536+100, 83)
	enc := encryptBytes(t, plain, e.sk)
	etag := e.put(t, "f.c4gh", enc)
	record := func(plaintext int) []byte {
		h := len(enc) - (len(plain)/65536)*65564 - (len(plain)%65536 + 28)
		return []byte(fmt.Sprintf(`{"source":%q,"etag":%q,"size":%d,"header_size":%d,"plaintext":%d,"boot_id":""}`,
			url("f.c4gh"), etag, len(enc), h, plaintext))
	}
	planted := append([]byte("chosen by another user!"), make([]byte, 2*65536)...)

	// A partial output readable by others.
	e.write(t, ".out"+resumeSuffix, planted)
	os.Chmod(filepath.Join(e.dir, ".out"+resumeSuffix), 0o644)
	e.write(t, ".out"+recordSuffix, record(2*65536))
	code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("f.c4gh"), "-o", "out")
	if code == 0 || !strings.Contains(stderr, "not a private file of yours") || !strings.Contains(stderr, "hint: remove it") {
		t.Errorf("a partial output of mode 0644: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out")); err == nil {
		t.Error("an output was committed")
	}
	if got := e.read(t, ".out"+resumeSuffix); string(got) != string(planted) {
		t.Error("the refused partial output was written to")
	}

	// Another user's, mode 0600.
	if os.Geteuid() != 0 {
		clitest.Missing(t, "root, to make a file of another user")
	}
	os.Chmod(filepath.Join(e.dir, ".out"+resumeSuffix), 0o600)
	if err := os.Chown(filepath.Join(e.dir, ".out"+resumeSuffix), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("f.c4gh"), "-o", "out")
	if code == 0 || !strings.Contains(stderr, "not a private file of yours") {
		t.Errorf("a partial output of another user: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out")); err == nil {
		t.Error("an output was committed")
	}

	// Our partial output, but a record another user made: not trusted.
	os.Remove(filepath.Join(e.dir, ".out"+resumeSuffix))
	e.write(t, ".out"+resumeSuffix, planted)
	e.write(t, ".out"+recordSuffix, record(2*65536))
	if err := os.Chown(filepath.Join(e.dir, ".out"+recordSuffix), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, _, stderr = e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("f.c4gh"), "-o", "out")
	sameBytes(t, "the download past a planted record", e.read(t, "out"), plain)
	if !strings.Contains(stderr, "not a private file of yours") || !strings.Contains(stderr, "starting again") || strings.Contains(stderr, "resuming") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// TestContinueComplete: --continue on an output that is complete says
// that there is nothing to do and succeeds, fetching no body; on one of
// another size it refuses as before. A complete download without
// --continue removes what an interrupted one left beside its output.
func TestContinueComplete(t *testing.T) {
	e := newS3Env(t)
	plain := randomData(5*65536+7, 84)
	e.put(t, "f.c4gh", encryptBytes(t, plain, e.sk))
	e.must(t, "decrypt", "--sk", "me.sec", "-i", url("f.c4gh"), "-o", "out")
	e.px.Zero()
	code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("f.c4gh"), "-o", "out")
	if code != 0 || !strings.Contains(stderr, "out is complete (327687 bytes of plaintext): nothing to do") {
		t.Errorf("a complete output: exit %d\n%s", code, stderr)
	}
	if e.px.Down() > 256<<10 {
		t.Errorf("%d bytes fetched for nothing to do", e.px.Down())
	}
	sameBytes(t, "out", e.read(t, "out"), plain)
	e.write(t, "other", []byte("not the download"))
	if code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("f.c4gh"), "-o", "other"); code != exitUsage || !strings.Contains(stderr, "already exists") {
		t.Errorf("an output of another size: exit %d\n%s", code, stderr)
	}

	// What an interrupted run left goes with a complete download.
	e.write(t, ".new"+resumeSuffix, plain[:65536])
	e.write(t, ".new"+recordSuffix, []byte("{}"))
	_, _, stderr = e.run(t, "decrypt", "--sk", "me.sec", "-i", url("f.c4gh"), "-o", "new")
	sameBytes(t, "new", e.read(t, "new"), plain)
	for _, s := range []string{resumeSuffix, recordSuffix} {
		if _, err := os.Lstat(filepath.Join(e.dir, ".new"+s)); err == nil {
			t.Errorf(".new%s is left after the complete download", s)
		}
	}
	if !strings.Contains(stderr, "removed the partial output of the interrupted download") {
		t.Errorf("stderr:\n%s", stderr)
	}
}
