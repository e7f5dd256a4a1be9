package batch

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// Item is one input of a batch and where its result goes ("" for none).
// Err, when set, is reported instead of processing the input.
type Item struct {
	In, Out string
	Err     error
	Listed  *Identity // the input as its listing gave it, if it was listed
	// Mark, with a journal, is what the local file Out is to be marked
	// with (outfile.Options.Mark), recorded by its start line; Killed is
	// the mark that the start line of a run that died there recorded:
	// a file at Out that holds it is that run's (outfile.Marked), and
	// any other is not, and is not replaced without --force.
	Mark, Killed string
}

// Outcome is what processing one input gave.
type Outcome struct {
	Text   string // lines for stdout, printed in the order of the inputs (not with JSON)
	Status string // "ok" when empty
	// BytesRead and BytesOut count what was read and written.
	BytesRead, BytesOut int64
	// The sums of the plaintext and of the encrypted side, when known.
	PlainSHA256, CryptSHA256 string
	// OutSHA256 is the sum of the output as written (one of the above).
	OutSHA256 string
	// The source as it was read: its ETag (objects), its size, its
	// modification time (files).
	ETag        string
	SourceSize  int64
	SourceMtime time.Time
	Err         error
}

// doneBefore is the status of an input that the journal has done.
const doneBefore = "done-before"

// Runner runs a batch: the inputs of its shard, at most Workers at once,
// each done by Do unless its journal has it done already.
type Runner struct {
	Command       string
	Workers       int
	Shard         Shard
	Journal       *Journal // nil for none
	VerifyJournal bool
	// Stdout receives the Text of each input, or with JSON the records.
	Stdout io.Writer
	JSON   bool
	// Results names what Stdout receives, for its errors ("results"
	// when empty).
	Results string
	// Shown, when set, is how the records name an input or an output (a
	// URL without the query that is a presigned URL's credential); the
	// journal keeps names as they are.
	Shown func(name string) string
	// Holds reports whether a done entry of the journal still holds: its
	// output there with its size, and with verify its sum (for an entry
	// without output, its source as it was).
	Holds func(e Entry, verify bool) bool
	// Changed, when set, reports whether the input of a done entry
	// changed since (see [Entry.SourceChanged]): it is done again.
	// listed is the input as its listing gave it, nil if unknown.
	Changed func(e Entry, listed *Identity) bool
	// Do processes one input. resume is set when the journal has it
	// started and not done: an output found there was written by that
	// run. Do calls begin before it makes its output, which records the
	// start in the journal.
	Do func(it Item, resume bool, begin func() error) Outcome
	// Report prints the failure of an input on stderr.
	Report func(it Item, err error)
	// Code is the exit code of an error.
	Code func(err error) int
	// Empty, when set, is the error of a batch that lists no input at
	// all: its summary has its exit code, and a journal that the run
	// made is removed.
	Empty error
	// Stop, when set, reports an error once the batch is to start no
	// more inputs (a signal came): Run returns it, after the inputs
	// under way, and prints no summary.
	Stop func() error
}

