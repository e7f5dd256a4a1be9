package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/c4gh-go/crypt4gh/objstore"
)

// Source is the tree of files a server answers for: a folder ([Dir]) or
// the objects under a prefix of an object store ([Store]). Names are
// slash-separated paths relative to the top, checked with fs.ValidPath
// before a Source sees them.
type Source interface {
	// Open opens the file at name. A file that does not exist (or is not
	// a regular file) is an error for which errors.Is(err,
	// fs.ErrNotExist) holds.
	Open(ctx context.Context, name string) (Object, error)
	// String names the source for messages.
	String() string
}

// Object is an open file of a Source. Its ReadAt is safe for concurrent
// use.
type Object interface {
	io.ReaderAt
	Size() int64
	// ID tells this version of the file from another of the same name:
	// its size and modification time (a file), its ETag (an object).
	ID() string
	// Stream writes the n bytes at off to w: the way a data response
	// sends a range, which may be faster than ReadAt (the kernel copying
	// a file to a socket, chunks of an object fetched ahead).
	Stream(w io.Writer, off, n int64) (int64, error)
	Close() error
}

// Dir returns the Source of the folder dir. Every name is opened under
// it with os.Root: a path that leaves the folder, by ".." or by a
// symbolic link that points out of it, is refused by the kernel's view of
// the tree, not by string checks alone.
func Dir(dir string) (Source, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &dirSource{root: r, name: dir}, nil
}

type dirSource struct {
	root *os.Root
	name string
}

func (d *dirSource) String() string { return d.name }

func (d *dirSource) Open(_ context.Context, name string) (Object, error) {
	// Opened without blocking: a named pipe planted in the folder would
	// otherwise hold the request until someone writes to it. (A regular
	// file ignores the flag.)
	f, err := d.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			// Escapes and loops: to the requester, not there.
			err = fmt.Errorf("%w: %v", fs.ErrNotExist, err)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", fs.ErrNotExist, name)
	}
	// Size and time, and a sum of the file's first bytes: a file put in
	// its place with the same size and time (cp -p, rsync -a, tar) has
	// another header, whose keys and nonces are random. Not the inode,
	// which servers sharing the folder would not agree on.
	head := make([]byte, min(fi.Size(), idBytes))
	if n, err := f.ReadAt(head, 0); n < len(head) {
		f.Close()
		return nil, fmt.Errorf("failed to read %s: %w", name, cmp.Or(err, io.ErrUnexpectedEOF))
	}
	sum := sha256.Sum256(head)
	return &fileObject{File: f, size: fi.Size(), id: fmt.Sprintf("%d-%d-%x", fi.Size(), fi.ModTime().UnixNano(), sum[:8])}, nil
}

// idBytes is how much of the start of a file its ID sums: the header of
// a Crypt4GH file, or the start of it.
const idBytes = 4096

type fileObject struct {
	*os.File
	size int64
	id   string
}

func (f *fileObject) Size() int64 { return f.size }
func (f *fileObject) ID() string  { return f.id }

// Stream seeks and copies from the file itself, so that an
// http.ResponseWriter sends it with sendfile.
func (f *fileObject) Stream(w io.Writer, off, n int64) (int64, error) {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, err
	}
	return io.CopyN(w, f.File, n)
}

// Store returns the Source of the objects under prefix (an s3:// prefix,
// ending in "/" or empty) in st.
func Store(st objstore.Store, prefix objstore.Location) Source {
	return &storeSource{st: st, prefix: prefix}
}

type storeSource struct {
	st     objstore.Store
	prefix objstore.Location
}

func (s *storeSource) String() string { return s.prefix.String() }

func (s *storeSource) Open(ctx context.Context, name string) (Object, error) {
	if strings.HasSuffix(name, "/") {
		return nil, fmt.Errorf("%w: %s", fs.ErrNotExist, name)
	}
	o, err := s.st.Open(ctx, s.prefix.Join(name))
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	if err != nil {
		return nil, err
	}
	return storeObject{o}, nil
}

// presignGet returns a presigned GET URL of the object at name, when the
// store gives them.
func (s *storeSource) presignGet(ctx context.Context, name string, lifetime time.Duration) (string, bool, error) {
	p, ok := s.st.(objstore.Presigner)
	if !ok {
		return "", false, nil
	}
	u, err := p.PresignGet(ctx, s.prefix.Join(name), lifetime)
	return u, true, err
}

type storeObject struct{ *objstore.Object }

func (o storeObject) ID() string { return o.ETag() }

// Stream fetches the range in chunks of 1 MiB, two at a time: enough
// to keep a stream going, little enough that many streams fit in memory.
func (o storeObject) Stream(w io.Writer, off, n int64) (int64, error) {
	r, err := o.NewReader(off, n, &objstore.ReaderOptions{ChunkSize: 1 << 20, Concurrency: 2})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return io.Copy(w, r)
}

func (o storeObject) Close() error { return nil }
