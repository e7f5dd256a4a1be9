package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/s3test"
)

// TestS3ReencryptIntoFolder rekeys in batch into -o DIR/ with objects on
// one side or both: a prefix into another prefix of its store (the body
// copied by the server, the inputs left as they are), files into a
// prefix, an object into a local folder; an existing object is replaced
// only with --force.
func TestS3ReencryptIntoFolder(t *testing.T) {
	e := newS3Env(t)
	bob := e.keygen(t, "bob")
	plains := map[string][]byte{
		"src/f0.c4gh":     randomData(100000, 71),
		"src/sub/f1.c4gh": randomData(11*MiB, 72),
	}
	encs := map[string][]byte{}
	for key, plain := range plains {
		encs[key] = encryptBytes(t, plain, e.sk)
		e.put(t, key, encs[key])
	}

	e.px.Zero()
	if code, stdout, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-o", url("dst/"), url("src/")); code != 0 || stdout != "" {
		t.Fatalf("prefix into a prefix: exit %d\n%s%s", code, stdout, stderr)
	}
	if up := e.px.Up(); up > 6*MiB {
		t.Errorf("rekeying into a prefix of the same store sent %d bytes: the server should copy the bodies", up)
	}
	for key, plain := range plains {
		out := "dst/" + strings.TrimPrefix(key, "src/")
		sameBytes(t, out+" for bob", decryptBytes(t, e.get(t, out), bob), plain)
		sameBytes(t, key+" left as it was", e.get(t, key), encs[key])
	}
	code, _, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-o", url("dst/"), url("src/f0.c4gh"))
	if code != exitUsage || !strings.Contains(stderr, url("src/f0.c4gh")+": ") || !strings.Contains(stderr, "use --force to replace it") {
		t.Errorf("over an existing object without --force: exit %d\n%s", code, stderr)
	}
	e.must(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "me.pub", "--force", "-o", url("dst/"), url("src/f0.c4gh"))
	sameBytes(t, "dst/f0.c4gh replaced with --force", decryptBytes(t, e.get(t, "dst/f0.c4gh"), e.sk), plains["src/f0.c4gh"])

	// A file into a prefix, an object into a local folder.
	e.write(t, "local.c4gh", encs["src/f0.c4gh"])
	e.must(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-o", url("up/"), "local.c4gh")
	sameBytes(t, "up/local.c4gh for bob", decryptBytes(t, e.get(t, "up/local.c4gh"), bob), plains["src/f0.c4gh"])
	e.must(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "-o", "down/", url("src/f0.c4gh"))
	sameBytes(t, "down/f0.c4gh for bob", decryptBytes(t, e.read(t, "down/f0.c4gh"), bob), plains["src/f0.c4gh"])
	e.noUploads(t)
}

// TestS3OutputInsideInputPrefix: a batch whose output prefix lies inside
// its input prefix leaves the objects listed there out of its inputs.
// Before, the listing's later pages (a page holds 1,000 keys) gave the
// batch its own outputs as inputs: a run that wrote loop/out/out/… level
// after level and never ended.
func TestS3OutputInsideInputPrefix(t *testing.T) {
	if testing.Short() {
		t.Skip("1,100 objects, more than a page of a listing: not with -short")
	}
	e := newS3EnvParallel(t, s3test.OnDisk())
	e.keygen(t, "bob")
	const n = 1100
	putMany(t, e, "loop/", n)
	code, stdout, stderr := e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--json", "-o", url("loop/out/"), url("loop/"))
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf(`"inputs":%d,`, n)) || !strings.Contains(stderr, "left out of the inputs") {
		t.Fatalf("exit %d\n%s\n%s", code, lastLine(stdout), stderr)
	}
	// Again: the outputs there now are left out from the first page on,
	// and each input's output exists, so nothing is written.
	code, stdout, stderr = e.run(t, "reencrypt", "--sk", "me.sec", "--recipient_pk", "bob.pub", "--json", "-o", url("loop/out/"), url("loop/"))
	if code != exitUsage || !strings.Contains(stdout, fmt.Sprintf(`"inputs":%d,`, n)) {
		t.Errorf("again, without --force: exit %d\n%s\n%.500s", code, lastLine(stdout), stderr)
	}
	_, list, _ := e.run(t, "ls", "-R", "--json", url("loop/out/"))
	if got := strings.Count(list, `"kind":"crypt4gh"`); got != n || strings.Contains(list, "loop/out/out/") {
		t.Errorf("%d objects under loop/out/ (want %d), of which under loop/out/out/: %v", got, n, strings.Contains(list, "loop/out/out/"))
	}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
