package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
)

// A journal is a file of JSON lines, appended to and fsynced line by line:
//
//	{"journal":"crypt4gh","version":1,"command":"decrypt","keys":["…"]}
//	{"start":"a.c4gh","output":"a"}
//	{"done":"a.c4gh","output":"a","size":123,"sha256":"…","source_size":150,"source_mtime":"…"}
//
// The first line binds the journal to the command and the keys it ran
// with (public keys, base64), and for a command that keeps part of each
// input (rearrange, splice) to what it keeps, so that a journal of
// another command, key or cut is refused. A "start" line is written before the output is made (when
// it did not exist), a "done" line once it is committed: an output, or a
// temporary file of it, that exists for a start without its done was
// written by the run that died there, and may be replaced by the next. A last line cut short (the
// worker killed while writing it) is dropped when the journal is opened.

// Binding is what the first line of a journal binds it to.
type Binding struct {
	Command string   `json:"command"`
	Keys    []string `json:"keys,omitempty"`
	// Cut is what the command keeps of each input, in order (its
	// ranges or regions), for the commands that keep a part.
	Cut []string `json:"cut,omitempty"`
}

// Entry is an input done: its output (none for verify and inspect) with
// its size and sha256, and the source as it was read.
type Entry struct {
	Input       string    `json:"done,omitempty"`
	Output      string    `json:"output,omitempty"`
	Size        int64     `json:"size,omitempty"`
	SHA256      string    `json:"sha256,omitempty"`
	ETag        string    `json:"etag,omitempty"`
	SourceSize  int64     `json:"source_size,omitempty"`
	SourceMtime time.Time `json:"source_mtime,omitzero"`
}

// line is any line of a journal.
type line struct {
	Journal string   `json:"journal,omitempty"`
	Version int      `json:"version,omitempty"`
	Command string   `json:"command,omitempty"`
	Keys    []string `json:"keys,omitempty"`
	Cut     []string `json:"cut,omitempty"`
	Start   string   `json:"start,omitempty"`
	// Mark, on a start line, is what the output is marked with (see
	// Item.Mark); older journals have none.
	Mark string `json:"mark,omitempty"`
	Entry
	Written
}

// Written is what a start line of a rewrite in place records of what it
// is about to commit, so that the next run can tell, if the run died
// before its done line, whether the commit landed: the new header's
// sha256 and length, and the version it replaces, if its store keeps
// versions.
type Written struct {
	HeaderSHA256 string `json:"header_sha256,omitempty"`
	HeaderSize   int64  `json:"header_size,omitempty"`
	Replaces     string `json:"replaces_version,omitempty"`
}

const journalVersion = 1

// Journal is an open journal. It holds in memory the name of each input
// done and where its line is, not the line: an entry is read again from
// the file when it is asked for.
type Journal struct {
	path    string
	mu      sync.Mutex
	f       *os.File
	end     int64              // the length of the complete lines
	done    map[string]span    // input → its last done line
	started map[string]string  // input → output, for starts without their done
	marks   map[string]string  // input → the mark of its start without done
	written map[string]Written // input → what its start line said it writes
	made    int64              // the length of a journal this run made, 0 for one it found
}

// span is where a line is in the journal's file.
type span struct {
	off int64
	n   int32
}

// OpenJournal opens the journal at path, made when missing, for a run
// bound to b. A journal bound to another command or other keys, or one
// that is not a journal, is refused (a usage error).
func OpenJournal(path string, b Binding) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("failed to open journal: %w", err)
	}
	if err := outfile.Lock(f); errors.Is(err, outfile.ErrLocked) {
		// Another run has it (a job started again while the first still
		// runs): it would take that run's outputs under way for the
		// leftovers of a run that died, and remove them.
		f.Close()
		return nil, fmt.Errorf("journal %s is in use by another run", path)
	} else if err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to lock journal: %w", err)
	}
	j := &Journal{path: path, f: f, done: map[string]span{}, started: map[string]string{}, marks: map[string]string{}, written: map[string]Written{}}
	if err := j.load(b); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

