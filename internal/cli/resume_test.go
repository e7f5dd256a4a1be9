package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/resume"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
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
	e.write(t, ".out"+resume.Suffix, planted)
	os.Chmod(filepath.Join(e.dir, ".out"+resume.Suffix), 0o644)
	e.write(t, ".out"+resume.RecordSuffix, record(2*65536))
	code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("f.c4gh"), "-o", "out")
	if code == 0 || !strings.Contains(stderr, "not a private file of yours") || !strings.Contains(stderr, "hint: remove it") {
		t.Errorf("a partial output of mode 0644: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out")); err == nil {
		t.Error("an output was committed")
	}
	if got := e.read(t, ".out"+resume.Suffix); string(got) != string(planted) {
		t.Error("the refused partial output was written to")
	}

	// Another user's, mode 0600.
	if os.Geteuid() != 0 {
		clitest.Missing(t, "root, to make a file of another user")
	}
	os.Chmod(filepath.Join(e.dir, ".out"+resume.Suffix), 0o600)
	if err := os.Chown(filepath.Join(e.dir, ".out"+resume.Suffix), 65534, 65534); err != nil {
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
	os.Remove(filepath.Join(e.dir, ".out"+resume.Suffix))
	e.write(t, ".out"+resume.Suffix, planted)
	e.write(t, ".out"+resume.RecordSuffix, record(2*65536))
	if err := os.Chown(filepath.Join(e.dir, ".out"+resume.RecordSuffix), 65534, 65534); err != nil {
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
	e.write(t, ".new"+resume.Suffix, plain[:65536])
	e.write(t, ".new"+resume.RecordSuffix, []byte("{}"))
	_, _, stderr = e.run(t, "decrypt", "--sk", "me.sec", "-i", url("f.c4gh"), "-o", "new")
	sameBytes(t, "new", e.read(t, "new"), plain)
	for _, s := range []string{resume.Suffix, resume.RecordSuffix} {
		if _, err := os.Lstat(filepath.Join(e.dir, ".new"+s)); err == nil {
			t.Errorf(".new%s is left after the complete download", s)
		}
	}
	if !strings.Contains(stderr, "removed the partial output of the interrupted download") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// resumeRecordFor writes the partial output .out.c4gh-resume with the
// first kept bytes of plain, and a record of a download of enc from src
// with the given validator, as an interrupted run would have left them.
func resumeRecordFor(t *testing.T, dir, src string, enc, plain []byte, sk *keys.SecretKey, validator string, strong bool, kept int) {
	t.Helper()
	res, err := c4gh.NewResumable(bytes.NewReader(enc), int64(len(enc)), sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	loc, err := objstore.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(src))
	rec, _ := json.Marshal(resume.Record{Source: loc.String(), URL: hex.EncodeToString(sum[:]), ETag: validator, Strong: strong,
		KeyID: res.KeyID(), Size: int64(len(enc)), HeaderSize: res.HeaderSize(), Plaintext: int64(kept)})
	if err := os.WriteFile(filepath.Join(dir, ".out"+resume.Suffix), plain[:kept], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".out"+resume.RecordSuffix), rec, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestContinueWeakValidator: a web resource with only a weak ETag, only
// Last-Modified, or nothing, that was replaced by another file of the same
// size is not taken for the one of the interrupted download: the download
// starts again and says why (before, the output was the old file's start
// and the new file's rest, exit 0).
func TestContinueWeakValidator(t *testing.T) {
	e := newS3Env(t)
	v1, v2 := randomData(3*65536+10, 91), randomData(3*65536+10, 92)
	enc1, enc2 := encryptBytes(t, v1, e.sk), encryptBytes(t, v2, e.sk)
	for _, tc := range []struct {
		name, etag string
		modTime    time.Time
	}{
		{"weak ETag", `W/"1"`, time.Time{}},
		{"Last-Modified only", "", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"nothing", "", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := enc2 // the resource was replaced since
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.etag != "" {
					w.Header().Set("ETag", tc.etag)
				}
				http.ServeContent(w, r, "", tc.modTime, bytes.NewReader(served))
			}))
			defer srv.Close()
			src := srv.URL + "/f.c4gh?sig=1"
			validator := tc.etag
			if !tc.modTime.IsZero() {
				validator = "Last-Modified: " + tc.modTime.Format(http.TimeFormat)
			}
			os.Remove(filepath.Join(e.dir, "out"))
			resumeRecordFor(t, e.dir, src, enc1, v1, e.sk, validator, false, 2*65536)
			// Not the same data keys: enc2 is another file.
			code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", src, "-o", "out")
			if code != 0 || !strings.Contains(stderr, "no strong validator") || strings.Contains(stderr, "resuming") {
				t.Errorf("exit %d\n%s", code, stderr)
			}
			sameBytes(t, "out", e.read(t, "out"), v2)
		})
	}
}

// TestContinueAfterRekey: an object re-keyed in place since the
// interrupted download has a new ETag and header but the same body: the
// download goes on after the kept segments, under the new header.
func TestContinueAfterRekey(t *testing.T) {
	e := newS3Env(t)
	e.keygen(t, "bob")
	plain := randomData(5*65536+10, 93)
	enc := encryptBytes(t, plain, e.sk)
	etag := e.put(t, "f.c4gh", enc)
	resumeRecordFor(t, e.dir, url("f.c4gh"), enc, plain, e.sk, etag, true, 3*65536)
	e.must(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--add", "--force", "-i", url("f.c4gh"), "-o", url("f.c4gh"))
	e.px.Zero()
	code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", "--continue", "-i", url("f.c4gh"), "-o", "out")
	if code != 0 || !strings.Contains(stderr, "has a new header but the same body") || !strings.Contains(stderr, "resuming") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	sameBytes(t, "out", e.read(t, "out"), plain)
	// The head (header and first bytes, one request), then the body
	// from segment 3, and the answers' own bytes.
	if down := e.px.Down(); down > int64(len(enc)-3*65564+objio.HeadSize+8<<10) {
		t.Errorf("%d bytes fetched: the kept segments were fetched again", down)
	}
}
