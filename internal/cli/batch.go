package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/progress"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// Batch mode: "crypt4gh encrypt --recipient_pk P FILE…" writes FILE.c4gh
// beside each FILE, "crypt4gh decrypt --sk K FILE.c4gh…" writes FILE. The
// keys are read once; the files run in parallel within the --jobs budget;
// a file that fails is reported on its own line and does not stop the
// others.

// c4ghSuffix is the name suffix that batch mode adds and removes.
const c4ghSuffix = ".c4gh"

// batchItem is one file of a batch: where it is read and where its result
// goes. err, when set, is reported instead of processing the file.
type batchItem struct {
	in, out string
	err     error
	listed  *batch.Identity // the input as its listing gave it, if listed
	// mark and killed are batch.Item's Mark and Killed.
	mark, killed string
}

// given is a flag of a command and whether the user gave it.
type given struct {
	name string
	set  bool
}

// batchArgs returns the FILE arguments of a batch, after checking that
// the flags that name one input or output (-i, -o unless it names a
// folder, and single) are not given with them.
func batchArgs(e *env, s streamOptions, scale scaleOptions, single ...given) ([]string, error) {
	if err := scale.check(len(e.args) > 0 || scale.batch()); err != nil {
		return nil, err
	}
	if len(e.args) == 0 && !scale.batch() {
		return nil, nil
	}
	flags := append([]given{{"input", s.Input != ""}, {"output", s.Output != "" && !isOutputFolder(s.Output)}}, single...)
	for _, f := range flags {
		if f.set {
			return nil, notWithFiles(f.name, s.Output)
		}
	}
	if err := e.flagsFirst(); err != nil {
		return nil, err
	}
	return append([]string{}, e.args...), nil
}

// notWithFiles is the error for a flag that names one input or output,
// given with FILE arguments; for --output, the hint says how to name a
// folder (output, the flag's value, is one only with its slash when it
// does not exist yet).
func notWithFiles(name, output string) error {
	err := usagef("--%s cannot be used with FILE arguments", name)
	if name == "output" {
		return withHint(err, "to write the files into a folder, end its name with a slash: -o %s/", output)
	}
	return err
}

// batchOptions are the flags that a batch runs with.
type batchOptions struct {
	output   string   // the output folder, "" for beside each input
	force    bool     // replace existing outputs
	jobs     int      // --jobs, 0 for one per CPU
	checksum bool     // print the checksum lines
	keyFiles []string // the key files the command reads (keyInputs)
	scale    scaleOptions
	bind     []string // the keys that a journal is bound to
	// rekeyed says that both sides are encrypted (reencrypt): the
	// records give the output's sum as the encrypted one, and the output
	// has room for a larger header.
	rekeyed bool
	// between, when set, does an item whose input and output are both
	// objects, which the server copies, instead of the fileOp.
	between func(it batchItem, resume bool, begin func() error) batch.Outcome
	// work holds a token for each file read and written at once; a
	// file waiting for its output to be committed holds none.
	work chan struct{}
	// folders holds the local output folders open from one output to
	// the next.
	folders *outfile.Folders
}

// commitsAhead is how many files a batch may have waiting for the commit
// of their output for each file it works on, and maxCommitting the most
// in all (each holds its temporary file open). With 32 rather than 8, a
// batch of 1,000 files of 1 MiB on a disk with a write cache made fewer
// flushes (490 to 920 against 800 to 1,060) in 0.92 of the time
// (docs/performance.md, Batches).
const (
	commitsAhead  = 32
	maxCommitting = 256
)

// filesAtOnce bounds the files of a batch under way at once (worked on
// or waiting for their commit) by the open-file limit: each may hold its
// input, its output and its folder's two descriptors, and the rest of
// the process keeps 64 for itself. It is at least workers, one a job.
func filesAtOnce(workers, want int) int {
	if limit := openFileLimit(); limit > 0 {
		want = min(want, (limit-64)/4)
	}
	return max(workers, want)
}

