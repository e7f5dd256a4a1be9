package cli

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"iter"

	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// Batches at archive scale (internal/batch): inputs from a list, a
// worker's shard of them, a journal of those done, JSON records.

// scaleHelp is the paragraph of the batch commands' descriptions about
// the flags of scaleOptions.
const scaleHelp = "\n\n" +
	"--files-from LIST reads more FILE arguments from LIST (- for stdin), one a\n" +
	"line (NUL-separated with -0); prefixes and lists are processed as they are\n" +
	"listed. --shard I/N takes only the inputs whose FNV-1a 64 hash of the name\n" +
	"(as given or listed) is I modulo N. --journal FILE records each input done\n" +
	"(JSON lines, fsynced) and skips, when run again, those whose output is still\n" +
	"there with its size (and sha256, with --verify-journal). --json prints one\n" +
	"JSON object a line per input, and a summary, on stdout. Two inputs that\n" +
	"would be written to one output are refused (exit 2)."

// verifyScaleHelp is scaleHelp for verify, which writes no output: its
// journal skips the inputs unchanged since they were verified.
const verifyScaleHelp = "\n\n" +
	"--files-from LIST reads more FILE arguments from LIST (- for stdin), one a\n" +
	"line (NUL-separated with -0); prefixes and lists are processed as they are\n" +
	"listed. --shard I/N takes only the inputs whose FNV-1a 64 hash of the name\n" +
	"(as given or listed) is I modulo N. --journal FILE records each input that\n" +
	"passed (JSON lines, fsynced) and skips, when run again, those whose size and\n" +
	"time (an object's ETag) are as they were then. --json prints one JSON object\n" +
	"a line per input, and a summary, on stdout."

// scaleOptions are the flags of a batch that runs at archive scale.
type scaleOptions struct {
	FilesFrom     string // --files-from
	Null          bool   // -0: the list is NUL-separated
	Shard         string // --shard I/N
	Journal       string // --journal
	VerifyJournal bool   // --verify-journal
	JSON          bool   // --json
}

