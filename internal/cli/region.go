package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/internal/describe"
	"github.com/c4gh-go/crypt4gh/internal/objio"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/prefault"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/c4gh-go/crypt4gh/reencrypt"
	"github.com/c4gh-go/crypt4gh/region"
	"github.com/urfave/cli/v2"
)

// Genomic regions of BAM, CRAM, VCF.gz and BCF files: decrypt --region
// writes the plaintext of the regions as a valid file, splice --region a
// crypt4gh file of them for recipients, inspect --region what either
// costs. The index is found beside the data (or named with --index) and
// may itself be a crypt4gh file for the same key; the region package
// plans, this file finds what it plans from.

// regionOptions are the flags that name regions.
type regionOptions struct {
	Regions     cli.StringSlice // --region, repeatable
	RegionsFile string          // --regions-file BED
	Index       string          // --index PATH

	output string // the command's output file, which must not be the index read
	bed    []byte // the bytes of RegionsFile, once read
}

func (r *regionOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "region", Aliases: []string{"r"}, Destination: &r.Regions,
			Usage: "only the records of the region `REGION` (chr20, chr20:1000-2000, {chr:x}:1-2, * for unplaced reads; repeatable) of a BAM, CRAM, VCF.gz or BCF file, found with its index"},
		&cli.StringFlag{Name: "regions-file", Destination: &r.RegionsFile,
			Usage: "the regions of the BED file at `PATH` (0-based, end excluded), as --region"},
		&cli.StringFlag{Name: "index", Destination: &r.Index,
			Usage: "the index at `PATH` (BAI, CSI, CRAI or TBI, plain or crypt4gh), instead of the one beside the input"},
	}
}

// given reports whether any region is asked for.
func (r *regionOptions) given() bool {
	return len(r.Regions.Value()) > 0 || r.RegionsFile != ""
}

// check refuses --index without a region.
func (r *regionOptions) check() error {
	if r.Index != "" && !r.given() {
		return usagef("--index is for --region and --regions-file")
	}
	return nil
}

