// Package storesource shows the objects under a prefix of an
// [objstore.Store] as a [mount.Source], so that package mount needs no
// store (and links no AWS package): the command, or any program that
// mounts objects, joins the two here.
package storesource

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/c4gh-go/crypt4gh/mount"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// New returns the objects of st under the prefix (a bucket and a key
// prefix) as a [mount.Source]: the rest of each key, cut at every "/", is
// the path of a file in folders, as S3 tools show keys (a prefix that
// does not end in "/" is taken as if it did). A folder lists with one
// request for every 1,000 entries; a file is opened with one request,
// pinned to the ETag it was listed with, so that an object replaced since
// the listing fails to open (objstore.ErrChanged) rather than show other
// bytes at the listed size. Where a key is both an object and the folder
// of other keys, the folder is shown, and the object is not.
//
// Reading a file costs what the read needs: the header of a Crypt4GH file
// in one request of at most 64 KiB ([objstore.Object.Head]), the segments
// that a read touches, and the read-ahead of [objstore.Object] (at most
// 1 MiB past a sequential read).
func New(st objstore.Store, prefix objstore.Location) mount.Source {
	if prefix.Key != "" && !strings.HasSuffix(prefix.Key, "/") {
		prefix.Key += "/"
	}
	return &source{st: st, prefix: prefix, listed: time.Now(), etags: map[string]string{}}
}

type source struct {
	st     objstore.Store
	prefix objstore.Location
	listed time.Time // shown as the time of the folders

	mu    sync.Mutex
	etags map[string]string // of the files listed, by path
}

// String returns the prefix as a URL.
func (s *source) String() string { return s.prefix.String() }

func (s *source) ReadDir(ctx context.Context, dir string) ([]mount.Entry, error) {
	p := s.prefix
	if dir != "" {
		p.Key += dir + "/"
	}
	var out []mount.Entry
	etags := map[string]string{}
	index := map[string]int{}
	for info, err := range s.st.ListDir(ctx, p) {
		if err != nil {
			return nil, err
		}
		rel, ok := strings.CutPrefix(info.Key, p.Key)
		name, isDir := strings.CutSuffix(rel, "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			// Not under the folder asked for (a store that lists
			// what it was not asked), or no name of one element:
			// left out, as the mount leaves out what it cannot show.
			continue
		}
		e := mount.Entry{Name: name, Dir: isDir, Size: info.Size, ModTime: info.LastModified, Version: info.ETag}
		if isDir {
			e.ModTime = s.listed
		} else {
			etags[path.Join(dir, name)] = info.ETag
		}
		if i, ok := index[name]; ok {
			if isDir {
				out[i] = e // the folder wins
			}
			continue
		}
		index[name] = len(out)
		out = append(out, e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range out {
		if !e.Dir {
			p := path.Join(dir, e.Name)
			s.etags[p] = etags[p]
		}
	}
	return out, nil
}

// Stat heads the object: the mount asks before it opens a file again, to
// notice one that changed since it was listed (with mount.Options.Refresh).
func (s *source) Stat(ctx context.Context, name string) (mount.Entry, error) {
	o, err := s.st.Open(ctx, s.prefix.Join(name))
	if err != nil {
		return mount.Entry{}, err
	}
	s.mu.Lock()
	s.etags[name] = o.ETag() // the version the mount will open
	s.mu.Unlock()
	return mount.Entry{Name: path.Base(name), Size: o.Size(), Version: o.ETag()}, nil
}

func (s *source) Open(ctx context.Context, name string) (mount.File, error) {
	// The object outlives this request: its reads come later.
	o, err := s.st.Open(context.WithoutCancel(ctx), s.prefix.Join(name))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	etag, listed := s.etags[name]
	s.mu.Unlock()
	if listed && etag != "" && o.ETag() != etag {
		return nil, fmt.Errorf("%s changed since it was listed (ETag %s, was %s): %w", o.Location(), o.ETag(), etag, objstore.ErrChanged)
	}
	return file{o}, nil
}

// headRead is the largest read at the start of an object that is fetched
// as it is: a header.
const headRead = 64 << 10

// file is an open object. A read at its start is fetched as it is, where
// objstore.Object would fetch a read-ahead window: the mount reads a
// header there, when it lists a folder.
type file struct{ o *objstore.Object }

func (f file) ReadAt(p []byte, off int64) (int, error) {
	if off != 0 || len(p) == 0 || len(p) > headRead {
		return f.o.ReadAt(p, off)
	}
	head, err := f.o.Head(len(p))
	if err != nil {
		return 0, err
	}
	n := copy(p, head)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f file) Close() error { return nil }