// encryptItems maps each FILE to FILE.c4gh. A FILE that already ends in
// .c4gh is skipped, as gzip skips .gz files, and returned in skipped.
func encryptItems(files []string) (items []batchItem, skipped []string, err error) {
	for _, f := range files {
		if it, ok := encryptItem("", localSource(f)); ok {
			items = append(items, it)
		} else {
			skipped = append(skipped, f)
		}
	}
	return items, skipped, checkDistinct(items)
}

// decryptItems maps each FILE.c4gh to FILE; a name without the suffix is
// an error for that file alone.
func decryptItems(files []string) ([]batchItem, error) {
	items := make([]batchItem, len(files))
	for i, f := range files {
		items[i] = decryptItem("", localSource(f))
	}
	return items, checkDistinct(items)
}

// checkDistinct refuses a batch in which two files would be written to
// the same path, also through a symbolic link to a folder (the second
// would replace the first), or in which an output is one of the inputs
// (it would be replaced while it is read).
func checkDistinct(items []batchItem) error {
	place := func(p string) string {
		if objstore.IsURL(p) {
			return p
		}
		return outfile.Resolved(p)
	}
	// The inputs, once: by place, and the files that exist by identity
	// (a hard link is another place for the same file).
	inputs := map[string]bool{}
	var infos []os.FileInfo
	for _, it := range items {
		if it.err != nil {
			continue
		}
		inputs[place(it.in)] = true
		if !objstore.IsURL(it.in) {
			if fi, err := os.Stat(it.in); err == nil {
				infos = append(infos, fi)
			}
		}
	}
	seen := map[string]string{}
	for _, it := range items {
		if it.err != nil {
			continue
		}
		key := place(it.out)
		if prev, ok := seen[key]; ok {
			return usagef("%s and %s would both be written to %s", quoteName(prev), quoteName(it.in), quoteName(key))
		}
		seen[key] = it.in
		isInput := inputs[key]
		if !isInput && !objstore.IsURL(it.out) {
			if fo, err := os.Stat(it.out); err == nil {
				isInput = slices.ContainsFunc(infos, func(fi os.FileInfo) bool { return os.SameFile(fo, fi) })
			}
		}
		if isInput {
			return usagef("%s would be written to %s, which is an input", quoteName(it.in), quoteName(it.out))
		}
	}
	return nil
}

// fileOp turns src, of size bytes (-1 when unknown), into dst with jobs
// segment workers. A warning it returns with a nil error is printed after
// the file's name (unless -q); the output is kept.
type fileOp func(dst io.Writer, src io.Reader, size int64, jobs int) (warning string, err error)

// batchError ends a batch in which some files failed; each was already
// reported on its own line. Its exit code is the highest of theirs.
type batchError struct {
	failed, total, code int
	shard               string // the worker's shard, if any
}

func (e batchError) Error() string {
	// A target that could not be listed (a missing bucket) fails before
	// any file is counted: it counts as one.
	s := fmt.Sprintf("%d of %d files", e.failed, max(e.total, e.failed))
	if e.shard != "" {
		s += " of shard " + e.shard
	}
	return s + " failed"
}

func (e batchError) exitCode() int { return e.code }

// batchList is the items of a batch: all of them, checked, when they are
// known before it runs (FILE arguments), else the stream of them (a list,
// a prefix), taken as it is listed.
type batchList struct {
	all    []batchItem
	stream iter.Seq[batchItem]
}

func (l batchList) seq() iter.Seq[batchItem] {
	if l.stream != nil {
		return l.stream
	}
	return slices.Values(l.all)
}