// bedFile returns the bytes of --regions-file, read once: a journal names
// the file by their sha256, and the regions come from the same bytes. It
// must be a regular file (read twice otherwise), and is opened without
// waiting, so that a named pipe is refused rather than waited on.
func (r *regionOptions) bedFile() ([]byte, error) {
	if r.bed != nil {
		return r.bed, nil
	}
	f, err := os.OpenFile(r.RegionsFile, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, usagef("failed to read --regions-file %s: %v", quoteName(r.RegionsFile), pathErr(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, usagef("--regions-file %s is not a regular file", quoteName(r.RegionsFile))
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("failed to read --regions-file %s: %w", quoteName(r.RegionsFile), err)
	}
	r.bed = b
	return b, nil
}

// parse returns the regions of --region and --regions-file.
func (r *regionOptions) parse() ([]region.Region, error) {
	regions, err := region.ParseAll(r.Regions.Value())
	if err != nil {
		return nil, err
	}
	if r.RegionsFile == "" {
		return regions, nil
	}
	b, err := r.bedFile()
	if err != nil {
		return nil, err
	}
	bed, err := region.ReadBED(bytes.NewReader(b), r.RegionsFile)
	if err != nil {
		return nil, err
	}
	return append(regions, bed...), nil
}

// regionPlan is the plan of the regions of one crypt4gh file.
type regionPlan struct {
	plain *c4gh.ReaderAt // the file's plaintext
	file  *region.File   // what plain holds, which wrote the plan
	plan  *region.Plan
}

// An object is fetched ahead in windows (objio.Planned): reads at once
// would fetch bytes twice, so region reads its plaintext, and an index
// object, one read at a time (region.Serial).
type (
	serialPlain struct{ *c4gh.ReaderAt }
	serialIndex struct{ io.ReaderAt }
)

func (serialPlain) Serial() bool { return true }
func (serialIndex) Serial() bool { return true }

// planRegions plans the regions of ro in the crypt4gh file of size bytes
// at src, named name (its path or URL, beside which the index is
// looked for), opened with sk.
func (e *env) planRegions(ro *regionOptions, name string, src io.ReaderAt, size int64, sk keys.Opener, opts *c4gh.DecryptOptions) (*regionPlan, error) {
	regions, err := ro.parse()
	if err != nil {
		return nil, err
	}
	if ro.Index == "" && objstore.IsURL(name) && strings.Contains(name, "?") {
		return nil, withHint(usagef("no index beside a URL with a query"), "name the index with --index URL")
	}
	plain, err := c4gh.NewReaderAt(src, size, sk, opts)
	if err != nil {
		return nil, noPacketHint(err, sk, opts.Sender)
	}
	var ra io.ReaderAt = plain
	if _, ok := src.(*objio.Planned); ok {
		ra = serialPlain{plain}
	}
	// The format and header first: a file that has none has no index
	// either.
	f, err := region.OpenData(ra, plain.Size(), shownName(name))
	if err != nil {
		plain.Close()
		if errors.Is(err, region.ErrData) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", quoteName(shownName(name)), errors.Unwrap(err))
	}
	idx, err := e.readIndex(ro, name, sk, opts, f, regions)
	if err == nil {
		err = f.UseIndex(idx)
	}
	if err != nil {
		plain.Close()
		return nil, err
	}
	plan, err := f.Plan(regions)
	if err != nil {
		plain.Close()
		return nil, err
	}
	if po, ok := src.(*objio.Planned); ok {
		list, _ := plain.EditList()
		cost, err := plan.Cost(list, size-plain.HeaderSize())
		if err != nil {
			plain.Close()
			return nil, err
		}
		po.Plan(plain.HeaderSize(), size-plain.HeaderSize(), cost.Segments)
	}
	return &regionPlan{plain: plain, file: f, plan: plan}, nil
}

// readIndex finds and reads the index of the data at name, for planning
// regions of f.
func (e *env) readIndex(ro *regionOptions, name string, sk keys.Opener, opts *c4gh.DecryptOptions, f *region.File, regions []region.Region) (*region.Index, error) {
	var opened []io.Closer
	defer func() {
		for _, c := range opened {
			c.Close()
		}
	}()
	open := func(p string) (io.ReaderAt, int64, error) {
		ra, size, c, err := e.openIndexFile(p, sk, opts)
		if c != nil {
			opened = append(opened, c)
		}
		return ra, size, err
	}
	idxName, ra, size, err := region.FindIndex(name, ro.Index, open)
	if err != nil {
		return nil, err
	}
	if ro.output != "" && !outfile.IsStdout(ro.output) && !objstore.IsURL(idxName) && outfile.SameFile(idxName, ro.output) {
		// With --force it would be replaced by the records.
		return nil, usagef("output file %s is the index read, %s", quoteName(ro.output), quoteName(idxName))
	}
	return region.ReadIndexFor(ra, size, shownName(idxName), f, regions)
}

// openIndexFile opens the index at p: a local file, an object or a URL;
// one whose name ends in .c4gh is decrypted with sk. A file that does not
// exist is an error for which errors.Is(err, fs.ErrNotExist) holds.
func (e *env) openIndexFile(p string, sk keys.Opener, opts *c4gh.DecryptOptions) (io.ReaderAt, int64, io.Closer, error) {
	var (
		ra   io.ReaderAt
		size int64
		c    io.Closer
	)
	if objstore.IsURL(p) {
		o, err := e.openIndexObject(p)
		if errors.Is(err, objstore.ErrNotFound) {
			return nil, 0, nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
		}
		if err != nil {
			return nil, 0, nil, err
		}
		ra, size = o, o.Size()
	} else {
		f, err := os.Open(p)
		if err != nil {
			return nil, 0, nil, err
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return nil, 0, nil, usagef("index %s is not a regular file", quoteName(p))
		}
		ra, size, c = f, fi.Size(), f
	}
	if !strings.HasSuffix(p, c4ghSuffix) {
		return serialIf(objstore.IsURL(p), ra), size, c, nil
	}
	r, err := c4gh.NewReaderAt(ra, size, sk, &c4gh.DecryptOptions{Sender: opts.Sender, Strict: opts.Strict})
	if err != nil {
		return nil, 0, c, fmt.Errorf("index %s: %w", quoteName(shownName(p)), noPacketHint(err, sk, opts.Sender))
	}
	return serialIf(objstore.IsURL(p), r), r.Size(), closers{r, c}, nil
}

// serialIf returns ra, marked region.Serial when serial is true.
func serialIf(serial bool, ra io.ReaderAt) io.ReaderAt {
	if serial {
		return serialIndex{ra}
	}
	return ra
}

// openIndexObject opens the object at the URL p, which may not exist.
func (e *env) openIndexObject(p string) (*objstore.Object, error) {
	loc, err := objstore.Parse(p)
	if err != nil {
		return nil, err
	}
	st, err := e.store(loc)
	if err != nil {
		return nil, err
	}
	return st.Open(e.ctx, loc)
}

// closers closes each of its closers that is not nil.
type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		if c != nil {
			c.Close()
		}
	}
	return nil
}

