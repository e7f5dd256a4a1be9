package cli

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// Batch mode with objects and output folders:
//
//   - A FILE argument may be an object (s3://BUCKET/KEY) or a web
//     resource (https://…), and a prefix (s3://BUCKET/PREFIX/) stands for
//     every object under it, at any depth, that the command takes: the
//     objects not ending in .c4gh for encrypt, those ending in .c4gh for
//     decrypt, verify and reencrypt.
//   - -o names an output folder when it ends in "/", names an existing
//     folder, or is an s3:// prefix: each result goes there under the name
//     of its input (FILE.c4gh when encrypting, FILE without .c4gh when
//     decrypting), the objects of a prefix under their keys relative to
//     it (so s3://b/raw/x/y → DIR/x/y.c4gh, missing local folders made).
//   - Without -o, results go beside their inputs, objects too when
//     encrypting (s3://b/k → s3://b/k.c4gh); decrypted objects need -o,
//     so that no plaintext is written back into a store unasked.

// batchFolderHelp is the paragraph of the commands' descriptions about
// objects in batch mode.
const batchFolderHelp = "\n\n" +
	"FILE arguments may be s3://BUCKET/KEY objects, https:// resources, or\n" +
	"s3://BUCKET/PREFIX/ prefixes, which stand for every object under them that\n" +
	"the command takes (by their .c4gh suffix). With -o DIR (a name ending in /,\n" +
	"an existing folder, or an s3:// prefix) each result goes into DIR under the\n" +
	"name of its input, or its key relative to the prefix it came from; without\n" +
	"-o results go beside their inputs."

// objectHelp is the paragraph of the commands' descriptions about
// objects in single mode; paths names the flags ("-i and -o").
func objectHelp(paths string) string {
	return "\n\n" + paths + " may be s3://BUCKET/KEY objects, read with parallel\n" +
		objectHelpRest
}

const objectHelpRest = "ranged GETs and written as multipart uploads (aborted on failure: nothing\n" +
	"is left); -i may be an https:// URL read with range requests. Credentials\n" +
	"and endpoint come from the AWS environment variables and files, or from\n" +
	"--s3-config."

// isOutputFolder reports whether -o p names an output folder of a batch.
func isOutputFolder(p string) bool {
	switch {
	case p == "" || p == "-":
		return false
	case objstore.IsURL(p):
		loc, err := objstore.Parse(p)
		return err == nil && loc.URL == "" && loc.IsPrefix()
	case strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator)):
		return true
	}
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// source is one input of a batch.
type source = batch.Source

// localSource is the source of the file f.
func localSource(f string) source { return batch.LocalSource(f) }

// urlBase is the last element of the path of a web resource.
func urlBase(loc objstore.Location) string { return batch.URLBase(loc) }

// inFolder names the result rel in the output folder dir.
func inFolder(dir, rel string) (string, error) {
	if objstore.IsURL(dir) {
		loc, err := objstore.Parse(dir)
		if err != nil {
			return "", err
		}
		if loc.Key != "" && !strings.HasSuffix(loc.Key, "/") {
			loc.Key += "/"
		}
		return loc.Join(rel).String(), nil
	}
	local := filepath.FromSlash(rel)
	if !filepath.IsLocal(local) {
		return "", usagef("the name %q cannot be a file in %s", rel, quoteName(dir))
	}
	if path.Clean(rel) != rel {
		// p/./x, p//x and p/x are three keys of a store and one file:
		// only a clean name has a file of its own.
		return "", usagef("the name %q is not a clean path (it has ., .. or empty elements): it cannot be a file of its own in %s", rel, quoteName(dir))
	}
	return filepath.Join(dir, local), nil
}

// encryptItem maps the source s to s.c4gh, beside it or in the output
// folder dir ("" for none); ok is false for an input that ends in .c4gh
// already, which is skipped.
func encryptItem(dir string, s source) (it batchItem, ok bool) {
	if strings.HasSuffix(s.In, c4ghSuffix) {
		return batchItem{}, false
	}
	it = batchItem{in: s.In, err: s.Err, listed: s.Listed}
	switch {
	case s.Err != nil:
	case dir != "":
		it.out, it.err = inFolder(dir, s.Rel+c4ghSuffix)
	case strings.HasPrefix(strings.ToLower(s.In), "s3://") || !objstore.IsURL(s.In):
		it.out = s.In + c4ghSuffix
	default:
		it.err = withHint(usagef("a web resource has no place beside it"), "use -o FOLDER")
	}
	return it, true
}

