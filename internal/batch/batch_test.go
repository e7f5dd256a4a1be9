package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

func names(t *testing.T, list string, nul bool) []string {
	t.Helper()
	var got []string
	for n, err := range ReadList(strings.NewReader(list), nul) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	return got
}

func TestReadList(t *testing.T) {
	if got, want := names(t, "a\nb c\n\n d\nlast", false), []string{"a", "b c", " d", "last"}; !slices.Equal(got, want) {
		t.Errorf("lines: %q, want %q", got, want)
	}
	if got, want := names(t, "a\nb\x00c\x00\x00", true), []string{"a\nb", "c"}; !slices.Equal(got, want) {
		t.Errorf("NUL: %q, want %q", got, want)
	}
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	var err error
	for _, e := range ReadList(strings.NewReader("a\n"+long+"\nb\n"), false) {
		if e != nil {
			err = e
		}
	}
	if errkind.Of(err) != errkind.Usage || !strings.Contains(err.Error(), "entry 2") {
		t.Errorf("a name of 200 KiB: %v, want a usage error for entry 2", err)
	}
	ok := strings.Repeat("y", 100<<10)
	if got := names(t, "a\n"+ok[:MaxName]+"\n", false); len(got) != 2 || got[1] != ok[:MaxName] {
		t.Errorf("a name of MaxName bytes across buffers was not read whole")
	}
}

func TestShard(t *testing.T) {
	// The hash of the documentation, as other tools compute it.
	if got := Hash("s3://archive/a/b.c4gh"); got != fnv1a("s3://archive/a/b.c4gh") {
		t.Errorf("Hash is not FNV-1a 64")
	}
	if Hash("") != 0xcbf29ce484222325 {
		t.Errorf("Hash of the empty name is not the FNV-1a offset basis")
	}
	const n = 4
	counts := make([]int, n)
	for i := range 2000 {
		name := fmt.Sprintf("file-%d.c4gh", i)
		takers := 0
		for s := range uint64(n) {
			if (Shard{I: s, N: n}).Has(name) {
				takers++
				counts[s]++
			}
		}
		if takers != 1 {
			t.Fatalf("%s is in %d shards", name, takers)
		}
	}
	for i, c := range counts {
		if c < 400 || c > 600 {
			t.Errorf("shard %d/%d has %d of 2000 inputs", i, n, c)
		}
	}
	for _, bad := range []string{"", "1", "4/4", "-1/4", "0/0", "a/b", "1/2/3"} {
		if _, err := ParseShard(bad); errkind.Of(err) != errkind.Usage {
			t.Errorf("ParseShard(%q): %v, want a usage error", bad, err)
		}
	}
	if s, err := ParseShard("3/4"); err != nil || s.String() != "3/4" {
		t.Errorf("ParseShard(3/4) = %v, %v", s, err)
	}
}

// fnv1a is FNV-1a 64 as the documentation of Hash writes it.
func fnv1a(s string) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, b := range []byte(s) {
		h = (h ^ uint64(b)) * 0x100000001b3
	}
	return h
}

func TestJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	bind := Binding{Command: "decrypt", Keys: []string{"k1"}}
	j, err := OpenJournal(path, bind)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start("a.c4gh", "a", "m1"); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(Entry{Input: "a.c4gh", Output: "a", Size: 3, SHA256: "ab"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Start("b.c4gh", "b", "m2"); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", fi.Mode().Perm())
	}

	// A line torn by a kill: dropped, and the journal goes on.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"done":"b.c4gh","out`)
	f.Close()
	j, err = OpenJournal(path, bind)
	if err != nil {
		t.Fatalf("a torn last line: %v", err)
	}
	if e, ok := j.Done("a.c4gh"); !ok || e.Size != 3 || e.SHA256 != "ab" {
		t.Errorf("Done(a) = %+v, %v", e, ok)
	}
	if _, ok := j.Done("b.c4gh"); ok {
		t.Errorf("b is done by a torn line")
	}
	started := func(in, out string) string {
		ok, mark := j.Started(in, out)
		return fmt.Sprint(ok, " ", mark)
	}
	if started("b.c4gh", "b") != "true m2" || started("b.c4gh", "other") != "false " || started("a.c4gh", "a") != "false " {
		t.Errorf("Started is wrong: %q, %q, %q", started("b.c4gh", "b"), started("b.c4gh", "other"), started("a.c4gh", "a"))
	}
	if err := j.Finish(Entry{Input: "b.c4gh", Output: "b", Size: 5}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte(`"out{`)) || !bytes.HasSuffix(data, []byte("}\n")) {
		t.Errorf("the torn line was not dropped:\n%s", data)
	}
	j, err = OpenJournal(path, bind)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := j.Done("b.c4gh"); !ok {
		t.Errorf("b not done after its line was written again")
	}
	j.Close()

	for _, other := range []Binding{{Command: "encrypt", Keys: []string{"k1"}}, {Command: "decrypt", Keys: []string{"k2"}}, {Command: "decrypt"}} {
		if _, err := OpenJournal(path, other); errkind.Of(err) != errkind.Usage {
			t.Errorf("journal of %+v opened for %+v: %v, want a usage error", bind, other, err)
		}
	}
	notJournal := filepath.Join(t.TempDir(), "x")
	os.WriteFile(notJournal, []byte("hello\n"), 0o600)
	if _, err := OpenJournal(notJournal, bind); errkind.Of(err) != errkind.Usage {
		t.Errorf("a file that is not a journal: %v", err)
	}
	if data, _ := os.ReadFile(notJournal); string(data) != "hello\n" {
		t.Errorf("a file that is not a journal was changed")
	}
}

// TestRunner checks the order of the texts, the counts, the worst exit
// code, and that a journal makes a second run skip what the first did.
func TestRunner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	var mu sync.Mutex
	did := map[string]int{}
	run := func(shard Shard, json bool) (Summary, string) {
		j, err := OpenJournal(path, Binding{Command: "x"})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		var out bytes.Buffer
		r := &Runner{Command: "x", Workers: 4, Shard: shard, Journal: j, Stdout: &out, JSON: json,
			Holds: func(Entry, bool) bool { return true },
			Code: func(err error) int {
				if errkind.Of(err) == errkind.Data {
					return 4
				}
				return 1
			},
			Report: func(Item, error) {},
			Do: func(it Item, resume bool, begin func() error) Outcome {
				if err := begin(); err != nil {
					return Outcome{Err: err}
				}
				mu.Lock()
				did[it.In]++
				mu.Unlock()
				switch it.In {
				case "bad3":
					return Outcome{Err: errkind.Wrap(errkind.Data, errors.New("damaged"))}
				case "bad7":
					return Outcome{Err: errors.New("io")}
				}
				return Outcome{Text: it.In + "\n", BytesOut: 1}
			},
		}
		items := func(yield func(Item) bool) {
			for i := range 100 {
				name := fmt.Sprint("f", i)
				if i == 3 || i == 7 {
					name = fmt.Sprint("bad", i)
				}
				if !yield(Item{In: name, Out: name + ".out"}) {
					return
				}
			}
		}
		s, err := r.Run(items)
		if err != nil {
			t.Fatal(err)
		}
		return s, out.String()
	}
	s, out := run(Shard{}, false)
	if s.OK != 98 || s.Failed != 2 || s.Exit != 4 || s.Inputs != 100 {
		t.Errorf("summary %+v", s)
	}
	var want strings.Builder
	for i := range 100 {
		if i != 3 && i != 7 {
			fmt.Fprintf(&want, "f%d\n", i)
		}
	}
	if out != want.String() {
		t.Errorf("texts out of order:\n%s", out)
	}
	s, _ = run(Shard{}, true)
	if s.OK != 0 || s.DoneBefore != 98 || s.Failed != 2 {
		t.Errorf("second run: %+v", s)
	}
	for name, n := range did {
		if n != 1 && !strings.HasPrefix(name, "bad") {
			t.Errorf("%s done %d times", name, n)
		}
	}
}