func (j *Journal) refuse(format string, args ...any) error {
	return errkind.Wrap(errkind.Usage, fmt.Errorf("journal %s: %s", j.path, fmt.Sprintf(format, args...)))
}

// load reads the journal, drops a torn last line, and writes the binding
// line to a new journal.
func (j *Journal) load(b Binding) error {
	b.Keys = slices.Sorted(slices.Values(b.Keys))
	br := bufio.NewReader(j.f)
	var good int64 // the length of the complete lines
	n := 0
	for {
		raw, err := br.ReadBytes('\n')
		if err == io.EOF {
			break // raw, if any, is a torn last line: dropped below
		}
		if err != nil {
			return fmt.Errorf("failed to read journal: %w", err)
		}
		n++
		var l line
		if jerr := json.Unmarshal(bytes.TrimSuffix(raw, []byte("\n")), &l); jerr != nil {
			return j.refuse("line %d is not a journal line", n)
		}
		if n == 1 {
			if l.Journal != "crypt4gh" {
				return j.refuse("not a crypt4gh journal")
			}
			if l.Version != journalVersion {
				return j.refuse("version %d, not %d", l.Version, journalVersion)
			}
			if l.Command != b.Command {
				return j.refuse("it is the journal of %s, not %s", l.Command, b.Command)
			}
			if !slices.Equal(slices.Sorted(slices.Values(l.Keys)), b.Keys) {
				return j.refuse("it was written with other keys")
			}
			if !slices.Equal(l.Cut, b.Cut) {
				return j.refuse("it was written for other ranges or regions (%s)", describeCut(l.Cut))
			}
		} else {
			switch {
			case l.Start != "":
				j.started[l.Start] = l.Output
				j.marks[l.Start] = l.Mark
				if l.Written != (Written{}) {
					j.written[l.Start] = l.Written
				} else {
					delete(j.written, l.Start)
				}
			case l.Input != "":
				j.done[l.Input] = span{good, int32(len(raw))}
				delete(j.started, l.Input)
				delete(j.marks, l.Input)
				delete(j.written, l.Input)
			default:
				return j.refuse("line %d is not a journal line", n)
			}
		}
		good += int64(len(raw))
	}
	if err := j.f.Truncate(good); err != nil {
		return fmt.Errorf("failed to repair journal: %w", err)
	}
	if _, err := j.f.Seek(good, io.SeekStart); err != nil {
		return fmt.Errorf("failed to read journal: %w", err)
	}
	j.end = good
	if n == 0 {
		err := j.add(line{Journal: "crypt4gh", Version: journalVersion, Command: b.Command, Keys: b.Keys, Cut: b.Cut}, func(span) {})
		j.made = j.end
		return err
	}
	return nil
}

// discard removes a journal that this run made and wrote nothing in but
// its first line: what a batch that found no input leaves no trace of.
func (j *Journal) discard() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.made > 0 && j.end == j.made {
		os.Remove(j.path)
	}
}

// describeCut names the cut of a journal in a message.
func describeCut(cut []string) string {
	if len(cut) == 0 {
		return "none recorded"
	}
	return strings.Join(cut, " ")
}

// sync syncs the journal to the disk.
func (j *Journal) sync() error {
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("failed to write journal: %w", err)
	}
	return nil
}

// add appends l, then syncs it outside the lock, so that the lines that
// workers add at once are synced together; note records it, at its
// place in the file, once synced.
func (j *Journal) add(l line, note func(at span)) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	j.mu.Lock()
	at := span{j.end, int32(len(b))}
	_, err = j.f.Write(b)
	j.end += int64(len(b))
	j.mu.Unlock()
	if err != nil {
		return fmt.Errorf("failed to write journal: %w", err)
	}
	if err := j.sync(); err != nil {
		return err
	}
	j.mu.Lock()
	note(at)
	j.mu.Unlock()
	return nil
}

