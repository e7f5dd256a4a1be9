package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/internal/clitest"
	"github.com/c4gh-go/crypt4gh/internal/s3test"
	"github.com/c4gh-go/crypt4gh/keys"
)

// The tests of batches at archive scale: lists, shards, journals, JSON
// records; the workers are processes of the built command.

// scaleEnv is a folder with a key pair (me.sec, me.pub) and files
// encrypted for it.
type scaleEnv struct {
	dir   string
	sk    *keys.SecretKey
	plain map[string][]byte // the plaintext of each NAME.c4gh, by NAME
}

// newScaleEnv makes n files in.d/fNNNN.c4gh of size bytes each.
func newScaleEnv(t *testing.T, n, size int) *scaleEnv {
	t.Helper()
	dir := t.TempDir()
	if code, _, stderr := runAt(t, dir, "keygen", "--sk", "me.sec", "--pk", "me.pub", "--nocrypt"); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "me.sec"))
	if err != nil {
		t.Fatal(err)
	}
	sk, err := keys.ParseSecretKey(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &scaleEnv{dir: dir, sk: &sk, plain: map[string][]byte{}}
	os.Mkdir(filepath.Join(dir, "in.d"), 0o755)
	var list bytes.Buffer
	for i := range n {
		name := fmt.Sprintf("in.d/f%04d", i)
		p := randomData(size, uint64(i))
		e.plain[name] = p
		if err := os.WriteFile(filepath.Join(dir, name+".c4gh"), encryptBytes(t, p, &sk), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&list, "%s.c4gh\n", name)
	}
	if err := os.WriteFile(filepath.Join(dir, "list"), list.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// cmd is the command with args, in the folder: this test binary, or
// under -race the built command, which the detector does not slow down.
func (e *scaleEnv) cmd(t *testing.T, args ...string) *exec.Cmd {
	if !raceEnabled {
		c := exec.Command(os.Args[0], args...)
		c.Dir = e.dir
		c.Env = append(os.Environ(), childEnv+"=1")
		return c
	}
	c := exec.Command(clitest.Binary(t), args...)
	c.Dir = e.dir
	return c
}

// checkOutputs checks that every output is its plaintext, and that no
// temporary file is left.
func (e *scaleEnv) checkOutputs(t *testing.T) {
	t.Helper()
	for name, p := range e.plain {
		got, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameBytes(t, name, got, p)
	}
	left, _ := filepath.Glob(filepath.Join(e.dir, "in.d", ".*partial*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// journalLines reads the done lines of a journal, by input.
func journalLines(t *testing.T, path string) (done map[string]int, starts map[string]int) {
	t.Helper()
	done, starts = map[string]int{}, map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Done, Start string
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue // a line torn by a kill
		}
		if l.Done != "" {
			done[l.Done]++
		}
		if l.Start != "" {
			starts[l.Start]++
		}
	}
	return done, starts
}

// records parses the --json lines of a run: the records, and the summary.
func records(t *testing.T, out string) ([]batch.Record, batch.Summary) {
	t.Helper()
	var recs []batch.Record
	var sum batch.Summary
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var probe struct{ Summary bool }
		if err := json.Unmarshal([]byte(line), &probe); err != nil {
			t.Fatalf("line %d is not JSON: %q", i+1, line)
		}
		if probe.Summary {
			json.Unmarshal([]byte(line), &sum)
			continue
		}
		var r batch.Record
		json.Unmarshal([]byte(line), &r)
		recs = append(recs, r)
	}
	if !sum.Summary {
		t.Fatalf("no summary line in\n%s", out)
	}
	return recs, sum
}

// TestFilesFromJSON decrypts the inputs of a list (by lines, by NULs,
// from stdin), beside FILE arguments, with --json: every line parses, one
// record an input, the counts of the summary match, and a missing input
// is a failed record with exit 2, the batch's exit status.
func TestFilesFromJSON(t *testing.T) {
	e := newScaleEnv(t, 40, 1000)
	os.WriteFile(filepath.Join(e.dir, "list"), append(mustRead(t, filepath.Join(e.dir, "list")), "in.d/missing.c4gh\n"...), 0o644)
	code, stdout, stderr := runIn(t, e.dir, "decrypt", "--sk", "me.sec", "--json", "--files-from", "list")
	if code != exitUsage {
		t.Fatalf("a list with a missing input: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
	recs, sum := records(t, stdout)
	ok := 0
	for _, r := range recs {
		switch {
		case r.Name == "in.d/missing.c4gh":
			if r.Status != "failed" || r.Exit != exitUsage || r.Class != "usage" || !strings.Contains(r.Error, "no such file") {
				t.Errorf("the missing input's record: %+v", r)
			}
		case r.Status == "ok":
			ok++
			if p := e.plain[strings.TrimSuffix(r.Name, ".c4gh")]; r.BytesOut != int64(len(p)) || r.PlainSHA256 != sha256Hex(p) || r.Output != strings.TrimSuffix(r.Name, ".c4gh") {
				t.Errorf("record %+v", r)
			}
		default:
			t.Errorf("record %+v", r)
		}
	}
	if ok != 40 || len(recs) != 41 || sum.OK != 40 || sum.Failed != 1 || sum.Inputs != 41 || sum.Exit != exitUsage {
		t.Errorf("%d ok of %d records; summary %+v", ok, len(recs), sum)
	}
	if !strings.Contains(stderr, "in.d/missing.c4gh: no such file") || strings.Contains(stderr, "\x1b") {
		t.Errorf("stderr:\n%s", stderr)
	}
	e.checkOutputs(t)

	// NUL-separated, from stdin, after a FILE argument: names with a
	// newline are names.
	odd := "in.d/new\nline"
	os.WriteFile(filepath.Join(e.dir, odd+".c4gh"), encryptBytes(t, []byte("odd"), e.sk), 0o644)
	var list bytes.Buffer
	for name := range e.plain {
		if name != "in.d/f0000" {
			fmt.Fprintf(&list, "%s.c4gh\x00", name)
		}
	}
	list.WriteString(odd + ".c4gh\x00")
	t.Chdir(e.dir)
	var out, errb bytes.Buffer
	code = Run([]string{"crypt4gh", "verify", "--sk", "me.sec", "--json", "-0", "--files-from", "-", "in.d/f0000.c4gh"}, &list, &out, &errb)
	if code != 0 {
		t.Fatalf("verify -0 --files-from -: exit %d\n%s", code, errb.String())
	}
	if recs, sum := records(t, out.String()); len(recs) != 41 || sum.OK != 41 {
		t.Errorf("verify: %d records, summary %+v", len(recs), sum)
	}
	if code, _, stderr := runIn(t, e.dir, "verify", "--sk", "me.sec", "--shard", "0/2", "in.d/f0001.c4gh"); code != 0 && !strings.Contains(stderr, "0 ok") {
		t.Errorf("verify --shard with one FILE: exit %d\n%s", code, stderr)
	}
	for _, bad := range [][]string{
		{"decrypt", "--sk", "me.sec", "--shard", "0/2", "-i", "x.c4gh"},
		{"decrypt", "--sk", "me.sec", "--shard", "2/2", "in.d/f0001.c4gh"},
		{"decrypt", "--sk", "me.sec", "-0", "in.d/f0001.c4gh"},
		{"decrypt", "--sk", "me.sec", "--files-from", "nolist"},
	} {
		if code, _, stderr := runIn(t, e.dir, bad...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", bad, code, exitUsage, stderr)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBatchWorstExit: the exit status of a batch is the highest class
// among its inputs, whatever their order.
func TestBatchWorstExit(t *testing.T) {
	e := newScaleEnv(t, 3, 100)
	os.WriteFile(filepath.Join(e.dir, "in.d/junk.c4gh"), []byte("not crypt4gh at all"), 0o644)
	other := encryptBytes(t, []byte("other"), func() *keys.SecretKey { k, _ := keys.Generate(nil); return &k }())
	os.WriteFile(filepath.Join(e.dir, "in.d/other.c4gh"), other, 0o644)
	for _, order := range [][]string{{"in.d/junk.c4gh", "in.d/other.c4gh", "in.d/nope.c4gh"}, {"in.d/nope.c4gh", "in.d/other.c4gh", "in.d/junk.c4gh"}} {
		args := append([]string{"decrypt", "--sk", "me.sec", "-f", "--json", "in.d/f0000.c4gh"}, order...)
		code, stdout, _ := runIn(t, e.dir, args...)
		if code != exitData {
			t.Errorf("%v: exit %d, want %d", order, code, exitData)
		}
		recs, _ := records(t, stdout)
		classes := map[string]string{}
		for _, r := range recs {
			classes[r.Name] = r.Class
		}
		if classes["in.d/junk.c4gh"] != "data" || classes["in.d/other.c4gh"] != "keys" || classes["in.d/nope.c4gh"] != "usage" || classes["in.d/f0000.c4gh"] != "" {
			t.Errorf("classes %v", classes)
		}
	}
	code, _, _ := runIn(t, e.dir, "decrypt", "--sk", "me.sec", "-f", "in.d/f0001.c4gh", "in.d/other.c4gh")
	if code != exitKey {
		t.Errorf("a batch whose worst is a key error: exit %d, want %d", code, exitKey)
	}
}

// TestShardsLocal: 4 worker processes, --shard 0/4 … 3/4, each with its
// journal, over the same inputs: every input done exactly once.
func TestShardsLocal(t *testing.T) {
	t.Parallel()
	n := 80
	if !testing.Short() {
		n = clitest.Size(2000, 400)
	}
	e := newScaleEnv(t, n, 100)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range 4 {
		wg.Go(func() {
			c := e.cmd(t, "decrypt", "--sk", "me.sec", "--files-from", "list", "--shard", fmt.Sprintf("%d/4", i), "--journal", fmt.Sprintf("j%d", i))
			var stderr bytes.Buffer
			c.Stderr = &stderr
			if err := c.Run(); err != nil {
				errs[i] = fmt.Errorf("shard %d: %v\n%s", i, err, stderr.String())
			} else if !strings.Contains(stderr.String(), fmt.Sprintf("shard %d/4: ", i)) || !strings.Contains(stderr.String(), fmt.Sprintf(" of %d inputs", n)) {
				errs[i] = fmt.Errorf("shard %d: no summary line naming the shard:\n%s", i, stderr.String())
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	e.checkOutputs(t)
	seen := map[string]int{}
	for i := range 4 {
		done, _ := journalLines(t, filepath.Join(e.dir, fmt.Sprintf("j%d", i)))
		for in, k := range done {
			seen[in] += k
			if !(batch.Shard{I: uint64(i), N: 4}).Has(in) {
				t.Errorf("%s done by shard %d", in, i)
			}
		}
	}
	if len(seen) != n {
		t.Errorf("%d inputs in the journals, want %d", len(seen), n)
	}
	for in, k := range seen {
		if k != 1 {
			t.Errorf("%s done %d times", in, k)
		}
	}
}

// TestJournalKilled: a worker killed with SIGKILL at random points and
// started again each time with the same journal ends with the outputs of
// an uninterrupted run, no temporary file, each input done once; a run
// of the finished journal does no work.
func TestJournalKilled(t *testing.T) {
	t.Parallel()
	n, kills := 100, 3
	if !testing.Short() {
		// Enough inputs that 10 kills leave some for the last: commits
		// into one folder share their fsyncs, so a batch's journal lines
		// come in bursts (of up to 16 inputs with --jobs 2), and under
		// a loaded -race run the watcher below sees them late.
		n, kills = 1000, 10
	}
	e := newScaleEnv(t, n, 40000)
	args := []string{"decrypt", "--sk", "me.sec", "--files-from", "list", "--journal", "j", "--jobs", "2"}
	rng := rand.New(rand.NewPCG(1, 2))
	lines := func() int {
		b, _ := os.ReadFile(filepath.Join(e.dir, "j"))
		return bytes.Count(b, []byte("\n"))
	}
	landed := 0
	for k := range kills {
		// Killed at a random point: once this run has written from 2 to
		// 41 lines more to the journal (an input's start and its end),
		// watched closely, so that a fast worker has inputs left for
		// the kills after (the worst case: 10 kills of 20 inputs each,
		// and what a millisecond does, of 400).
		want := lines() + 2 + rng.IntN(40)
		c := e.cmd(t, args...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for lines() < want && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		c.Process.Kill()
		c.Wait()
		if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			// Under a loaded -race run this process may be off the CPU
			// long enough for a worker (not built with -race) to finish
			// what the kills left: it happened at the fifth, in CI.
			t.Logf("kill %d: the worker had finished already (%v), %d lines in the journal", k+1, c.ProcessState, lines())
			break
		}
		landed++
	}
	if landed < 3 {
		t.Fatalf("%d kills landed before the batch was done: the test would test little", landed)
	}
	kills = landed
	c := e.cmd(t, args...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("the run after %d kills: %v\n%s", kills, err, out)
	}
	e.checkOutputs(t)
	done, starts := journalLines(t, filepath.Join(e.dir, "j"))
	if len(done) != n {
		t.Errorf("%d inputs done in the journal, want %d", len(done), n)
	}
	redone := 0
	for in, k := range done {
		if k != 1 {
			t.Errorf("%s done %d times", in, k)
		}
		redone += starts[in] - 1
	}
	if redone > 2*kills { // at most the items under way (--jobs 2) at each kill
		t.Errorf("%d inputs started again, more than were under way at %d kills", redone, kills)
	}

	// Finished: again, nothing is decrypted.
	// (How fast that is, is a row of scripts/bench.sh.)
	c = e.cmd(t, append(args, "--json")...)
	out, err := c.Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, sum := records(t, string(out)); sum.OK != 0 || sum.DoneBefore != n || sum.BytesRead != 0 {
		t.Errorf("a finished journal run again: %+v", sum)
	}

	// The same journal for another command, or another key, is refused.
	if code, _, stderr := runAt(t, e.dir, "verify", "--sk", "me.sec", "--files-from", "list", "--journal", "j"); code != exitUsage || !strings.Contains(stderr, "journal of decrypt, not verify") {
		t.Errorf("another command's journal: exit %d\n%s", code, stderr)
	}
	runAt(t, e.dir, "keygen", "--sk", "other.sec", "--pk", "other.pub", "--nocrypt")
	if code, _, stderr := runAt(t, e.dir, "decrypt", "--sk", "other.sec", "--files-from", "list", "--journal", "j"); code != exitUsage || !strings.Contains(stderr, "other keys") {
		t.Errorf("another key's journal: exit %d\n%s", code, stderr)
	}
	// A removed output is done again; with --verify-journal, so is a
	// changed one, which is not replaced without --force.
	os.Remove(filepath.Join(e.dir, "in.d/f0001"))
	os.WriteFile(filepath.Join(e.dir, "in.d/f0002"), bytes.Repeat([]byte{'x'}, 40000), 0o600)
	code, stdout, stderr := runAt(t, e.dir, append(args, "--json", "--verify-journal")...)
	if _, sum := records(t, stdout); code != exitUsage || sum.OK != 1 || sum.Failed != 1 || sum.DoneBefore != n-2 || !strings.Contains(stderr, "output in.d/f0002 changed since the journal recorded it (its size or sha256 differs)") {
		t.Errorf("after removing and changing outputs: exit %d, %+v\n%s", code, sum, stderr)
	}
	code, stdout, stderr = runAt(t, e.dir, append(args, "--json", "--verify-journal", "--force")...)
	if _, sum := records(t, stdout); code != 0 || sum.OK != 1 || sum.DoneBefore != n-1 {
		t.Errorf("with --force: exit %d, %+v\n%s", code, sum, stderr)
	}
	e.checkOutputs(t)
}

// peakRSS polls the peak resident size (VmHWM, KiB) of the process pid
// until done is closed, and returns the last it read. (The Maxrss of
// wait4 will not do: it counts the memory of the test process, which the
// child shared until its exec.)
func peakRSS(pid int, done <-chan struct{}) int64 {
	var peak int64
	for {
		if b, err := vmHWM(pid); err == nil {
			peak = max(peak, b>>10)
		}
		select {
		case <-done:
			return peak
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// putMany stores n small objects PREFIX/oNNNNN.c4gh encrypted for sk, 8
// at a time, and returns their plaintexts by key.
func putMany(t *testing.T, e *s3env, prefix string, n int) map[string][]byte {
	t.Helper()
	plain := make(map[string][]byte, n)
	keys := make([]string, n)
	for i := range n {
		keys[i] = fmt.Sprintf("%so%05d.c4gh", prefix, i)
		plain[keys[i]] = randomData(1000, uint64(i))
	}
	work := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for k := range work {
				e.put(t, k, encryptBytes(t, plain[k], e.sk))
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	return plain
}

// rekeyShards rekeys the prefix in place with 4 worker processes, each
// with its shard and journal, and returns the peak RSS of each (KiB).
func rekeyShards(t *testing.T, e *s3env, prefix, journals string) []int64 {
	t.Helper()
	rss := make([]int64, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	bin := clitest.Binary(t) // here: t.Fatal only in the test's goroutine
	for i := range 4 {
		wg.Go(func() {
			c := exec.Command(bin, "reencrypt", "--sk", "me.sec", "--recipient_pk", "me.pub", "--recipient_pk", "new.pub",
				"--force", "-q", "--shard", fmt.Sprintf("%d/4", i), "--journal", fmt.Sprintf("%s%d", journals, i), url(prefix))
			c.Dir = e.dir
			if e.env != nil {
				c.Env = e.environ()
			}
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			if err := c.Start(); err != nil {
				errs[i] = err
				return
			}
			done := make(chan struct{})
			peak := make(chan int64)
			go func() { peak <- peakRSS(c.Process.Pid, done) }()
			if err := c.Wait(); err != nil {
				errs[i] = fmt.Errorf("shard %d/4: %v\n%s", i, err, out.String())
			}
			close(done)
			rss[i] = <-peak
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return rss
}

// checkRekeyed checks that every object opens with new.sec, and that the
// journals hold each exactly once, in its shard.
func checkRekeyed(t *testing.T, e *s3env, newSK *keys.SecretKey, plain map[string][]byte, journals string) {
	t.Helper()
	for k, p := range plain {
		sameBytes(t, k, decryptBytes(t, e.get(t, k), newSK), p)
	}
	seen := map[string]int{}
	for i := range 4 {
		done, _ := journalLines(t, filepath.Join(e.dir, fmt.Sprintf("%s%d", journals, i)))
		for in, n := range done {
			seen[in] += n
			if !(batch.Shard{I: uint64(i), N: 4}).Has(in) {
				t.Errorf("%s done by shard %d", in, i)
			}
		}
	}
	if len(seen) != len(plain) {
		t.Errorf("%d objects in the journals, want %d", len(seen), len(plain))
	}
	for in, n := range seen {
		if n != 1 {
			t.Errorf("%s rekeyed %d times", in, n)
		}
	}
}

// TestShardsS3: 4 worker processes rekey the same prefix of objects in
// place, each its shard: every object rekeyed exactly once; run again,
// nothing is rekeyed.
func TestShardsS3(t *testing.T) {
	n := clitest.Size(2000, 200)
	e := newS3EnvParallel(t, s3test.OnDisk()) // not with -short; listed while replaced
	newSK := e.keygen(t, "new")
	plain := putMany(t, e, "p/", n)
	rekeyShards(t, e, "p/", "j")
	checkRekeyed(t, e, newSK, plain, "j")
	etags := map[string]string{}
	for k := range plain {
		o, err := e.sdk.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		etags[k] = *o.ETag
	}
	rekeyShards(t, e, "p/", "j")
	for k := range plain {
		o, _ := e.sdk.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(k)})
		if *o.ETag != etags[k] {
			t.Errorf("%s rewritten by a run of a finished journal", k)
		}
	}
}

// TestRekeyPrefixRSS: a prefix of 10,000 objects (1,100 unless
// clitest.AtScale: still more than one listing page per shard) rekeyed in
// place by 4 shards takes no more memory in each worker than one of 100:
// the prefix is listed page by page as the objects are rekeyed.
func TestRekeyPrefixRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of objects: not with -short")
	}
	e := newS3EnvParallel(t, s3test.OnDisk()) // listed while replaced
	newSK := e.keygen(t, "new")
	small := putMany(t, e, "small/", 100)
	rssSmall := rekeyShards(t, e, "small/", "js")
	checkRekeyed(t, e, newSK, small, "js")
	n := clitest.Size(10000, 1100)
	big := putMany(t, e, "big/", n)
	start := time.Now()
	rssBig := rekeyShards(t, e, "big/", "jb")
	took := time.Since(start)
	checkRekeyed(t, e, newSK, big, "jb")
	t.Logf("%d objects rekeyed in place by 4 shards in %v: %.0f objects/s; peak RSS per worker %v KiB (100 objects: %v KiB)",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds(), rssBig, rssSmall)
	maxSmall := slices.Max(rssSmall)
	for i, r := range rssBig {
		if r > maxSmall+maxSmall/4+4096 {
			t.Errorf("shard %d: peak RSS %d KiB for %d objects, %d KiB for 100", i, r, n, maxSmall)
		}
	}
}