// TestRunnerRepeats: an input given twice, as a listing that repeats its
// keys gives it, or two inputs of one output, are never done at once; with
// a journal the later finds the earlier done.
func TestRunnerRepeats(t *testing.T) {
	j, err := OpenJournal(filepath.Join(t.TempDir(), "j"), Binding{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var (
		mu      sync.Mutex
		active  = map[string]int{}
		overlap []string
	)
	enter := func(names ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range names {
			if active[n]++; active[n] > 1 {
				overlap = append(overlap, n)
			}
		}
	}
	leave := func(names ...string) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range names {
			active[n]--
		}
	}
	r := &Runner{Command: "x", Workers: 8, Journal: j, Stdout: io.Discard,
		Holds:  func(Entry, bool) bool { return true },
		Code:   func(error) int { return 1 },
		Report: func(Item, error) {},
		Do: func(it Item, resume bool, begin func() error) Outcome {
			if err := begin(); err != nil {
				return Outcome{Err: err}
			}
			enter("in "+it.In, "out "+it.Out)
			time.Sleep(2 * time.Millisecond)
			leave("in "+it.In, "out "+it.Out)
			return Outcome{BytesOut: 1}
		},
	}
	items := func(yield func(Item) bool) {
		for i := range 50 {
			// Each key twice in a row, as in a page that repeats
			// them, and every tenth output shared by two inputs.
			in := fmt.Sprint("k", i)
			if !yield(Item{In: in, Out: in + ".out"}) || !yield(Item{In: in, Out: in + ".out"}) {
				return
			}
			if i%10 == 0 && !yield(Item{In: in + "-other", Out: in + ".out"}) {
				return
			}
		}
	}
	s, err := r.Run(items)
	if err != nil {
		t.Fatal(err)
	}
	if len(overlap) > 0 {
		t.Errorf("done at once: %v", overlap)
	}
	if s.Inputs != 105 || s.OK != 55 || s.DoneBefore != 50 || s.Failed != 0 {
		t.Errorf("summary %+v, want 105 inputs: 55 done, 50 done before", s)
	}
}

// TestJournalInUse: a second run on a journal that a run has open is
// refused, and takes it once that run has closed it.
func TestJournalInUse(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	path := filepath.Join(t.TempDir(), "j")
	j, err := OpenJournal(path, Binding{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start("a", "a.out", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenJournal(path, Binding{Command: "x"}); err == nil || !strings.Contains(err.Error(), "in use by another run") {
		t.Errorf("a journal in use: %v", err)
	}
	j.Close()
	j2, err := OpenJournal(path, Binding{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if ok, _ := j2.Started("a", "a.out"); !ok {
		t.Error("the second run lost the first's start line")
	}
}

// TestJournalNamesNotUTF8: a name that is not UTF-8 comes back from the
// journal as it went in, and from a record, with its readable form beside.
func TestJournalNamesNotUTF8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	in, out := "bad\xffutf", "d/bad\xffutf.c4gh"
	other := "bad\xfeutf" // the same readable form
	j, err := OpenJournal(path, Binding{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Start(other, "o", ""); err != nil {
		t.Fatal(err)
	}
	if err := j.Finish(Entry{Input: in, Output: out, Size: 3}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j, err = OpenJournal(path, Binding{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if e, ok := j.Done(in); !ok || e.Output != out {
		t.Errorf("Done(%q) = %+v, %v", in, e, ok)
	}
	if _, ok := j.Done(other); ok || !startedOK(j, other, "o") || startedOK(j, in, out) {
		t.Error("two names of one readable form were taken for one")
	}
	var b bytes.Buffer
	writeJSON(&b, Record{Name: in, Output: out, Status: "ok"})
	var r Record
	if err := json.Unmarshal(b.Bytes(), &r); err != nil || r.Name != in || r.Output != out || !strings.Contains(b.String(), `"name":"bad\ufffdutf"`) {
		t.Errorf("record %s read back as %+v, %v", b.String(), r, err)
	}
}

// startedOK is the first answer of j.Started.
func startedOK(j *Journal, in, out string) bool {
	ok, _ := j.Started(in, out)
	return ok
}