// Done returns the last entry of input, if it is done.
func (j *Journal) Done(input string) (Entry, bool) {
	j.mu.Lock()
	at, ok := j.done[input]
	j.mu.Unlock()
	if !ok {
		return Entry{}, false
	}
	b := make([]byte, at.n)
	if _, err := j.f.ReadAt(b, at.off); err != nil {
		return Entry{}, false // unreadable: the input is done again
	}
	var l line
	if json.Unmarshal(b, &l) != nil || l.Input != input {
		return Entry{}, false
	}
	return l.Entry, true
}

// Started reports whether input was started for output and not done,
// and the mark its start line recorded for the output, if any: a file
// found there is what that run wrote only if it holds the mark.
func (j *Journal) Started(input, output string) (bool, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out, ok := j.started[input]
	if !ok || out != output {
		return false, ""
	}
	return true, j.marks[input]
}

// Start records that the output of input is opened, to be marked with
// mark ("" for none: an object).
func (j *Journal) Start(input, output, mark string) error {
	return j.add(line{Start: input, Mark: mark, Entry: Entry{Output: output}}, func(span) {
		j.started[input] = output
		j.marks[input] = mark
		delete(j.written, input)
	})
}

// StartWriting records that input is about to be rewritten in place with
// w, before the commit.
func (j *Journal) StartWriting(input string, w Written) error {
	return j.add(line{Start: input, Entry: Entry{Output: input}, Written: w}, func(span) {
		j.started[input] = input
		j.marks[input] = ""
		j.written[input] = w
	})
}

// Writing returns what the start line of input, without its done line,
// said that it was about to write in place.
func (j *Journal) Writing(input string) (Written, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	w, ok := j.written[input]
	return w, ok
}

// Finish records the entry e, of an input done.
func (j *Journal) Finish(e Entry) error {
	if e.Input == "" {
		return errors.New("journal entry without input")
	}
	return j.add(line{Entry: e}, func(at span) {
		j.done[e.Input] = at
		delete(j.started, e.Input)
		delete(j.marks, e.Input)
		delete(j.written, e.Input)
	})
}

// Close closes the journal's file.
func (j *Journal) Close() error { return j.f.Close() }

// Identity is what tells a file or object from its other versions.
type Identity struct {
	Size    int64
	ETag    string    // of an object
	ModTime time.Time // of a file
}

// SourceChanged reports whether the input of e, still there, is not the
// version that the entry recorded: another size, ETag (an object) or
// modification time (a file). An input that is gone tells nothing, nor
// does an entry without output or whose output is its input (rekeyed in
// place: the input is the output now).
func (e Entry) SourceChanged(stat func(string) (Identity, error)) bool {
	if e.Output == "" || e.Output == e.Input {
		return false
	}
	id, err := stat(e.Input)
	switch {
	case err != nil:
		return false
	case id.Size != e.SourceSize:
		return true
	case e.ETag != "" && id.ETag != "" && id.ETag != e.ETag:
		return true
	}
	return !e.SourceMtime.IsZero() && !id.ModTime.IsZero() && !id.ModTime.Equal(e.SourceMtime)
}

// StatFile returns the identity of the regular file name.
func StatFile(name string) (Identity, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return Identity{}, err
	}
	if !fi.Mode().IsRegular() {
		return Identity{}, errors.New("not a regular file")
	}
	return Identity{Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Holds reports whether the entry e still holds: its output there with
// the size recorded (and with verify its sha256, when recorded), or, for
// an entry without output, its source as it was. stat and sum give the
// identity and the sha256 (hex) of a file or object.
func (e Entry) Holds(verify bool, stat func(string) (Identity, error), sum func(string) (string, error)) bool {
	name, size := e.Output, e.Size
	if name == "" {
		name, size = e.Input, e.SourceSize
	}
	id, err := stat(name)
	if err != nil || id.Size != size {
		return false
	}
	if e.Output == "" {
		return id.ETag == e.ETag && (e.SourceMtime.IsZero() || id.ModTime.Equal(e.SourceMtime))
	}
	if !verify || e.SHA256 == "" {
		return true
	}
	got, err := sum(name)
	return err == nil && got == e.SHA256
}