// runBatch runs op on every item, at most min(len(items), jobs) files at
// once, each with jobs/that many segment workers (one each for a stream
// of items). mode is the permission of the outputs; srcIsPlain says which
// side of op is the plaintext, for the checksum lines.
func runBatch(e *env, b batchOptions, list batchList, verb string, mode os.FileMode, srcIsPlain bool, op fileOp) error {
	if err := checksumJSON(b.checksum, b.scale); err != nil {
		return err
	}
	if b.output != "" && !objstore.IsURL(b.output) {
		// Said once, not for every file.
		if fi, err := os.Stat(filepath.Clean(b.output)); err == nil && !fi.IsDir() {
			return usagef("the output folder %s is a file", quoteName(b.output))
		}
	}
	// The files the batch reads besides its inputs, which no output may
	// replace, and the journal, which it writes: nor may stdout be one of
	// them, or an input (crypt4gh … --json >> F).
	reads := b.keyFiles[:len(b.keyFiles):len(b.keyFiles)]
	if l := b.scale.FilesFrom; l != "" && l != "-" {
		reads = append(reads, "--files-from", l)
	}
	journal := b.scale.Journal
	stdoutIsFile := !e.stdoutIdle && regularFile(e.stdout)
	distinct := func(it batchItem) error {
		if it.err != nil {
			return nil
		}
		if stdoutIsFile && !objstore.IsURL(it.in) && stdoutIs(e, func() (fs.FileInfo, error) { return os.Stat(it.in) }) {
			return usagef("stdout is the input %s", quoteName(it.in))
		}
		if journal != "" && !objstore.IsURL(it.out) && outfile.SameFile(it.out, journal) {
			return usagef("the output of %s is the journal (%s)", quoteName(it.in), quoteName(journal))
		}
		if _, err := os.Lstat(it.out); errors.Is(err, fs.ErrNotExist) && !objstore.IsURL(it.out) {
			return nil // a file to be made is no file the batch reads (which exist)
		}
		return outfile.Distinct(e.stdout, []string{"the output of " + quoteName(it.in), it.out}, reads)
	}
	jobs := c4gh.Jobs(b.jobs)
	workers, perFile := jobs, 1
	var total int64
	if list.stream == nil {
		for _, it := range list.all {
			if err := distinct(it); err != nil {
				return err
			}
			if fi, err := os.Stat(it.in); it.err == nil && err == nil && fi.Mode().IsRegular() {
				total += fi.Size()
			}
		}
		workers = min(len(list.all), jobs)
		perFile = max(1, jobs/workers)
	}
	// workers files are worked on at once; while their outputs are
	// committed (fsync, rename, fsync of the folder), more are, so that
	// the disk's writes overlap. Not when each file prints a line on
	// stdout (--checksum, --json): a stdout that fails stops the batch
	// before the next file, not files later.
	b.work = make(chan struct{}, workers)
	b.folders = &outfile.Folders{}
	defer b.folders.Close()
	e.stores.share(workers)
	if !objstore.IsURL(b.output) && !b.checksum && !b.scale.JSON {
		workers = filesAtOnce(workers, min(workers*commitsAhead, maxCommitting))
		if list.stream == nil {
			workers = min(workers, len(list.all))
		}
	}
	r, closeJournal, err := b.scale.runner(e, b.bind)
	if err != nil {
		return err
	}
	defer closeJournal()
	prog := e.newProgress(total, fmt.Sprintf("%s %d files", verb, len(list.all)))
	r.Workers = workers
	if b.checksum {
		r.Results = "checksums"
	}
	r.Stdout = progressWriter{prog, e.stdout}
	report := r.Report
	r.Report = func(it batch.Item, err error) { prog.Print(func() { report(it, err) }) }
	var (
		mu      sync.Mutex // guards names and written
		names   []string
		written int
	)
	r.Do = func(it batch.Item, resume bool, begin func() error) batch.Outcome {
		bi := batchItem{in: it.In, out: it.Out, mark: it.Mark, killed: it.Killed}
		if list.stream != nil {
			if err := distinct(bi); err != nil {
				return batch.Outcome{Err: err}
			}
		}
		var o batch.Outcome
		if b.between != nil && objstore.IsURL(it.In) && objstore.IsURL(it.Out) {
			o = b.between(bi, resume, begin)
		} else {
			o = batchFile(e, b, bi, mode, srcIsPlain, perFile, prog, op, resume, begin)
		}
		if o.Err == nil {
			mu.Lock()
			written++
			// The first three by name, whatever order the files end in.
			names = append(names, it.Out)
			slices.Sort(names)
			names = names[:min(len(names), 3)]
			mu.Unlock()
		}
		return o
	}
	items := func(yield func(batch.Item) bool) {
		for it := range list.seq() {
			if !yield(batch.Item{In: it.in, Out: it.out, Err: it.err, Listed: it.listed}) {
				return
			}
		}
	}
	prog.Start()
	s, err := r.Run(items)
	prog.Stop()
	if err == nil && written > 0 && !b.checksum && !b.scale.JSON && !e.quiet && !outfile.IsTerminal(e.stdout) && !isDevNull(e.stdout) {
		// stdout was redirected, but gets nothing: say where the
		// outputs went.
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = quoteName(n)
		}
		shown := strings.Join(quoted, ", ")
		switch {
		case written <= len(names):
		case b.output != "":
			shown += fmt.Sprintf(", … (%d files, in %s)", written, quoteName(b.output))
		default:
			shown += fmt.Sprintf(", … (%d files, each beside its input)", written)
		}
		fmt.Fprintf(e.stderr, "crypt4gh: nothing written to stdout; the outputs are %s\n", shown)
	}
	if err != nil {
		return err
	}
	return summarize(e, s, b.scale.used())
}