// flags returns the flags; full is false for inspect, which writes
// nothing to journal and has a --json of its own: it takes only the
// list and the shard.
func (s *scaleOptions) flags(full bool) []cli.Flag {
	f := []cli.Flag{
		&cli.StringFlag{Name: "files-from", Usage: "read more inputs from `LIST`, one a line (- for stdin)", Destination: &s.FilesFrom},
		&cli.BoolFlag{Name: "null", Aliases: []string{"0"}, Usage: "the names of --files-from end with NUL, not a newline (as find -print0 writes)", Destination: &s.Null},
		&cli.StringFlag{Name: "shard", Usage: "take only the inputs of shard `I/N` (FNV-1a 64 of the name, modulo N)", Destination: &s.Shard},
	}
	if full {
		f = append(f,
			&cli.StringFlag{Name: "journal", Usage: "record the inputs done in `FILE`, and skip those it has done", Destination: &s.Journal},
			&cli.BoolFlag{Name: "verify-journal", Usage: "skip an input of the journal only if its output still has the sha256 recorded", Destination: &s.VerifyJournal},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON object a line for each input, and a summary, on stdout", Destination: &s.JSON})
	}
	return f
}

// batch reports whether the flags make a batch of a command given no
// FILE arguments.
func (s scaleOptions) batch() bool { return s.FilesFrom != "" }

// used reports whether any of the flags is given.
func (s scaleOptions) used() bool {
	return s.FilesFrom != "" || s.Shard != "" || s.Journal != "" || s.JSON
}

// check refuses the flags of a batch on a run of one input.
func (s scaleOptions) check(batch bool) error {
	if s.Null && s.FilesFrom == "" {
		return usagef("-0 needs --files-from")
	}
	if s.VerifyJournal && s.Journal == "" {
		return usagef("--verify-journal needs --journal")
	}
	if batch {
		return nil
	}
	for _, f := range []given{{"shard", s.Shard != ""}, {"journal", s.Journal != ""}, {"json", s.JSON}} {
		if f.set {
			return withHint(usagef("--%s is for batches", f.name), "give FILE arguments or --files-from LIST")
		}
	}
	return nil
}

// runner returns a runner of the batch with the shard and journal of s,
// bound to the keys; close closes the journal.
func (s scaleOptions) runner(e *env, keys []string, cut ...string) (r *batch.Runner, close func(), err error) {
	r = &batch.Runner{Command: e.command, Stdout: e.stdout, JSON: s.JSON, VerifyJournal: s.VerifyJournal, Shown: shownName,
		Holds: func(en batch.Entry, verify bool) bool { return e.holds(en, verify) },
		Changed: func(en batch.Entry, listed *batch.Identity) bool {
			return en.SourceChanged(func(name string) (identity, error) {
				if listed != nil {
					return *listed, nil
				}
				return e.identify(name)
			})
		},
		Code: exitCode,
		Report: func(it batch.Item, err error) {
			report(e.stderr, fmt.Errorf("%s: %w", quoteName(shownName(it.In)), err))
		},
	}
	if s.Shard != "" {
		if r.Shard, err = batch.ParseShard(s.Shard); err != nil {
			return nil, nil, err
		}
	}
	// stdout may not go into the journal or the list (… --json >> J).
	list := s.FilesFrom
	if list == "-" {
		list = ""
	}
	if err := outfile.Distinct(e.stdout, nil, []string{"--journal", s.Journal, "--files-from", list}); err != nil {
		return nil, nil, err
	}
	r.Empty = usagef("nothing to %s", e.command)
	close = func() {}
	if s.Journal != "" {
		j, err := batch.OpenJournal(s.Journal, batch.Binding{Command: e.command, Keys: keys, Cut: cut})
		if err != nil {
			return nil, nil, err
		}
		r.Journal, close = j, func() { j.Close() }
	}
	return r, close, nil
}

// publicNames names keys in the binding of a journal: the base64 of each
// public key.
func publicNames(pks ...keys.PublicKey) []string {
	var out []string
	for _, pk := range pks {
		out = append(out, base64.StdEncoding.EncodeToString(pk[:]))
	}
	return out
}

// secretNames names secret keys by their public keys.
func secretNames(sks ...readerKey) []string {
	var out []string
	for _, sk := range sks {
		if sk == nil {
			continue
		}
		if pk, err := readerPublic(sk); err == nil {
			out = append(out, publicNames(pk)...)
		}
	}
	return out
}

// summarize prints the summary line of a batch on stderr (unless -q) and
// returns the error that ends it.
func summarize(e *env, s batch.Summary, used bool) error {
	if used && !e.quiet {
		shard := ""
		if s.Shard != "" {
			shard = fmt.Sprintf("shard %s: %d of %d inputs", s.Shard, s.Inputs, s.Listed)
		} else {
			shard = plural(int64(s.Inputs), "input")
		}
		fmt.Fprintf(e.stderr, "crypt4gh: %s: %s: %d ok, %d done before, %d failed (%.1f s)\n",
			e.command, shard, s.OK, s.DoneBefore, s.Failed, s.Seconds)
	}
	if s.Failed > 0 {
		return batchError{failed: s.Failed, total: s.Inputs, code: max(s.Exit, exitError), shard: s.Shard}
	}
	return nil
}

// holds reports whether the entry of a journal still holds.
func (e *env) holds(en batch.Entry, verify bool) bool { return en.Holds(verify, e.identify, e.sum) }

// identity is what tells a file or object from its other versions.
type identity = batch.Identity

// identify returns the identity of the file or object name as it is now.
func (e *env) identify(name string) (identity, error) {
	if !objstore.IsURL(name) {
		return batch.StatFile(name)
	}
	o, err := e.openObject(name)
	if err != nil {
		return identity{}, err
	}
	return identity{Size: o.Size(), ETag: o.ETag()}, nil
}

// sum returns the sha256 of the file or object name.
func (e *env) sum(name string) (string, error) {
	in, err := e.openSource(name)
	if err != nil {
		return "", err
	}
	defer in.Close()
	h := sha256.New()
	if _, err := io.Copy(h, in); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sources yields the inputs of a batch: each of args, then each name of
// --files-from, a prefix standing for the objects under it whose keys
// keep accepts, listed page by page as the batch runs.
func (e *env) sources(args []string, s scaleOptions, keep func(key string) bool) iter.Seq[source] {
	return e.inputs(args, s, keep).All()
}

// inputs are the inputs of a batch, as sources says.
func (e *env) inputs(args []string, s scaleOptions, keep func(key string) bool) batch.Inputs {
	return batch.Inputs{Args: args, List: s.FilesFrom, Null: s.Null, Stdin: e.stdin, Keep: keep, Warn: e.warnf,
		Objects: func(loc objstore.Location) (iter.Seq2[objstore.ObjectInfo, error], error) {
			st, err := e.store(loc)
			if err != nil {
				return nil, err
			}
			return st.List(e.ctx, loc), nil
		}}
}

// streamed reports whether the inputs of a batch are listed as it runs
// (a list, or a prefix), rather than known before it starts.
func streamed(args []string, s scaleOptions) bool {
	return batch.Inputs{Args: args, List: s.FilesFrom}.Streamed()
}

// checksumJSON refuses --checksum with --json: the records take stdout,
// and hold the sums.
func checksumJSON(checksum bool, s scaleOptions) error {
	if checksum && s.JSON {
		return withHint(usagef("--checksum cannot be used with --json"), "the JSON records hold the sums: plaintext_sha256, encrypted_sha256")
	}
	return nil
}
