package cli

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

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

// source is one input of a batch: the path or URL to read, and the name of
// its result relative to an output folder (slash-separated).
type source struct {
	in, rel string
	err     error // why the input is skipped, when it is
}

// batchSources expands the FILE arguments: a prefix to the objects under it
// whose keys keep accepts, anything else to itself.
func batchSources(e *env, args []string, keep func(key string) bool) ([]source, error) {
	var out []source
	for _, a := range args {
		if !objstore.IsURL(a) {
			out = append(out, source{in: a, rel: filepath.ToSlash(filepath.Base(a))})
			continue
		}
		loc, err := objstore.Parse(a)
		if err != nil {
			return nil, err
		}
		if loc.URL != "" {
			out = append(out, source{in: a, rel: urlBase(loc)})
			continue
		}
		if !loc.IsPrefix() {
			out = append(out, source{in: a, rel: path.Base(loc.Key)})
			continue
		}
		objs, err := listObjects(e, loc, keep)
		if err != nil {
			return nil, err
		}
		if len(objs) == 0 {
			e.warnf("no object to take under %s", loc)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// listObjects returns the objects under the prefix loc whose keys keep
// accepts.
func listObjects(e *env, loc objstore.Location, keep func(string) bool) ([]source, error) {
	st, err := e.store(loc)
	if err != nil {
		return nil, err
	}
	var out []source
	for info, err := range st.List(e.ctx, loc) {
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(info.Key, loc.Key) {
			// A store that lists what was not asked for: the name
			// relative to the prefix would be wrong, so skip it.
			out = append(out, source{in: objstore.Location{Bucket: loc.Bucket, Key: info.Key}.String(),
				err: fmt.Errorf("the listing of %s returned this key, which is not under the prefix: skipped", loc)})
			continue
		}
		if keep(info.Key) {
			out = append(out, source{in: objstore.Location{Bucket: loc.Bucket, Key: info.Key}.String(), rel: info.Key[len(loc.Key):]})
		}
	}
	return out, nil
}

// urlBase is the last element of the path of a web resource.
func urlBase(loc objstore.Location) string {
	s := loc.String()
	s = strings.TrimSuffix(s, "?...")
	return path.Base(s)
}

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
	return filepath.Join(dir, local), nil
}

// hasURL reports whether any of args is a URL.
func hasURL(args []string) bool {
	for _, a := range args {
		if objstore.IsURL(a) {
			return true
		}
	}
	return false
}

// encryptBatchItems maps each FILE to FILE.c4gh, beside it or in the
// output folder dir ("" for none); inputs that end in .c4gh already are skipped.
func encryptBatchItems(e *env, dir string, files []string) ([]batchItem, []string, error) {
	if dir == "" && !hasURL(files) {
		return encryptItems(files)
	}
	srcs, err := batchSources(e, files, func(key string) bool { return !strings.HasSuffix(key, c4ghSuffix) })
	if err != nil {
		return nil, nil, err
	}
	var items []batchItem
	var skipped []string
	for _, s := range srcs {
		if strings.HasSuffix(s.in, c4ghSuffix) {
			skipped = append(skipped, s.in)
			continue
		}
		it := batchItem{in: s.in, err: s.err}
		switch {
		case s.err != nil:
		case dir != "":
			it.out, it.err = inFolder(dir, s.rel+c4ghSuffix)
		case strings.HasPrefix(strings.ToLower(s.in), "s3://") || !objstore.IsURL(s.in):
			it.out = s.in + c4ghSuffix
		default:
			it.err = withHint(usagef("a web resource has no place beside it"), "use -o FOLDER")
		}
		items = append(items, it)
	}
	return items, skipped, checkDistinct(items)
}

// decryptBatchItems maps each FILE.c4gh to FILE, beside it or in the
// output folder.
func decryptBatchItems(e *env, dir string, files []string) ([]batchItem, error) {
	if dir == "" && !hasURL(files) {
		return decryptItems(files)
	}
	srcs, err := batchSources(e, files, func(key string) bool { return strings.HasSuffix(key, c4ghSuffix) })
	if err != nil {
		return nil, err
	}
	if len(srcs) == 0 {
		return nil, usagef("nothing to decrypt")
	}
	items := make([]batchItem, len(srcs))
	for i, s := range srcs {
		it := batchItem{in: s.in, err: s.err}
		rel, ok := strings.CutSuffix(s.rel, c4ghSuffix)
		switch {
		case s.err != nil:
		case !ok:
			it.err = usagef("the name does not end in %s; use -i and -o for this file", c4ghSuffix)
		case rel == "" || strings.HasSuffix(rel, "/"):
			it.err = usagef("the name is only %s", c4ghSuffix)
		case dir != "":
			it.out, it.err = inFolder(dir, rel)
		case objstore.IsURL(s.in):
			it.err = withHint(usagef("no output folder for a decrypted object"),
				"use -o FOLDER (plaintext is not written back into a store unless -o names a prefix)")
		default:
			it.out = strings.TrimSuffix(s.in, c4ghSuffix)
		}
		items[i] = it
	}
	return items, checkDistinct(items)
}

// openBatchInput opens the input of one file of a batch, with messages
// that follow the name of the file on its line.
func (e *env) openBatchInput(name string) (*input, error) {
	if objstore.IsURL(name) {
		return e.openSource(name)
	}
	f, err := os.Open(name)
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
	}
	return &input{Reader: f, name: name, file: f, own: true}, nil
}

// openBatchOutput opens the output of one file of a batch, making the
// local folder it goes in when it is missing (for the objects of a
// prefix).
func openBatchOutput(e *env, dir, name string, size int64, opts outfile.Options) (*outfile.Output, error) {
	below := isOutputFolder(dir) && !objstore.IsURL(dir) && !objstore.IsURL(name)
	if below {
		// Checked before the folders are made; the output is then made
		// in its folder opened without following links.
		if err := outfile.CheckBelow(dir, name); err != nil {
			return nil, err
		}
		opts.Beneath = dir
	}
	if !objstore.IsURL(name) {
		if folder := filepath.Dir(name); folder != "." {
			if _, err := os.Stat(folder); errors.Is(err, os.ErrNotExist) {
				perm := os.FileMode(0o777)
				if opts.Mode == outfile.ModeSecret {
					perm = 0o700
				}
				if err := mkdirAll(dir, folder, below, perm); err != nil {
					return nil, fmt.Errorf("failed to make folder %s: %w", quoteName(folder), pathErr(err))
				}
			}
		}
	}
	return e.openDest(name, size, opts)
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

// verifySources expands the FILE arguments of verify and inspect: a prefix
// to the objects ending in .c4gh under it. It reports the keys it skips,
// each on a line (a failure, exit 1), and returns how many.
func verifySources(e *env, args []string) ([]string, int, error) {
	if !hasURL(args) {
		return args, 0, nil
	}
	srcs, err := batchSources(e, args, func(key string) bool { return strings.HasSuffix(key, c4ghSuffix) })
	if err != nil {
		return nil, 0, err
	}
	var out []string
	skipped := 0
	for _, s := range srcs {
		if s.err != nil {
			report(e.stderr, fmt.Errorf("%s: %w", s.in, s.err))
			skipped++
			continue
		}
		out = append(out, s.in)
	}
	if len(out) == 0 && skipped == 0 {
		return nil, 0, usagef("nothing to %s", e.command)
	}
	return out, skipped, nil
}

// errSkipped stands for the inputs that a batch skipped, each reported
// already: they make it fail with exit 1.
var errSkipped = errors.New("inputs skipped")

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