// isDevNull reports whether w is the null device, where nothing written
// is missed.
func isDevNull(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// progressWriter writes to w around the progress bar p.
type progressWriter struct {
	p *progress.Bar
	w io.Writer
}

func (pw progressWriter) Write(b []byte) (n int, err error) {
	pw.p.Print(func() { n, err = pw.w.Write(b) })
	return n, err
}

// outCounter counts the bytes written through it.
type outCounter struct {
	w io.Writer
	n int64
}

func (c *outCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// killedRunsOutput reports whether the file out is the one that a run
// killed after its commit, before its done line, wrote: it holds the mark
// that run's start line recorded. Any other file there is not replaced
// without --force: one the user put there after a failed run, or
// another process's, or one whose file system keeps no marks. The output
// checks it again as it is committed (outfile.Options.ReplaceMarked).
func killedRunsOutput(out, killed string) bool {
	return killed != "" && outfile.Marked(out, killed)
}

// batchFile runs op on one file and returns its checksum lines, if asked,
// and what the journal and the records say of it. resume says that the
// journal has the file started by a run that died: its output, if there,
// is replaced, and its temporary files removed. begin records the start
// in the journal: before the temporary file of a local output is made,
// once an object's upload is begun.
func batchFile(e *env, b batchOptions, it batchItem, mode os.FileMode, srcIsPlain bool, jobs int, prog *progress.Bar, op fileOp, resume bool, begin func() error) batch.Outcome {
	fail := func(err error) batch.Outcome { return batch.Outcome{Err: err} }
	b.work <- struct{}{}
	held := true
	release := func() {
		if held {
			held = false
			<-b.work
		}
	}
	defer release()
	in, err := e.openBatchInput(it.in)
	if err != nil {
		return fail(err)
	}
	defer in.Close()
	// The input as it is opened: what it is made into must be of it (see
	// unchanged below), and the output's size follows from it.
	at := in.snap()
	outSize := max(at.size, 0)
	switch {
	case srcIsPlain:
		outSize = encryptedSize(in)
	case b.rekeyed:
		outSize += headerRoom
	}
	local := !objstore.IsURL(it.out)
	force, replace := b.force, ""
	if resume && local {
		if err := outfile.RemovePartials(it.out); err != nil {
			return fail(fmt.Errorf("failed to remove what a killed run left: %w", pathErr(err)))
		}
		replace = it.killed // the killed run's output, and no other file
	} else if resume {
		force = true // an object: see rekeyOne and the uploads' own records
	}
	// A file is started in the journal before its temporary file is
	// made, so that a run killed in between leaves nothing that the next
	// does not remove; unless it exists already (opening it fails then,
	// without --force): it is not this run's.
	if local && b.scale.Journal != "" {
		if _, err := os.Lstat(it.out); force || err != nil || killedRunsOutput(it.out, replace) {
			if err := begin(); err != nil {
				return fail(err)
			}
		}
	}
	out, err := openBatchOutput(e, b.output, it.out, outSize, outfile.Options{Force: force, Mode: mode, Input: in.file, Folders: b.folders, Mark: it.mark, ReplaceMarked: replace})
	if err != nil {
		return fail(err)
	}
	if !local {
		if err := begin(); err != nil {
			out.Abort()
			return fail(err)
		}
	}
	// Reserve room for the output, as single-file mode does: the body's
	// size when encrypting, and the input's size (an upper bound, which
	// commit trims) when decrypting.
	if size := at.reservable(); srcIsPlain {
		out.Preallocate(c4gh.EncryptedSize(size))
	} else {
		out.Preallocate(size)
	}
	if at.regular {
		out.SetModTime(at.mtime) // as keepTime
	}
	sums := newFileSums(b.checksum || b.scale.JSON || b.scale.Journal != "")
	src := &countedReader{r: in.Reader}
	dst := &outCounter{w: out}
	warning, err := sums.run(dst, prog.Reader(src), at.size, jobs, op)
	if err == nil && (srcIsPlain || b.rekeyed) {
		// What was encrypted (or copied) must be the file as it was.
		err = in.unchanged(at, at.size, src.n)
	}
	if local {
		// An upload ends while it is written; a file is made durable
		// here, with no need for a token, nor its input open.
		in.closeFile()
		release()
	}
	if err = out.Finish(err); err != nil {
		return fail(err)
	}
	if warning != "" && !e.quiet {
		prog.Print(func() { e.warnf("%s: %s", quoteName(shownName(it.in)), warning) })
	}
	o := batch.Outcome{BytesRead: src.n, BytesOut: dst.n, SourceSize: at.size, SourceMtime: at.mtime}
	if in.obj != nil {
		o.ETag = in.obj.Object().ETag()
	}
	o.PlainSHA256, o.CryptSHA256 = sums.hex(srcIsPlain)
	o.OutSHA256 = o.PlainSHA256
	switch {
	case srcIsPlain:
		o.OutSHA256 = o.CryptSHA256
	case b.rekeyed: // the output is encrypted, and no plaintext is seen
		o.PlainSHA256, o.CryptSHA256 = "", o.OutSHA256
	}
	if b.checksum {
		o.Text = sums.lines(it.in, it.out, srcIsPlain)
	}
	return o
}

// serialMax is the largest file that a batch decrypts in the goroutine
// of the file, when it runs one job a file.
const serialMax = 8 << 20

// serial says whether a file of a batch, of size bytes (-1 when unknown),
// given jobs segment workers, is decrypted in its own goroutine
// (c4gh.DecryptOptions.Serial): with one job a file, the files at once
// keep the cores busy, and the hand-offs between the reader, worker and
// writer goroutines of a small file only cost CPU time. A large file
// keeps them, for its reads and writes overlap its decryption.
func serial(size int64, jobs int) bool {
	return jobs == 1 && size >= 0 && size <= serialMax
}

// fileSums hashes what one operation reads and what it writes, on the
// fly. A nil *fileSums hashes nothing.
type fileSums struct {
	in, out hash.Hash
}

func newFileSums(on bool) *fileSums {
	if !on {
		return nil
	}
	return &fileSums{in: sha256.New(), out: sha256.New()}
}

// reader returns r, hashing what is read from it.
func (s *fileSums) reader(r io.Reader) io.Reader {
	if s == nil {
		return r
	}
	return io.TeeReader(r, s.in)
}

// writer returns w, hashing what is written to it.
func (s *fileSums) writer(w io.Writer) io.Writer {
	if s == nil {
		return w
	}
	return io.MultiWriter(w, s.out)
}

// drain reads r, the reader returned by s.reader, to its end so that the
// sum covers the whole input, also the part after the last segment that
// an edit list keeps (which decrypting does not read).
func (s *fileSums) drain(r io.Reader) error {
	if s == nil {
		return nil
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return fmt.Errorf("failed to read input: %w", err)
	}
	return nil
}

// hex returns the sums of the plaintext and of the encrypted side.
func (s *fileSums) hex(srcIsPlain bool) (plain, crypt string) {
	if s == nil {
		return "", ""
	}
	plain, crypt = hex.EncodeToString(s.out.Sum(nil)), hex.EncodeToString(s.in.Sum(nil))
	if srcIsPlain {
		plain, crypt = crypt, plain
	}
	return plain, crypt
}

// run runs op from src to dst, hashing both sides.
func (s *fileSums) run(dst io.Writer, src io.Reader, size int64, jobs int, op fileOp) (string, error) {
	src = s.reader(src)
	warning, err := op(s.writer(dst), src, size, jobs)
	if err != nil {
		return "", err
	}
	return warning, s.drain(src)
}

// lines returns the two sha256sum lines, the plaintext first. inName and
// outName name the input and the output ("-" for stdio).
func (s *fileSums) lines(inName, outName string, srcIsPlain bool) string {
	if s == nil {
		return ""
	}
	plain, cipher := s.out, s.in
	inName, outName = shownName(inName), shownName(outName)
	plainName, cipherName := outName, inName
	if srcIsPlain {
		plain, cipher = s.in, s.out
		plainName, cipherName = inName, outName
	}
	return sumLine(plain, plainName) + sumLine(cipher, cipherName)
}

// sumLine formats one line as sha256sum does, escaping a name that holds
// a backslash or a newline the same way.
func sumLine(h hash.Hash, name string) string {
	sum := hex.EncodeToString(h.Sum(nil))
	if strings.ContainsAny(name, "\\\n\r") {
		r := strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r")
		return "\\" + sum + "  " + r.Replace(name) + "\n"
	}
	return sum + "  " + name + "\n"
}

// singleSumName is how a checksum line names the file at path ("" or "-"
// is stdio).
func singleSumName(path string) string {
	if path == "" {
		return "-"
	}
	return path
}

// checksumSingle checks that --checksum fits a run on one input: the sums
// are printed on stdout, so the output must be a file, and they are of
// whole files, so no --range or --header.
func checksumSingle(e *env, checksum bool, out, header string, rng *edit.Range) error {
	if !checksum || len(e.args) > 0 {
		return nil
	}
	switch {
	case rng != nil:
		return usagef("--checksum cannot be used with --range")
	case header != "":
		return usagef("--checksum cannot be used with --header")
	case out == "" || out == "-":
		return withHint(usagef("--checksum prints on stdout, which the output would use"), "use -o FILE")
	}
	return nil
}

// decryptBatch decrypts every FILE.c4gh in files to FILE, with the secret
// key (and its passphrase) read once.
func decryptBatch(e *env, o *decryptOptions, files []string) error {
	items, err := decryptBatchItems(e, o.Output, files, o.scale)
	if err != nil {
		return err
	}
	sk, sender, err := readReaderKeys(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	strict := o.Strict
	opener := preparedOpener(sk)
	defer opener.Zero() // a keys.Reader holds a copy of the key
	b := batchOptions{output: o.Output, force: o.Force, jobs: o.Jobs, checksum: o.Checksum, keyFiles: keyInputs(o.keyOptions),
		scale: o.scale, bind: secretNames(sk)}
	return runBatch(e, b, items, "decrypting", outfile.ModeSecret, false, func(dst io.Writer, src io.Reader, size int64, jobs int) (string, error) {
		r, err := c4gh.NewReader(src, opener, &c4gh.DecryptOptions{Sender: sender, Jobs: jobs, Strict: strict, Serial: serial(size, jobs)})
		if err != nil {
			return "", noPacketHint(err, sk, sender)
		}
		defer r.Close()
		if _, err := r.WriteTo(dst); err != nil {
			return "", decryptError(err, r.HeaderSize(), size)
		}
		return missingWarning(r.Missing()), nil
	})
}

// regularFile reports whether w is a regular file: stdout redirected to
// one (> F, >> F).
func regularFile(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}