// decryptItem maps the source s, FILE.c4gh, to FILE, beside it or in the
// output folder dir.
func decryptItem(dir string, s source) batchItem {
	it := batchItem{in: s.In, err: s.Err, listed: s.Listed}
	rel, ok := strings.CutSuffix(s.Rel, c4ghSuffix)
	switch {
	case s.Err != nil:
	case !ok && isLocalFolder(s.In):
		it.err = folderInput(s.In)
	case !ok:
		it.err = usagef("the name does not end in %s; use -i and -o for this file", c4ghSuffix)
	case rel == "" || strings.HasSuffix(rel, "/"):
		it.err = usagef("the name is only %s", c4ghSuffix)
	case dir != "":
		it.out, it.err = inFolder(dir, rel)
	case objstore.IsURL(s.In):
		it.err = withHint(usagef("no output folder for a decrypted object"),
			"use -o FOLDER (plaintext is not written back into a store unless -o names a prefix)")
	default:
		it.out = strings.TrimSuffix(s.In, c4ghSuffix)
	}
	return it
}

// inOutputPrefix reports whether src was listed under a prefix, and lies
// under the output prefix under (a location's string), which is longer
// than the prefix listed: inside it. An input named as itself is kept.
func inOutputPrefix(src source, under string) bool {
	if under == "" || src.Err != nil || src.Listed == nil || !strings.HasPrefix(src.In, under) {
		return false
	}
	listed := src.In[:len(src.In)-len(src.Rel)] // the prefix listed
	return len(under) > len(listed)
}

// isC4gh and notC4gh choose the objects of a prefix that a command takes.
func isC4gh(key string) bool  { return strings.HasSuffix(key, c4ghSuffix) }
func notC4gh(key string) bool { return !isC4gh(key) }

// encryptBatchItems maps each input to FILE.c4gh, beside it or in the
// output folder dir ("" for none); inputs that end in .c4gh already are
// skipped, with a warning.
func encryptBatchItems(e *env, dir string, files []string, s scaleOptions) (batchList, error) {
	return batchItems(e, dir, files, s, notC4gh, func(src source, warn bool) (batchItem, bool) {
		it, ok := encryptItem(dir, src)
		if !ok && warn {
			e.warnf("%s already ends in %s: skipped (use -i and -o to encrypt it again)", quoteName(src.In), c4ghSuffix)
		}
		return it, ok
	})
}

// decryptBatchItems maps each FILE.c4gh to FILE, beside it or in the
// output folder.
func decryptBatchItems(e *env, dir string, files []string, s scaleOptions) (batchList, error) {
	return batchItems(e, dir, files, s, isC4gh, func(src source, _ bool) (batchItem, bool) { return decryptItem(dir, src), true })
}