// randomRegionInput returns the crypt4gh file of in as an io.ReaderAt of
// size bytes, checked to start like one: regions need a file or an
// object, not a pipe.
func randomRegionInput(in *input) (io.ReaderAt, int64, error) {
	if !in.regular() && in.obj == nil {
		return nil, 0, withHint(usagef("--region needs a file or an object, not a pipe"), "give the input with -i PATH or -i s3://BUCKET/KEY")
	}
	if in.obj != nil {
		po, err := in.obj.Planned()
		if err != nil {
			return nil, 0, err
		}
		if err := c4gh.CheckMagic(bufio.NewReader(io.NewSectionReader(po, 0, 16))); err != nil {
			return nil, 0, err
		}
		return po, po.Size(), nil
	}
	file, size, err := in.randomAccess()
	if err != nil {
		return nil, 0, err
	}
	if err := c4gh.CheckMagic(bufio.NewReader(io.NewSectionReader(file, 0, 16))); err != nil {
		return nil, 0, err
	}
	return file, size, nil
}

// decryptRegion writes the plaintext of the regions of in to out: a
// valid file of the input's format that holds every record of the
// regions.
func decryptRegion(e *env, o *decryptOptions, in *input, out io.Writer) error {
	defer collectLate()()
	prefault.Ahead(regionHeap)
	file, size, err := randomRegionInput(in)
	if err != nil {
		return err
	}
	sk, sender, err := readReaderKeys(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	// Two headers to open, the data's and the index's: the key's public
	// half computed once.
	opener := preparedOpener(sk)
	defer opener.Zero()
	o.region.output = o.Output
	rp, err := e.planRegions(&o.region, inputPathOrStdin(o.Input), file, size, opener, &c4gh.DecryptOptions{Sender: sender, Strict: o.Strict})
	if err != nil {
		return err
	}
	defer rp.plain.Close()
	if _, err := rp.file.Write(out, rp.plan); err != nil {
		return decryptError(err, rp.plain.HeaderSize(), size)
	}
	return nil
}

// regionHeap is the new memory a region's work writes, about, populated
// in one call as it starts (prefault.Ahead): its buffers, the index's
// window, the edge blocks' encoder. Written page by page, each page of it
// was a fault of 11 µs on the development machine, against 0.7 µs a page
// populated and 6 µs at its first write after. 1 MiB took 0.4 to 0.5 ms
// off the work of a region decrypt (docs/performance.md, Regions).
const regionHeap = 1 << 20

// regionGCPercent is the garbage collector's setting (GOGC) while a
// region is decrypted or spliced: its first collection then waits for
// 16 MB of heap rather than 4. A region's work allocates 2 to 3 MB (the
// index, a plan's buffers) beside the 1 MB that the program's packages
// allocate when it starts, enough for one collection, which cost a new
// process 2 to 3 ms (the collector's own first memory, threads woken)
// for nothing it would use again. The Go compiler starts with a larger
// heap for the same reason. A heap of more than 16 MB (an index of
// several MB) is collected at 5 times what it holds rather than twice.
const regionGCPercent = 400

var lateGC struct {
	mu    sync.Mutex
	runs  int // the runs (in this process) that want it
	saved int // the setting before the first of them
}

// collectLate sets the garbage collector to regionGCPercent, unless the
// user set GOGC, and returns the function that restores it once no run
// wants it any longer.
func collectLate() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	lateGC.mu.Lock()
	defer lateGC.mu.Unlock()
	if lateGC.runs == 0 {
		lateGC.saved = debug.SetGCPercent(regionGCPercent)
	}
	lateGC.runs++
	return func() {
		lateGC.mu.Lock()
		defer lateGC.mu.Unlock()
		if lateGC.runs--; lateGC.runs == 0 {
			debug.SetGCPercent(lateGC.saved)
		}
	}
}