// Run runs the batch of items. The summary counts what was done; the
// error is one that ends the batch early (stdout or the journal could
// not be written), after the inputs under way.
func (r *Runner) Run(items iter.Seq[Item]) (Summary, error) {
	begin := time.Now()
	s := Summary{Summary: true, Command: r.Command, Shard: r.Shard.String()}
	var (
		mu      sync.Mutex // guards s, fatal, the text queue and the writes to Stdout
		fatal   error
		next    int                // the sequence number whose text is printed next
		pending = map[int]string{} // texts of the inputs done ahead of next
	)
	stopped := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if fatal == nil && r.Stop != nil {
			fatal = r.Stop()
		}
		return fatal != nil
	}
	fail := func(err error) {
		if fatal == nil {
			fatal = err
		}
	}
	// emit prints the texts of the inputs done, in their order, up to
	// the first that is not.
	emit := func(seq int, text string) {
		pending[seq] = text
		for {
			text, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if text == "" || fatal != nil {
				continue
			}
			if _, err := io.WriteString(r.Stdout, text); err != nil {
				fail(fmt.Errorf("failed to write the %s: %w", cmp.Or(r.Results, "results"), err))
			}
		}
	}
	finish := func(seq int, it Item, o Outcome, started bool) {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			// The batch stopped before this input: nothing to say.
			s.Inputs--
			emit(seq, "")
			return
		}
		if o.Err != nil {
			o.BytesOut = 0 // nothing committed
		}
		rec := Record{Name: r.shown(it.In), Output: r.shown(it.Out), Status: o.Status, BytesRead: o.BytesRead, BytesOut: o.BytesOut,
			PlainSHA256: o.PlainSHA256, CryptSHA256: o.CryptSHA256}
		switch {
		case o.Err != nil:
			code := max(r.Code(o.Err), 1)
			if s.worst == nil || code > s.Exit {
				s.worst = o.Err
			}
			s.Failed++
			s.Exit = max(s.Exit, code)
			rec.Status, rec.Exit, rec.Class, rec.Error = "failed", code, Class(code), o.Err.Error()
			rec.Output = ""
			r.Report(it, o.Err)
		case o.Status == doneBefore:
			s.DoneBefore++
		default:
			s.OK++
			if rec.Status == "" {
				rec.Status = "ok"
			}
		}
		s.BytesRead += o.BytesRead
		s.BytesOut += o.BytesOut
		if r.JSON {
			if err := writeJSON(r.Stdout, rec); err != nil {
				fail(fmt.Errorf("failed to write the records: %w", err))
			}
			emit(seq, "")
			return
		}
		emit(seq, o.Text)
	}
	journalFailed := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		fail(err)
	}

	type job struct {
		seq  int
		it   Item
		done chan struct{} // closed when the job ends
	}
	// An input given twice (a listing that repeats a key, a name given
	// as itself and under its prefix), or two inputs of one output, are
	// never done at once: the later waits for the earlier, whose result
	// it then meets (done in the journal, an output that exists) instead
	// of racing it. Only the jobs under way are kept.
	var (
		busyMu sync.Mutex
		busy   = map[string]chan struct{}{}
	)
	names := func(it Item) []string {
		if it.Out == "" {
			return []string{"in\x00" + it.In}
		}
		return []string{"in\x00" + it.In, "out\x00" + it.Out}
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range max(r.Workers, 1) {
		wg.Go(func() {
			for j := range work {
				if stopped() {
					finish(j.seq, j.it, Outcome{}, false)
				} else {
					finish(j.seq, j.it, r.one(j.it, journalFailed), true)
				}
				busyMu.Lock()
				for _, n := range names(j.it) {
					if busy[n] == j.done {
						delete(busy, n)
					}
				}
				busyMu.Unlock()
				close(j.done)
			}
		})
	}
	seq := 0
	for it := range items {
		s.Listed++
		if !r.Shard.Has(it.In) {
			continue
		}
		if stopped() {
			break
		}
		mu.Lock()
		s.Inputs++
		mu.Unlock()
		j := job{seq, it, make(chan struct{})}
		for _, n := range names(it) {
			busyMu.Lock()
			earlier := busy[n]
			busyMu.Unlock()
			if earlier != nil {
				<-earlier
			}
		}
		busyMu.Lock()
		for _, n := range names(it) {
			busy[n] = j.done
		}
		busyMu.Unlock()
		work <- j
		seq++
	}
	close(work)
	wg.Wait()
	s.Seconds = time.Since(begin).Seconds()
	empty := fatal == nil && s.Listed == 0 && r.Empty != nil
	if empty {
		s.Exit = max(r.Code(r.Empty), 1)
		if r.Journal != nil {
			r.Journal.discard()
		}
	}
	if r.JSON && fatal == nil {
		if err := writeJSON(r.Stdout, s); err != nil {
			fatal = fmt.Errorf("failed to write the records: %w", err)
		}
	}
	if empty && fatal == nil {
		fatal = r.Empty
	}
	return s, fatal
}

// shown is name as the records show it.
func (r *Runner) shown(name string) string {
	if r.Shown == nil || name == "" {
		return name
	}
	return r.Shown(name)
}

// one processes it, or finds it done in the journal.
func (r *Runner) one(it Item, journalFailed func(error)) Outcome {
	if it.Err != nil {
		return Outcome{Err: it.Err}
	}
	j := r.Journal
	if j == nil {
		return r.Do(it, false, func() error { return nil })
	}
	e, done := j.Done(it.In)
	done = done && e.Output == it.Out
	// The input first: a stat, or nothing for a listed object, where the
	// output's check may read it whole (--verify-journal).
	changed := done && r.Changed != nil && r.Changed(e, it.Listed)
	if done && !changed && r.Holds(e, r.VerifyJournal) {
		return Outcome{Status: doneBefore}
	}
	resume, killed := j.Started(it.In, it.Out)
	it.Killed = killed
	if it.Out != "" && !objstore.IsURL(it.Out) {
		// A run that takes over from a killed one keeps its mark: the
		// file that run committed, if it did, is known by it, and so is
		// the one this run commits, should it be killed too.
		it.Mark = killed
		if it.Mark == "" {
			it.Mark = newMark()
		}
	}
	o := r.Do(it, resume, func() error {
		if it.Out == "" || resume && it.Mark == killed {
			return nil // started already, with this mark (or none: an object)
		}
		return j.Start(it.In, it.Out, it.Mark)
	})
	switch {
	case !done || !errors.Is(o.Err, outfile.ErrExists) && !errors.Is(o.Err, objstore.ErrExists):
	case changed:
		// Done, but of another version of the input than it is now.
		o.Err = errkind.WithHint(errkind.Errorf(errkind.Usage, "input %s changed since the journal recorded it done (its size, time or ETag differs)", outfile.QuoteName(it.In)),
			"use --force to make its output %s again", outfile.QuoteName(it.Out))
	default:
		// Done, and its output is there, but not as the journal has it.
		what := "size"
		if r.VerifyJournal {
			what = "size or sha256"
		}
		o.Err = errkind.WithHint(errkind.Errorf(errkind.Usage, "output %s changed since the journal recorded it (its %s differs)", outfile.QuoteName(it.Out), what),
			"use --force to make it again")
	}
	if o.Err != nil {
		return o
	}
	err := j.Finish(Entry{Input: it.In, Output: it.Out, Size: o.BytesOut, SHA256: o.OutSHA256,
		ETag: o.ETag, SourceSize: o.SourceSize, SourceMtime: o.SourceMtime})
	if err != nil {
		journalFailed(err)
		o.Err = err
		return o
	}
	if it.Mark != "" {
		// Done: the journal knows the output by its size and sum now.
		// (Only this tool writes the attribute: no need to read it first.)
		outfile.Unmark(it.Out)
	}
	return o
}

// newMark returns a mark for an output (Item.Mark): 64 random bits.
func newMark() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