// batchItems maps the sources of a batch to items with item (warn: say
// why a source is skipped): a stream of them when they are listed as the
// batch runs, else all of them, checked with checkDistinct.
//
// In a stream, two inputs with one output, and an output that is an
// input, are refused (outputSet): those of a list file before the batch
// starts (the list is read once for it, its
// prefixes not listed), the others as they come, the second failing.
// The objects of a prefix that is the only input need no check: their
// keys, hence their outputs, differ.
//
// An output prefix dir inside a prefix listed as input would have the
// batch's own outputs listed as inputs on later pages of the listing (a
// run that never ends, each level of outputs taken again): the objects
// listed under it are left out, with a warning.
func batchItems(e *env, dir string, files []string, s scaleOptions, keep func(string) bool, item func(src source, warn bool) (batchItem, bool)) (batchList, error) {
	under := ""
	if loc, err := objstore.Parse(dir); objstore.IsURL(dir) && err == nil && loc.URL == "" && loc.IsPrefix() {
		under = loc.String()
	}
	warned := false
	items := func(in batch.Inputs, warn bool) iter.Seq[batchItem] {
		return func(yield func(batchItem) bool) {
			for src := range in.All() {
				if inOutputPrefix(src, under) {
					if warn && !warned {
						warned = true
						e.warnf("the objects under %s, the output prefix, are left out of the inputs", quoteName(shownName(under)))
					}
					continue
				}
				if it, ok := item(src, warn); ok && !yield(it) {
					return
				}
			}
		}
	}
	seq := items(e.inputs(files, s, keep), true)
	if streamed(files, s) {
		if s.FilesFrom == "" && len(files) == 1 {
			return batchList{stream: seq}, nil // one prefix
		}
		if fi, err := os.Stat(s.FilesFrom); s.FilesFrom != "-" && err == nil && fi.Mode().IsRegular() {
			in := e.inputs(files, s, keep)
			in.Objects = nil
			outs := newOutputSet()
			for it := range items(in, false) {
				if err := outs.add(it); err != nil {
					return batchList{}, err
				}
			}
		}
		outs := newOutputSet()
		return batchList{stream: func(yield func(batchItem) bool) {
			for it := range seq {
				if it.err == nil {
					it.err = outs.add(it)
				}
				if !yield(it) {
					return
				}
			}
		}}, nil
	}
	var all []batchItem
	for it := range seq {
		all = append(all, it)
	}
	if len(all) == 0 {
		return batchList{}, usagef("nothing to %s", e.command)
	}
	return batchList{all: all}, checkDistinct(all)
}

// outputSet is the outputs of a stream of items, by place (a local path
// absolute, the symbolic links of its folder resolved), each with the
// input written there, and the places of the inputs.
type outputSet struct {
	in     map[string]string
	inputs map[string]bool
	cwd    string            // the working folder, once: filepath.Abs asks for it each time
	dirs   map[string]string // folders by path, resolved
}

func newOutputSet() *outputSet {
	cwd, _ := os.Getwd()
	return &outputSet{in: map[string]string{}, inputs: map[string]bool{}, cwd: cwd, dirs: map[string]string{}}
}

// place returns where p is: an object's URL, or a file's absolute path
// through its folder with the links resolved (once a folder: the items
// of a list share few).
func (s *outputSet) place(p string) string {
	if objstore.IsURL(p) {
		return p
	}
	if !filepath.IsAbs(p) && s.cwd != "" {
		p = filepath.Join(s.cwd, p)
	}
	p = filepath.Clean(p)
	dir := filepath.Dir(p)
	real, ok := s.dirs[dir]
	if !ok {
		real = dir
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			real = r
		}
		s.dirs[dir] = real
	}
	return filepath.Join(real, filepath.Base(p))
}

// add refuses the item it when another input is written to its output,
// when its output is an input seen before, or its input an output seen
// before: it would be replaced while it is read, or after.
func (s *outputSet) add(it batchItem) error {
	if it.err != nil {
		return nil
	}
	in, out := s.place(it.in), s.place(it.out)
	if prev, ok := s.in[out]; ok {
		return usagef("%s and %s would both be written to %s", quoteName(prev), quoteName(it.in), quoteName(it.out))
	}
	if s.inputs[out] {
		return usagef("%s would be written to %s, which is an input", quoteName(it.in), quoteName(it.out))
	}
	if prev, ok := s.in[in]; ok {
		return usagef("%s would be written to %s, which is an input", quoteName(prev), quoteName(it.in))
	}
	s.in[out] = it.in
	s.inputs[in] = true
	return nil
}

// openBatchInput opens the input of one file of a batch, with messages
// that follow the name of the file on its line.
func (e *env) openBatchInput(name string) (*input, error) {
	if objstore.IsURL(name) {
		return e.openSource(name)
	}
	// Without blocking: a FIFO among the files would wait for a writer
	// and hold up the batch.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("no such file")
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path already starts the line
		}
		return nil, fmt.Errorf("failed to open input: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, usagef("is a directory")
	} else if err == nil && !fi.Mode().IsRegular() {
		// As gzip leaves them: a pipe, device or socket is no file of a
		// batch.
		f.Close()
		return nil, usagef("is not a regular file")
	}
	return &input{Reader: f, name: name, file: f, own: true}, nil
}

