package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestListCollision: two inputs of a list that would be written to one
// output are refused with exit 2, naming both: a list file before any
// work, a list on stdin as the second comes.
func TestListCollision(t *testing.T) {
	e := newScaleEnv(t, 2, 100)
	os.Mkdir(filepath.Join(e.dir, "other.d"), 0o755)
	os.WriteFile(filepath.Join(e.dir, "other.d/f0000.c4gh"), encryptBytes(t, []byte("other"), e.sk), 0o644)
	list := "in.d/f0000.c4gh\nin.d/f0001.c4gh\nother.d/f0000.c4gh\n"
	os.WriteFile(filepath.Join(e.dir, "clash"), []byte(list), 0o644)
	code, _, stderr := runIn(t, e.dir, "decrypt", "--sk", "me.sec", "-o", "out/", "--files-from", "clash")
	if code != exitUsage || !strings.Contains(stderr, "in.d/f0000.c4gh and other.d/f0000.c4gh would both be written to out/f0000") {
		t.Errorf("a list with a collision: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
	if names, _ := filepath.Glob(filepath.Join(e.dir, "out", "*")); len(names) > 0 {
		t.Errorf("work was done before the collision was refused: %v", names)
	}

	// From stdin: the second input fails, the others are done.
	t.Chdir(e.dir)
	var out, errb strings.Builder
	code = Run([]string{"crypt4gh", "decrypt", "--sk", "me.sec", "-o", "out2/", "--json", "--files-from", "-"}, strings.NewReader(list), &out, &errb)
	if code != exitUsage {
		t.Fatalf("a list on stdin with a collision: exit %d, want %d\n%s", code, exitUsage, errb.String())
	}
	recs, sum := records(t, out.String())
	if sum.OK != 2 || sum.Failed != 1 {
		t.Errorf("summary %+v", sum)
	}
	for _, r := range recs {
		if r.Name == "other.d/f0000.c4gh" && (r.Status != "failed" || r.Exit != exitUsage || !strings.Contains(r.Error, "in.d/f0000.c4gh and other.d/f0000.c4gh")) {
			t.Errorf("the second input: %+v", r)
		}
	}
	sameBytes(t, "out2/f0000", mustRead(t, filepath.Join(e.dir, "out2/f0000")), e.plain["in.d/f0000"])
}

// TestListCollisionThroughLinks: a list file whose two inputs would be
// written to one output through a link to their folder, or whose output
// is an input listed later, is refused before any work, as FILE
// arguments are (with --force the input would be replaced).
func TestListCollisionThroughLinks(t *testing.T) {
	e := newScaleEnv(t, 2, 100)
	if err := os.Symlink("in.d", filepath.Join(e.dir, "alias.d")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.dir, "linked"), []byte("in.d/f0000.c4gh\nalias.d/f0000.c4gh\n"), 0o644)
	code, _, stderr := runIn(t, e.dir, "decrypt", "--force", "--sk", "me.sec", "--files-from", "linked")
	if code != exitUsage || !strings.Contains(stderr, "in.d/f0000.c4gh and alias.d/f0000.c4gh would both be written to alias.d/f0000") {
		t.Errorf("two inputs through a link to their folder: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "in.d/f0000")); err == nil {
		t.Error("work was done before the collision was refused")
	}

	// f0001.c4gh.c4gh decrypts to f0001.c4gh, listed after it.
	enc := mustRead(t, filepath.Join(e.dir, "in.d/f0001.c4gh"))
	os.WriteFile(filepath.Join(e.dir, "in.d/f0001.c4gh.c4gh"), encryptBytes(t, []byte("other"), e.sk), 0o644)
	os.WriteFile(filepath.Join(e.dir, "later"), []byte("in.d/f0001.c4gh.c4gh\nin.d/f0001.c4gh\n"), 0o644)
	code, _, stderr = runIn(t, e.dir, "decrypt", "--force", "--sk", "me.sec", "--files-from", "later")
	if code != exitUsage || !strings.Contains(stderr, "in.d/f0001.c4gh.c4gh would be written to in.d/f0001.c4gh, which is an input") {
		t.Errorf("an output that is an input listed later: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
	sameBytes(t, "in.d/f0001.c4gh", mustRead(t, filepath.Join(e.dir, "in.d/f0001.c4gh")), enc)
}

// TestRekeyJournalSum: objects rekeyed in place have the sha256 of what
// was written in the journal, and --verify-journal does again an object
// changed since (same size), while it skips the others.
func TestRekeyJournalSum(t *testing.T) {
	if testing.Short() {
		t.Skip("an S3 server: not with -short")
	}
	e := newS3Env(t)
	e.keygen(t, "new")
	plain := putMany(t, e, "v/", 3)
	args := []string{"reencrypt", "--sk", "me.sec", "--recipient_pk", "me.pub", "--recipient_pk", "new.pub", "--force", "--journal", "j"}
	e.must(t, append(args, "-q", url("v/"))...)
	f, err := os.Open(filepath.Join(e.dir, "j"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct{ Done, SHA256 string }
		json.Unmarshal(sc.Bytes(), &l)
		if l.Done != "" {
			sums[l.Done] = l.SHA256
		}
	}
	f.Close()
	for k := range plain {
		got := sha256.Sum256(e.get(t, k))
		if sums[url(k)] != hex.EncodeToString(got[:]) {
			t.Errorf("%s: journal sha256 %q, the object's %x", k, sums[url(k)], got)
		}
	}
	// The same size, other bytes.
	changed := e.get(t, "v/o00000.c4gh")
	changed[len(changed)-1] ^= 1
	e.put(t, "v/o00000.c4gh", changed)
	_, stdout, _ := e.run(t, append(args, "--verify-journal", "--json", url("v/"))...)
	recs, _ := records(t, stdout)
	for _, r := range recs {
		if before := r.Status == "done-before"; before != (r.Name != url("v/o00000.c4gh")) {
			t.Errorf("with --verify-journal: %+v", r)
		}
	}
	if len(recs) != 3 {
		t.Errorf("%d records, want 3", len(recs))
	}
}

// TestJournalMemory: a journal of 10,000 inputs done, each with an output
// name of 4,000 bytes (40 MB of lines), is not held in memory: the peak
// RSS of a worker that opens it stays well below its size.
func TestJournalMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a journal of 40 MB: not with -short")
	}
	t.Parallel()
	e := newScaleEnv(t, 1, 100)
	pub := e.sk.Public()
	j, err := os.Create(filepath.Join(e.dir, "j"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(j)
	fmt.Fprintf(w, `{"journal":"crypt4gh","version":1,"command":"decrypt","keys":[%q]}`+"\n", pub.String())
	long := strings.Repeat("o", 4000)
	for i := range 10000 {
		fmt.Fprintf(w, `{"done":"x%05d.c4gh","output":"%s%05d","size":1,"sha256":"%064x"}`+"\n", i, long, i, i)
	}
	w.Flush()
	fi, _ := j.Stat()
	j.Close()

	c := e.cmd(t, "decrypt", "--sk", "me.sec", "-o", "out/", "--journal", "j", "--files-from", "-")
	stdin, _ := c.StdinPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	peak := make(chan int64)
	go func() { peak <- peakRSS(c.Process.Pid, done) }()
	// The journal is read before the list: wait until it was, and a
	// little more for its last lines to be parsed.
	for deadline := time.Now().Add(30 * time.Second); readBytes(c.Process.Pid) < fi.Size() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	fmt.Fprintln(stdin, "in.d/f0000.c4gh")
	stdin.Close()
	err = c.Wait()
	close(done)
	rss := <-peak
	if err != nil {
		t.Fatalf("decrypt with a journal of 10,000 inputs: %v", err)
	}
	t.Logf("peak RSS %d KiB with a journal of %d KiB", rss, fi.Size()>>10)
	// Held in memory, the journal would add its size to the 20-some
	// MiB of a run; three quarters of it was too close to a run beside
	// other tests (30,220 KiB of 30,212).
	if rss > fi.Size()>>10 {
		t.Errorf("peak RSS %d KiB with a journal of %d KiB: the journal is held in memory", rss, fi.Size()>>10)
	}
}

// readBytes is the rchar of the process pid: the bytes it has read.
func readBytes(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	m := regexp.MustCompile(`rchar:\s+(\d+)`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// TestSpliceBatch: rearrange and splice cut each input of a list the
// same way into a folder, with a journal, JSON records and shards.
func TestSpliceBatch(t *testing.T) {
	e := newScaleEnv(t, 4, 150000)
	args := []string{"rearrange", "--sk", "me.sec", "--range", "1000-70000", "-o", "cut/", "--files-from", "list", "--journal", "j", "--json"}
	code, stdout, stderr := runIn(t, e.dir, args...)
	if code != 0 {
		t.Fatalf("rearrange --files-from: exit %d\n%s", code, stderr)
	}
	recs, sum := records(t, stdout)
	if sum.OK != 4 || len(recs) != 4 {
		t.Errorf("summary %+v", sum)
	}
	for _, r := range recs {
		name := strings.TrimSuffix(r.Name, ".c4gh")
		out := mustRead(t, filepath.Join(e.dir, r.Output))
		if r.Output != "cut/"+filepath.Base(r.Name) || r.CryptSHA256 != sha256Hex(out) {
			t.Errorf("record %+v", r)
		}
		sameBytes(t, r.Output, decryptBytes(t, out, e.sk), e.plain[name][1000:70000])
	}
	if _, stdout, _ := runIn(t, e.dir, args...); !strings.Contains(stdout, `"done_before":4`) {
		t.Errorf("run again on its journal:\n%s", stdout)
	}
	// The journal is bound to the range: another is refused before any
	// work, and leaves the outputs of the first alone.
	other := slices.Clone(args)
	other[slices.Index(other, "1000-70000")] = "0-500"
	if code, _, stderr := runIn(t, e.dir, other...); code != 2 || !strings.Contains(stderr, "written for other ranges or regions (range 1000-70000)") {
		t.Errorf("another range on the journal: exit %d\n%s", code, stderr)
	}

	// Two shards of splice: each input once.
	seen := map[string]int{}
	for i := range 2 {
		code, stdout, stderr := runIn(t, e.dir, "splice", "--sk", "me.sec", "--range", "0-10", "--range", "100000-100010",
			"-o", "sp/", "--files-from", "list", "--shard", fmt.Sprintf("%d/2", i), "--json")
		if code != 0 {
			t.Fatalf("splice --shard %d/2: exit %d\n%s", i, code, stderr)
		}
		recs, _ := records(t, stdout)
		for _, r := range recs {
			seen[r.Name]++
		}
	}
	if len(seen) != 4 {
		t.Errorf("the shards took %v", seen)
	}
	for name, p := range e.plain {
		got := decryptBytes(t, mustRead(t, filepath.Join(e.dir, "sp", filepath.Base(name)+".c4gh")), e.sk)
		sameBytes(t, name, got, append(append([]byte{}, p[:10]...), p[100000:100010]...))
	}

	// The refusals: no folder, two inputs with one output.
	if code, _, stderr := runIn(t, e.dir, "rearrange", "--sk", "me.sec", "--range", "0-10", "in.d/f0000.c4gh"); code != exitUsage || !strings.Contains(stderr, "into a folder") {
		t.Errorf("a batch without -o DIR/: exit %d\n%s", code, stderr)
	}
	os.Mkdir(filepath.Join(e.dir, "other.d"), 0o755)
	os.WriteFile(filepath.Join(e.dir, "other.d/f0000.c4gh"), mustRead(t, filepath.Join(e.dir, "in.d/f0001.c4gh")), 0o644)
	if code, _, stderr := runIn(t, e.dir, "rearrange", "--sk", "me.sec", "--range", "0-10", "-o", "c2/", "in.d/f0000.c4gh", "other.d/f0000.c4gh"); code != exitUsage || !strings.Contains(stderr, "would both be written") {
		t.Errorf("two inputs with one output: exit %d\n%s", code, stderr)
	}
}
