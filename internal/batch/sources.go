package batch

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// Source is one input of a batch: the path or URL to read, and the name
// of its result relative to an output folder (slash-separated). Err, when
// set, says why the input is skipped.
type Source struct {
	In, Rel string
	Err     error
	// Listed is the object as its listing gave it (nil for a name
	// given): what a journal's entry is checked against, without asking
	// the store again.
	Listed *Identity
}

// LocalSource is the source of the file f.
func LocalSource(f string) Source {
	return Source{In: f, Rel: filepath.ToSlash(filepath.Base(f))}
}

// Inputs are the inputs of a batch: the FILE arguments, then the names of
// a list (--files-from), a prefix standing for the objects under it whose
// keys Keep accepts.
type Inputs struct {
	Args  []string
	List  string    // the list's path, "-" for Stdin, "" for none
	Null  bool      // the list is NUL-separated
	Stdin io.Reader // the list "-"
	Keep  func(key string) bool
	// Objects lists the objects under a prefix; when nil, prefixes are
	// skipped.
	Objects func(prefix objstore.Location) (iter.Seq2[objstore.ObjectInfo, error], error)
	// Warn prints a warning.
	Warn func(format string, args ...any)
}

// Streamed reports whether the inputs are listed as the batch runs (a
// list, or a prefix), rather than known before it starts.
func (in Inputs) Streamed() bool {
	if in.List != "" {
		return true
	}
	for _, a := range in.Args {
		if loc, err := objstore.Parse(a); objstore.IsURL(a) && err == nil && loc.URL == "" && loc.IsPrefix() {
			return true
		}
	}
	return false
}

// All yields the sources, listing a prefix a page at a time and reading
// the list a name at a time, as they are taken.
func (in Inputs) All() iter.Seq[Source] {
	return func(yield func(Source) bool) {
		for _, a := range in.Args {
			if !in.expand(a, yield) {
				return
			}
		}
		if in.List == "" {
			return
		}
		r, closeList, err := in.open()
		if err != nil {
			yield(Source{In: in.List, Err: err})
			return
		}
		defer closeList()
		for name, err := range ReadList(r, in.Null) {
			if err != nil {
				yield(Source{In: in.List, Err: err})
				return
			}
			if !in.expand(name, yield) {
				return
			}
		}
	}
}

// open opens the list.
func (in Inputs) open() (io.Reader, func(), error) {
	if in.List == "-" {
		return in.Stdin, func() {}, nil
	}
	f, err := os.Open(in.List)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, errkind.Wrap(errkind.Usage, fmt.Errorf("the list %s does not exist", outfile.QuoteName(in.List)))
		}
		return nil, nil, fmt.Errorf("failed to open the list: %w", outfile.PathErr(err))
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, nil, errkind.Wrap(errkind.Usage, fmt.Errorf("the list %s is a folder", outfile.QuoteName(in.List)))
	}
	return f, func() { f.Close() }, nil
}

// expand yields the source of the name a, or the objects under it for a
// prefix; it returns false when yield did.
func (in Inputs) expand(a string, yield func(Source) bool) bool {
	if !objstore.IsURL(a) {
		return yield(LocalSource(a))
	}
	loc, err := objstore.Parse(a)
	switch {
	case err != nil:
		return yield(Source{In: a, Err: err})
	case loc.URL != "":
		return yield(Source{In: a, Rel: URLBase(loc)})
	case !loc.IsPrefix():
		return yield(Source{In: a, Rel: path.Base(loc.Key)})
	}
	if in.Objects == nil {
		return true // not listed: see Inputs.Objects
	}
	objects, err := in.Objects(loc)
	if err != nil {
		return yield(Source{In: a, Err: err})
	}
	n := 0
	for info, err := range objects {
		if err != nil {
			return yield(Source{In: a, Err: err})
		}
		name := objstore.Location{Bucket: loc.Bucket, Key: info.Key}.String()
		if !strings.HasPrefix(info.Key, loc.Key) {
			// A store that lists what was not asked for: the name
			// relative to the prefix would be wrong, so skip it.
			if !yield(Source{In: name, Err: fmt.Errorf("the listing of %s returned this key, which is not under the prefix: skipped", loc)}) {
				return false
			}
			continue
		}
		if in.Keep(info.Key) {
			n++
			if !yield(Source{In: name, Rel: info.Key[len(loc.Key):], Listed: &Identity{Size: info.Size, ETag: info.ETag}}) {
				return false
			}
		}
	}
	if n == 0 && in.Warn != nil {
		in.Warn("no object to take under %s", loc)
	}
	return true
}

// URLBase is the last element of the path of a web resource.
func URLBase(loc objstore.Location) string {
	return path.Base(strings.TrimSuffix(loc.String(), "?..."))
}
