package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// TestS3Batch runs batch mode to and from prefixes: local files to an
// s3:// output folder, a prefix of plain objects to another prefix (the
// .c4gh ones skipped, the keys below the prefix kept), a prefix of
// encrypted objects to a local folder (its subfolders made), objects
// beside themselves, and a decrypted object without -o refused.
func TestS3Batch(t *testing.T) {
	e := newS3Env(t)
	files := map[string][]byte{"one": randomData(150000, 1), "two": {}, "three": randomData(65540, 3)}
	for name, b := range files {
		e.write(t, name, b)
	}
	out := e.must(t, "encrypt", "--recipient_pk", "me.pub", "--checksum", "-o", url("enc/"), "one", "two", "three")
	for name, b := range files {
		sameBytes(t, name, decryptBytes(t, e.get(t, "enc/"+name+".c4gh"), e.sk), b)
		line := sha256Hex(b) + "  " + name + "\n" + sha256Hex(e.get(t, "enc/"+name+".c4gh")) + "  " + url("enc/"+name+".c4gh") + "\n"
		if !strings.Contains(out, line) {
			t.Errorf("--checksum lines lack\n%sin\n%s", line, out)
		}
	}

	// A prefix of plain objects, to another prefix.
	plain := map[string][]byte{"raw/a": randomData(70000, 4), "raw/sub/b": randomData(10, 5), "raw/sub/deeper/c": randomData(3*65536, 6)}
	for k, b := range plain {
		e.put(t, k, b)
	}
	e.put(t, "raw/done.c4gh", encryptBytes(t, []byte("already"), e.sk))
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "-o", url("enc2/"), url("raw/"))
	for k, b := range plain {
		key := "enc2/" + strings.TrimPrefix(k, "raw/") + ".c4gh"
		sameBytes(t, key, decryptBytes(t, e.get(t, key), e.sk), b)
	}
	if e.exists(t, "enc2/done.c4gh.c4gh") || e.exists(t, "enc2/done.c4gh") {
		t.Error("an object ending in .c4gh was encrypted again")
	}

	// The encrypted prefix, to a local folder that does not exist yet.
	e.must(t, "decrypt", "--sk", "me.sec", "-o", "plain/", url("enc2/"))
	for k, b := range plain {
		p := filepath.Join("plain", filepath.FromSlash(strings.TrimPrefix(k, "raw/")))
		sameBytes(t, p, e.read(t, p), b)
		if fi, err := os.Stat(filepath.Join(e.dir, p)); err != nil || fi.Mode().Perm() != outfile.ModeSecret {
			t.Errorf("%s: mode %v, %v", p, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(e.dir, "plain", "sub", "deeper")); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("a folder made for plaintext is open to others: %v, %v", fi.Mode(), err)
	}
	// Objects and files into an existing folder, by their names.
	if err := os.Mkdir(filepath.Join(e.dir, "again"), 0o700); err != nil {
		t.Fatal(err)
	}
	e.must(t, "decrypt", "--sk", "me.sec", "-o", "again", url("enc/one.c4gh"), url("enc/three.c4gh"))
	sameBytes(t, "again/one", e.read(t, "again/one"), files["one"])
	sameBytes(t, "again/three", e.read(t, "again/three"), files["three"])

	// Beside: an encrypted object goes next to its input; a decrypted
	// one needs -o, and the others of the batch are still done.
	e.must(t, "encrypt", "--recipient_pk", "me.pub", url("raw/a"))
	sameBytes(t, "raw/a.c4gh", decryptBytes(t, e.get(t, "raw/a.c4gh"), e.sk), plain["raw/a"])
	e.must(t, "encrypt", "--recipient_pk", "me.pub", "-o", ".", "one")
	code, _, stderr := e.run(t, "decrypt", "--sk", "me.sec", url("enc/two.c4gh"), "one.c4gh")
	if code != exitUsage || !strings.Contains(stderr, url("enc/two.c4gh")+": no output folder for a decrypted object") ||
		!strings.Contains(stderr, "crypt4gh: hint: use -o FOLDER") {
		t.Errorf("decrypt of an object without -o: exit %d\n%s", code, stderr)
	}
	sameBytes(t, "one, decrypted beside", e.read(t, "one"), files["one"])

	// An empty prefix.
	for _, args := range [][]string{
		{"decrypt", "--sk", "me.sec", "-o", "x/", url("nothing/")},
		{"encrypt", "--recipient_pk", "me.pub", "-o", "x/", url("nothing/")},
		{"verify", "--sk", "me.sec", url("nothing/")},
		{"reencrypt", "--sk", "me.sec", "--recipient_pk", "me.pub", "--force", url("nothing/")},
	} {
		if code, _, stderr := e.run(t, args...); code != exitUsage || !strings.Contains(stderr, "nothing to") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	// An output folder that is an object, not a prefix, is refused.
	if code, _, stderr := e.run(t, "encrypt", "--recipient_pk", "me.pub", "-o", url("enc"), "one"); code != exitUsage || !strings.Contains(stderr, "--output cannot be used with FILE arguments") {
		t.Errorf("-o OBJECT in batch mode: exit %d\n%s", code, stderr)
	}
	// Two inputs for one output.
	e.write(t, "sub/one", []byte("other"))
	if code, _, stderr := e.run(t, "encrypt", "--recipient_pk", "me.pub", "--force", "-o", url("enc/"), "one", "sub/one"); code != exitUsage || !strings.Contains(stderr, "would both be written to") {
		t.Errorf("two inputs for one object: exit %d\n%s", code, stderr)
	}
	e.noUploads(t)
}

// TestInFolder checks the names of batch results in output folders: keys
// that would leave a local folder are refused.
func TestInFolder(t *testing.T) {
	for _, tc := range []struct{ dir, rel, want string }{
		{"out", "a", filepath.Join("out", "a")},
		{"out/", "x/y/z", filepath.Join("out", "x", "y", "z")},
		{"s3://bkt/p/", "x/y", "s3://bkt/p/x/y"},
		{"s3://bkt/p", "x", "s3://bkt/p/x"},
		{"s3://bucket", "x", "s3://bucket/x"},
		{"out", "../escape", ""},
		{"out", "a/../../escape", ""},
		{"out", "/abs", ""},
		{"out", "", ""},
		// Keys that a store keeps apart but that name one file (p/./x,
		// p//x and p/x; a/..c4gh decrypted to a/.): with --force one
		// replaced the other's plaintext, exit 0. (versitygw keeps
		// files, so it cannot hold such keys; AWS S3 can.)
		{"out", "p/./x", ""},
		{"out", "p//x", ""},
		{"out", "a/.", ""},
		{"out", "./x", ""},
		{"out", "..x", filepath.Join("out", "..x")},
		{"s3://bkt/p/", "x//y", "s3://bkt/p/x//y"},
	} {
		got, err := inFolder(tc.dir, tc.rel)
		if tc.want == "" {
			if err == nil {
				t.Errorf("inFolder(%q, %q) = %q, want an error", tc.dir, tc.rel, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("inFolder(%q, %q) = %q, %v; want %q", tc.dir, tc.rel, got, err, tc.want)
		}
	}
}

// TestS3InspectVerify inspects and verifies objects, one and a prefix.
func TestS3InspectVerify(t *testing.T) {
	e := newS3Env(t)
	good := encryptBytes(t, randomData(200000, 8), e.sk)
	e.put(t, "v/good.c4gh", good)
	e.put(t, "v/sub/good2.c4gh", good)
	bad := bytes.Clone(good)
	bad[len(bad)-100] ^= 1
	e.put(t, "v/bad.c4gh", bad)
	e.put(t, "v/notes.txt", []byte("not crypt4gh"))

	e.px.Zero()
	out := e.must(t, "inspect", "--json", url("v/good.c4gh"))
	if !strings.Contains(out, `"file": "`+url("v/good.c4gh")+`"`) || !strings.Contains(out, `"body_size": `) {
		t.Errorf("inspect --json printed\n%s", out)
	}
	if d := e.px.Down(); d > objio.HeadSize+16<<10 {
		t.Errorf("inspect fetched %d bytes of a %d-byte object", d, len(good))
	}
	code, stdout, stderr := e.run(t, "verify", "--sk", "me.sec", url("v/"))
	if code != exitData || !strings.Contains(stdout, url("v/good.c4gh")+": OK") || !strings.Contains(stdout, url("v/sub/good2.c4gh")+": OK") ||
		!strings.Contains(stderr, url("v/bad.c4gh")+": segment 3") || strings.Contains(stdout+stderr, "notes.txt") {
		t.Errorf("verify of a prefix: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestS3JournalChangedSource: a rerun of a journal over a listed prefix
// checks each done object against what the listing says, without asking
// the store for it again; an object replaced since is not done before.
func TestS3JournalChangedSource(t *testing.T) {
	e := newS3Env(t)
	for i := range 3 {
		e.put(t, fmt.Sprintf("jc/f%d.c4gh", i), encryptBytes(t, randomData(5000, uint64(80+i)), e.sk))
	}
	args := []string{"decrypt", "--sk", "me.sec", "--journal", "j", "-o", "out/", url("jc/")}
	e.must(t, args...)
	e.px.Zero()
	e.must(t, args...)
	for _, r := range e.px.Requests() {
		if !strings.Contains(r, "list-type=2") {
			t.Errorf("a rerun of a finished journal asked the store: %s", r)
		}
	}
	changed := randomData(6000, 99)
	e.put(t, "jc/f1.c4gh", encryptBytes(t, changed, e.sk))
	code, _, stderr := e.run(t, args...)
	if code != exitUsage || !strings.Contains(stderr, "input "+url("jc/f1.c4gh")+" changed since the journal recorded it done") || !strings.Contains(stderr, "2 done before, 1 failed") {
		t.Errorf("a replaced object: exit %d\n%s", code, stderr)
	}
	e.must(t, append(args[:len(args)-1:len(args)-1], "--force", url("jc/"))...)
	sameBytes(t, "the output made again", e.read(t, "out/f1"), changed)
}