// inputPathOrStdin is the name of the input for messages and for the
// index beside it.
func inputPathOrStdin(p string) string {
	if p == "" || p == "-" {
		return "-"
	}
	return p
}

// spliceRegion writes a crypt4gh file for the recipients (the reader's
// own key when none) that holds the regions of the input: its segments
// copied as they are, only the edge blocks of the regions made anew.
func spliceRegion(e *env, o *spliceOptions, recipients []keys.PublicKey) error {
	defer collectLate()()
	prefault.Ahead(regionHeap)
	if e.sameObject(o.Input, o.Output) {
		return usagef("-o %s is the input object: splice --region writes a new file", o.Output)
	}
	in, err := e.openSource(o.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	file, size, err := randomRegionInput(in)
	if err != nil {
		return err
	}
	sk, done, err := o.secretKey(e)
	if err != nil {
		return err
	}
	defer done()
	o.region.output = o.Output
	rp, err := e.planRegions(&o.region, inputPathOrStdin(o.Input), file, size, sk, &c4gh.DecryptOptions{})
	if err != nil {
		return err
	}
	defer rp.plain.Close()
	out, err := e.openDest(o.Output, rp.plan.Size()+headerRoom,
		o.outputOptions(outfile.Options{Force: o.Force, Binary: true, Mode: outfile.ModePublic, Input: in.file}))
	if err != nil {
		return err
	}
	pieces := make([]reencrypt.Piece, len(rp.plan.Pieces))
	for i, p := range rp.plan.Pieces {
		pieces[i] = reencrypt.Piece(p)
	}
	err = reencrypt.Assemble(out, io.NewSectionReader(file, 0, size), pieces, reencrypt.AssembleOptions{Reader: sk, Recipients: recipients})
	return out.Finish(noPacketHint(bodyError(err, rp.plain.HeaderSize(), size), sk, nil))
}

// regionReport is what inspect --region prints of the regions of the
// file called name (as shown): the ranges of its plaintext that are
// copied, the bytes made anew, and the segments read.
func regionReport(name string, rp *regionPlan, bodySize int64) (*describe.RegionPlan, error) {
	list, _ := rp.plain.EditList()
	cost, err := rp.plan.Cost(list, bodySize)
	if err != nil {
		return nil, err
	}
	pieces := make([]describe.RegionPiece, len(rp.plan.Pieces))
	spliced := make([]reencrypt.Piece, len(rp.plan.Pieces))
	for i, p := range rp.plan.Pieces {
		pieces[i] = describe.CopyPiece(p.Start, p.End)
		if p.Data != nil {
			pieces[i] = describe.NewPiece(int64(len(p.Data)))
		}
		spliced[i] = reencrypt.Piece(p)
	}
	// What splice --region writes: the segments that hold the bytes
	// copied (an edge block's segment is read, but copied only when
	// bytes copied share it) and the new bytes in new segments.
	plain, err := body.PlaintextSize(bodySize)
	if err != nil {
		return nil, err
	}
	spliceBody, err := reencrypt.AssembledSize(spliced, list, plain)
	if err != nil {
		return nil, err
	}
	return describe.Region(name, pieces, cost.Segments, cost.Stored, bodySize, spliceBody), nil
}