// openBatchOutput opens the output of one file of a batch, making the
// local folder it goes in when it is missing (for the objects of a
// prefix).
func openBatchOutput(e *env, dir, name string, size int64, opts outfile.Options) (*outfile.Output, error) {
	below, err := e.makeOutputFolder(dir, name, opts.Mode)
	if err != nil {
		return nil, err
	}
	if below {
		opts.Beneath = dir
	}
	return e.openDest(name, size, opts)
}

// makeOutputFolder makes the local folder of the output name of a batch
// when it is missing (for the objects of a prefix), with no link below
// the output folder dir; below says that name is in dir, where the output
// is then made in its folder opened without following links.
func (e *env) makeOutputFolder(dir, name string, mode os.FileMode) (below bool, err error) {
	below = isOutputFolder(dir) && !objstore.IsURL(dir) && !objstore.IsURL(name)
	if below {
		// Checked before the folders are made.
		if err := outfile.CheckBelow(dir, name); err != nil {
			return false, err
		}
	}
	if !objstore.IsURL(name) {
		if folder := filepath.Dir(name); folder != "." {
			if _, err := os.Stat(folder); errors.Is(err, os.ErrNotExist) {
				perm := os.FileMode(0o777)
				if mode == outfile.ModeSecret {
					perm = 0o700
				}
				var missing []string // deepest first
				for f := folder; ; f = filepath.Dir(f) {
					if _, err := os.Lstat(f); err == nil || f == filepath.Dir(f) {
						break
					}
					missing = append(missing, f)
				}
				if err := mkdirAll(dir, folder, below, perm); err != nil {
					return false, fmt.Errorf("failed to make folder %s: %w", quoteName(folder), pathErr(err))
				}
				e.made.add(missing)
			}
		}
	}
	return below, nil
}

// mkdirAll makes folder and its parents; below the output folder dir
// (below), only there, through no link that leaves it.
func mkdirAll(dir, folder string, below bool, perm os.FileMode) error {
	if !below {
		return os.MkdirAll(folder, perm)
	}
	rel, err := filepath.Rel(dir, folder)
	if err != nil {
		return err
	}
	// The output folder itself the user named: made as it is.
	if err := os.MkdirAll(dir, perm); err != nil || rel == "." {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.MkdirAll(rel, perm)
}

// resumeHelp is the paragraph of decrypt's description about --continue.
const resumeHelp = "\n\n" +
	"With --continue (an s3:// or https:// input, -o FILE, no --range), the\n" +
	"plaintext goes to .FILE.c4gh-resume and a record of the download to\n" +
	".FILE.c4gh-resume.json beside FILE; both stay when the run fails or is\n" +
	"interrupted, and the same command resumes after the last segment written\n" +
	"(from the start if the object changed). Files with an edit list are refused."

// mountObjectsHelp is the paragraph of mount's description about objects.
const mountObjectsHelp = "\n\n" +
	"SOURCE may be an s3://BUCKET/PREFIX/ prefix: the keys under it, cut at each\n" +
	"/, are the files and folders; a read fetches only the segments it needs."

// verifyObjectsHelp is the paragraph of verify's description about
// objects.
const verifyObjectsHelp = "\n\n" +
	"FILE may be an s3://BUCKET/KEY object, an https:// URL, or an\n" +
	"s3://BUCKET/PREFIX/ prefix, for every object ending in .c4gh under it."

// spliceObjectsHelp is the paragraph of rearrange's and splice's
// descriptions about objects.
const spliceObjectsHelp = "\n\n" +
	"-i and -o may be s3:// objects: between objects of one store the segments\n" +
	"are copied by the server."

// isLocalFolder reports whether name is a local folder.
func isLocalFolder(name string) bool {
	if objstore.IsURL(name) {
		return false
	}
	fi, err := os.Stat(name)
	return err == nil && fi.IsDir()
}
